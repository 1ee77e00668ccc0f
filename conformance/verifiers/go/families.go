package main

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"lukechampine.com/blake3"
)

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

func blake3Hex(b []byte) string {
	h := blake3.Sum256(b)
	return hex.EncodeToString(h[:])
}

func expectEqual(what string, got, want any) error {
	if got != want {
		return refuse("mismatch", "%s: computed %v, file has %v", what, got, want)
	}
	return nil
}

// fieldCheck is one recomputed value beside the one the vector file holds.
type fieldCheck struct{ what, got, want string }

// expectAll is expectEqual over fieldChecks in order: the first mismatch is the refusal.
func expectAll(checks ...fieldCheck) error {
	for _, c := range checks {
		if err := expectEqual(c.what, c.got, c.want); err != nil {
			return err
		}
	}
	return nil
}

// unhex decodes a lowercase hex string from a vector file.
func unhex(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, refuse("mismatch", "malformed hex: %v", err)
	}
	return b, nil
}

// loadInto loads a vector file strictly and decodes it into v; a failure is reported once.
func loadInto(rep *Report, name, path string, v any) bool {
	data, err := loadVectorFile(path)
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		rep.Fail(name, fmt.Sprintf("cannot load: %v", err))
		return false
	}
	return true
}

// checkNotEmpty is the check `<file> load` of a file that must hold at least one item of what.
func checkNotEmpty(rep *Report, name string, n int, what string) {
	rep.Check(name+" load", func() (string, error) {
		if n == 0 {
			return "", refuse("mismatch", "no %s", what)
		}
		return "", nil
	})
}

// vectorKey is the Ed25519 key of a vector file that signs: its seed, public key and kid.
type vectorKey struct {
	SeedHex      string `json:"seed_hex"`
	PublicKeyHex string `json:"public_key_hex"`
	KidHex       string `json:"kid_hex"`
}

// loadKeyedFile loads the vector file at path into doc (loadInto) and decodes key, the doc's
// own key, once loaded (loadSeedKey); name is the file's name for the report.
func loadKeyedFile(rep *Report, path string, doc any, key *vectorKey) (name string, seed, pub []byte, ok bool) {
	name = filepath.Base(path)
	if !loadInto(rep, name, path, doc) {
		return name, nil, nil, false
	}
	seed, pub, ok = loadSeedKey(rep, name, key.SeedHex, key.PublicKeyHex)
	return name, seed, pub, ok
}

// loadSeedKey decodes a vector file's Ed25519 seed and public key; a malformed key is reported
// once as the check `<file> key`.
func loadSeedKey(rep *Report, name, seedHex, publicKeyHex string) (seed, pub []byte, ok bool) {
	seed, err1 := unhex(seedHex)
	pub, err2 := unhex(publicKeyHex)
	if err1 != nil || err2 != nil || len(seed) != ed25519.SeedSize || len(pub) != ed25519.PublicKeySize {
		rep.Fail(name+" key", "malformed key")
		return nil, nil, false
	}
	return seed, pub, true
}
