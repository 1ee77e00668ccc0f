package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"jouleclaw.dev/conformance/verifiers/go/strictvec"
)

const conformanceDir = "../.."

// readConformance reads the file name of the conformance directory; a failure fails the test.
func readConformance(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(conformanceDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// loadConformance decodes the JSON file name of the conformance directory into v; a failure
// fails the test.
func loadConformance(t *testing.T, name string, v any) {
	t.Helper()
	if err := json.Unmarshal(readConformance(t, name), v); err != nil {
		t.Fatal(err)
	}
}

func loadStrictDoc(t *testing.T) strictvec.Doc {
	t.Helper()
	var doc strictvec.Doc
	loadConformance(t, strictvec.File, &doc)
	return doc
}

func TestTheCheckedInStrictVectorsAreWhatTheGeneratorWrites(t *testing.T) {
	signed := readConformance(t, "stream-window-signed-vectors.json")
	payload, seed, err := strictvec.Inputs(signed)
	if err != nil {
		t.Fatal(err)
	}
	want, err := strictvec.Build(payload, seed)
	if err != nil {
		t.Fatal(err)
	}
	got := readConformance(t, strictvec.File)
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run `go run ./cmd/make-strict-vectors` in conformance/verifiers/go", strictvec.File)
	}
}

func TestEveryStrictRuleHasAVectorThatGetsThroughWhenTheRuleIsDeleted(t *testing.T) {
	doc := loadStrictDoc(t)
	for _, rule := range strictRules {
		if rule == ruleEquation {
			continue // the equation is crypto/ed25519.Verify itself; the signed negatives cover it
		}
		var cases []strictvec.Case
		for _, c := range doc.Cases {
			if c.Rule == rule {
				cases = append(cases, c)
			}
		}
		if len(cases) == 0 {
			t.Errorf("rule %s has no vector", rule)
			continue
		}
		for _, c := range cases {
			if _, err := checkStrictCase(c); err != nil {
				t.Errorf("case %d (%s) with every rule on: %v", c.N, rule, err)
			}
			disabledRule = rule
			_, err := checkStrictCase(c)
			disabledRule = ""
			if err == nil {
				t.Errorf("case %d still passes with rule %s deleted: the vector does not show the rule", c.N, rule)
			}
		}
	}
}

func TestHonestSignaturesPassEveryStrictRule(t *testing.T) {
	var doc signedDoc
	loadConformance(t, "stream-window-signed-vectors.json", &doc)
	pub, _ := unhex(doc.Key.PublicKeyHex)
	for _, v := range doc.Vectors {
		data, _ := unhex(v.CoseSign1Hex)
		if _, err := verifyCose(data, pub); err != nil {
			t.Errorf("vector %v: %v", v.N, err)
		}
	}
}

func TestEncodingJSONIsNotCanonicalButTheJCSModuleIs(t *testing.T) {
	value := map[string]any{"b": "<&>\u2028", "a": json.Number("9007199254740991")}
	plain, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("{\"a\":9007199254740991,\"b\":\"<&>\u2028\"}")
	if bytes.Equal(plain, want) {
		t.Fatalf("encoding/json unexpectedly wrote canonical bytes %s", plain)
	}
	canon, err := canonicalJSON(plain)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(canon, want) {
		t.Fatalf("jcs wrote %s, want %s", canon, want)
	}
}

func TestDuplicateKeysAndUnsafeIntegersAreRefusedEvenWhereTheBytesLookCanonical(t *testing.T) {
	for input, class := range map[string]string{
		`{"a":1,"a":1}`:          "duplicate_key",
		`{"a":9007199254740992}`: "number",
		`{"a":-0}`:               "number",
	} {
		_, err := parseJCR1([]byte(input), nil)
		if refusalClass(err) != class {
			t.Errorf("%s: got %v, want class %s", input, err, class)
		}
	}
	if _, err := parseJCR1([]byte(`{"a":9007199254740991}`), nil); err != nil {
		t.Errorf("2^53-1 refused: %v", err)
	}
}

func TestAFamilyFileWithoutAGoCheckerFailsInsteadOfBeingIgnored(t *testing.T) {
	dir := t.TempDir()
	src := readConformance(t, "stream-window-vectors.json")
	if err := os.WriteFile(filepath.Join(dir, "stream-window-vectors.json"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run(dir); code != 0 {
		t.Fatalf("the receipts file alone: exit %d, want 0", code)
	}
	if err := os.WriteFile(filepath.Join(dir, "voice-turn-vectors.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run(dir); code == 0 {
		t.Fatal("a voice-turn vector file with no Go checker passed")
	}
}

func TestAnEmptyDirectoryFails(t *testing.T) {
	if code := run(t.TempDir()); code == 0 {
		t.Fatal("no vector file at all passed")
	}
}
