package main

// Vector families announced by the project whose files do not exist yet. Each is listed so
// that its absence is printed (`skip ... absent`) and its arrival without a Go checker is a
// FAIL, never silence. To add the checker, write family_<name>.go with an init() that
// registers the family with its Check function, and delete its line here.
func init() {
	for i, f := range []string{
		"structured-output-vectors.json", // schemas, chunked documents, outcome, code, offset and path
	} {
		register(Family{Order: 100 + i, File: f})
	}
}
