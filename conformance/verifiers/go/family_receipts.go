package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
)

// stream-window-vectors.json and stream-window-vectors-extended.json: receipts with their
// content hash.
func init() {
	register(Family{Order: 10, File: "stream-window-vectors.json", Check: checkReceiptsFile, Counts: true})
	register(Family{Order: 11, File: "stream-window-vectors-extended.json", Check: checkReceiptsFile, Counts: true})
}

type receiptsDoc struct {
	SchemaID    *string `json:"schema_id"`
	VectorCount *int    `json:"vector_count"`
	Vectors     []struct {
		N           any             `json:"n"`
		Description string          `json:"description"`
		ContentHash string          `json:"content_hash"`
		Receipt     json.RawMessage `json:"receipt"`
	} `json:"vectors"`
}

func checkReceiptsFile(rep *Report, _ string, path string) {
	name := filepath.Base(path)
	var doc receiptsDoc
	if !loadInto(rep, name, path, &doc) {
		return
	}
	rep.Check(name+" header", func() (string, error) {
		if doc.SchemaID == nil || *doc.SchemaID != schemaID {
			return "", refuse("mismatch", "schema_id is not %q", schemaID)
		}
		if doc.VectorCount == nil || *doc.VectorCount != len(doc.Vectors) {
			return "", refuse("mismatch", "vector_count is not the number of vectors (%d)", len(doc.Vectors))
		}
		if len(doc.Vectors) == 0 {
			return "", refuse("mismatch", "no vectors")
		}
		return "", nil
	})
	for _, v := range doc.Vectors {
		rep.Check(name+" "+label(v.N, v.Description), func() (string, error) {
			// The receipt as written in the vector file: its value passes the rules ...
			value, err := parseStrictJSON(v.Receipt, nil)
			if err != nil {
				return "", err
			}
			if err := checkReceipt(value); err != nil {
				return "", err
			}
			// ... its RFC 8785 bytes hash to content_hash ...
			canonical, err := canonicalJSON(v.Receipt)
			if err != nil {
				return "", err
			}
			if err := expectEqual("content_hash", blake3Hex(canonical), v.ContentHash); err != nil {
				return "", err
			}
			// ... and those bytes parse strictly, pass the rules again and re-encode to themselves.
			if _, err := checkReceiptBytes(canonical); err != nil {
				return "", err
			}
			return fmt.Sprintf("%d canonical bytes, hash ok", len(canonical)), nil
		})
	}
}
