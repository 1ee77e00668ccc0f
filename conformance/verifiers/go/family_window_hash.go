package main

import "path/filepath"

// stream-window-hash-vectors.json: canonical window JSON and its BLAKE3 window_hash.
func init() {
	register(Family{Order: 20, File: "stream-window-hash-vectors.json", Check: checkWindowHashFile, Counts: true})
}

func checkWindowHashFile(rep *Report, _ string, path string) {
	name := filepath.Base(path)
	var doc struct {
		Vectors []struct {
			N             any    `json:"n"`
			Description   string `json:"description"`
			CanonicalJSON string `json:"canonical_json"`
			WindowHash    string `json:"window_hash"`
		} `json:"vectors"`
	}
	if !loadInto(rep, name, path, &doc) {
		return
	}
	checkNotEmpty(rep, name, len(doc.Vectors), "vectors")
	for _, v := range doc.Vectors {
		rep.Check(name+" "+label(v.N, v.Description), func() (string, error) {
			data := []byte(v.CanonicalJSON)
			if _, err := parseJCR1(data, nil); err != nil { // re-canonicalizes, requires byte equality
				return "", err
			}
			if !hex64.MatchString(v.WindowHash) {
				return "", refuse("mismatch", "window_hash is not 64 lowercase hex")
			}
			return "", expectEqual("window_hash", blake3Hex(data), v.WindowHash)
		})
	}
}
