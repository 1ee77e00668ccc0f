package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	cose "github.com/veraison/go-cose"
)

// thumbprintPrefix is the deterministic CBOR of the COSE_Key {1: 1, -1: 6, -2: h'<32 bytes>'}
// up to the key bytes (RFC 9679).
var thumbprintPrefix = []byte{0xa3, 0x01, 0x01, 0x20, 0x06, 0x21, 0x58, 0x20}

func thumbprint(pub []byte) []byte {
	h := sha256.Sum256(append(append([]byte{}, thumbprintPrefix...), pub...))
	return h[:]
}

var (
	// Strict decoding: no duplicate map keys, no indefinite lengths, valid UTF-8 text, integers
	// as int64. Shortest-form heads are checked by re-encoding (deterministic) and comparing.
	strictDec = func() cbor.DecMode {
		m, err := cbor.DecOptions{
			DupMapKey:   cbor.DupMapKeyEnforcedAPF,
			IndefLength: cbor.IndefLengthForbidden,
			IntDec:      cbor.IntDecConvertSignedOrFail,
			UTF8:        cbor.UTF8RejectInvalid,
		}.DecMode()
		if err != nil {
			panic(err)
		}
		return m
	}()
	detEnc = func() cbor.EncMode {
		m, err := cbor.CoreDetEncOptions().EncMode()
		if err != nil {
			panic(err)
		}
		return m
	}()
)

// cborDecodeExact decodes exactly one CBOR item (trailing bytes are refused).
func cborDecodeExact(data []byte) (any, error) {
	var v any
	rest, err := strictDec.UnmarshalFirst(data, &v)
	if err != nil {
		return nil, refuse("cbor", "malformed CBOR: %v", err)
	}
	if len(rest) != 0 {
		return nil, refuse("cbor", "%d trailing bytes after the CBOR item", len(rest))
	}
	return v, nil
}

// sigStructure is ["Signature1", protected, external_aad, payload] in deterministic CBOR.
func sigStructure(protected, payload, aad []byte) []byte {
	if aad == nil {
		aad = []byte{}
	}
	b, err := detEnc.Marshal([]any{"Signature1", protected, aad, payload})
	if err != nil {
		panic(err)
	}
	return b
}

// protectedHeader builds the profile's protected header with go-cose (deterministic encoding).
func protectedHeader(kid []byte, steward, id string) ([]byte, error) {
	h := cose.ProtectedHeader{
		cose.HeaderLabelAlgorithm:   cose.AlgorithmEdDSA,
		cose.HeaderLabelContentType: contentType,
		cose.HeaderLabelKeyID:       kid,
		cose.HeaderLabelCWTClaims:   cose.CWTClaims{int64(1): steward, int64(2): id},
	}
	b, err := h.MarshalCBOR()
	if err != nil {
		return nil, err
	}
	// MarshalCBOR returns the bstr that wraps the map; the profile's bytes are its content.
	var inner []byte
	if err := cbor.Unmarshal(b, &inner); err != nil {
		return nil, err
	}
	return inner, nil
}

func asInt(v any) (int64, bool) { i, ok := v.(int64); return i, ok }

// verifyCose verifies a stream-window/1 COSE_Sign1 against a public key and returns the
// receipt. The profile checks are made here on the decoded CBOR; the signature is verified
// with the strict Ed25519 rules and again through go-cose's Sign1Message and Ed25519 verifier.
func verifyCose(data, pub []byte) (map[string]any, error) {
	item, err := cborDecodeExact(data)
	if err != nil {
		return nil, err
	}
	tag, ok := item.(cbor.Tag)
	if !ok {
		return nil, refuse("tag", "untagged COSE_Sign1 (tag 18 required)")
	}
	if tag.Number != cose.CBORTagSign1Message {
		return nil, refuse("tag", "CBOR tag %d, expected 18", tag.Number)
	}
	body, ok := tag.Content.([]any)
	if !ok || len(body) != 4 {
		return nil, refuse("structure", "COSE_Sign1 is not a 4-element array")
	}
	prot, ok1 := body[0].([]byte)
	payload, ok2 := body[2].([]byte)
	sig, ok3 := body[3].([]byte)
	if !ok1 || !ok2 || !ok3 {
		return nil, refuse("structure", "protected, payload and signature must be byte strings")
	}
	unprot, ok := body[1].(map[any]any)
	if !ok {
		return nil, refuse("structure", "unprotected header is not a map")
	}
	again, err := detEnc.Marshal(tag)
	if err != nil || !bytes.Equal(again, data) {
		return nil, refuse("cbor", "envelope is not in deterministic CBOR encoding")
	}
	if len(unprot) != 0 {
		return nil, refuse("header", "unprotected header not empty (%d labels)", len(unprot))
	}
	if len(sig) != 64 {
		return nil, refuse("structure", "signature is %d bytes, expected 64", len(sig))
	}
	hv, err := cborDecodeExact(prot)
	if err != nil {
		return nil, err
	}
	hdr, ok := hv.(map[any]any)
	if !ok {
		return nil, refuse("header", "protected header is not a map")
	}
	if _, crit := hdr[int64(2)]; crit {
		return nil, refuse("header", "crit (label 2) present")
	}
	if alg, ok := asInt(hdr[int64(1)]); !ok || alg != -8 {
		return nil, refuse("header", "alg %v, expected -8 (EdDSA)", hdr[int64(1)])
	}
	for l := range hdr {
		if i, ok := asInt(l); !ok || (i != 1 && i != 3 && i != 4 && i != 15) {
			return nil, refuse("header", "protected label %v, expected only 1, 3, 4, 15", l)
		}
	}
	if len(hdr) != 4 {
		return nil, refuse("header", "protected labels: %d, expected 1, 3, 4, 15", len(hdr))
	}
	if ct, ok := hdr[int64(3)].(string); !ok || ct != contentType {
		return nil, refuse("header", "content type %v", hdr[int64(3)])
	}
	kid, iss, sub, err := headerIdentity(hdr, refuse("header", "kid is not a 32-byte string"),
		refuse("header", "CWT claims must be {1: iss, 2: sub} text"))
	if err != nil {
		return nil, err
	}
	// The received bytes must be exactly the profile's encoding of these values (label order,
	// shortest heads): rebuilt with go-cose and compared.
	want, err := protectedHeader(kid, iss, sub)
	if err != nil || !bytes.Equal(want, prot) {
		return nil, refuse("header", "protected header is not in deterministic CBOR encoding")
	}
	if !bytes.Equal(kid, thumbprint(pub)) {
		return nil, refuse("kid", "kid is not the RFC 9679 thumbprint of the verification key")
	}
	// Signature: the strict rules and crypto/ed25519 on the Sig_structure built from the
	// received protected bytes ...
	if err := ed25519VerifyStrict(pub, sigStructure(prot, payload, nil), sig); err != nil {
		return nil, err
	}
	// ... and through go-cose on the received envelope.
	if err := goCoseVerify(data, pub); err != nil {
		return nil, refuse("signature", "go-cose: %v", err)
	}
	receipt, err := checkReceiptBytes(payload)
	if err != nil {
		cls := refusalClass(err)
		return nil, refuse("payload:"+cls, "%v", err)
	}
	if iss != receipt["steward"] {
		return nil, refuse("claims", "CWT iss does not equal the receipt steward")
	}
	if sub != receipt["id"] {
		return nil, refuse("claims", "CWT sub does not equal the receipt id")
	}
	return receipt, nil
}

// goCoseVerify decodes a tagged COSE_Sign1 with go-cose and verifies it with its EdDSA verifier.
func goCoseVerify(data, pub []byte) error {
	var msg cose.Sign1Message
	if err := msg.UnmarshalCBOR(data); err != nil {
		return err
	}
	verifier, err := cose.NewVerifier(cose.AlgorithmEdDSA, ed25519.PublicKey(pub))
	if err != nil {
		return err
	}
	return msg.Verify(nil, verifier)
}

// signProfile builds, signs and encodes a COSE_Sign1 with go-cose: protected header, empty
// unprotected header, the payload attached.
func signProfile(seed, payload []byte, steward, id string) (prot, tbs, sig, envelope []byte, err error) {
	key := ed25519.NewKeyFromSeed(seed)
	pub := key.Public().(ed25519.PublicKey)
	signer, err := cose.NewSigner(cose.AlgorithmEdDSA, key)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	msg := cose.NewSign1Message()
	msg.Headers.Protected.SetAlgorithm(cose.AlgorithmEdDSA)
	msg.Headers.Protected[cose.HeaderLabelContentType] = contentType
	msg.Headers.Protected[cose.HeaderLabelKeyID] = thumbprint(pub)
	msg.Headers.Protected[cose.HeaderLabelCWTClaims] = cose.CWTClaims{int64(1): steward, int64(2): id}
	msg.Payload = payload
	if err := msg.Sign(nil, nil, signer); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("go-cose sign: %w", err)
	}
	envelope, err = msg.MarshalCBOR()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	prot, err = protectedHeader(thumbprint(pub), steward, id)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return prot, sigStructure(prot, payload, nil), msg.Signature, envelope, nil
}

// headerIdentity is a protected header's kid (label 4), which must be a 32-byte string, else
// badKid, and its CWT claims (label 15), which must be a map of exactly {1: iss, 2: sub}, both
// text, else badClaims.
func headerIdentity(hdr map[any]any, badKid, badClaims error) (kid []byte, iss, sub string, err error) {
	kid, ok := hdr[int64(4)].([]byte)
	if !ok || len(kid) != 32 {
		return nil, "", "", badKid
	}
	claims, ok := hdr[int64(15)].(map[any]any)
	iss, okIss := claims[int64(1)].(string)
	sub, okSub := claims[int64(2)].(string)
	if !ok || len(claims) != 2 || !okIss || !okSub {
		return nil, "", "", badClaims
	}
	return kid, iss, sub, nil
}
