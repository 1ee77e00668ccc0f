package main

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
)

// stream-window-signed-vectors.json: the test key, COSE_Sign1 vectors with every
// intermediate, and negative envelopes.
func init() {
	register(Family{Order: 40, File: "stream-window-signed-vectors.json", Check: checkSignedFile, Counts: true})
}

type signedDoc struct {
	Key     vectorKey `json:"key"`
	Vectors []struct {
		N             any    `json:"n"`
		Description   string `json:"description"`
		ContentHash   string `json:"content_hash"`
		PayloadHex    string `json:"payload_hex"`
		ProtectedHex  string `json:"protected_hex"`
		ToBeSignedHex string `json:"to_be_signed_hex"`
		SignatureHex  string `json:"signature_hex"`
		CoseSign1Hex  string `json:"cose_sign1_hex"`
	} `json:"vectors"`
	Negative []negativeEnvelope `json:"negative"`
}

type negativeEnvelope struct {
	N             any    `json:"n"`
	Description   string `json:"description"`
	CoseSign1Hex  string `json:"cose_sign1_hex"`
	ExpectRefusal string `json:"expect_refusal"`
}

func checkSignedFile(rep *Report, _ string, path string) {
	var doc signedDoc
	name, seed, pub, ok := loadKeyedFile(rep, path, &doc, &doc.Key)
	if !ok {
		return
	}
	rep.Check(name+" key", func() (string, error) {
		derived := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
		if err := expectEqual("public key from seed", hex.EncodeToString(derived), doc.Key.PublicKeyHex); err != nil {
			return "", err
		}
		if err := expectEqual("kid (RFC 9679 thumbprint)", hex.EncodeToString(thumbprint(pub)), doc.Key.KidHex); err != nil {
			return "", err
		}
		if len(doc.Vectors) == 0 {
			return "", refuse("mismatch", "no signed vectors")
		}
		return "", nil
	})
	for _, v := range doc.Vectors {
		rep.Check(name+" "+label(v.N, v.Description), func() (string, error) {
			payload, err := unhex(v.PayloadHex)
			if err != nil {
				return "", err
			}
			if err := expectEqual("content_hash", blake3Hex(payload), v.ContentHash); err != nil {
				return "", err
			}
			receipt, err := checkReceiptBytes(payload)
			if err != nil {
				return "", err
			}
			// Rebuild every intermediate with go-cose from the receipt and the test seed.
			prot, tbs, sig, envelope, err := signProfile(seed, payload, receipt["steward"].(string), receipt["id"].(string))
			if err != nil {
				return "", err
			}
			if err := expectAll([]fieldCheck{
				{"protected_hex", hex.EncodeToString(prot), v.ProtectedHex},
				{"to_be_signed_hex", hex.EncodeToString(tbs), v.ToBeSignedHex},
				{"signature_hex (recomputed from the test key)", hex.EncodeToString(sig), v.SignatureHex},
				{"signature over to_be_signed (crypto/ed25519)", hex.EncodeToString(ed25519.Sign(ed25519.NewKeyFromSeed(seed), tbs)), v.SignatureHex},
				{"cose_sign1_hex", hex.EncodeToString(envelope), v.CoseSign1Hex},
			}...); err != nil {
				return "", err
			}
			data, err := unhex(v.CoseSign1Hex)
			if err != nil {
				return "", err
			}
			if _, err := verifyCose(data, pub); err != nil {
				return "", err
			}
			return "recomputed bytes equal; strict Ed25519 + go-cose verify", nil
		})
	}
	for _, c := range doc.Negative {
		checkNegativeEnvelope(rep, name+" negative", c, pub, "")
	}
}

// checkNegativeEnvelope requires verifyCose to refuse the envelope (with wantClass, if given).
func checkNegativeEnvelope(rep *Report, prefix string, c negativeEnvelope, pub []byte, wantDetail string) {
	d := []rune(c.Description)
	if len(d) > 40 {
		d = d[:40]
	}
	rep.Check(fmt.Sprintf("%s #%v %s", prefix, c.N, string(d)), func() (string, error) {
		data, err := unhex(c.CoseSign1Hex)
		if err != nil {
			return "", err
		}
		_, err = verifyCose(data, pub)
		if err == nil {
			return "", refuse("accepted", "envelope was ACCEPTED; expected refusal %s", c.ExpectRefusal)
		}
		cls := refusalClass(err)
		if cls == "" {
			return "", err
		}
		if wantDetail != "" && err.Error() != wantDetail {
			return "", refuse("mismatch", "refused for another reason: %v; expected %s", err, wantDetail)
		}
		return fmt.Sprintf("refused [%s], rust code %s", cls, c.ExpectRefusal), nil
	})
}
