package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"lukechampine.com/blake3"
)

// The signed documents of stop-latency/1 (spec/STOP-LATENCY-V1.md sections 5 to 7) and
// interaction-metrics/1 (spec/INTERACTION-METRICS-V1.md sections 5 and 6, the same COSE_Sign1
// profile with its own content type and subject): the envelope checks, the first binding
// problems and the vector-file checks both families share.

// signedDocProtected is the canonical protected header of a signed document of content type ct.
func signedDocProtected(ct, steward, subject string, kid []byte) []byte {
	return slCat([]byte{0xa4, 0x01, 0x27, 0x03}, slTstr(ct), []byte{0x04}, slBstr(kid),
		[]byte{0x0f, 0xa2, 0x01}, slTstr(steward), []byte{0x02}, slTstr(subject))
}

// openSignedDoc runs the COSE_Sign1 checks (stop-latency/1 section 6, in order) up to and with
// the strict signature; it returns the payload and the CWT claims iss and sub, which the caller
// checks against the decoded document.
func openSignedDoc(data, pub []byte, maxSigned int, ct string) (payload []byte, iss, sub string, err error) {
	if len(data) > maxSigned {
		return nil, "", "", refuse("cose_too_large", "%d bytes", len(data))
	}
	switch {
	case len(data) == 0:
		return nil, "", "", refuse("cose_malformed", "empty")
	case data[0] == 0x84:
		return nil, "", "", refuse("cose_untagged", "untagged COSE_Sign1")
	case data[0] != 0xd2 && data[0]>>5 == 6:
		return nil, "", "", refuse("cose_wrong_tag", "not tag 18")
	case data[0] != 0xd2:
		return nil, "", "", refuse("cose_malformed", "not a COSE_Sign1")
	}
	item, err := cborDecodeExact(data)
	if err != nil {
		return nil, "", "", refuse("cose_malformed", "%v", err)
	}
	tag, ok := item.(cbor.Tag)
	body, ok2 := tag.Content.([]any)
	if !ok || tag.Number != 18 || !ok2 || len(body) != 4 {
		return nil, "", "", refuse("cose_malformed", "not a COSE_Sign1")
	}
	prot, ok1 := body[0].([]byte)
	unprot, ok2 := body[1].(map[any]any)
	sig, ok3 := body[3].([]byte)
	if !ok1 || !ok2 || !ok3 {
		return nil, "", "", refuse("cose_malformed", "wrong item types")
	}
	if body[2] == nil {
		return nil, "", "", refuse("cose_payload_detached", "detached payload")
	}
	payload, ok = body[2].([]byte)
	if !ok {
		return nil, "", "", refuse("cose_malformed", "payload")
	}
	if len(unprot) != 0 {
		return nil, "", "", refuse("cose_unprotected_not_empty", "unprotected header")
	}
	hv, err := cborDecodeExact(prot)
	if err != nil {
		return nil, "", "", refuse("cose_malformed", "%v", err)
	}
	hdr, ok := hv.(map[any]any)
	if !ok {
		return nil, "", "", refuse("cose_malformed", "protected header")
	}
	if a, ok := asInt(hdr[int64(1)]); !ok || a != -8 {
		return nil, "", "", refuse("cose_alg_not_eddsa", "alg")
	}
	if got, _ := hdr[int64(3)].(string); got != ct {
		return nil, "", "", refuse("cose_content_type_mismatch", "content type %v", hdr[int64(3)])
	}
	kid, iss, sub, err := headerIdentity(hdr, refuse("cose_bad_kid", "kid"), refuse("cose_bad_cwt_claims", "CWT claims"))
	if err != nil {
		return nil, "", "", err
	}
	if !bytes.Equal(signedDocProtected(ct, iss, sub, kid), prot) {
		return nil, "", "", refuse("cose_protected_not_canonical", "protected bytes")
	}
	if len(sig) != 64 || !bytes.Equal(slEnvelope(prot, payload, sig), data) {
		return nil, "", "", refuse("cose_envelope_not_canonical", "envelope bytes")
	}
	if !bytes.Equal(kid, thumbprint(pub)) {
		return nil, "", "", refuse("cose_unknown_kid", "kid")
	}
	if err := ed25519VerifyStrict(pub, slSigStructure(prot, payload), sig); err != nil {
		return nil, "", "", refuse("cose_bad_signature", "%v", err)
	}
	return payload, iss, sub, nil
}

// checkSignedDocClaims checks iss and sub against the decoded document's steward and stream_id
// (the subject is `<stream_id>:<kind>`).
func checkSignedDocClaims(iss, sub string, obj map[string]any, kind string) error {
	if iss != obj["steward"] {
		return refuse("cose_iss_mismatch", "iss %q", iss)
	}
	if sub != obj["stream_id"].(string)+":"+kind {
		return refuse("cose_sub_mismatch", "sub %q", sub)
	}
	return nil
}

// signedDocBinding decodes the receipts' canonical lines and returns the first binding problems
// both families share, in order: stream_mismatch, window_count_mismatch, root_mismatch.
func signedDocBinding(obj map[string]any, lines []string) ([]slReceipt, []string, error) {
	var out []string
	receipts := make([]slReceipt, len(lines))
	leaves := make([][]byte, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &receipts[i]); err != nil {
			return nil, nil, err
		}
		h := blake3.Sum256([]byte(l))
		leaves[i] = leafHash(h[:])
	}
	for _, r := range receipts {
		if r.Steward != obj["steward"] || r.StreamID != obj["stream_id"] {
			out = append(out, "stream_mismatch")
			break
		}
	}
	if n, _ := voiceInt(obj["window_count"]); n != int64(len(receipts)) {
		out = append(out, "window_count_mismatch")
	}
	if hex.EncodeToString(mth(leaves)) != obj["receipts_root"] {
		out = append(out, "root_mismatch")
	}
	return receipts, out, nil
}

// signedDocVector is what every document vector of both families holds.
type signedDocVector struct {
	N            any      `json:"n"`
	Description  string   `json:"description"`
	Receipts     []string `json:"receipts"`
	Canonical    string   `json:"canonical"`
	ContentHash  string   `json:"content_hash"`
	ReceiptsRoot string   `json:"receipts_root"`
	ProtectedHex string   `json:"protected_hex"`
	TbsHex       string   `json:"to_be_signed_hex"`
	CoseHex      string   `json:"cose_sign1_hex"`
}

// negativeInput is a must-refuse input of a vector file (stream-window/1, stop-latency/1,
// interaction-metrics/1, voice-turn/1): its bytes and the refusal code the file expects.
type negativeInput struct {
	N             any    `json:"n"`
	Description   string `json:"description"`
	InputHex      string `json:"input_hex"`
	ExpectRefusal string `json:"expect_refusal"`
}

// signedDocFile is a vector file of either family; D is the family's document vector.
type signedDocFile[D any] struct {
	Schema      string          `json:"schema"`
	ContentType string          `json:"content_type"`
	DeadlineNs  int64           `json:"deadline_ns"`
	PublicKey   string          `json:"public_key"`
	Kid         string          `json:"kid"`
	Documents   []D             `json:"documents"`
	Negative    []negativeInput `json:"negative"`
	Tampered    []struct {
		N             any      `json:"n"`
		Description   string   `json:"description"`
		CoseHex       string   `json:"cose_sign1_hex"`
		Receipts      []string `json:"receipts"`
		ExpectRefusal string   `json:"expect_refusal"`
	} `json:"tampered"`
}

// checkLoad is the check `<file> load`: the header is the family's and its key is the kid's.
func (doc *signedDocFile[D]) checkLoad(rep *Report, name, schema, ct string, deadline int64) []byte {
	var pub []byte
	rep.Check(name+" load", func() (string, error) {
		for _, e := range []error{
			expectEqual("schema", doc.Schema, schema),
			expectEqual("content_type", doc.ContentType, ct),
			expectEqual("deadline_ns", doc.DeadlineNs, deadline),
		} {
			if e != nil {
				return "", e
			}
		}
		var err error
		if pub, err = unhex(doc.PublicKey); err != nil {
			return "", err
		}
		if len(doc.Documents) == 0 || len(doc.Negative) == 0 || len(doc.Tampered) == 0 {
			return "", refuse("mismatch", "documents, negative and tampered must each hold vectors")
		}
		return "", expectEqual("kid", hex.EncodeToString(thumbprint(pub)), doc.Kid)
	})
	return pub
}

// checkSignedBytes rebuilds a document vector's protected header, Sig_structure and envelope
// byte for byte and compares its receipts root; it returns the signed bytes.
func checkSignedBytes(v *signedDocVector, pub, data []byte, ct, subject string, obj map[string]any) ([]byte, error) {
	prot := signedDocProtected(ct, obj["steward"].(string), subject, thumbprint(pub))
	signed, err := unhex(v.CoseHex)
	if err != nil || len(signed) < 64 {
		return nil, refuse("mismatch", "cose_sign1_hex")
	}
	for _, e := range []error{
		expectEqual("protected", hex.EncodeToString(prot), v.ProtectedHex),
		expectEqual("to_be_signed", hex.EncodeToString(slSigStructure(prot, data)), v.TbsHex),
		expectEqual("envelope", hex.EncodeToString(slEnvelope(prot, data, signed[len(signed)-64:])), v.CoseHex),
		expectEqual("receipts_root", obj["receipts_root"], v.ReceiptsRoot),
	} {
		if e != nil {
			return nil, e
		}
	}
	return signed, nil
}

// noBindingProblems fails a document vector that is not bound to its receipts.
func noBindingProblems(problems []string, err error) error {
	if err != nil {
		return err
	}
	if len(problems) != 0 {
		return refuse("mismatch", "binding problems %v", problems)
	}
	return nil
}

// checkRefusals checks the negative inputs (refused by decode, with the spec's code when it is
// one of codes) and the tampered documents (refused by verify, or bound with the expected first
// problem by the binding verify returns).
func (doc *signedDocFile[D]) checkRefusals(rep *Report, name string, pub []byte, decode func([]byte) error,
	codes map[string]bool, verify func([]byte, []byte) (func([]string) ([]string, error), error)) {
	for _, c := range doc.Negative {
		rep.Check(fmt.Sprintf("%s negative %s (%s)", name, label(c.N, c.Description), c.ExpectRefusal), func() (string, error) {
			data, err := unhex(c.InputHex)
			if err != nil {
				return "", err
			}
			if err := decode(data); err == nil {
				return "", refuse("accepted", "input was ACCEPTED; expected refusal %s", c.ExpectRefusal)
			} else if cls := refusalClass(err); codes[c.ExpectRefusal] && cls != c.ExpectRefusal {
				return "", refuse("mismatch", "refused with %s (%v); the spec's rule order gives %s", cls, err, c.ExpectRefusal)
			} else {
				return "refused [" + cls + "]", nil
			}
		})
	}
	for _, c := range doc.Tampered {
		rep.Check(fmt.Sprintf("%s tampered %s (%s)", name, label(c.N, c.Description), c.ExpectRefusal), func() (string, error) {
			data, err := unhex(c.CoseHex)
			if err != nil {
				return "", err
			}
			bind, err := verify(data, pub)
			if err != nil {
				return "refused [" + refusalClass(err) + "]", nil
			}
			problems, err := bind(c.Receipts)
			if err != nil {
				return "", err
			}
			if len(problems) == 0 {
				return "", refuse("accepted", "a tampered document was ACCEPTED")
			}
			return "refused [" + problems[0] + "]", expectEqual("first binding problem", problems[0], c.ExpectRefusal)
		})
	}
}
