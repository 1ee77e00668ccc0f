package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"filippo.io/torchwood"
	"github.com/fxamacker/cbor/v2"
	"github.com/gowebpki/jcs"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
	"lukechampine.com/blake3"
)

// call-registry-vectors.json: the call registry (spec/CALL-REGISTRY.md). The steward's
// checkpoint signatures are verified by golang.org/x/mod/sumdb/note (an outside signed-note
// implementation), checkpoint bodies parsed by filippo.io/torchwood, inclusion and consistency
// proofs checked by golang.org/x/mod/sumdb/tlog; cosignature/v1 lines are verified by a
// note.Verifier of this file (the signed message of c2sp.org/tlog-cosignature) with their
// timestamps read by torchwood.CosignatureTimestamp.
func init() {
	register(Family{Order: 90, File: "call-registry-vectors.json", Check: checkRegistryFile, Counts: true})
}

// cosigVerifier verifies c2sp.org/tlog-cosignature cosignature/v1 (type 0x04) lines.
type cosigVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v *cosigVerifier) Name() string    { return v.name }
func (v *cosigVerifier) KeyHash() uint32 { return v.hash }
func (v *cosigVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	if t > 1<<63-1 {
		return false
	}
	m := append([]byte(fmt.Sprintf("cosignature/v1\ntime %d\n", t)), msg...)
	return ed25519StrictOK(sig[8:], m, v.key)
}

func ed25519StrictOK(sig, msg []byte, pub []byte) bool {
	// The same strict Ed25519 rules as every other signature this verifier checks.
	return ed25519VerifyStrict(pub, msg, sig) == nil
}

func keyHashOf(name string, alg byte, key []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write([]byte{alg})
	h.Write(key)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// parseCosigVkey parses a type 0x04 verifier key name+hash+base64(0x04 || key).
func parseCosigVkey(vkey string) (*cosigVerifier, error) {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 || len(parts[1]) != 8 {
		return nil, refuse("policy_malformed", "malformed witness key %q", vkey)
	}
	hash, err := strconv.ParseUint(parts[1], 16, 32)
	raw, err2 := strictB64.DecodeString(parts[2])
	if err != nil || err2 != nil || len(raw) != 33 || raw[0] != 0x04 {
		return nil, refuse("policy_malformed", "witness key %q is not a cosignature/v1 key", vkey)
	}
	if keyHashOf(parts[0], 0x04, raw[1:]) != uint32(hash) {
		return nil, refuse("policy_malformed", "witness key %q: hash is not the key ID", vkey)
	}
	return &cosigVerifier{name: parts[0], hash: uint32(hash), key: ed25519.PublicKey(raw[1:])}, nil
}

// vkeyKey is the key material of a verifier key name+hash+base64(type || key) (base64 may
// itself hold '+', so the split is at the first two).
func vkeyKey(vkey string) []byte {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return nil
	}
	raw, err := strictB64.DecodeString(parts[2])
	if err != nil || len(raw) < 1 {
		return nil
	}
	return raw[1:]
}

// strictB64 is standard base64 with padding that refuses non-zero unused bits: the one
// encoding of its bytes (spec/CALL-REGISTRY.md section 2.1). base64.StdEncoding alone, and so
// x/mod's note and tlog parsers, accept them.
var strictB64 = base64.StdEncoding.Strict()

// maxNoteSignatures and maxPolicyWitnesses are the spec's bounds (section 2.1 and 5); x/mod's
// note.Open allows 100 signature lines.
const (
	maxNoteSignatures  = 64
	maxPolicyWitnesses = 63
)

type registryPolicy struct {
	log       note.Verifier
	logKey    []byte
	witnesses []*cosigVerifier
	quorum    int
}

func parseRegistryPolicy(text string) (*registryPolicy, error) {
	p := &registryPolicy{}
	haveQuorum := false
	for i, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		bad := func(why string) error { return refuse("policy_malformed", "line %d: %s", i+1, why) }
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "log" && len(f) == 2:
			if p.log != nil {
				return nil, bad("a second log line")
			}
			if vkeyKey(f[1]) == nil {
				return nil, bad("malformed log key")
			}
			v, err := note.NewVerifier(f[1])
			if err != nil {
				return nil, bad("malformed log key: " + err.Error())
			}
			p.log, p.logKey = v, vkeyKey(f[1])
		case f[0] == "witness" && (len(f) == 2 || len(f) == 3):
			w, err := parseCosigVkey(f[1])
			if err != nil {
				return nil, bad(err.Error())
			}
			for _, o := range p.witnesses {
				if o.name == w.name || bytes.Equal(o.key, w.key) {
					return nil, bad("two witnesses share a name or a key")
				}
			}
			if len(p.witnesses) == maxPolicyWitnesses {
				return nil, bad("more than 63 witnesses")
			}
			p.witnesses = append(p.witnesses, w)
		case f[0] == "quorum" && len(f) == 2:
			q, err := strconv.Atoi(f[1])
			if err != nil || haveQuorum {
				return nil, bad("a malformed or second quorum line")
			}
			p.quorum, haveQuorum = q, true
		default:
			return nil, bad("not a log, witness or quorum line")
		}
	}
	if p.log == nil || !haveQuorum || p.quorum < 1 || p.quorum > len(p.witnesses) {
		return nil, refuse("policy_malformed", "a log line and a quorum between 1 and the witnesses are required")
	}
	if p.quorum*2 <= len(p.witnesses) {
		return nil, refuse("policy_malformed", "the quorum %d is not more than half of %d witnesses", p.quorum, len(p.witnesses))
	}
	for _, w := range p.witnesses {
		if bytes.Equal(w.key, p.logKey) {
			return nil, refuse("policy_malformed", "witness %s has the log's key", w.name)
		}
	}
	return p, nil
}

type openedCheckpoint struct {
	cp        torchwood.Checkpoint
	cosigners map[string]int64
}

// signatureLines checks a note's signature block as the spec bounds it, before x/mod reads it:
// at most 64 lines, each `— name base64` in strict base64, and every line of a trusted key
// verifies, each one (x/mod's note.Open skips a second line of a key it has seen). It returns
// each policy witness's earliest cosignature time.
func signatureLines(text []byte, p *registryPolicy) (map[string]int64, error) {
	cut := bytes.LastIndex(text, []byte("\n\n"))
	if cut < 0 || !bytes.HasSuffix(text, []byte("\n")) {
		return nil, refuse("note_malformed", "framing")
	}
	body, block := text[:cut+1], strings.TrimSuffix(string(text[cut+2:]), "\n")
	lines := strings.Split(block, "\n")
	if len(lines) > maxNoteSignatures {
		return nil, refuse("note_malformed", "%d signature lines, more than %d", len(lines), maxNoteSignatures)
	}
	times := map[string]int64{}
	for _, line := range lines {
		rest, ok := strings.CutPrefix(line, "\u2014 ")
		name, b64, ok2 := strings.Cut(rest, " ")
		if !ok || !ok2 {
			return nil, refuse("note_malformed", "signature line %q", line)
		}
		raw, err := strictB64.DecodeString(b64)
		if err != nil || len(raw) < 5 {
			return nil, refuse("note_malformed", "signature line of %s: not strict base64", name)
		}
		hash, sig := binary.BigEndian.Uint32(raw), raw[4:]
		if name == p.log.Name() && hash == p.log.KeyHash() {
			if !p.log.Verify(body, sig) {
				return nil, refuse("signature_invalid", "a line of the steward does not verify")
			}
			continue
		}
		for _, w := range p.witnesses {
			if name == w.name && hash == w.hash {
				if !w.Verify(body, sig) {
					return nil, refuse("signature_invalid", "a line of witness %s does not verify", name)
				}
				t := int64(binary.BigEndian.Uint64(sig))
				if old, seen := times[name]; !seen || t < old {
					times[name] = t
				}
			}
		}
	}
	return times, nil
}

// openCheckpoint verifies a checkpoint note with x/mod's note.Open: the steward's signature must
// verify, as must every line of a policy witness (signatureLines checks each one first).
func openCheckpoint(text []byte, p *registryPolicy) (*openedCheckpoint, error) {
	times, err := signatureLines(text, p)
	if err != nil {
		return nil, err
	}
	vs := []note.Verifier{p.log}
	for _, w := range p.witnesses {
		vs = append(vs, w)
	}
	n, err := note.Open(text, note.VerifierList(vs...))
	if err != nil {
		return nil, refuse("signature_invalid", "note.Open: %v", err)
	}
	cp, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil {
		return nil, refuse("checkpoint_malformed", "%v", err)
	}
	if cp.Extension != "" {
		return nil, refuse("checkpoint_malformed", "extension lines")
	}
	if cp.Origin != p.log.Name() {
		return nil, refuse("origin_mismatch", "origin %q", cp.Origin)
	}
	out := &openedCheckpoint{cp: cp, cosigners: map[string]int64{}}
	stewardSigned := false
	for _, s := range n.Sigs {
		if s.Name == p.log.Name() && s.Hash == p.log.KeyHash() {
			stewardSigned = true
			continue
		}
		t, err := torchwood.CosignatureTimestamp(s)
		if err != nil {
			return nil, refuse("signature_invalid", "%v", err)
		}
		// A witness counts once, at the earliest of its lines (all verified by signatureLines).
		if t > times[s.Name] {
			t = times[s.Name]
		}
		out.cosigners[s.Name] = t
	}
	if !stewardSigned {
		return nil, refuse("steward_signature_missing", "no steward signature")
	}
	return out, nil
}

// sealDocument returns the stream-seal/1 bytes of a verified checkpoint's protected header.
func sealDocument(cose []byte) ([]byte, error) {
	var tagged cbor.Tag
	if err := cbor.Unmarshal(cose, &tagged); err != nil {
		return nil, err
	}
	arr, ok := tagged.Content.([]any)
	if !ok || len(arr) != 4 {
		return nil, fmt.Errorf("not a COSE_Sign1")
	}
	prot, _ := arr[0].([]byte)
	var hdr map[int64]any
	if err := cbor.Unmarshal(prot, &hdr); err != nil {
		return nil, err
	}
	doc, ok := hdr[-65537].([]byte)
	if !ok {
		return nil, fmt.Errorf("no seal document")
	}
	return doc, nil
}

// registryLeafEntry is BLAKE3 of the canonical registry-leaf/1 of a final seal.
func registryLeafEntry(seal *Seal, sealDoc []byte) ([]byte, string) {
	sh := blake3.Sum256(sealDoc)
	leaf := fmt.Sprintf(`{"jc_registry":"registry-leaf/1","seal_hash":"%s","seal_root":"%s","seal_tree_size":%d,"steward":%s,"stream_id":%s}`,
		hex.EncodeToString(sh[:]), seal.Root, seal.TreeSize, jsonString(seal.Steward), jsonString(seal.StreamID))
	e := blake3.Sum256([]byte(leaf))
	return e[:], leaf
}

// jsonString is the JCR-1 (RFC 8785) string form, by github.com/gowebpki/jcs.
func jsonString(s string) string {
	raw, _ := json.Marshal(s)
	canon, err := jcs.Transform(raw)
	if err != nil {
		return ""
	}
	return string(canon)
}

type callProof struct {
	seal  []byte
	index int64
	path  []tlog.Hash
	note  []byte
}

func parseCallProof(text string) (*callProof, error) {
	head, noteText, ok := strings.Cut(text, "\n\n")
	if !ok {
		return nil, refuse("proof_malformed", "no empty line")
	}
	lines := strings.Split(head, "\n")
	if len(lines) < 3 || lines[0] != "c2sp.org/tlog-proof@v1" || !strings.HasPrefix(lines[1], "extra ") || !strings.HasPrefix(lines[2], "index ") {
		return nil, refuse("proof_malformed", "header, extra and index lines")
	}
	seal, err := strictB64.DecodeString(strings.TrimPrefix(lines[1], "extra "))
	if err != nil {
		return nil, refuse("proof_malformed", "extra: %v", err)
	}
	idx := strings.TrimPrefix(lines[2], "index ")
	index, err := strconv.ParseInt(idx, 10, 64)
	if err != nil || index < 0 || strconv.FormatInt(index, 10) != idx {
		return nil, refuse("proof_malformed", "index %q", idx)
	}
	p := &callProof{seal: seal, index: index, note: []byte(noteText)}
	for _, l := range lines[3:] {
		raw, err := strictB64.DecodeString(l)
		if err != nil || len(raw) != tlog.HashSize {
			return nil, refuse("proof_malformed", "proof hash %q", l)
		}
		var h tlog.Hash
		copy(h[:], raw)
		p.path = append(p.path, h)
	}
	return p, nil
}

func verifyCallProof(text, policyText string) (string, *openedCheckpoint, *Seal, error) {
	pol, err := parseRegistryPolicy(policyText)
	if err != nil {
		return "", nil, nil, err
	}
	p, err := parseCallProof(text)
	if err != nil {
		return "", nil, nil, err
	}
	cp, err := verifyCheckpoint(p.seal, pol.logKey)
	if err != nil {
		return "", nil, nil, refuse("seal_invalid", "%v", err)
	}
	if !cp.seal.Final {
		return "", nil, nil, refuse("seal_invalid", "not final")
	}
	doc, err := sealDocument(p.seal)
	if err != nil {
		return "", nil, nil, refuse("seal_invalid", "%v", err)
	}
	opened, err := openCheckpoint(p.note, pol)
	if err != nil {
		return "", nil, nil, err
	}
	count := 0
	for _, w := range pol.witnesses {
		if _, ok := opened.cosigners[w.name]; ok {
			count++
		}
	}
	if count < pol.quorum {
		return "", nil, nil, refuse("quorum_not_met", "%d of %d", count, pol.quorum)
	}
	entry, _ := registryLeafEntry(cp.seal, doc)
	if err := tlog.CheckRecord(p.path, opened.cp.N, opened.cp.Hash, p.index, tlog.RecordHash(entry)); err != nil {
		return "", nil, nil, refuse("inclusion_invalid", "tlog.CheckRecord: %v", err)
	}
	return "valid", opened, cp.seal, nil
}

// quorumTime is when the policy's quorum had cosigned: the quorum-th earliest of the policy
// witnesses' cosignature times (spec/CALL-REGISTRY.md section 6, Time).
func quorumTime(opened *openedCheckpoint, pol *registryPolicy) int64 {
	var times []int64
	for _, w := range pol.witnesses {
		if t, ok := opened.cosigners[w.name]; ok {
			times = append(times, t)
		}
	}
	slices.Sort(times)
	if len(times) < pol.quorum {
		return -1
	}
	return times[pol.quorum-1]
}

func refusalCodeOf(err error) string {
	if r, ok := err.(*Refusal); ok {
		return r.Class
	}
	return err.Error()
}

// stewardCheckpoint opens a checkpoint note signed by the steward alone (x/mod's note.Open) and
// parses its text; the errors are those of note.Open and torchwood.ParseCheckpoint, unwrapped.
func stewardCheckpoint(text string, steward note.Verifier) (torchwood.Checkpoint, error) {
	n, err := note.Open([]byte(text), note.VerifierList(steward))
	if err != nil {
		return torchwood.Checkpoint{}, err
	}
	return torchwood.ParseCheckpoint(n.Text)
}

func checkRegistryFile(rep *Report, _ string, path string) {
	name := filepath.Base(path)
	var doc struct {
		StewardVkey string `json:"steward_vkey"`
		Leaves      []struct {
			SealHex   string `json:"seal_cose_hex"`
			Canonical string `json:"canonical"`
			EntryHex  string `json:"entry_hex"`
			LeafHash  string `json:"leaf_hash_hex"`
		} `json:"leaves"`
		Checkpoints []struct {
			Note    string `json:"note"`
			Size    int64  `json:"size"`
			RootHex string `json:"root_hex"`
		} `json:"checkpoints"`
		Valid []struct {
			Proof, Policy string
			StreamID      string `json:"stream_id"`
			Index         int64
			Cosigners     []string
			Earliest      int64  `json:"earliest_cosignature"`
			QuorumTime    *int64 `json:"quorum_time"`
		} `json:"valid_proofs"`
		Negative []struct {
			What, Proof, Policy, Expect string
		} `json:"negative_proofs"`
		Forks []struct {
			What, A, B, Expect string
			Consistency        []string `json:"consistency_hex"`
		} `json:"forks"`
		Policies []struct {
			Policy, Expect string
		} `json:"policies"`
	}
	if !loadInto(rep, name, path, &doc) {
		return
	}
	stewardV, err := note.NewVerifier(doc.StewardVkey)
	if err != nil {
		rep.Fail(name+" steward key", err.Error())
		return
	}
	for i, l := range doc.Leaves {
		rep.Check(fmt.Sprintf("%s leaf %d", name, i), func() (string, error) {
			cose, err := unhex(l.SealHex)
			if err != nil {
				return "", err
			}
			cp, err := verifyCheckpoint(cose, vkeyKey(doc.StewardVkey))
			if err != nil {
				return "", err
			}
			sealDoc, err := sealDocument(cose)
			if err != nil {
				return "", err
			}
			entry, leaf := registryLeafEntry(cp.seal, sealDoc)
			if leaf != l.Canonical {
				return "", refuse("mismatch", "leaf %s, file %s", leaf, l.Canonical)
			}
			if err := expectEqual("entry", hex.EncodeToString(entry), l.EntryHex); err != nil {
				return "", err
			}
			h := tlog.RecordHash(entry)
			return "", expectEqual("leaf hash", hex.EncodeToString(h[:]), l.LeafHash)
		})
	}
	for i, c := range doc.Checkpoints {
		rep.Check(fmt.Sprintf("%s checkpoint %d (x/mod note.Open)", name, i), func() (string, error) {
			cp, err := stewardCheckpoint(c.Note, stewardV)
			if err != nil {
				return "", err
			}
			if err := expectEqual("size", cp.N, c.Size); err != nil {
				return "", err
			}
			return "", expectEqual("root", hex.EncodeToString(cp.Hash[:]), c.RootHex)
		})
	}
	for i, v := range doc.Valid {
		rep.Check(fmt.Sprintf("%s valid proof %d", name, i), func() (string, error) {
			got, opened, seal, err := verifyCallProof(v.Proof, v.Policy)
			if err != nil {
				return "", err
			}
			if seal.StreamID != v.StreamID || len(opened.cosigners) != len(v.Cosigners) {
				return "", refuse("mismatch", "%s: stream %s, %d cosigners", got, seal.StreamID, len(opened.cosigners))
			}
			earliest := int64(1<<63 - 1)
			for _, t := range opened.cosigners {
				earliest = min(earliest, t)
			}
			if err := expectEqual("earliest cosignature", earliest, v.Earliest); err != nil || v.QuorumTime == nil {
				return "", err
			}
			pol, err := parseRegistryPolicy(v.Policy)
			if err != nil {
				return "", err
			}
			return "", expectEqual("quorum time", quorumTime(opened, pol), *v.QuorumTime)
		})
	}
	for i, n := range doc.Negative {
		rep.Check(label(i, n.What), func() (string, error) {
			_, _, _, err := verifyCallProof(n.Proof, n.Policy)
			got := "valid"
			if err != nil {
				got = refusalCodeOf(err)
			}
			if (got == "valid") != (n.Expect == "valid") {
				return "", refuse("mismatch", "got %s, expected %s", got, n.Expect)
			}
			return got, nil
		})
	}
	for i, f := range doc.Forks {
		rep.Check(label(i, f.What), func() (string, error) {
			ca, err := stewardCheckpoint(f.A, stewardV)
			if err != nil {
				return "", err
			}
			cb, err := stewardCheckpoint(f.B, stewardV)
			if err != nil {
				return "", err
			}
			ta, tb := ca.Tree, cb.Tree
			if ta.N > tb.N {
				ta, tb = tb, ta
			}
			var proof tlog.TreeProof
			for _, h := range f.Consistency {
				raw, _ := hex.DecodeString(h)
				var x tlog.Hash
				copy(x[:], raw)
				proof = append(proof, x)
			}
			got := "consistent"
			if ta.N == tb.N {
				if ta.Hash != tb.Hash {
					got = "fork"
				}
			} else if err := tlog.CheckTree(proof, tb.N, tb.Hash, ta.N, ta.Hash); err != nil {
				got = "fork"
			}
			return got, expectEqual("outcome", got, f.Expect)
		})
	}
	for i, p := range doc.Policies {
		rep.Check(fmt.Sprintf("%s policy %d", name, i), func() (string, error) {
			_, err := parseRegistryPolicy(p.Policy)
			got := "valid"
			if err != nil {
				got = refusalCodeOf(err)
			}
			return got, expectEqual("outcome", got, p.Expect)
		})
	}
}
