package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// structured-output-vectors.json (spec/STRUCTURED-OUTPUT.md): every grammar's digest (BLAKE3
// of its canonical form), oracle name and limits, its projection compiled as a JSON Schema
// 2020-12 by github.com/santhosh-tekuri/jsonschema/v6; every case's whole-document outcome
// (accepted, refused by the schema, or refused as not I-JSON / over a limit) with that
// validator plus the rules the spec says JSON Schema cannot state (limits, I-JSON, integer
// tokens, the tag-first rule, duplicate keys). Refusal paths, codes and offsets are not
// compared here: the Python checker (python/check_structured.py) compares paths.
func init() {
	register(Family{Order: 90, File: "structured-output-vectors.json", Check: checkStructuredFile, Counts: true})
	// The JSON Schema profile's vectors: the same format, grammars marked "profile":"json_schema".
	register(Family{Order: 91, File: "structured-output-2020-vectors.json", Check: checkStructuredFile, Counts: true})
}

type soLimits struct {
	MaxArrayItems    int64 `json:"max_array_items"`
	MaxDepth         int64 `json:"max_depth"`
	MaxDocumentBytes int64 `json:"max_document_bytes"`
	MaxNumberChars   int64 `json:"max_number_chars"`
	MaxStringChars   int64 `json:"max_string_chars"`
}

// oobj is a JSON object with its members in document order; dup marks a repeated key.
type oobj struct {
	keys []string
	vals []any
	dup  bool
}

func (o *oobj) get(k string) (any, bool) {
	for i := len(o.keys) - 1; i >= 0; i-- { // the last of repeated keys, as a map would keep
		if o.keys[i] == k {
			return o.vals[i], true
		}
	}
	return nil, false
}

type soGrammar struct {
	schema  any // the projection, as decoded by jsonschema.UnmarshalJSON
	limits  soLimits
	sch     *jsonschema.Schema
	profile string // "json_schema" for the JSON Schema profile, else the subset
}

// soResolve follows a projection's $ref (only "#/$defs/..." are written).
func soResolve(root map[string]any, s map[string]any) map[string]any {
	for i := 0; i < 64; i++ {
		r, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		s = soObj(soObj(root["$defs"])[r[strings.LastIndex(r, "/")+1:]])
	}
	return s
}

// soType is a parsed value's JSON type (integers are numbers: the first-byte rule).
func soType(v any) string {
	switch v.(type) {
	case *oobj:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

// soDepth is a parsed value's container nesting.
func soDepth(v any) int64 {
	var d int64
	switch v := v.(type) {
	case *oobj:
		for _, x := range v.vals {
			d = max(d, soDepth(x))
		}
		return d + 1
	case []any:
		for _, x := range v {
			d = max(d, soDepth(x))
		}
		return d + 1
	}
	return 0
}

var errNotJSON = errors.New("not I-JSON")
var errOverLimit = errors.New("over a grammar limit")

// hasLoneSurrogate scans the raw text for a \uD800-\uDFFF escape that is not a high surrogate
// followed by a low one (encoding/json would replace it by U+FFFD silently).
func hasLoneSurrogate(data []byte) bool {
	hex4 := func(i int) (rune, bool) {
		if i+4 > len(data) {
			return 0, false
		}
		var r rune
		for _, c := range data[i : i+4] {
			switch {
			case c >= '0' && c <= '9':
				r = r*16 + rune(c-'0')
			case c >= 'a' && c <= 'f':
				r = r*16 + rune(c-'a'+10)
			case c >= 'A' && c <= 'F':
				r = r*16 + rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	in := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !in {
			in = c == '"'
			continue
		}
		switch c {
		case '"':
			in = false
		case '\\':
			if i+1 < len(data) && data[i+1] == 'u' {
				r, ok := hex4(i + 2)
				if !ok {
					return false // not JSON: the decoder refuses it
				}
				i += 5
				if r >= 0xDC00 && r <= 0xDFFF {
					return true
				}
				if r >= 0xD800 && r <= 0xDBFF {
					if i+2 >= len(data) || data[i+1] != '\\' || data[i+2] != 'u' {
						return true
					}
					lo, ok := hex4(i + 3)
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return true
					}
					i += 6
				}
			} else {
				i++
			}
		}
	}
	return false
}

// soParse decodes a document: errOverLimit, errNotJSON, or the value (objects as *oobj,
// numbers as json.Number with the token as written).
func soParse(doc []byte, lim soLimits) (any, error) {
	if int64(len(doc)) > lim.MaxDocumentBytes {
		return nil, errOverLimit
	}
	if !utf8.Valid(doc) || hasLoneSurrogate(doc) {
		return nil, errNotJSON
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	numberTooLong := false
	var value func() (any, error)
	value = func() (any, error) {
		t, err := dec.Token()
		if err != nil {
			return nil, errNotJSON
		}
		switch t := t.(type) {
		case json.Delim:
			switch t {
			case '{':
				o := &oobj{}
				for dec.More() {
					kt, err := dec.Token()
					if err != nil {
						return nil, errNotJSON
					}
					k, ok := kt.(string)
					if !ok {
						return nil, errNotJSON
					}
					if _, seen := o.get(k); seen {
						o.dup = true
					}
					v, err := value()
					if err != nil {
						return nil, err
					}
					o.keys, o.vals = append(o.keys, k), append(o.vals, v)
				}
				if _, err := dec.Token(); err != nil {
					return nil, errNotJSON
				}
				return o, nil
			case '[':
				a := []any{}
				for dec.More() {
					v, err := value()
					if err != nil {
						return nil, err
					}
					a = append(a, v)
				}
				if _, err := dec.Token(); err != nil {
					return nil, errNotJSON
				}
				return a, nil
			}
			return nil, errNotJSON
		case json.Number:
			if int64(len(t)) > lim.MaxNumberChars {
				numberTooLong = true
			}
			return t, nil
		default:
			return t, nil
		}
	}
	v, err := value()
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errNotJSON
	}
	if numberTooLong {
		return nil, errOverLimit
	}
	return v, nil
}

// soPlain converts a parsed document to what the JSON Schema library validates.
func soPlain(v any) any {
	switch v := v.(type) {
	case *oobj:
		m := make(map[string]any, len(v.keys))
		for i, k := range v.keys {
			m[k] = soPlain(v.vals[i])
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = soPlain(x)
		}
		return a
	default:
		return v
	}
}

func soObj(v any) map[string]any { m, _ := v.(map[string]any); return m }

// soTagOf is the oneOf tag (spec "Tagged unions"): the first property, by bytes, of the first
// branch that every branch requires with a distinct string const (or one-member enum).
func soTagOf(branches []any) (string, error) {
	if len(branches) == 0 {
		return "", errors.New("oneOf without branches")
	}
	props := soObj(soObj(branches[0])["properties"])
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
next:
	for _, name := range names {
		seen := map[string]bool{}
		for _, b := range branches {
			bo := soObj(b)
			p := soObj(soObj(bo["properties"])[name])
			c, ok := p["const"].(string)
			if e, isArr := p["enum"].([]any); !ok && isArr && len(e) == 1 {
				c, ok = e[0].(string)
			}
			required := false
			for _, r := range anySlice(bo["required"]) {
				required = required || r == name
			}
			if !ok || !required || seen[c] {
				continue next
			}
			seen[c] = true
		}
		return name, nil
	}
	return "", errors.New("oneOf without a tag")
}

func anySlice(v any) []any { a, _ := v.([]any); return a }

func soHasDup(v any) bool {
	switch v := v.(type) {
	case *oobj:
		if v.dup {
			return true
		}
		for _, x := range v.vals {
			if soHasDup(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if soHasDup(x) {
				return true
			}
		}
	}
	return false
}

// soSideBySide returns the branches of an anyOf a value is read by side by side: several of its
// JSON type that are not a tagged union (objects without a common tag, arrays); nil otherwise.
func soSideBySide(branches []any, inst any) []any {
	var same []any
	allObjects := true
	for _, b := range branches {
		bo := soObj(b)
		t, has := bo["type"].(string)
		if !has && bo["oneOf"] != nil {
			t, has = "object", true
		}
		if t == "integer" {
			t = "number"
		}
		if has && t == soType(inst) {
			same = append(same, bo)
			allObjects = allObjects && bo["type"] == "object"
		}
	}
	if len(same) < 2 {
		return nil
	}
	if soType(inst) == "object" && allObjects {
		if _, err := soTagOf(same); err == nil {
			return nil
		}
	}
	return same
}

// soBranchValid reports whether the JSON Schema validator accepts inst for one branch, under
// the projection's definitions.
func soBranchValid(root, branch map[string]any, inst any) (bool, error) {
	s := make(map[string]any, len(branch)+1)
	for k, v := range branch {
		s[k] = v
	}
	if d, ok := root["$defs"]; ok {
		s["$defs"] = d
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "urn:jouleclaw:structured:branch"
	if err := c.AddResource(url, s); err != nil {
		return false, err
	}
	sch, err := c.Compile(url)
	if err != nil {
		return false, err
	}
	return sch.Validate(soPlain(inst)) == nil, nil
}

// soExtra reports whether a rule JSON Schema does not check fails: a repeated key, a oneOf
// object whose first member is not the tag, an integer written with a fraction or exponent.
func soExtra(schema map[string]any, inst any) (bool, error) {
	return soExtraIn(schema, schema, inst)
}

// soExtraIn is soExtra under the projection root (for $ref). A JSON Schema profile anyOf
// follows the branch the value's JSON type selects; several object branches are a tagged union
// or, without a common tag (and several arrays), read side by side.
func soExtraIn(root, schema map[string]any, inst any) (bool, error) {
	if o, ok := inst.(*oobj); ok && o.dup {
		return true, nil
	}
	schema = soResolve(root, schema)
	if branches, ok := schema["anyOf"].([]any); ok {
		resolved := make([]any, len(branches))
		for i, b := range branches {
			resolved[i] = soResolve(root, soObj(b))
		}
		// Read side by side: valid when one branch takes it, the validator's rules and these.
		if both := soSideBySide(resolved, inst); both != nil {
			for _, b := range both {
				bo := soObj(b)
				bad, err := soExtraIn(root, bo, inst)
				if err != nil {
					return false, err
				}
				if bad {
					continue
				}
				valid, err := soBranchValid(root, bo, inst)
				if err != nil {
					return false, err
				}
				if valid {
					return false, nil
				}
			}
			return true, nil
		}
		var objs []any
		for _, b := range branches {
			if bo := soResolve(root, soObj(b)); bo["type"] == "object" {
				objs = append(objs, bo)
			}
		}
		if _, isObj := inst.(*oobj); isObj && len(objs) > 1 {
			return soExtraIn(root, map[string]any{"oneOf": objs}, inst)
		}
		for _, b := range branches {
			bo := soResolve(root, soObj(b))
			t, has := bo["type"].(string)
			if !has && bo["oneOf"] != nil {
				t, has = "object", true
			}
			if t == "integer" {
				t = "number"
			}
			if !has || t == soType(inst) {
				return soExtraIn(root, bo, inst)
			}
		}
		return false, nil
	}
	if branches, ok := schema["oneOf"].([]any); ok {
		resolved := make([]any, len(branches))
		for i, b := range branches {
			resolved[i] = soResolve(root, soObj(b))
		}
		branches = resolved
		o, isObj := inst.(*oobj)
		if !isObj || len(o.keys) == 0 {
			return false, nil
		}
		tag, err := soTagOf(branches)
		if err != nil {
			return false, err
		}
		if o.keys[0] != tag {
			return true, nil
		}
		tv, _ := o.get(tag)
		for _, b := range branches {
			bo := soObj(b)
			if c, ok := soObj(soObj(bo["properties"])[tag])["const"].(string); ok && c == tv {
				return soExtraIn(root, bo, inst)
			}
		}
		return false, nil
	}
	switch schema["type"] {
	case "object":
		if o, ok := inst.(*oobj); ok {
			props := soObj(schema["properties"])
			for i, k := range o.keys {
				ps, ok := props[k].(map[string]any)
				if !ok {
					ps = soObj(schema["additionalProperties"]) // other properties (nil: none or any)
				}
				if ps != nil {
					if bad, err := soExtraIn(root, ps, o.vals[i]); bad || err != nil {
						return bad, err
					}
				}
			}
		}
	case "array":
		if a, ok := inst.([]any); ok {
			items := soObj(schema["items"])
			for _, x := range a {
				if bad, err := soExtraIn(root, items, x); bad || err != nil {
					return bad, err
				}
			}
		}
	case "integer":
		if n, ok := inst.(json.Number); ok && strings.ContainsAny(string(n), ".eE") {
			return true, nil
		}
	}
	return false, nil
}

// soOutcome is "accepted", "schema" (JSON, refused by the schema) or "not-json" (not I-JSON or
// over a limit).
func soOutcome(g *soGrammar, doc []byte) (string, error) {
	v, err := soParse(doc, g.limits)
	if err != nil {
		return "not-json", nil
	}
	// The JSON Schema profile bounds nesting by max_depth (the subset's schemas bound it).
	if g.profile == "json_schema" && soDepth(v) > g.limits.MaxDepth {
		return "not-json", nil
	}
	bad, err := soExtra(soObj(g.schema), v)
	if err != nil {
		return "", err
	}
	if bad || g.sch.Validate(soPlain(v)) != nil {
		return "schema", nil
	}
	return "accepted", nil
}

func checkStructuredFile(rep *Report, _ string, path string) {
	name := filepath.Base(path)
	var doc struct {
		Format   string `json:"format"`
		Grammars []struct {
			Name          string   `json:"name"`
			Limits        soLimits `json:"limits"`
			CanonicalForm string   `json:"canonical_form"`
			Digest        string   `json:"digest"`
			OracleName    string   `json:"oracle_name"`
			Profile       string   `json:"profile"`
		} `json:"grammars"`
		Cases []struct {
			Grammar   string   `json:"grammar"`
			Name      string   `json:"name"`
			ChunksHex []string `json:"chunks_hex"`
			Outcome   string   `json:"outcome"`
			Class     string   `json:"class"`
		} `json:"cases"`
	}
	// The file carries number bounds with fractions (JCR-1's loadVectorFile refuses them): load it
	// as I-JSON with no repeated key, then decode it.
	loaded := false
	rep.Check(name+" load", func() (string, error) {
		data, err := readFile(path)
		if err != nil {
			return "", err
		}
		v, err := soParse(data, soLimits{MaxDocumentBytes: 1 << 40, MaxNumberChars: 1 << 20})
		if err != nil {
			return "", refuse("json", "vector file: %v", err)
		}
		if soHasDup(v) {
			return "", refuse("json", "vector file has a repeated key")
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return "", refuse("json", "vector file: %v", err)
		}
		loaded = true
		if err := expectEqual("format", doc.Format, "jouleclaw-structured-vectors/1"); err != nil {
			return "", err
		}
		if len(doc.Grammars) == 0 || len(doc.Cases) == 0 {
			return "", refuse("mismatch", "no grammars or no cases")
		}
		return "", nil
	})
	if !loaded {
		return
	}
	grammars := map[string]*soGrammar{}
	for _, g := range doc.Grammars {
		rep.Check(name+" grammar "+g.Name, func() (string, error) {
			digest := blake3Hex([]byte(g.CanonicalForm))
			if err := expectEqual("digest", digest, g.Digest); err != nil {
				return "", err
			}
			if err := expectEqual("oracle_name", g.OracleName, "structured:"+digest[:16]); err != nil {
				return "", err
			}
			var form struct {
				Grammar string          `json:"grammar"`
				Limits  soLimits        `json:"limits"`
				Schema  json.RawMessage `json:"schema"`
			}
			dec := json.NewDecoder(strings.NewReader(g.CanonicalForm))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&form); err != nil {
				return "", refuse("mismatch", "canonical form: %v", err)
			}
			if err := expectEqual("grammar tag", form.Grammar, "jouleclaw-structured/1"); err != nil {
				return "", err
			}
			if form.Limits != g.Limits {
				return "", refuse("mismatch", "limits in the canonical form %+v differ from the vector's %+v", form.Limits, g.Limits)
			}
			schema, err := jsonschema.UnmarshalJSON(bytes.NewReader(form.Schema))
			if err != nil {
				return "", refuse("mismatch", "projection: %v", err)
			}
			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft2020)
			url := "urn:jouleclaw:structured:" + g.Name
			if err := c.AddResource(url, schema); err != nil {
				return "", refuse("mismatch", "projection: %v", err)
			}
			sch, err := c.Compile(url)
			if err != nil {
				return "", refuse("mismatch", "projection is not a 2020-12 schema: %v", err)
			}
			grammars[g.Name] = &soGrammar{schema: schema, limits: g.Limits, sch: sch, profile: g.Profile}
			return "digest, oracle name, limits; projection compiles as 2020-12", nil
		})
	}
	for _, c := range doc.Cases {
		rep.Check(fmt.Sprintf("%s case %s: %s", name, c.Grammar, c.Name), func() (string, error) {
			g := grammars[c.Grammar]
			if g == nil {
				return "", refuse("mismatch", "no usable grammar %q", c.Grammar)
			}
			var document []byte
			for _, h := range c.ChunksHex {
				b, err := unhex(h)
				if err != nil {
					return "", err
				}
				document = append(document, b...)
			}
			got, err := soOutcome(g, document)
			if err != nil {
				return "", err
			}
			switch {
			case got == "accepted" && c.Outcome == "accepted":
			case got == "schema" && c.Outcome == "refused" && c.Class == "schema":
			case got == "not-json" && c.Outcome == "refused" && (c.Class == "syntax" || c.Class == "limit"):
			default:
				return "", refuse("mismatch", "Go finds %s; the vector says %s (class %q)", got, c.Outcome, c.Class)
			}
			return got, nil
		})
	}
}
