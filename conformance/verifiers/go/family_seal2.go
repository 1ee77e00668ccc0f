package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/gowebpki/jcs"
)

// stream-seal-2-vectors.json (spec/STREAM-SEAL.md section 3.2): sealed streams whose final seal
// (stream-seal/2) commits to the call's documents, each digest recomputed from the document's
// bytes, and negative seal documents.
func init() {
	register(Family{Order: 61, File: "stream-seal-2-vectors.json", Check: checkSeal2File, Counts: true})
}

type seal2Doc struct {
	Key struct {
		PublicKeyHex string `json:"public_key_hex"`
		KidHex       string `json:"kid_hex"`
	} `json:"key"`
	Steward  string `json:"steward"`
	StreamID string `json:"stream_id"`
	Streams  []struct {
		Description string `json:"description"`
		Checkpoints []struct {
			CoseSign1Hex string `json:"cose_sign1_hex"`
			SealJSON     string `json:"seal_json"`
		} `json:"checkpoints"`
		Documents []struct {
			Kind         string `json:"kind"`
			CoseSign1Hex string `json:"cose_sign1_hex"`
			DigestHex    string `json:"digest_hex"`
		} `json:"documents"`
		Windows []struct {
			EntryHex string `json:"entry_hex"`
			WindowID uint64 `json:"window_id"`
		} `json:"windows"`
	} `json:"streams"`
	Negative []sealNegative `json:"negative"`
}

func checkSeal2File(rep *Report, _ string, path string) {
	name := filepath.Base(path)
	var doc seal2Doc
	if !loadInto(rep, name, path, &doc) {
		return
	}
	pub, err := unhex(doc.Key.PublicKeyHex)
	if err != nil || len(pub) != 32 {
		rep.Fail(name+" key", "malformed key")
		return
	}
	rep.Check(name+" key", func() (string, error) {
		if err := expectEqual("kid (RFC 9679 thumbprint)", hex.EncodeToString(thumbprint(pub)), doc.Key.KidHex); err != nil {
			return "", err
		}
		if len(doc.Streams) == 0 || len(doc.Negative) == 0 {
			return "", refuse("mismatch", "no streams or no negative vectors")
		}
		return "", nil
	})
	for si, st := range doc.Streams {
		rep.Check(fmt.Sprintf("%s stream %d %s", name, si, label("", st.Description)[2:]), func() (string, error) {
			leaves := make([][]byte, len(st.Windows))
			receipts := make([]ReceiptEntry, len(st.Windows))
			for i, w := range st.Windows {
				if err := expectEqual(fmt.Sprintf("windows[%d].entry_hex", i), w.EntryHex, hex.EncodeToString(sealEntry(i))); err != nil {
					return "", err
				}
				e, err := unhex(w.EntryHex)
				if err != nil {
					return "", err
				}
				leaves[i] = leafHash(e)
				receipts[i] = ReceiptEntry{WindowID: w.WindowID, ContentHash: e, StreamID: doc.StreamID, Steward: doc.Steward}
			}
			var verified []*Checkpoint
			var prev *Seal
			for j, cp := range st.Checkpoints {
				got, err := verifyCheckpointHex(cp.CoseSign1Hex, pub)
				if err != nil {
					return "", err
				}
				seal := got.seal
				canon, err := jcs.Transform([]byte(cp.SealJSON))
				if err != nil {
					return "", err
				}
				if seal.TreeSize > uint64(len(leaves)) {
					return "", refuse("mismatch", "tree_size %d beyond the %d windows", seal.TreeSize, len(leaves))
				}
				want := sealSchemaID
				if j == len(st.Checkpoints)-1 {
					want = sealSchemaIDV2
				}
				decoded, err := decodeSeal([]byte(cp.SealJSON))
				if err != nil {
					return "", err
				}
				for _, c := range []struct{ what, got, want string }{
					{"seal_json (canonical)", string(canon), cp.SealJSON},
					{"seal_json (the verified seal)", fmt.Sprint(*decoded), fmt.Sprint(*seal)},
					{"root", seal.Root, hex.EncodeToString(mth(leaves[:seal.TreeSize]))},
					{"stream_id", seal.StreamID, doc.StreamID},
					{"steward", seal.Steward, doc.Steward},
					{"schema", seal.Schema, want},
				} {
					if err := expectEqual(fmt.Sprintf("checkpoint %d %s", j, c.what), c.got, c.want); err != nil {
						return "", err
					}
				}
				if prev != nil {
					if err := consistencyStep(prev, got); err != nil {
						return "", err
					}
				}
				verified = append(verified, got)
				prev = seal
			}
			if len(verified) == 0 {
				return "", refuse("mismatch", "no checkpoints")
			}
			if p := checkStream(receipts, verified); len(p) != 0 {
				return "", refuse("mismatch", "completeness problems on the good stream: %v", p)
			}
			listed := map[string]string{}
			for _, d := range st.Documents {
				b, err := unhex(d.CoseSign1Hex)
				if err != nil {
					return "", err
				}
				if err := expectEqual("digest of "+d.Kind+" (SHA-256 of its bytes)", documentDigest(b), d.DigestHex); err != nil {
					return "", err
				}
				listed[d.Kind] = documentDigest(b)
			}
			fin := verified[len(verified)-1].seal
			wantDocs, _ := json.Marshal(listed)
			if err := expectEqual("final seal documents", fin.Documents, string(wantDocs)); err != nil {
				return "", err
			}
			return fmt.Sprintf("%d checkpoints, final stream-seal/2 with %d document digests recomputed", len(verified), len(listed)), nil
		})
	}
	for _, c := range doc.Negative {
		rep.Check(fmt.Sprintf("%s negative %s", name, label("", c.Description)[2:]), func() (string, error) {
			if c.Kind != "seal_json" {
				return "", refuse("mismatch", "unknown negative kind %q", c.Kind)
			}
			in, err := unhex(c.InputHex)
			if err != nil {
				return "", err
			}
			_, err = decodeSeal(in)
			return expectRefusal(err, c.Expect)
		})
	}
}
