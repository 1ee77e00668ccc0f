package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"

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
