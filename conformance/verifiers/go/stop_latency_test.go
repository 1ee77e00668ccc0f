package main

import (
	"encoding/hex"
	"encoding/json"
	"testing"
)

type slVectors struct {
	PublicKey string `json:"public_key"`
	Documents []struct {
		Receipts  []string `json:"receipts"`
		Canonical string   `json:"canonical"`
		CoseHex   string   `json:"cose_sign1_hex"`
	} `json:"documents"`
	Tampered []struct {
		CoseHex       string   `json:"cose_sign1_hex"`
		Receipts      []string `json:"receipts"`
		ExpectRefusal string   `json:"expect_refusal"`
	} `json:"tampered"`
}

// loadSL loads stop-latency-vectors.json and decodes its public key.
func loadSL(t *testing.T) (slVectors, []byte) {
	t.Helper()
	var v slVectors
	loadConformance(t, "stop-latency-vectors.json", &v)
	pub, err := hex.DecodeString(v.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return v, pub
}

// Every document vector verifies and is bound; each flipped byte of its envelope is refused.
func TestStopLatencyDocumentsVerifyAndEveryFlippedByteIsRefused(t *testing.T) {
	v, pub := loadSL(t)
	for i, d := range v.Documents {
		signed, _ := hex.DecodeString(d.CoseHex)
		doc, bs, err := slVerifySigned(signed, pub)
		if err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
		if p, err := slBindingProblems(doc, bs, d.Receipts); err != nil || len(p) != 0 {
			t.Fatalf("document %d: binding %v %v", i+1, p, err)
		}
		for j := range signed {
			b := append([]byte(nil), signed...)
			b[j] ^= 1
			if _, _, err := slVerifySigned(b, pub); err == nil {
				t.Fatalf("document %d: byte %d flipped was accepted", i+1, j)
			}
		}
	}
}

// The tampered vectors are refused with the code the spec's order gives (the verifier's own
// class for envelope and signature failures, the binding code otherwise).
func TestStopLatencyTamperedVectorsAreRefusedWithTheirCodes(t *testing.T) {
	v, pub := loadSL(t)
	for i, c := range v.Tampered {
		data, _ := hex.DecodeString(c.CoseHex)
		doc, bs, err := slVerifySigned(data, pub)
		got := refusalClass(err)
		if err == nil {
			p, err := slBindingProblems(doc, bs, c.Receipts)
			if err != nil || len(p) == 0 {
				t.Fatalf("tampered %d accepted", i+1)
			}
			got = p[0]
		}
		if got != c.ExpectRefusal {
			t.Fatalf("tampered %d: %s, want %s", i+1, got, c.ExpectRefusal)
		}
	}
}

// Removing a listed barge-in's yield receipt is noticed, and the untouched receipts are not.
func TestStopLatencyBindingNoticesAYieldReceiptTurnedPass(t *testing.T) {
	v, pub := loadSL(t)
	d := v.Documents[0]
	signed, _ := hex.DecodeString(d.CoseHex)
	doc, bs, err := slVerifySigned(signed, pub)
	if err != nil {
		t.Fatal(err)
	}
	var unlisted []string
	for _, l := range d.Receipts {
		var r map[string]any
		_ = json.Unmarshal([]byte(l), &r)
		if r["verdict"].(map[string]any)["kind"] != "yield" {
			unlisted = append(unlisted, l)
		}
	}
	p, _ := slBindingProblems(doc, bs, unlisted)
	if len(p) == 0 || p[len(p)-1] != "barge_in_window_missing" && p[len(p)-1] != "root_mismatch" {
		t.Fatalf("problems %v", p)
	}
}
