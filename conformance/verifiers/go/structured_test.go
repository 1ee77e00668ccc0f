package main

import (
	"bytes"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const toolSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","oneOf":[` +
	`{"additionalProperties":false,"properties":{"n":{"maximum":10,"minimum":0,"type":"integer"},"tool":{"const":"a","type":"string"}},"required":["tool"],"type":"object"},` +
	`{"additionalProperties":false,"properties":{"tool":{"const":"b","type":"string"},"x":{"maximum":1.5,"type":"number"}},"required":["tool"],"type":"object"}]}`

// compileTestSchema decodes the JSON Schema text s and compiles it as uri; a failure fails the
// test.
func compileTestSchema(t *testing.T, uri, s string) (any, *jsonschema.Schema) {
	t.Helper()
	schema, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(s)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(uri, schema); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(uri)
	if err != nil {
		t.Fatal(err)
	}
	return schema, sch
}

func testGrammar(t *testing.T) *soGrammar {
	t.Helper()
	schema, sch := compileTestSchema(t, "urn:test", toolSchema)
	return &soGrammar{schema: schema, sch: sch, limits: soLimits{MaxDocumentBytes: 64, MaxNumberChars: 8}}
}

// Each rule JSON Schema cannot state refuses its document, and its neighbour is accepted.
func TestStructuredRulesBeyondJSONSchemaRefuseAndTheirNeighboursPass(t *testing.T) {
	g := testGrammar(t)
	for _, c := range []struct{ doc, want string }{
		{`{"tool":"a","n":3}`, "accepted"},
		{`{"n":3,"tool":"a"}`, "schema"},                        // the tag is not the first member
		{`{"tool":"a","n":3.0}`, "schema"},                      // an integer written with a fraction
		{`{"tool":"a","n":3e0}`, "schema"},                      // ... or an exponent
		{`{"tool":"a","n":3,"n":4}`, "schema"},                  // a repeated key
		{`{"tool":"b","x":1.5}`, "accepted"},                    // at the maximum
		{`{"tool":"b","x":1.50000000000000000001}`, "not-json"}, // over max_number_chars (8)
		{`{"tool":"b","x":1.500001}`, "schema"},                 // above the maximum, exactly
		{`{"tool":"a\ud800"}`, "not-json"},                      // a lone surrogate escape
		{`{"tool":"a\ud83d\ude00"}`, "schema"},                  // a pair: JSON, but no branch
		{`{"tool":"a","n":3}` + "      " + `                                              `, "not-json"}, // over 64 bytes
	} {
		got, err := soOutcome(g, []byte(c.doc))
		if err != nil || got != c.want {
			t.Errorf("%s: got %s (%v), want %s", c.doc, got, err, c.want)
		}
	}
}

// The JSON Schema profile: an anyOf follows the branch the value's JSON type selects (a
// tagged union for objects), other properties follow additionalProperties, and nesting is
// bounded by max_depth; the subset's grammars have no depth rule here.
func TestStructuredJSONSchemaProfileRules(t *testing.T) {
	const s = `{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{` +
		`"p":{"anyOf":[{"properties":{"k":{"const":"a","type":"string"},"n":{"type":"integer"}},"required":["k"],"type":"object"},` +
		`{"properties":{"k":{"const":"b","type":"string"}},"required":["k"],"type":"object"},{"type":"null"}]},` +
		`"e":{"additionalProperties":{"type":"integer"},"properties":{},"type":"object"}},"type":"object"}`
	schema, sch := compileTestSchema(t, "urn:test2", s)
	g := &soGrammar{schema: schema, sch: sch, profile: "json_schema",
		limits: soLimits{MaxDocumentBytes: 1 << 10, MaxNumberChars: 16, MaxDepth: 3}}
	for _, c := range []struct{ doc, want string }{
		{`{"p":{"k":"a","n":1},"x":[1]}`, "accepted"},
		{`{"p":{"n":1,"k":"a"}}`, "schema"},   // the tag is not first
		{`{"p":{"k":"a","n":1.0}}`, "schema"}, // an integer with a fraction, inside the chosen branch
		{`{"p":null,"e":{"a":2}}`, "accepted"},
		{`{"e":{"a":2.0}}`, "schema"}, // an other property's integer with a fraction
		{`{"x":[[1]]}`, "accepted"},   // depth 3
		{`{"x":[[[1]]]}`, "not-json"}, // depth 4 > max_depth
	} {
		got, err := soOutcome(g, []byte(c.doc))
		if err != nil || got != c.want {
			t.Errorf("%s: got %s (%v), want %s", c.doc, got, err, c.want)
		}
	}
	g.profile = ""
	if got, _ := soOutcome(g, []byte(`{"x":[[[1]]]}`)); got != "accepted" {
		t.Errorf("the subset has no depth rule here: got %s", got)
	}
}
