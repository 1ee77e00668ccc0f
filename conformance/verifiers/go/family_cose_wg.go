package main

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fxamacker/cbor/v2"
	cose "github.com/veraison/go-cose"
)

// cose-wg/*.json: the cose-wg Examples (public domain), verified as generic COSE_Sign1: the tag
// is optional, alg may sit in either bucket, the external AAD comes from the example.
// eddsa-sig-01 verifies (and its signature is recomputed from d), the sign-pass-* (ES256)
// verify, every "fail": true example is refused.

type coseWgCase struct {
	Title string `json:"title"`
	Fail  bool   `json:"fail"`
	Input struct {
		Sign0 struct {
			Key struct {
				Crv  string `json:"crv"`
				XHex string `json:"x_hex"`
				DHex string `json:"d_hex"`
				X    string `json:"x"`
				Y    string `json:"y"`
			} `json:"key"`
			External string `json:"external"`
		} `json:"sign0"`
	} `json:"input"`
	Intermediates struct {
		ToBeSignHex string `json:"ToBeSign_hex"`
	} `json:"intermediates"`
	Output struct {
		CBOR string `json:"cbor"`
	} `json:"output"`
}

func coseWgFiles(dir string) []string {
	entries, err := os.ReadDir(filepath.Join(dir, "cose-wg"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

func runCoseWg(rep *Report, dir string, files []string) {
	for _, f := range files {
		path := filepath.Join(dir, "cose-wg", f)
		rep.Check("cose-wg/"+f, func() (string, error) {
			data, err := loadVectorFile(path)
			if err != nil {
				return "", err
			}
			var c coseWgCase
			if err := json.Unmarshal(data, &c); err != nil {
				return "", err
			}
			err = verifyCoseWg(&c)
			if err != nil {
				if c.Fail && refusalClass(err) != "" {
					return "refused as expected [" + refusalClass(err) + "]", nil
				}
				return "", err
			}
			if c.Fail {
				return "", refuse("accepted", "example marked fail was ACCEPTED")
			}
			return "verifies", nil
		})
	}
}

func b64url(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }

func verifyCoseWg(c *coseWgCase) error {
	key := c.Input.Sign0.Key
	aad, err := hex.DecodeString(c.Input.Sign0.External)
	if err != nil {
		return err
	}
	data, err := hex.DecodeString(strings.ToLower(c.Output.CBOR))
	if err != nil {
		return err
	}
	item, err := cborDecodeExact(data)
	if err != nil {
		return err
	}
	tagged := false
	if tag, ok := item.(cbor.Tag); ok {
		if tag.Number != cose.CBORTagSign1Message {
			return refuse("tag", "CBOR tag %d, expected 18", tag.Number)
		}
		item, tagged = tag.Content, true
	}
	body, ok := item.([]any)
	if !ok || len(body) != 4 {
		return refuse("structure", "not a 4-element array")
	}
	prot, ok1 := body[0].([]byte)
	unprot, ok2 := body[1].(map[any]any)
	payload, ok3 := body[2].([]byte)
	sig, ok4 := body[3].([]byte)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return refuse("structure", "COSE_Sign1 parts of the wrong types")
	}
	hdr := map[any]any{}
	if len(prot) > 0 {
		hv, err := cborDecodeExact(prot)
		if err != nil {
			return err
		}
		if hdr, ok = hv.(map[any]any); !ok {
			return refuse("header", "protected header is not a map")
		}
	}
	alg, inProt := hdr[int64(1)]
	if !inProt {
		alg = unprot[int64(1)]
	}
	// cose-wg (sign-pass-01) signs an empty protected map as h'' even when it travels as
	// h'a0'. The stream-window/1 profile never has an empty protected header.
	signedProt := prot
	if len(hdr) == 0 {
		signedProt = []byte{}
	}
	tbs := sigStructure(signedProt, payload, aad)
	// The intermediates of a "fail" example describe the message before it was altered.
	if c.Intermediates.ToBeSignHex != "" && !c.Fail {
		want, err := hex.DecodeString(strings.ToLower(c.Intermediates.ToBeSignHex))
		if err != nil || !bytes.Equal(want, tbs) {
			return refuse("structure", "Sig_structure differs from the example's ToBeSign")
		}
	}
	a, _ := asInt(alg)
	switch {
	case a == -8 && key.Crv == "Ed25519":
		x, err := hex.DecodeString(key.XHex)
		if err != nil {
			return err
		}
		if err := ed25519VerifyStrict(x, tbs, sig); err != nil {
			return err
		}
		if key.DHex != "" && !c.Fail {
			d, err := hex.DecodeString(key.DHex)
			if err != nil || len(d) != ed25519.SeedSize {
				return refuse("mismatch", "malformed d")
			}
			if !bytes.Equal(ed25519.Sign(ed25519.NewKeyFromSeed(d), tbs), sig) {
				return refuse("signature", "signature recomputed from d differs (Ed25519 is deterministic)")
			}
		}
		verifier, err := cose.NewVerifier(cose.AlgorithmEdDSA, ed25519.PublicKey(x))
		if err != nil {
			return err
		}
		return goCoseVerifyGeneric(data, tagged, aad, verifier)
	case a == -7 && key.Crv == "P-256":
		x, err1 := b64url(key.X)
		y, err2 := b64url(key.Y)
		if err1 != nil || err2 != nil {
			return refuse("mismatch", "malformed P-256 key")
		}
		point := append(append([]byte{4}, x...), y...)
		if _, err := ecdh.P256().NewPublicKey(point); err != nil {
			return refuse("mismatch", "P-256 key is not a curve point")
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
		if err != nil {
			return refuse("mismatch", "P-256 key: %v", err)
		}
		if len(sig) != 64 {
			return refuse("signature", "ES256 signature is %d bytes", len(sig))
		}
		h := sha256.Sum256(tbs)
		if !ecdsa.Verify(pub, h[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
			return refuse("signature", "ES256 signature does not verify")
		}
		if len(hdr) == 0 {
			// go-cose signs the protected bytes as received (h'a0'), not h'': it cannot verify
			// this example; crypto/ecdsa above did, over the Sig_structure cose-wg specifies.
			return nil
		}
		verifier, err := cose.NewVerifier(cose.AlgorithmES256, pub)
		if err != nil {
			return err
		}
		return goCoseVerifyGeneric(data, tagged, aad, verifier)
	default:
		return refuse("header", "unsupported alg %v", alg)
	}
}

// goCoseVerifyGeneric decodes the example with go-cose (tagged or untagged) and verifies it.
func goCoseVerifyGeneric(data []byte, tagged bool, aad []byte, verifier cose.Verifier) error {
	var err error
	if tagged {
		var msg cose.Sign1Message
		if err = msg.UnmarshalCBOR(data); err == nil {
			err = msg.Verify(aad, verifier)
		}
	} else {
		var msg cose.UntaggedSign1Message
		if err = msg.UnmarshalCBOR(data); err == nil {
			err = msg.Verify(aad, verifier)
		}
	}
	if err != nil {
		return refuse("signature", "go-cose: %v", err)
	}
	return nil
}
