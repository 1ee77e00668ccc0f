package main

import (
	"fmt"
	"path/filepath"
)

// stream-window-negative-vectors.json: byte strings the receipt decoder must refuse.
func init() {
	register(Family{Order: 30, File: "stream-window-negative-vectors.json", Check: checkNegativeFile, Counts: true})
}

func checkNegativeFile(rep *Report, _ string, path string) {
	name := filepath.Base(path)
	var doc struct {
		Cases []negativeInput `json:"cases"`
	}
	if !loadInto(rep, name, path, &doc) {
		return
	}
	checkNotEmpty(rep, name, len(doc.Cases), "cases")
	for _, c := range doc.Cases {
		rep.Check(name+" "+label(c.N, c.Description), func() (string, error) {
			input, err := unhex(c.InputHex)
			if err != nil {
				return "", err
			}
			if _, err := checkReceiptBytes(input); err != nil {
				if cls := refusalClass(err); cls != "" {
					return fmt.Sprintf("refused [%s], rust code %s", cls, c.ExpectRefusal), nil
				}
				return "", err
			}
			return "", refuse("accepted", "input was ACCEPTED; expected refusal %s", c.ExpectRefusal)
		})
	}
}
