package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/edwards25519"
)

func copySealFile(t *testing.T, edit func([]byte) []byte) string {
	t.Helper()
	src := readConformance(t, "stream-seal-vectors.json")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stream-seal-vectors.json"), edit(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestTheSealVectorsPassOnTheirOwnAndAFlippedSignatureDigitFails(t *testing.T) {
	if code := run(copySealFile(t, func(b []byte) []byte { return b })); code != 0 {
		t.Fatalf("the seal vector file alone: exit %d, want 0", code)
	}
	sig := []byte(`"signature_hex": "`)
	dir := copySealFile(t, func(b []byte) []byte {
		i := bytes.Index(b, sig) + len(sig)
		out := append([]byte{}, b...)
		if out[i] == '0' {
			out[i] = '1'
		} else {
			out[i] = '0'
		}
		return out
	})
	if code := run(dir); code == 0 {
		t.Fatal("a seal file with a changed signature_hex passed")
	}
}

func TestAnEmptySealFileFails(t *testing.T) {
	if code := run(copySealFile(t, func([]byte) []byte { return []byte("{}") })); code == 0 {
		t.Fatal("an empty stream-seal object passed")
	}
}

func TestAKeyWithAnOrder8ComponentIsRefusedAsTorsionNotAsABadSignature(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	pub := priv.Public().(ed25519.PublicKey)
	msg := []byte("Signature1 stand-in")
	sig := ed25519.Sign(priv, msg)
	// The honest key passes steps 19 and 20; only go-cose, given no envelope, refuses.
	if err := sealStrictSignature(nil, sig, msg, nil, pub); err == nil || !strings.Contains(err.Error(), "go-cose") {
		t.Fatalf("honest key: %v", err)
	}
	torsion, _ := hex.DecodeString("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05")
	a, _ := new(edwards25519.Point).SetBytes(pub)
	tp, err := new(edwards25519.Point).SetBytes(torsion)
	if err != nil {
		t.Fatal(err)
	}
	mixed := new(edwards25519.Point).Add(a, tp).Bytes()
	if err := sealStrictSignature(nil, sig, msg, nil, mixed); refusalClass(err) != "seal_cose_torsion" {
		t.Fatalf("mixed-order key: %v, want seal_cose_torsion", err)
	}
}

func TestASealRefusalOnlyMatchesItsOwnCodeOrTheCanonicalFormClass(t *testing.T) {
	for _, c := range []struct {
		got, expect string
		ok          bool
	}{
		{"seal_bad_root", "seal_bad_root", true},
		{"canonical:non_canonical", "trailing_bytes", true},
		{"canonical:non_canonical", "wrong_type", false},
		{"canonical:non_canonical", "seal_bad_root", false},
		{"wrong_type", "null", false},
		{"proof_root_mismatch", "proof_wrong_length", false},
	} {
		if sealCodeMatches(c.got, c.expect) != c.ok {
			t.Errorf("sealCodeMatches(%q, %q) = %v", c.got, c.expect, !c.ok)
		}
	}
}

func TestAProofOfTheWrongTreeSizeIsRefusedByLengthAndItsTrueSizeAccepted(t *testing.T) {
	leaves := make([][]byte, 8)
	for i := range leaves {
		leaves[i] = leafHash(sealEntry(i))
	}
	root7 := mth(leaves[:7])
	path := genPath(3, leaves[:7])
	if err := verifyInclusion(3, 7, leaves[3], path, root7); err != nil {
		t.Fatalf("PATH(3, 7): %v", err)
	}
	if err := verifyInclusion(3, 4, leaves[3], path, root7); refusalClass(err) != "proof_wrong_length" {
		t.Fatalf("PATH(3, 7) as a tree of 4: %v", err)
	}
}
