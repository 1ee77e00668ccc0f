package main

// stream-seal/1 (spec/STREAM-SEAL.md): RFC 9162 trees and proofs with crypto/sha256, the seal
// decoder (JCR-1 canonical form with github.com/gowebpki/jcs, then the schema), RFC 9942
// checkpoints and inclusion receipts decoded with github.com/fxamacker/cbor/v2, signatures
// checked with the strict Ed25519 rules of ed25519strict.go and again through go-cose with the
// root as the detached payload, and the completeness checker of section 6. Refusals carry the
// Rust code as their class.

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"

	"github.com/fxamacker/cbor/v2"
	cose "github.com/veraison/go-cose"
)

const (
	sealSchemaID   = "stream-seal/1"
	sealSchemaIDV2 = "stream-seal/2"
	// maxSealedDocuments and maxDocumentKindBytes bound stream-seal/2's documents (section 3.2).
	maxSealedDocuments   = 16
	maxDocumentKindBytes = 64
	vdsLabel             = 395
	vdpLabel             = 396
	sealDocLabel         = -65537
	inclusionProofs      = -1
	consistencyProof     = -2
	maxNamedGaps         = 1024
)

var sealLimits = &Limits{DocumentBytes: 16_384, Depth: 2, StringBytes: 4_096, ArrayLen: 64}

type sealField struct{ name, ty string }

// sealFields in canonical order; the decoder checks them in this order.
var sealFields = []sealField{
	{"closed_at", "datetime"}, {"empty_windows_skipped", "uint"}, {"final", "bool"},
	{"first_window_id", "uint"}, {"last_window_id", "uint"}, {"root", "hex64"},
	{"schema", "schema"}, {"steward", "text"}, {"stream_id", "text"}, {"tree_size", "uint"},
}

// sealSchemaCodes are the codes the seal schema gives itself; any other refusal of a seal
// document is a canonical-form one (class "canonical:<kind>").
var sealSchemaCodes = map[string]bool{
	"wrong_type": true, "null": true, "unknown_field": true, "missing_field": true, "empty_string": true,
	"negative_unsigned": true, "bad_closed_at": true, "seal_wrong_schema": true, "seal_bad_root": true,
	"seal_tree_size_zero": true, "seal_window_range_reversed": true, "seal_window_count_mismatch": true,
	"seal_bad_document_kind": true, "seal_bad_document_digest": true, "seal_too_many_documents": true,
	"seal_documents_not_final": true,
}

// documentKind is name/version (section 3.2); the 64-byte bound is checked beside it.
var documentKind = regexp.MustCompile(`^[a-z][a-z0-9-]*/[1-9][0-9]*$`)

func isDocumentKind(k string) bool {
	return len(k) <= maxDocumentKindBytes && documentKind.MatchString(k)
}

// documentDigest is what a stream-seal/2 seal commits to for one document: the SHA-256 of its
// COSE_Sign1 bytes as stored, lowercase hex.
func documentDigest(cose []byte) string {
	h := sha256.Sum256(cose)
	return hex.EncodeToString(h[:])
}

// checkDocuments checks `documents` of a stream-seal/2 seal in the order of section 3.2 and
// returns it as canonical JSON.
func checkDocuments(x any) (string, error) {
	if x == nil {
		return "", refuse("null", "documents is null")
	}
	m, ok := x.(map[string]any)
	if !ok {
		return "", refuse("wrong_type", "documents is not an object")
	}
	if len(m) > maxSealedDocuments {
		return "", refuse("seal_too_many_documents", "%d documents, at most %d", len(m), maxSealedDocuments)
	}
	for _, k := range sortedKeys(m) {
		if !isDocumentKind(k) {
			return "", refuse("seal_bad_document_kind", "documents key %q is not name/version", k)
		}
		if m[k] == nil {
			return "", refuse("null", "documents[%q] is null", k)
		}
		d, ok := m[k].(string)
		if !ok {
			return "", refuse("wrong_type", "documents[%q] is not a string", k)
		}
		if !hex64.MatchString(d) {
			return "", refuse("seal_bad_document_digest", "documents[%q] is not 64 lowercase hex digits", k)
		}
	}
	b, err := json.Marshal(m)
	return string(b), err
}

// Seal is a decoded stream-seal/1 or stream-seal/2 document.
type Seal struct {
	ClosedAt                                     string
	Empty, FirstWindowID, LastWindowID, TreeSize uint64
	Final                                        bool
	Root, Schema, Steward, StreamID              string
	// Documents is stream-seal/2's `documents` as canonical JSON (kind -> SHA-256 hex), "" in a
	// stream-seal/1 seal.
	Documents string
}

// documents returns the documents a stream-seal/2 seal commits to (nil for stream-seal/1).
func (s *Seal) documents() map[string]string {
	if s.Documents == "" {
		return nil
	}
	out := map[string]string{}
	if json.Unmarshal([]byte(s.Documents), &out) != nil {
		return nil
	}
	return out
}

func (s *Seal) subject() string { return s.StreamID + ":seal:" + strconv.FormatUint(s.TreeSize, 10) }

func (s *Seal) rootBytes() []byte { b, _ := hex.DecodeString(s.Root); return b }

func sha(parts ...[]byte) []byte {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

func leafHash(entry []byte) []byte { return sha([]byte{0}, entry) }
func nodeHash(l, r []byte) []byte  { return sha([]byte{1}, l, r) }

// split is the largest power of two smaller than n (n >= 2).
func split(n uint64) uint64 {
	k := uint64(1)
	for k*2 < n {
		k *= 2
	}
	return k
}

func mth(leaves [][]byte) []byte {
	n := len(leaves)
	switch n {
	case 0:
		return sha()
	case 1:
		return leaves[0]
	}
	k := int(split(uint64(n)))
	return nodeHash(mth(leaves[:k]), mth(leaves[k:]))
}

func genPath(m int, leaves [][]byte) [][]byte {
	n := len(leaves)
	if n == 1 {
		return [][]byte{}
	}
	k := int(split(uint64(n)))
	if m < k {
		return append(genPath(m, leaves[:k]), mth(leaves[k:]))
	}
	return append(genPath(m-k, leaves[k:]), mth(leaves[:k]))
}

func genSubproof(m int, leaves [][]byte, b bool) [][]byte {
	n := len(leaves)
	if m == n {
		if b {
			return [][]byte{}
		}
		return [][]byte{mth(leaves)}
	}
	k := int(split(uint64(n)))
	if m <= k {
		return append(genSubproof(m, leaves[:k], b), mth(leaves[k:]))
	}
	return append(genSubproof(m-k, leaves[k:], false), mth(leaves[:k]))
}

func pathLen(m, n uint64) int {
	l := 0
	for n > 1 {
		k := split(n)
		if m >= k {
			m, n = m-k, n-k
		} else {
			n = k
		}
		l++
	}
	return l
}

func proofLen(m, n uint64) int {
	l, b := 0, true
	for m != n {
		k := split(n)
		if m <= k {
			n = k
		} else {
			m, n, b = m-k, n-k, false
		}
		l++
	}
	if !b {
		l++
	}
	return l
}

func proofPath(hexes []string) ([][]byte, error) {
	out := make([][]byte, 0, len(hexes))
	for _, h := range hexes {
		b, err := unhex(h)
		if err != nil {
			return nil, err
		}
		if len(b) != 32 {
			return nil, refuse("proof_bad_element", "path element of %d bytes", len(b))
		}
		out = append(out, b)
	}
	return out, nil
}

// regeneratedPath checks the regenerated values against the file (expectAll), then decodes the
// file's proof path.
func regeneratedPath(hexes []string, checks ...fieldCheck) ([][]byte, error) {
	if err := expectAll(checks...); err != nil {
		return nil, err
	}
	return proofPath(hexes)
}

// proofWalk is the walk RFC 9162 (2.1.3.2, 2.1.4.2) makes over a proof path from node indexes fn
// and sn: left(c) where c is the sibling on the left (fn odd, or fn == sn), right(c)
// otherwise; the path must end as the tree (or trees) do.
func proofWalk(fn, sn uint64, path [][]byte, trees string, left, right func(c []byte)) error {
	for _, c := range path {
		if sn == 0 {
			return refuse("proof_wrong_length", "path longer than the %s", trees)
		}
		if fn&1 == 1 || fn == sn {
			left(c)
			for fn&1 == 0 && fn != 0 {
				fn, sn = fn>>1, sn>>1
			}
		} else {
			right(c)
		}
		fn, sn = fn>>1, sn>>1
	}
	if sn != 0 {
		return refuse("proof_wrong_length", "path shorter than the %s", trees)
	}
	return nil
}

func rootFromInclusion(index, size uint64, leaf []byte, path [][]byte) ([]byte, error) {
	if index >= size {
		return nil, refuse("proof_index_out_of_range", "leaf index %d >= tree size %d", index, size)
	}
	if len(path) != pathLen(index, size) {
		return nil, refuse("proof_wrong_length", "path of %d hashes, PATH(%d, %d) has %d", len(path), index, size, pathLen(index, size))
	}
	r := leaf
	err := proofWalk(index, size-1, path, "tree",
		func(p []byte) { r = nodeHash(p, r) },
		func(p []byte) { r = nodeHash(r, p) })
	if err != nil {
		return nil, err
	}
	return r, nil
}

func verifyInclusion(index, size uint64, leaf []byte, path [][]byte, root []byte) error {
	r, err := rootFromInclusion(index, size, leaf, path)
	return expectRoot(r, err, root, "the path leads to another root")
}

// expectRoot passes on the error of a root computation, else refuses a root other than want.
func expectRoot(r []byte, err error, want []byte, mismatch string) error {
	if err != nil {
		return err
	}
	if !bytes.Equal(r, want) {
		return refuse("proof_root_mismatch", "%s", mismatch)
	}
	return nil
}

func rootFromConsistency(first, second uint64, firstRoot []byte, path [][]byte) ([]byte, error) {
	if !(first > 0 && first <= second) {
		return nil, refuse("proof_sizes_out_of_order", "sizes (%d, %d)", first, second)
	}
	if len(path) != proofLen(first, second) {
		return nil, refuse("proof_wrong_length", "path of %d hashes, PROOF(%d, %d) has %d", len(path), first, second, proofLen(first, second))
	}
	if first == second {
		return firstRoot, nil
	}
	if first&(first-1) == 0 {
		path = append([][]byte{firstRoot}, path...)
	}
	fn, sn := first-1, second-1
	for fn&1 == 1 {
		fn, sn = fn>>1, sn>>1
	}
	fr, sr := path[0], path[0]
	err := proofWalk(fn, sn, path[1:], "trees",
		func(c []byte) { fr, sr = nodeHash(c, fr), nodeHash(c, sr) },
		func(c []byte) { sr = nodeHash(sr, c) })
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(fr, firstRoot) {
		return nil, refuse("proof_first_root_mismatch", "the path does not lead to the first root")
	}
	return sr, nil
}

func verifyConsistency(first, second uint64, firstRoot, secondRoot []byte, path [][]byte) error {
	r, err := rootFromConsistency(first, second, firstRoot, path)
	return expectRoot(r, err, secondRoot, "the path leads to another second root")
}

// decodeSeal is the strict stream-seal/1 and stream-seal/2 decoder: canonical form first
// (parseJCR1 compares the input with its RFC 8785 re-encoding by the JCS library), then the
// schema of section 3.1; `schema` "stream-seal/2" selects the field set with `documents`
// (section 3.2), any other value is read as stream-seal/1.
func decodeSeal(data []byte) (*Seal, error) {
	v, err := parseJCR1(data, sealLimits)
	if err != nil {
		return nil, refuse("canonical:"+refusalClass(err), "%v", err)
	}
	if v == nil {
		return nil, refuse("null", "the seal is null")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, refuse("wrong_type", "the seal is not an object")
	}
	v2 := m["schema"] == sealSchemaIDV2
	known := map[string]bool{"documents": v2}
	for _, f := range sealFields {
		known[f.name] = true
	}
	for _, k := range sortedKeys(m) {
		if !known[k] {
			return nil, refuse("unknown_field", "unknown field %q", k)
		}
	}
	s := &Seal{}
	uints := map[string]*uint64{
		"empty_windows_skipped": &s.Empty, "first_window_id": &s.FirstWindowID,
		"last_window_id": &s.LastWindowID, "tree_size": &s.TreeSize,
	}
	texts := map[string]*string{
		"closed_at": &s.ClosedAt, "root": &s.Root, "schema": &s.Schema, "steward": &s.Steward, "stream_id": &s.StreamID,
	}
	docsChecked := !v2
	for _, f := range sealFields {
		if !docsChecked && f.name > "documents" {
			x, present := m["documents"]
			if !present {
				return nil, refuse("missing_field", "documents missing")
			}
			docs, err := checkDocuments(x)
			if err != nil {
				return nil, err
			}
			s.Documents = docs
			docsChecked = true
		}
		x, present := m[f.name]
		if !present {
			return nil, refuse("missing_field", "%s missing", f.name)
		}
		if x == nil {
			return nil, refuse("null", "%s is null", f.name)
		}
		switch f.ty {
		case "uint":
			n, ok := x.(json.Number)
			if !ok {
				return nil, refuse("wrong_type", "%s is not an integer", f.name)
			}
			i, err := strconv.ParseInt(string(n), 10, 64)
			if err != nil {
				return nil, refuse("wrong_type", "%s is not an integer", f.name)
			}
			if i < 0 {
				return nil, refuse("negative_unsigned", "%s is negative", f.name)
			}
			*uints[f.name] = uint64(i)
		case "bool":
			b, ok := x.(bool)
			if !ok {
				return nil, refuse("wrong_type", "%s is not a boolean", f.name)
			}
			s.Final = b
		default:
			str, ok := x.(string)
			if !ok {
				return nil, refuse("wrong_type", "%s is not a string", f.name)
			}
			switch {
			case f.ty == "schema" && str != sealSchemaID && str != sealSchemaIDV2:
				return nil, refuse("seal_wrong_schema", "schema %q", str)
			case f.ty == "text" && str == "":
				return nil, refuse("empty_string", "%s is empty", f.name)
			case f.ty == "datetime" && checkClosedAt(str) != nil:
				return nil, refuse("bad_closed_at", "closed_at %q is not a real YYYY-MM-DDTHH:MM:SSZ", str)
			case f.ty == "hex64" && !hex64.MatchString(str):
				return nil, refuse("seal_bad_root", "root is not 64 lowercase hex digits")
			}
			*texts[f.name] = str
		}
	}
	if s.TreeSize == 0 {
		return nil, refuse("seal_tree_size_zero", "tree_size 0")
	}
	if s.FirstWindowID > s.LastWindowID {
		return nil, refuse("seal_window_range_reversed", "first_window_id > last_window_id")
	}
	// Every value is at most 2^53-1, so neither side overflows uint64.
	if s.LastWindowID-s.FirstWindowID+1 != s.TreeSize+s.Empty {
		return nil, refuse("seal_window_count_mismatch", "last - first + 1 != tree_size + empty_windows_skipped")
	}
	if v2 && !s.Final {
		return nil, refuse("seal_documents_not_final", "stream-seal/2 (documents) on a seal that is not final")
	}
	return s, nil
}

// sealProtected is section 4.1, encoded by fxamacker/cbor in deterministic (core) mode.
func sealProtected(s *Seal, sealBytes, kid []byte) []byte {
	b, err := detEnc.Marshal(map[int64]any{
		1: int64(-8), 4: kid, 15: map[int64]any{1: s.Steward, 2: s.subject()},
		vdsLabel: int64(1), sealDocLabel: sealBytes,
	})
	if err != nil {
		panic(err)
	}
	return b
}

func mustDet(v any) []byte {
	b, err := detEnc.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func proofCBOR(a, b uint64, path [][]byte) []byte { return mustDet([]any{a, b, path}) }

// sealUnprotected is {} (label 0) or {396: {label: [proof]}}.
func sealUnprotected(label int64, a, b uint64, path [][]byte) map[int64]any {
	if label == 0 {
		return map[int64]any{}
	}
	return map[int64]any{vdpLabel: map[int64]any{label: []any{proofCBOR(a, b, path)}}}
}

func sealEnvelope(prot []byte, unprot map[int64]any, sig []byte) []byte {
	return mustDet(cbor.Tag{Number: 18, Content: []any{prot, unprot, nil, sig}})
}

// sealStrictSignature: step 19 (A and R canonical, torsion-free points of large order), then
// step 20 (S < L and crypto/ed25519's cofactorless equation), then go-cose on the envelope
// with the root as the detached payload.
func sealStrictSignature(envelope, sig, tbs, root, pub []byte) error {
	if len(sig) != 64 || len(pub) != 32 {
		return refuse("seal_cose_torsion", "key or signature of the wrong length")
	}
	if err := checkPoint(pub, ruleAInvalid, ruleANonCanonical, ruleASmallOrder, ruleAMixedOrder); err != nil {
		return refuse("seal_cose_torsion", "key: %v", err)
	}
	if err := checkPoint(sig[:32], ruleRInvalid, ruleRNonCanonical, ruleRSmallOrder, ruleRMixedOrder); err != nil {
		return refuse("seal_cose_torsion", "R: %v", err)
	}
	if err := ed25519VerifyStrict(pub, tbs, sig); err != nil {
		return refuse("seal_cose_bad_signature", "%v", err)
	}
	var msg cose.Sign1Message
	if err := msg.UnmarshalCBOR(envelope); err != nil {
		return refuse("seal_cose_bad_signature", "go-cose: %v", err)
	}
	verifier, err := cose.NewVerifier(cose.AlgorithmEdDSA, ed25519.PublicKey(pub))
	if err != nil {
		return refuse("seal_cose_bad_signature", "go-cose: %v", err)
	}
	msg.Payload = root
	if err := msg.Verify(nil, verifier); err != nil {
		return refuse("seal_cose_bad_signature", "go-cose: %v", err)
	}
	return nil
}

type sealParsed struct {
	seal        *Seal
	prot, sig   []byte
	unprot      map[any]any
	unprotBytes []byte
}

// sealParse runs steps 1-13 of section 5.
func sealParse(data, pub []byte) (*sealParsed, error) {
	if len(data) == 0 {
		return nil, refuse("seal_cose_malformed", "empty input")
	}
	switch {
	case data[0] == 0x84:
		return nil, refuse("seal_cose_untagged", "untagged COSE_Sign1")
	case data[0]>>5 == 6 && data[0] != 0xd2:
		return nil, refuse("seal_cose_wrong_tag", "another tag than 18")
	case data[0] != 0xd2:
		return nil, refuse("seal_cose_malformed", "not a tagged COSE_Sign1")
	}
	item, err := cborDecodeExact(data)
	if err != nil {
		return nil, refuse("seal_cose_malformed", "%v", err)
	}
	tag, ok := item.(cbor.Tag)
	if !ok || tag.Number != 18 {
		return nil, refuse("seal_cose_wrong_tag", "another tag than 18")
	}
	body, ok := tag.Content.([]any)
	if !ok || len(body) != 4 {
		return nil, refuse("seal_cose_malformed", "not an array of 4")
	}
	prot, ok1 := body[0].([]byte)
	unprot, ok2 := body[1].(map[any]any)
	sig, ok3 := body[3].([]byte)
	if !ok1 || !ok2 || !ok3 {
		return nil, refuse("seal_cose_malformed", "protected, unprotected or signature of the wrong type")
	}
	hv, err := cborDecodeExact(prot)
	if err != nil {
		return nil, refuse("seal_cose_malformed", "protected header: %v", err)
	}
	hdr, ok := hv.(map[any]any)
	if !ok {
		return nil, refuse("seal_cose_malformed", "protected header is not a map")
	}
	if alg, ok := asInt(hdr[int64(1)]); !ok || alg != -8 {
		return nil, refuse("seal_cose_alg_not_eddsa", "alg %v", hdr[int64(1)])
	}
	if vds, ok := asInt(hdr[int64(vdsLabel)]); !ok || vds != 1 {
		return nil, refuse("seal_cose_vds_not_rfc9162", "vds %v", hdr[int64(vdsLabel)])
	}
	sealBytes, ok := hdr[int64(sealDocLabel)].([]byte)
	if !ok {
		return nil, refuse("seal_cose_seal_missing", "no seal document under -65537")
	}
	seal, err := decodeSeal(sealBytes)
	if err != nil {
		return nil, err
	}
	kid, iss, sub, err := headerIdentity(hdr, refuse("seal_cose_bad_kid", "kid is not a 32-byte string"),
		refuse("seal_cose_iss_mismatch", "CWT claims are not {1: tstr, 2: tstr}"))
	if err != nil {
		return nil, err
	}
	if iss != seal.Steward {
		return nil, refuse("seal_cose_iss_mismatch", "iss is not the seal's steward")
	}
	if sub != seal.subject() {
		return nil, refuse("seal_cose_sub_mismatch", "sub %q is not %q", sub, seal.subject())
	}
	if !bytes.Equal(sealProtected(seal, sealBytes, kid), prot) {
		return nil, refuse("seal_cose_protected_not_canonical", "protected header differs from section 4.1 rebuilt")
	}
	if body[2] != nil {
		return nil, refuse("seal_cose_payload_attached", "payload is not nil")
	}
	head := mustDet(prot)
	start, end := 2+len(head), len(data)-67
	if end < start {
		end = start
	}
	unprotBytes := data[start:end]
	rebuilt := append(append(append(append([]byte{0xd2, 0x84}, head...), unprotBytes...), 0xf6, 0x58, 0x40), sig...)
	if len(sig) != 64 || !bytes.Equal(rebuilt, data) {
		return nil, refuse("seal_cose_envelope_not_canonical", "envelope is not d2 84 <prot> <unprot> f6 58 40 <sig>")
	}
	if !bytes.Equal(kid, thumbprint(pub)) {
		return nil, refuse("seal_cose_unknown_kid", "kid is not the thumbprint of the key")
	}
	return &sealParsed{seal: seal, prot: prot, sig: sig, unprot: unprot, unprotBytes: unprotBytes}, nil
}

type sealProof struct {
	a, b uint64
	path [][]byte
}

// sealOneProof runs steps 14-15: nil for {}.
func sealOneProof(unprot map[any]any, label int64) (*sealProof, error) {
	if len(unprot) == 0 {
		return nil, nil
	}
	vdp, ok := unprot[int64(vdpLabel)].(map[any]any)
	if len(unprot) != 1 || !ok {
		return nil, refuse("seal_cose_bad_vdp", "unprotected header is not {396: {...}}")
	}
	proofs, ok := vdp[label].([]any)
	if len(vdp) != 1 || !ok {
		return nil, refuse("seal_cose_bad_vdp", "vdp is not {%d: [...]}", label)
	}
	if len(proofs) != 1 {
		return nil, refuse("seal_cose_bad_vdp", "%d proofs, expected one", len(proofs))
	}
	p, ok := proofs[0].([]byte)
	if !ok {
		return nil, refuse("seal_cose_bad_vdp", "the proof is not a byte string")
	}
	pv, err := cborDecodeExact(p)
	if err != nil {
		return nil, refuse("seal_cose_proof_malformed", "%v", err)
	}
	parts, ok := pv.([]any)
	if !ok || len(parts) != 3 {
		return nil, refuse("seal_cose_proof_malformed", "proof is not [uint, uint, [* bstr]]")
	}
	a, okA := asInt(parts[0])
	b, okB := asInt(parts[1])
	elems, okP := parts[2].([]any)
	if !okA || !okB || !okP || a < 0 || b < 0 {
		return nil, refuse("seal_cose_proof_malformed", "proof is not [uint, uint, [* bstr]]")
	}
	path := make([][]byte, 0, len(elems))
	for _, e := range elems {
		eb, ok := e.([]byte)
		if !ok {
			return nil, refuse("seal_cose_proof_malformed", "path element is not a byte string")
		}
		if len(eb) != 32 {
			return nil, refuse("proof_bad_element", "path element of %d bytes", len(eb))
		}
		path = append(path, eb)
	}
	if !bytes.Equal(proofCBOR(uint64(a), uint64(b), path), p) {
		return nil, refuse("seal_cose_proof_malformed", "proof is not in deterministic CBOR")
	}
	return &sealProof{a: uint64(a), b: uint64(b), path: path}, nil
}

func verifyInclusionReceipt(data, contentHash, pub []byte) (*Seal, uint64, error) {
	p, err := sealParse(data, pub)
	if err != nil {
		return nil, 0, err
	}
	proof, err := sealOneProof(p.unprot, inclusionProofs)
	if err != nil {
		return nil, 0, err
	}
	if proof == nil {
		return nil, 0, refuse("seal_cose_bad_vdp", "an inclusion receipt needs {396: {-1: [proof]}}")
	}
	if !bytes.Equal(mustDet(sealUnprotected(inclusionProofs, proof.a, proof.b, proof.path)), p.unprotBytes) {
		return nil, 0, refuse("seal_cose_envelope_not_canonical", "unprotected header does not re-encode to itself")
	}
	if proof.a != p.seal.TreeSize {
		return nil, 0, refuse("proof_tree_size_mismatch", "proof tree size %d, seal %d", proof.a, p.seal.TreeSize)
	}
	root, err := rootFromInclusion(proof.b, proof.a, leafHash(contentHash), proof.path)
	if err != nil {
		return nil, 0, err
	}
	if hex.EncodeToString(root) != p.seal.Root {
		return nil, 0, refuse("proof_root_mismatch", "the inclusion path leads to another root")
	}
	if err := sealStrictSignature(data, p.sig, sigStructure(p.prot, root, nil), root, pub); err != nil {
		return nil, 0, err
	}
	return p.seal, proof.b, nil
}

// Checkpoint is a verified checkpoint: its seal and consistency proof (nil without one).
type Checkpoint struct {
	seal  *Seal
	proof *sealProof
}

// verifyCheckpointHex is verifyCheckpoint of the envelope written as the hex string coseHex.
func verifyCheckpointHex(coseHex string, pub []byte) (*Checkpoint, error) {
	data, err := unhex(coseHex)
	if err != nil {
		return nil, err
	}
	return verifyCheckpoint(data, pub)
}

func verifyCheckpoint(data, pub []byte) (*Checkpoint, error) {
	p, err := sealParse(data, pub)
	if err != nil {
		return nil, err
	}
	proof, err := sealOneProof(p.unprot, consistencyProof)
	if err != nil {
		return nil, err
	}
	again := sealUnprotected(0, 0, 0, nil)
	if proof != nil {
		again = sealUnprotected(consistencyProof, proof.a, proof.b, proof.path)
	}
	if !bytes.Equal(mustDet(again), p.unprotBytes) {
		return nil, refuse("seal_cose_envelope_not_canonical", "unprotected header does not re-encode to itself")
	}
	if proof != nil {
		if proof.b != p.seal.TreeSize {
			return nil, refuse("proof_tree_size_mismatch", "consistency second size %d, seal %d", proof.b, p.seal.TreeSize)
		}
		if !(proof.a > 0 && proof.a < proof.b) {
			return nil, refuse("proof_sizes_out_of_order", "consistency sizes (%d, %d)", proof.a, proof.b)
		}
	}
	root := p.seal.rootBytes()
	if err := sealStrictSignature(data, p.sig, sigStructure(p.prot, root, nil), root, pub); err != nil {
		return nil, err
	}
	return &Checkpoint{seal: p.seal, proof: proof}, nil
}

func consistencyStep(prev *Seal, c *Checkpoint) error {
	if c.proof == nil {
		if prev.TreeSize != c.seal.TreeSize {
			return refuse("proof_tree_size_mismatch", "no consistency proof, sizes differ")
		}
		if prev.Root != c.seal.Root {
			return refuse("proof_root_mismatch", "no consistency proof, roots differ")
		}
		return nil
	}
	if c.proof.a != prev.TreeSize {
		return refuse("proof_tree_size_mismatch", "consistency first size is not the previous tree size")
	}
	return verifyConsistency(c.proof.a, c.proof.b, prev.rootBytes(), c.seal.rootBytes(), c.proof.path)
}

// ReceiptEntry is one receipt as the completeness checker sees it.
type ReceiptEntry struct {
	WindowID          uint64
	ContentHash       []byte
	StreamID, Steward string
}

// Problem is one completeness problem, as Problem::to_json of the Rust checker.
type Problem = map[string]any

// checkStream is section 6.
func checkStream(receipts []ReceiptEntry, cps []*Checkpoint) []Problem {
	problems := []Problem{}
	if len(cps) == 0 {
		return []Problem{{"code": "no_seals"}}
	}
	fin := cps[len(cps)-1].seal
	chainOK := true
	if cps[0].proof != nil {
		problems = append(problems, Problem{"code": "seal_chain_broken", "seal_index": 0, "reason": "first_seal_has_predecessor"})
		chainOK = false
	}
	for j := 1; j < len(cps); j++ {
		prev, s := cps[j-1].seal, cps[j].seal
		reason := ""
		switch {
		case prev.StreamID != s.StreamID || prev.Steward != s.Steward:
			reason = "stream_changed"
		case prev.FirstWindowID != s.FirstWindowID:
			reason = "first_window_changed"
		case s.TreeSize < prev.TreeSize:
			reason = "size_decreased"
		case s.LastWindowID < prev.LastWindowID:
			reason = "last_window_decreased"
		case s.ClosedAt < prev.ClosedAt: // fixed-width UTC text: text order is time order
			reason = "closed_at_regressed"
		case prev.Final:
			reason = "seal_after_final"
		}
		if reason != "" {
			problems = append(problems, Problem{"code": "seal_chain_broken", "seal_index": j, "reason": reason})
			chainOK = false
		}
		if err := consistencyStep(prev, cps[j]); err != nil {
			problems = append(problems, Problem{"code": "consistency_failed", "seal_index": j, "proof_code": refusalClass(err)})
		}
	}
	if !fin.Final {
		problems = append(problems, Problem{"code": "no_final_seal"})
	}

	type acc struct {
		index int
		w     uint64
		h     []byte
	}
	seen := map[uint64]int{}
	var maxID *uint64
	accepted := []acc{}
	for index, r := range receipts {
		w := r.WindowID
		if r.StreamID != fin.StreamID || r.Steward != fin.Steward {
			problems = append(problems, Problem{"code": "foreign_receipt", "index": index, "window_id": w})
			continue
		}
		if first, dup := seen[w]; dup {
			problems = append(problems, Problem{"code": "repeated_window", "index": index, "window_id": w,
				"first_index": first, "same_content": bytes.Equal(receipts[first].ContentHash, r.ContentHash)})
			continue
		}
		seen[w] = index
		if w < fin.FirstWindowID || w > fin.LastWindowID {
			problems = append(problems, Problem{"code": "extra_window", "index": index, "window_id": w})
			continue
		}
		if maxID != nil && w < *maxID {
			problems = append(problems, Problem{"code": "reordered_window", "index": index, "window_id": w, "previous_window_id": *maxID})
		}
		if maxID == nil || w > *maxID {
			maxID = &w
		}
		accepted = append(accepted, acc{index, w, r.ContentHash})
	}
	ids := make([]acc, len(accepted))
	copy(ids, accepted)
	sort.Slice(ids, func(a, b int) bool { return ids[a].w < ids[b].w })
	lower := func(x uint64) int { return sort.Search(len(ids), func(i int) bool { return ids[i].w >= x }) }
	upper := func(x uint64) int { return sort.Search(len(ids), func(i int) bool { return ids[i].w > x }) }
	countsOK := chainOK
	var prevLast *uint64
	prevSize := uint64(0)
	for j, c := range cps {
		s := c.seal
		lo := s.FirstWindowID
		if prevLast != nil {
			lo = *prevLast + 1
		}
		hi := s.LastWindowID
		if chainOK && lo <= hi+1 {
			a, b := lower(lo), upper(hi)
			found := uint64(b - a)
			sealed := uint64(0)
			if s.TreeSize > prevSize {
				sealed = s.TreeSize - prevSize
			}
			width := uint64(0)
			if lo <= hi {
				width = hi - lo + 1
			}
			if found < sealed {
				countsOK = false
				missing := sealed - found
				gaps := uint64(0)
				if width > found {
					gaps = width - found
				}
				if gaps == missing && gaps <= maxNamedGaps {
					present := map[uint64]bool{}
					for _, x := range ids[a:b] {
						present[x.w] = true
					}
					for w := lo; w <= hi; w++ {
						if present[w] {
							continue
						}
						k := lower(w)
						before := len(receipts)
						if k < len(ids) {
							before = ids[k].index
						}
						problems = append(problems, Problem{"code": "missing_window", "window_id": w, "before_index": before, "seal_index": j})
					}
				} else {
					problems = append(problems, Problem{"code": "missing_windows_unlocated", "seal_index": j, "count": missing, "window_ids": []any{lo, hi}})
				}
			} else if found > sealed {
				countsOK = false
				problems = append(problems, Problem{"code": "surplus_windows", "seal_index": j, "sealed": sealed, "found": found})
			}
		}
		size := s.TreeSize
		if countsOK && size >= 1 && size <= uint64(len(accepted)) {
			leaves := make([][]byte, size)
			for i := range leaves {
				leaves[i] = leafHash(accepted[i].h)
			}
			if hex.EncodeToString(mth(leaves)) != s.Root {
				problems = append(problems, Problem{"code": "root_mismatch", "seal_index": j, "tree_size": size})
			}
			first, last := accepted[0].w, accepted[size-1].w
			if first != s.FirstWindowID {
				problems = append(problems, Problem{"code": "window_range_mismatch", "seal_index": j, "field": "first_window_id", "sealed": s.FirstWindowID, "found": first})
			}
			if last != s.LastWindowID {
				problems = append(problems, Problem{"code": "window_range_mismatch", "seal_index": j, "field": "last_window_id", "sealed": s.LastWindowID, "found": last})
			}
		}
		h := hi
		prevLast = &h
		prevSize = s.TreeSize
	}
	if uint64(len(accepted)) != fin.TreeSize {
		problems = append(problems, Problem{"code": "tree_size_mismatch", "seal_index": len(cps) - 1, "sealed": fin.TreeSize, "found": len(accepted)})
	}
	return problems
}

// sealCodeMatches: the same code, or both canonical-form refusals of a seal document.
func sealCodeMatches(got, expect string) bool {
	if got == expect {
		return true
	}
	return len(got) > 10 && got[:10] == "canonical:" && !sealSchemaCodes[expect] &&
		!(len(expect) > 5 && (expect[:5] == "seal_" || expect[:6] == "proof_"))
}
