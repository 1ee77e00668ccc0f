package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/gowebpki/jcs"
	"lukechampine.com/blake3"
)

// stream-seal-vectors.json: RFC 9162 roots, inclusion and consistency proofs, a sealed stream
// (stream-seal/1 checkpoints and RFC 9942 inclusion receipts), and negative cases.
func init() {
	register(Family{Order: 60, File: "stream-seal-vectors.json", Check: checkSealFile, Counts: true})
}

type sealDoc struct {
	Key   vectorKey `json:"key"`
	Trees []struct {
		Size    int    `json:"size"`
		RootHex string `json:"root_hex"`
	} `json:"trees"`
	Inclusion []struct {
		EntryHex    string   `json:"entry_hex"`
		LeafHashHex string   `json:"leaf_hash_hex"`
		LeafIndex   int      `json:"leaf_index"`
		PathHex     []string `json:"path_hex"`
		RootHex     string   `json:"root_hex"`
		TreeSize    int      `json:"tree_size"`
	} `json:"inclusion"`
	Consistency []struct {
		FirstRootHex  string   `json:"first_root_hex"`
		FirstSize     int      `json:"first_size"`
		PathHex       []string `json:"path_hex"`
		SecondRootHex string   `json:"second_root_hex"`
		SecondSize    int      `json:"second_size"`
	} `json:"consistency"`
	Stream struct {
		StreamID string `json:"stream_id"`
		Steward  string `json:"steward"`
		Windows  []struct {
			ClosedAt       string `json:"closed_at"`
			ContentHashHex string `json:"content_hash_hex"`
			LeafIndex      int    `json:"leaf_index"`
			WindowID       uint64 `json:"window_id"`
		} `json:"windows"`
		Checkpoints []struct {
			Seal         json.RawMessage `json:"seal"`
			SealJSON     string          `json:"seal_json"`
			Subject      string          `json:"subject"`
			ProtectedHex string          `json:"protected_hex"`
			ToBeSigned   string          `json:"to_be_signed_hex"`
			SignatureHex string          `json:"signature_hex"`
			Consistency  *struct {
				FirstSize  int      `json:"first_size"`
				PathHex    []string `json:"path_hex"`
				SecondSize int      `json:"second_size"`
			} `json:"consistency"`
			CoseSign1Hex string `json:"cose_sign1_hex"`
			Inclusion    []struct {
				CoseSign1Hex string `json:"cose_sign1_hex"`
				LeafIndex    int    `json:"leaf_index"`
				WindowID     uint64 `json:"window_id"`
			} `json:"inclusion"`
		} `json:"checkpoints"`
	} `json:"stream"`
	Negative []sealNegative `json:"negative"`
}

type sealNegative struct {
	N              any             `json:"n"`
	Kind           string          `json:"kind"`
	Description    string          `json:"description"`
	Expect         string          `json:"expect"`
	EntryHex       string          `json:"entry_hex"`
	LeafIndex      uint64          `json:"leaf_index"`
	TreeSize       uint64          `json:"tree_size"`
	PathHex        []string        `json:"path_hex"`
	RootHex        string          `json:"root_hex"`
	FirstSize      uint64          `json:"first_size"`
	SecondSize     uint64          `json:"second_size"`
	FirstRootHex   string          `json:"first_root_hex"`
	SecondRootHex  string          `json:"second_root_hex"`
	InputHex       string          `json:"input_hex"`
	CoseSign1Hex   string          `json:"cose_sign1_hex"`
	PublicKeyHex   *string         `json:"public_key_hex"`
	CheckpointsHex []string        `json:"checkpoints_hex"`
	ExpectProblems json.RawMessage `json:"expect_problems"`
	Receipts       []struct {
		ContentHashHex string `json:"content_hash_hex"`
		Steward        string `json:"steward"`
		StreamID       string `json:"stream_id"`
		WindowID       uint64 `json:"window_id"`
	} `json:"receipts"`
}

// The vector file's "verified with another key" case carries no key: spec/STREAM-SEAL.md
// section 8 names it (the Ed25519 key of the seed of 32 bytes 0x07). A case's own key wins.
const otherKeyCase = "verified with another key"

func sealNegativeKey(c sealNegative, pub []byte) ([]byte, error) {
	if c.PublicKeyHex != nil {
		return unhex(*c.PublicKeyHex)
	}
	if c.Description == otherKeyCase {
		return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32)).Public().(ed25519.PublicKey), nil
	}
	return pub, nil
}

func sealEntry(i int) []byte {
	h := blake3.Sum256([]byte("jouleclaw stream-seal vector leaf " + strconv.Itoa(i)))
	return h[:]
}

func hexList(hs [][]byte) string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = hex.EncodeToString(h)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func jsonList(v any) string { b, _ := json.Marshal(v); return string(b) }

// canonicalProblems puts problems (computed or from the file) into RFC 8785 form for comparison.
func canonicalProblems(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	c, err := jcs.Transform(b)
	return string(c), err
}

// expectProblems compares the computed problems with the file's list, both in RFC 8785 form.
func expectProblems(problems any, want []byte) error {
	got, err := canonicalProblems(problems)
	if err != nil {
		return err
	}
	w, err := jcs.Transform(want)
	if err != nil {
		return err
	}
	return expectEqual("problems", got, string(w))
}

func expectRefusal(err error, expect string) (string, error) {
	if err == nil {
		return "", refuse("accepted", "ACCEPTED; expected refusal %s", expect)
	}
	cls := refusalClass(err)
	if cls == "" {
		return "", err
	}
	if !sealCodeMatches(cls, expect) {
		return "", refuse("mismatch", "refused as %s (%v); the Rust code is %s", cls, err, expect)
	}
	return fmt.Sprintf("refused [%s], rust code %s", cls, expect), nil
}

func checkSealFile(rep *Report, _ string, path string) {
	var doc sealDoc
	name, seed, pub, ok := loadKeyedFile(rep, path, &doc, &doc.Key)
	if !ok {
		return
	}
	priv := ed25519.NewKeyFromSeed(seed)
	rep.Check(name+" key", func() (string, error) {
		if err := expectEqual("public key from seed", hex.EncodeToString(priv.Public().(ed25519.PublicKey)), doc.Key.PublicKeyHex); err != nil {
			return "", err
		}
		if err := expectEqual("kid (RFC 9679 thumbprint)", hex.EncodeToString(thumbprint(pub)), doc.Key.KidHex); err != nil {
			return "", err
		}
		if len(doc.Trees) == 0 || len(doc.Inclusion) == 0 || len(doc.Consistency) == 0 || len(doc.Negative) == 0 {
			return "", refuse("mismatch", "no trees, inclusion, consistency or negative vectors")
		}
		return "", nil
	})
	biggest := 1000
	for _, t := range doc.Trees {
		biggest = max(biggest, t.Size)
	}
	leaves := make([][]byte, biggest)
	for i := range leaves {
		leaves[i] = leafHash(sealEntry(i))
	}
	for _, t := range doc.Trees {
		rep.Check(fmt.Sprintf("%s tree %d", name, t.Size), func() (string, error) {
			return "", expectEqual("root_hex", hex.EncodeToString(mth(leaves[:t.Size])), t.RootHex)
		})
	}
	for _, v := range doc.Inclusion {
		rep.Check(fmt.Sprintf("%s inclusion (%d, %d)", name, v.LeafIndex, v.TreeSize), func() (string, error) {
			m, n := v.LeafIndex, v.TreeSize
			entry, err := unhex(v.EntryHex)
			if err != nil {
				return "", err
			}
			lh := leafHash(entry)
			p, err := regeneratedPath(v.PathHex,
				fieldCheck{"entry_hex", hex.EncodeToString(sealEntry(m)), v.EntryHex},
				fieldCheck{"leaf_hash_hex", hex.EncodeToString(lh), v.LeafHashHex},
				fieldCheck{"root_hex", hex.EncodeToString(mth(leaves[:n])), v.RootHex},
				fieldCheck{"path_hex (PATH regenerated)", hexList(genPath(m, leaves[:n])), jsonList(v.PathHex)})
			if err != nil {
				return "", err
			}
			root, _ := unhex(v.RootHex)
			return fmt.Sprintf("%d hashes", len(p)), verifyInclusion(uint64(m), uint64(n), lh, p, root)
		})
	}
	for _, v := range doc.Consistency {
		rep.Check(fmt.Sprintf("%s consistency (%d, %d)", name, v.FirstSize, v.SecondSize), func() (string, error) {
			m, n := v.FirstSize, v.SecondSize
			p, err := regeneratedPath(v.PathHex,
				fieldCheck{"first_root_hex", hex.EncodeToString(mth(leaves[:m])), v.FirstRootHex},
				fieldCheck{"second_root_hex", hex.EncodeToString(mth(leaves[:n])), v.SecondRootHex},
				fieldCheck{"path_hex (PROOF regenerated)", hexList(genSubproof(m, leaves[:n], true)), jsonList(v.PathHex)})
			if err != nil {
				return "", err
			}
			r1, _ := unhex(v.FirstRootHex)
			r2, _ := unhex(v.SecondRootHex)
			return fmt.Sprintf("%d hashes", len(p)), verifyConsistency(uint64(m), uint64(n), r1, r2, p)
		})
	}

	st := doc.Stream
	windows := st.Windows
	rep.Check(name+" stream windows", func() (string, error) {
		if len(windows) == 0 || len(st.Checkpoints) == 0 {
			return "", refuse("mismatch", "no stream windows or checkpoints")
		}
		for i, w := range windows {
			if w.LeafIndex != i {
				return "", refuse("mismatch", "windows[%d].leaf_index is %d", i, w.LeafIndex)
			}
			if err := expectEqual(fmt.Sprintf("windows[%d].content_hash_hex", i), w.ContentHashHex, hex.EncodeToString(sealEntry(i))); err != nil {
				return "", err
			}
			if err := checkClosedAt(w.ClosedAt); err != nil {
				return "", err
			}
			if i > 0 && w.WindowID <= windows[i-1].WindowID {
				return "", refuse("mismatch", "window ids do not increase")
			}
		}
		return fmt.Sprintf("%d windows", len(windows)), nil
	})
	var verified []*Checkpoint
	var prev *Seal
	for j, cp := range st.Checkpoints {
		rep.Check(fmt.Sprintf("%s checkpoint %d", name, j), func() (string, error) {
			sealBytes := []byte(cp.SealJSON)
			seal, err := decodeSeal(sealBytes)
			if err != nil {
				return "", err
			}
			canon, err := jcs.Transform(cp.Seal)
			if err != nil {
				return "", err
			}
			n := int(seal.TreeSize)
			if n > len(windows) {
				return "", refuse("mismatch", "tree_size %d beyond the %d windows", n, len(windows))
			}
			last := windows[n-1]
			kid := thumbprint(pub)
			prot := sealProtected(seal, sealBytes, kid)
			tbs := sigStructure(prot, seal.rootBytes(), nil)
			sig := ed25519.Sign(priv, tbs)
			unprot := sealUnprotected(0, 0, 0, nil)
			wantConsistency := "null"
			if prev != nil {
				m := int(prev.TreeSize)
				path := genSubproof(m, leaves[:n], true)
				wantConsistency = fmt.Sprintf(`{"first_size":%d,"path_hex":%s,"second_size":%d}`, m, hexList(path), n)
				unprot = sealUnprotected(consistencyProof, uint64(m), uint64(n), path)
			}
			gotConsistency := "null"
			if cp.Consistency != nil {
				gotConsistency = fmt.Sprintf(`{"first_size":%d,"path_hex":%s,"second_size":%d}`, cp.Consistency.FirstSize, jsonList(cp.Consistency.PathHex), cp.Consistency.SecondSize)
			}
			if err := expectAll([]fieldCheck{
				{"seal_json (canonical JSON of seal)", string(canon), cp.SealJSON},
				{"root", seal.Root, hex.EncodeToString(mth(leaves[:n]))},
				{"stream_id", seal.StreamID, st.StreamID},
				{"steward", seal.Steward, st.Steward},
				{"first_window_id", strconv.FormatUint(seal.FirstWindowID, 10), strconv.FormatUint(windows[0].WindowID, 10)},
				{"last_window_id", strconv.FormatUint(seal.LastWindowID, 10), strconv.FormatUint(last.WindowID, 10)},
				{"closed_at", seal.ClosedAt, last.ClosedAt},
				{"final", strconv.FormatBool(seal.Final), strconv.FormatBool(n == len(windows) && j == len(st.Checkpoints)-1)},
				{"subject", seal.subject(), cp.Subject},
				{"protected_hex", hex.EncodeToString(prot), cp.ProtectedHex},
				{"to_be_signed_hex", hex.EncodeToString(tbs), cp.ToBeSigned},
				{"signature_hex (recomputed from the test key)", hex.EncodeToString(sig), cp.SignatureHex},
				{"consistency", gotConsistency, wantConsistency},
				{"cose_sign1_hex", hex.EncodeToString(sealEnvelope(prot, unprot, sig)), cp.CoseSign1Hex},
			}...); err != nil {
				return "", err
			}
			got, err := verifyCheckpointHex(cp.CoseSign1Hex, pub)
			if err != nil {
				return "", err
			}
			if *got.seal != *seal {
				return "", refuse("mismatch", "verified seal differs from seal_json")
			}
			if prev != nil {
				if err := consistencyStep(prev, got); err != nil {
					return "", err
				}
			}
			verified = append(verified, got)
			return "rebuilt byte for byte; strict Ed25519 + go-cose (detached root)", nil
		})
		prevTree := 0
		if prev != nil {
			prevTree = int(prev.TreeSize)
		}
		for _, inc := range cp.Inclusion {
			rep.Check(fmt.Sprintf("%s checkpoint %d inclusion window %d", name, j, inc.WindowID), func() (string, error) {
				i := inc.LeafIndex
				if i < 0 || i >= len(windows) || windows[i].WindowID != inc.WindowID {
					return "", refuse("mismatch", "leaf %d is not window %d", i, inc.WindowID)
				}
				seal, err := decodeSeal([]byte(cp.SealJSON))
				if err != nil {
					return "", err
				}
				n := int(seal.TreeSize)
				if !(prevTree <= i && i < n) {
					return "", refuse("mismatch", "leaf %d not issued by this checkpoint [%d, %d)", i, prevTree, n)
				}
				prot, _ := unhex(cp.ProtectedHex)
				sig, _ := unhex(cp.SignatureHex)
				want := sealEnvelope(prot, sealUnprotected(inclusionProofs, uint64(n), uint64(i), genPath(i, leaves[:n])), sig)
				if err := expectEqual("cose_sign1_hex", hex.EncodeToString(want), inc.CoseSign1Hex); err != nil {
					return "", err
				}
				data, _ := unhex(inc.CoseSign1Hex)
				ch, _ := unhex(windows[i].ContentHashHex)
				_, index, err := verifyInclusionReceipt(data, ch, pub)
				if err != nil {
					return "", err
				}
				if index != uint64(i) {
					return "", refuse("mismatch", "leaf index %d, expected %d", index, i)
				}
				return "proof to root, strict Ed25519 + go-cose", nil
			})
		}
		prev, _ = decodeSeal([]byte(cp.SealJSON))
	}
	rep.Check(name+" stream completeness", func() (string, error) {
		issued := []int{}
		for _, cp := range st.Checkpoints {
			for _, inc := range cp.Inclusion {
				issued = append(issued, inc.LeafIndex)
			}
		}
		want := make([]int, len(windows))
		for i := range want {
			want[i] = i
		}
		if err := expectEqual("inclusion receipts, one per window in leaf order", jsonList(issued), jsonList(want)); err != nil {
			return "", err
		}
		if len(verified) != len(st.Checkpoints) {
			return "", refuse("mismatch", "a checkpoint failed")
		}
		receipts := make([]ReceiptEntry, len(windows))
		for i, w := range windows {
			ch, _ := unhex(w.ContentHashHex)
			receipts[i] = ReceiptEntry{WindowID: w.WindowID, ContentHash: ch, StreamID: st.StreamID, Steward: st.Steward}
		}
		if p := checkStream(receipts, verified); len(p) != 0 {
			return "", refuse("mismatch", "completeness problems on the good stream: %v", p)
		}
		return "complete: no problem", nil
	})

	for _, c := range doc.Negative {
		d := []rune(c.Description)
		if len(d) > 40 {
			d = d[:40]
		}
		rep.Check(fmt.Sprintf("%s negative #%v %s %s", name, c.N, c.Kind, string(d)), func() (string, error) {
			switch c.Kind {
			case "inclusion_proof":
				entry, err := unhex(c.EntryHex)
				if err != nil {
					return "", err
				}
				root, _ := unhex(c.RootHex)
				p, err := proofPath(c.PathHex)
				if err == nil {
					err = verifyInclusion(c.LeafIndex, c.TreeSize, leafHash(entry), p, root)
				}
				return expectRefusal(err, c.Expect)
			case "consistency_proof":
				r1, _ := unhex(c.FirstRootHex)
				r2, _ := unhex(c.SecondRootHex)
				p, err := proofPath(c.PathHex)
				if err == nil {
					err = verifyConsistency(c.FirstSize, c.SecondSize, r1, r2, p)
				}
				return expectRefusal(err, c.Expect)
			case "seal_json":
				in, err := unhex(c.InputHex)
				if err != nil {
					return "", err
				}
				_, err = decodeSeal(in)
				return expectRefusal(err, c.Expect)
			case "inclusion_receipt":
				data, err := unhex(c.CoseSign1Hex)
				if err != nil {
					return "", err
				}
				entry, err := unhex(c.EntryHex)
				if err != nil {
					return "", err
				}
				key, err := sealNegativeKey(c, pub)
				if err != nil {
					return "", err
				}
				_, _, err = verifyInclusionReceipt(data, entry, key)
				return expectRefusal(err, c.Expect)
			case "completeness":
				var cps []*Checkpoint
				for _, h := range c.CheckpointsHex {
					cp, err := verifyCheckpointHex(h, pub)
					if err != nil {
						return "", err
					}
					cps = append(cps, cp)
				}
				receipts := make([]ReceiptEntry, len(c.Receipts))
				for i, r := range c.Receipts {
					ch, err := unhex(r.ContentHashHex)
					if err != nil {
						return "", err
					}
					receipts[i] = ReceiptEntry{WindowID: r.WindowID, ContentHash: ch, StreamID: r.StreamID, Steward: r.Steward}
				}
				problems := checkStream(receipts, cps)
				if len(problems) == 0 {
					return "", refuse("accepted", "stream judged complete; expected %s", string(c.ExpectProblems))
				}
				if err := expectProblems(problems, c.ExpectProblems); err != nil {
					return "", err
				}
				codes := ""
				for i, p := range problems {
					if i > 0 {
						codes += ", "
					}
					codes += p["code"].(string)
				}
				return "problems: " + codes, nil
			}
			return "", refuse("mismatch", "unknown negative kind %q", c.Kind)
		})
	}
}
