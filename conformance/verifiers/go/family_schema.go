package main

import "path/filepath"

// stream-window-1.schema.json: the Go verifier applies the hand-written rules (receipt.go),
// which are stricter than the schema (id derivation, calendar); it only loads the schema file
// strictly, as the JavaScript verifier does not use it either. The Python verifier applies it.
func init() {
	register(Family{Order: 5, File: "stream-window-1.schema.json", Check: checkSchemaFile})
}

func checkSchemaFile(rep *Report, _ string, path string) {
	rep.Check(filepath.Base(path), func() (string, error) {
		if _, err := loadVectorFile(path); err != nil {
			return "", err
		}
		return "strict JSON; not applied: the Go verifier applies the hand-written rules only", nil
	})
}
