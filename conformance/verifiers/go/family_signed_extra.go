package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/fxamacker/cbor/v2"

	"jouleclaw.dev/conformance/verifiers/go/strictvec"
)

// stream-window-signed-negative-extra-vectors.json: envelopes valid in every respect but one
// strict Ed25519 rule (see ed25519strict.go). Each must be refused by that rule; the file also
// records what crypto/ed25519.Verify alone does, and that is checked too.
func init() {
	register(Family{Order: 50, File: strictvec.File, Check: checkSignedExtraFile, Counts: true})
}

func checkSignedExtraFile(rep *Report, _ string, path string) {
	name := filepath.Base(path)
	var doc strictvec.Doc
	if !loadInto(rep, name, path, &doc) {
		return
	}
	checkNotEmpty(rep, name, len(doc.Cases), "cases")
	for _, c := range doc.Cases {
		rep.Check(fmt.Sprintf("%s #%d %s", name, c.N, c.Rule), func() (string, error) {
			return checkStrictCase(c)
		})
	}
}

// checkStrictCase requires the envelope to be refused by exactly the case's rule.
func checkStrictCase(c strictvec.Case) (string, error) {
	pub, err := unhex(c.PublicKeyHex)
	if err != nil {
		return "", err
	}
	data, err := unhex(c.CoseSign1Hex)
	if err != nil {
		return "", err
	}
	std, err := stdVerifyOutcome(data, pub)
	if err != nil {
		return "", err
	}
	if std != c.CryptoEd25519Verify {
		return "", refuse("mismatch", "crypto/ed25519.Verify %s it, the file says %s", std, c.CryptoEd25519Verify)
	}
	_, err = verifyCose(data, pub)
	if err == nil {
		return "", refuse("accepted", "envelope was ACCEPTED; expected refusal by rule %s", c.Rule)
	}
	var r *Refusal
	if !errors.As(err, &r) || r.Class != "signature" {
		return "", refuse("mismatch", "refused for another reason (%v); expected rule %s", err, c.Rule)
	}
	if r.Detail != (&StrictError{c.Rule}).Error() {
		return "", refuse("mismatch", "refused by %q; expected rule %s", r.Detail, c.Rule)
	}
	return fmt.Sprintf("refused by rule %s; crypto/ed25519.Verify alone %s, dalek verify_strict %s", c.Rule, std, c.DalekVerifyStrict), nil
}

// stdVerifyOutcome is what crypto/ed25519.Verify says about the envelope's signature.
func stdVerifyOutcome(data, pub []byte) (string, error) {
	item, err := cborDecodeExact(data)
	if err != nil {
		return "", err
	}
	parts, err := sign1Parts(item)
	if err != nil {
		return "", err
	}
	if len(pub) != ed25519.PublicKeySize {
		return "refuses", nil
	}
	if ed25519.Verify(ed25519.PublicKey(pub), sigStructure(parts[0], parts[2], nil), parts[3]) {
		return "accepts", nil
	}
	return "refuses", nil
}

// sign1Parts returns protected, (unprotected), payload and signature of a tagged COSE_Sign1.
func sign1Parts(item any) ([4][]byte, error) {
	var out [4][]byte
	tag, ok := item.(cbor.Tag)
	if !ok {
		return out, refuse("tag", "untagged")
	}
	body, ok := tag.Content.([]any)
	if !ok || len(body) != 4 {
		return out, refuse("structure", "not a 4-element array")
	}
	for _, i := range []int{0, 2, 3} {
		if out[i], ok = body[i].([]byte); !ok {
			return out, refuse("structure", "part %d is not a byte string", i)
		}
	}
	return out, nil
}
