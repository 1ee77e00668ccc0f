package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"

	"github.com/fxamacker/cbor/v2"
	"lukechampine.com/blake3"
)

// interaction-metrics-vectors.json: interaction-metrics/1 documents
// (spec/INTERACTION-METRICS-V1.md section 8): canonical documents and their schema rules in
// order, the COSE_Sign1 rebuilt byte for byte (stop-latency/1's profile with its own content
// type and subject) and verified strictly, the binding to the window receipts, and the panel
// recomputed float for float (each float compared as its binary64 bits).
func init() {
	register(Family{Order: 86, File: "interaction-metrics-vectors.json", Check: checkInteractionFile, Counts: true})
}

const (
	imSchemaID    = "interaction-metrics/1"
	imContentType = "application/vnd.jouleclaw.interaction-metrics+json"
	imDeadlineNs  = 150_000_000
	imMaxWindowNs = 60_000_000_000
	imMaxSigned   = 8<<20 + 16_384
)

var (
	imLimits = &Limits{DocumentBytes: 8 << 20, Depth: 3, StringBytes: 4_096, ArrayLen: 65_536}
	imTop    = []string{"config", "counts", "deadline_ns", "events", "frame_count", "jc_interaction_metrics", "receipts_root", "steward", "stream_id", "window_count"}
	imConfig = []string{"backchannel_yield_window_ns", "no_yield_window_ns", "non_directed_response_window_ns", "non_directed_yield_window_ns", "tick_ns", "vocal_tic_response_window_ns", "vocal_tic_yield_window_ns"}
	imKinds  = []string{"response", "no_response", "yield", "no_yield", "backchannel_correct", "backchannel_error", "vocal_tic_correct", "vocal_tic_error", "non_directed_correct", "non_directed_error", "agent_interrupts_user"}
	imEvent  = []string{"kind", "latency_ns", "segment_tick", "tick", "window_id"}
	imCodes  = map[string]bool{
		"wrong_type": true, "null": true, "unknown_field": true, "missing_field": true, "wrong_schema": true,
		"negative_unsigned": true, "empty_name": true, "bad_root": true, "wrong_deadline": true, "bad_config": true,
		"bad_kind": true, "latency_mismatch": true, "tick_mismatch": true, "out_of_order": true, "counts_mismatch": true,
	}
)

func imCountKeys() []string {
	keys := append(append([]string{}, imKinds...), "yield_within_deadline")
	sort.Strings(keys)
	return keys
}

type imEv struct {
	kind          string
	latency       *int64
	segment, tick int64
	window        *int64
}

type imDoc struct {
	obj    map[string]any
	tickNs int64
	events []imEv
}

func imWithin(tickNs, l int64) bool {
	if l < 1 {
		l = 1
	}
	return (l-1)*tickNs <= imDeadlineNs
}

func imCount(tickNs int64, events []imEv) map[string]int64 {
	out := map[string]int64{"yield_within_deadline": 0}
	for _, k := range imKinds {
		out[k] = 0
	}
	for _, e := range events {
		out[e.kind]++
		if e.kind == "yield" && imWithin(tickNs, *e.latency/tickNs) {
			out["yield_within_deadline"]++
		}
	}
	return out
}

func imCheckEvent(v any, tickNs, frames int64) (imEv, error) {
	var out imEv
	e, ok := v.(map[string]any)
	if !ok {
		return out, nullOrWrong(v, "an event")
	}
	if err := voiceFields(e, imEvent, imEvent, "an event"); err != nil {
		return out, err
	}
	kind, err := slString(e["kind"], "kind")
	if err != nil {
		return out, err
	}
	latency, err := slUintOrNull(e["latency_ns"], "latency_ns")
	if err != nil {
		return out, err
	}
	seg, err := voiceUint(e["segment_tick"], "segment_tick")
	if err != nil {
		return out, err
	}
	tick, err := voiceUint(e["tick"], "tick")
	if err != nil {
		return out, err
	}
	window, err := slUintOrNull(e["window_id"], "window_id")
	if err != nil {
		return out, err
	}
	known := false
	for _, k := range imKinds {
		known = known || k == kind
	}
	if !known {
		return out, refuse("bad_kind", "kind %q", kind)
	}
	has := kind == "response" || kind == "yield"
	if has != (latency != nil) || (has && (*latency%tickNs != 0 || (kind == "yield" && *latency == 0))) {
		return out, refuse("latency_mismatch", "%s latency_ns", kind)
	}
	if seg > tick || tick >= frames {
		return out, refuse("tick_mismatch", "tick %d", tick)
	}
	return imEv{kind, latency, seg, tick, window}, nil
}

// imCheckSchema applies spec section 4 in order.
func imCheckSchema(root any) (*imDoc, error) {
	obj, ok := root.(map[string]any)
	if !ok {
		return nil, nullOrWrong(root, "the document")
	}
	if err := voiceFields(obj, imTop, imTop, "the document"); err != nil {
		return nil, err
	}
	id, err := slString(obj["jc_interaction_metrics"], "jc_interaction_metrics")
	if err != nil {
		return nil, err
	}
	if id != imSchemaID {
		return nil, refuse("wrong_schema", "jc_interaction_metrics is %q", id)
	}
	steward, err := slString(obj["steward"], "steward")
	if err != nil {
		return nil, err
	}
	streamID, err := slString(obj["stream_id"], "stream_id")
	if err != nil {
		return nil, err
	}
	if _, err := voiceUint(obj["window_count"], "window_count"); err != nil {
		return nil, err
	}
	frames, err := voiceUint(obj["frame_count"], "frame_count")
	if err != nil {
		return nil, err
	}
	deadline, err := voiceUint(obj["deadline_ns"], "deadline_ns")
	if err != nil {
		return nil, err
	}
	rr, err := slString(obj["receipts_root"], "receipts_root")
	if err != nil {
		return nil, err
	}
	config, ok := obj["config"].(map[string]any)
	if !ok {
		return nil, nullOrWrong(obj["config"], "config")
	}
	counts, ok := obj["counts"].(map[string]any)
	if !ok {
		return nil, nullOrWrong(obj["counts"], "counts")
	}
	list, ok := obj["events"].([]any)
	if !ok {
		return nil, nullOrWrong(obj["events"], "events")
	}
	if steward == "" || streamID == "" {
		return nil, refuse("empty_name", "steward or stream_id empty")
	}
	if !slHex64.MatchString(rr) {
		return nil, refuse("bad_root", "receipts_root %q", rr)
	}
	if deadline != imDeadlineNs {
		return nil, refuse("wrong_deadline", "deadline_ns %d", deadline)
	}
	if err := voiceFields(config, imConfig, imConfig, "config"); err != nil {
		return nil, err
	}
	cfg := map[string]int64{}
	for _, k := range imConfig {
		if cfg[k], err = voiceUint(config[k], k); err != nil {
			return nil, err
		}
	}
	for _, v := range cfg {
		if v > imMaxWindowNs {
			return nil, refuse("bad_config", "a window over 60 s")
		}
	}
	if cfg["tick_ns"] == 0 {
		return nil, refuse("bad_config", "tick_ns is 0")
	}
	keys := imCountKeys()
	if err := voiceFields(counts, keys, keys, "counts"); err != nil {
		return nil, err
	}
	given := map[string]int64{}
	for _, k := range keys {
		if given[k], err = voiceUint(counts[k], k); err != nil {
			return nil, err
		}
	}
	events := make([]imEv, 0, len(list))
	for _, v := range list {
		e, err := imCheckEvent(v, cfg["tick_ns"], frames)
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	for i := 1; i < len(events); i++ {
		if events[i].tick < events[i-1].tick {
			return nil, refuse("out_of_order", "event %d", i)
		}
	}
	for k, n := range imCount(cfg["tick_ns"], events) {
		if given[k] != n {
			return nil, refuse("counts_mismatch", "counts.%s", k)
		}
	}
	return &imDoc{obj, cfg["tick_ns"], events}, nil
}

func imDecode(data []byte) (*imDoc, error) {
	if len(data) == 0 {
		return nil, refuse("json", "empty input")
	}
	v, err := parseJCR1(data, imLimits)
	if err != nil {
		return nil, err
	}
	return imCheckSchema(v)
}

func imProtected(steward, subject string, kid []byte) []byte {
	return slCat([]byte{0xa4, 0x01, 0x27, 0x03}, slTstr(imContentType), []byte{0x04}, slBstr(kid),
		[]byte{0x0f, 0xa2, 0x01}, slTstr(steward), []byte{0x02}, slTstr(subject))
}

// imVerifySigned returns the document of a signed interaction-metrics/1 (spec section 5).
func imVerifySigned(data, pub []byte) (*imDoc, error) {
	if len(data) > imMaxSigned {
		return nil, refuse("cose_too_large", "%d bytes", len(data))
	}
	switch {
	case len(data) == 0:
		return nil, refuse("cose_malformed", "empty")
	case data[0] == 0x84:
		return nil, refuse("cose_untagged", "untagged COSE_Sign1")
	case data[0] != 0xd2 && data[0]>>5 == 6:
		return nil, refuse("cose_wrong_tag", "not tag 18")
	case data[0] != 0xd2:
		return nil, refuse("cose_malformed", "not a COSE_Sign1")
	}
	item, err := cborDecodeExact(data)
	if err != nil {
		return nil, refuse("cose_malformed", "%v", err)
	}
	tag, ok := item.(cbor.Tag)
	body, ok2 := tag.Content.([]any)
	if !ok || tag.Number != 18 || !ok2 || len(body) != 4 {
		return nil, refuse("cose_malformed", "not a COSE_Sign1")
	}
	prot, ok1 := body[0].([]byte)
	unprot, ok2 := body[1].(map[any]any)
	sig, ok3 := body[3].([]byte)
	if !ok1 || !ok2 || !ok3 {
		return nil, refuse("cose_malformed", "wrong item types")
	}
	if body[2] == nil {
		return nil, refuse("cose_payload_detached", "detached payload")
	}
	payload, ok := body[2].([]byte)
	if !ok {
		return nil, refuse("cose_malformed", "payload")
	}
	if len(unprot) != 0 {
		return nil, refuse("cose_unprotected_not_empty", "unprotected header")
	}
	hv, err := cborDecodeExact(prot)
	if err != nil {
		return nil, refuse("cose_malformed", "%v", err)
	}
	hdr, ok := hv.(map[any]any)
	if !ok {
		return nil, refuse("cose_malformed", "protected header")
	}
	if a, ok := asInt(hdr[int64(1)]); !ok || a != -8 {
		return nil, refuse("cose_alg_not_eddsa", "alg")
	}
	if ct, _ := hdr[int64(3)].(string); ct != imContentType {
		return nil, refuse("cose_content_type_mismatch", "content type %v", hdr[int64(3)])
	}
	kid, ok := hdr[int64(4)].([]byte)
	if !ok || len(kid) != 32 {
		return nil, refuse("cose_bad_kid", "kid")
	}
	claims, ok := hdr[int64(15)].(map[any]any)
	iss, ok1 := claims[int64(1)].(string)
	sub, ok2 := claims[int64(2)].(string)
	if !ok || len(claims) != 2 || !ok1 || !ok2 {
		return nil, refuse("cose_bad_cwt_claims", "CWT claims")
	}
	if !bytes.Equal(imProtected(iss, sub, kid), prot) {
		return nil, refuse("cose_protected_not_canonical", "protected bytes")
	}
	if len(sig) != 64 || !bytes.Equal(slEnvelope(prot, payload, sig), data) {
		return nil, refuse("cose_envelope_not_canonical", "envelope bytes")
	}
	if !bytes.Equal(kid, thumbprint(pub)) {
		return nil, refuse("cose_unknown_kid", "kid")
	}
	if err := ed25519VerifyStrict(pub, slSigStructure(prot, payload), sig); err != nil {
		return nil, refuse("cose_bad_signature", "%v", err)
	}
	doc, err := imDecode(payload)
	if err != nil {
		return nil, err
	}
	if iss != doc.obj["steward"] {
		return nil, refuse("cose_iss_mismatch", "iss %q", iss)
	}
	if sub != doc.obj["stream_id"].(string)+":interaction-metrics" {
		return nil, refuse("cose_sub_mismatch", "sub %q", sub)
	}
	return doc, nil
}

// imBindingProblems is spec section 6, in order.
func imBindingProblems(doc *imDoc, lines []string) ([]string, error) {
	var out []string
	receipts := make([]slReceipt, len(lines))
	leaves := make([][]byte, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &receipts[i]); err != nil {
			return nil, err
		}
		h := blake3.Sum256([]byte(l))
		leaves[i] = leafHash(h[:])
	}
	for _, r := range receipts {
		if r.Steward != doc.obj["steward"] || r.StreamID != doc.obj["stream_id"] {
			out = append(out, "stream_mismatch")
			break
		}
	}
	if n, _ := voiceInt(doc.obj["window_count"]); n != int64(len(receipts)) {
		out = append(out, "window_count_mismatch")
	}
	if hex.EncodeToString(mth(leaves)) != doc.obj["receipts_root"] {
		out = append(out, "root_mismatch")
	}
	windows := map[int64]bool{}
	for _, r := range receipts {
		windows[r.WindowID] = true
	}
	named := map[int64]bool{}
	for _, e := range doc.events {
		if e.window != nil && !windows[*e.window] && !named[*e.window] {
			named[*e.window] = true
			out = append(out, "event_window_missing")
		}
	}
	return out, nil
}

// imPairwiseSum is numpy's add.reduce over a contiguous float64 array (spec section 3).
func imPairwiseSum(a []float64) float64 {
	n := len(a)
	if n < 8 {
		res := 0.0
		for _, x := range a {
			res = float64(res + x)
		}
		return res
	}
	if n <= 128 {
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := 0; j < 8; j++ {
				r[j] = float64(r[j] + a[i+j])
			}
		}
		res := float64(float64(float64(r[0]+r[1])+float64(r[2]+r[3])) + float64(float64(r[4]+r[5])+float64(r[6]+r[7])))
		for ; i < n; i++ {
			res = float64(res + a[i])
		}
		return res
	}
	n2 := n / 2
	n2 -= n2 % 8
	return float64(imPairwiseSum(a[:n2]) + imPairwiseSum(a[n2:]))
}

// imBits is a float as the vectors write it: the 16 hex digits of its binary64 bits; nil for
// none. Every product and sum is rounded explicitly (float64(...)), so none is fused.
func imBits(v *float64) any {
	if v == nil {
		return nil
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], math.Float64bits(*v))
	return hex.EncodeToString(b[:])
}

func imPanel(doc *imDoc) map[string]any {
	t := float64(doc.tickNs) / 1e9
	c := imCount(doc.tickNs, doc.events)
	var resp, yld []float64
	for _, e := range doc.events {
		switch e.kind {
		case "response":
			end, s := e.tick, e.segment
			a := end + *e.latency/doc.tickNs
			userEnd := float64(float64(float64(s)*t) + float64(float64(end-s)*t))
			resp = append(resp, float64(float64(float64(a)*t)-userEnd))
		case "yield":
			yld = append(yld, float64(float64(*e.latency/doc.tickNs)*t))
		}
	}
	mean := func(v []float64) *float64 {
		if len(v) == 0 {
			return nil
		}
		m := imPairwiseSum(v) / float64(len(v))
		return &m
	}
	rate := func(n, d int64) *float64 {
		if d == 0 {
			return nil
		}
		r := float64(n) / float64(d)
		return &r
	}
	sel := func(ok, err int64) *float64 {
		r := rate(err, ok+err)
		if r == nil {
			return nil
		}
		s := 1.0 - *r
		return &s
	}
	rt := c["response"] + c["no_response"]
	yt := c["yield"] + c["no_yield"]
	return map[string]any{
		"response_latency_mean":    imBits(mean(resp)),
		"yield_latency_mean":       imBits(mean(yld)),
		"response_rate":            imBits(rate(c["response"], rt)),
		"yield_rate":               imBits(rate(c["yield"], yt)),
		"agent_interruption_rate":  imBits(rate(c["agent_interrupts_user"], rt)),
		"selectivity_backchannel":  imBits(sel(c["backchannel_correct"], c["backchannel_error"])),
		"selectivity_vocal_tic":    imBits(sel(c["vocal_tic_correct"], c["vocal_tic_error"])),
		"selectivity_non_directed": imBits(sel(c["non_directed_correct"], c["non_directed_error"])),
		"counts": map[string]any{
			"n_simulations":          1,
			"response_total":         rt,
			"yield_total":            yt,
			"backchannel_total":      c["backchannel_correct"] + c["backchannel_error"],
			"vocal_tic_total":        c["vocal_tic_correct"] + c["vocal_tic_error"],
			"non_directed_total":     c["non_directed_correct"] + c["non_directed_error"],
			"agent_interrupts_count": c["agent_interrupts_user"],
		},
		"substrate": map[string]any{
			"yield_rate_deadline":         imBits(rate(c["yield_within_deadline"], yt)),
			"deadline_ns":                 imDeadlineNs,
			"yield_within_deadline_count": c["yield_within_deadline"],
			"response_count":              c["response"],
			"no_response_count":           c["no_response"],
			"yield_count":                 c["yield"],
			"no_yield_count":              c["no_yield"],
			"backchannel_error_count":     c["backchannel_error"],
			"vocal_tic_error_count":       c["vocal_tic_error"],
			"non_directed_error_count":    c["non_directed_error"],
		},
	}
}

func checkInteractionFile(rep *Report, _ string, path string) {
	name := filepath.Base(path)
	var doc struct {
		Schema      string `json:"schema"`
		ContentType string `json:"content_type"`
		DeadlineNs  int64  `json:"deadline_ns"`
		PublicKey   string `json:"public_key"`
		Kid         string `json:"kid"`
		Documents   []struct {
			N            any             `json:"n"`
			Description  string          `json:"description"`
			Receipts     []string        `json:"receipts"`
			Canonical    string          `json:"canonical"`
			ContentHash  string          `json:"content_hash"`
			ReceiptsRoot string          `json:"receipts_root"`
			ProtectedHex string          `json:"protected_hex"`
			TbsHex       string          `json:"to_be_signed_hex"`
			CoseHex      string          `json:"cose_sign1_hex"`
			Panel        json.RawMessage `json:"panel"`
		} `json:"documents"`
		Negative []struct {
			N             any    `json:"n"`
			Description   string `json:"description"`
			InputHex      string `json:"input_hex"`
			ExpectRefusal string `json:"expect_refusal"`
		} `json:"negative"`
		Tampered []struct {
			N             any      `json:"n"`
			Description   string   `json:"description"`
			CoseHex       string   `json:"cose_sign1_hex"`
			Receipts      []string `json:"receipts"`
			ExpectRefusal string   `json:"expect_refusal"`
		} `json:"tampered"`
	}
	if !loadInto(rep, name, path, &doc) {
		return
	}
	var pub []byte
	rep.Check(name+" load", func() (string, error) {
		for _, e := range []error{
			expectEqual("schema", doc.Schema, imSchemaID),
			expectEqual("content_type", doc.ContentType, imContentType),
			expectEqual("deadline_ns", doc.DeadlineNs, int64(imDeadlineNs)),
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
	for _, v := range doc.Documents {
		rep.Check(name+" documents "+label(v.N, v.Description), func() (string, error) {
			data := []byte(v.Canonical)
			if err := expectEqual("content_hash", blake3Hex(data), v.ContentHash); err != nil {
				return "", err
			}
			d, err := imDecode(data)
			if err != nil {
				return "", err
			}
			prot := imProtected(d.obj["steward"].(string), d.obj["stream_id"].(string)+":interaction-metrics", thumbprint(pub))
			signed, err := unhex(v.CoseHex)
			if err != nil || len(signed) < 64 {
				return "", refuse("mismatch", "cose_sign1_hex")
			}
			for _, e := range []error{
				expectEqual("protected", hex.EncodeToString(prot), v.ProtectedHex),
				expectEqual("to_be_signed", hex.EncodeToString(slSigStructure(prot, data)), v.TbsHex),
				expectEqual("envelope", hex.EncodeToString(slEnvelope(prot, data, signed[len(signed)-64:])), v.CoseHex),
				expectEqual("receipts_root", d.obj["receipts_root"], v.ReceiptsRoot),
			} {
				if e != nil {
					return "", e
				}
			}
			if _, err := imVerifySigned(signed, pub); err != nil {
				return "", err
			}
			problems, err := imBindingProblems(d, v.Receipts)
			if err != nil {
				return "", err
			}
			if len(problems) != 0 {
				return "", refuse("mismatch", "binding problems %v", problems)
			}
			var want any
			if err := json.Unmarshal(v.Panel, &want); err != nil {
				return "", err
			}
			wantJSON, _ := json.Marshal(want)
			gotJSON, _ := json.Marshal(imPanel(d))
			return fmt.Sprintf("%d events", len(d.events)), expectEqual("panel", string(gotJSON), string(wantJSON))
		})
	}
	for _, c := range doc.Negative {
		rep.Check(fmt.Sprintf("%s negative %s (%s)", name, label(c.N, c.Description), c.ExpectRefusal), func() (string, error) {
			data, err := unhex(c.InputHex)
			if err != nil {
				return "", err
			}
			if _, err := imDecode(data); err == nil {
				return "", refuse("accepted", "input was ACCEPTED; expected refusal %s", c.ExpectRefusal)
			} else if cls := refusalClass(err); imCodes[c.ExpectRefusal] && cls != c.ExpectRefusal {
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
			d, err := imVerifySigned(data, pub)
			if err != nil {
				return "refused [" + refusalClass(err) + "]", nil
			}
			problems, err := imBindingProblems(d, c.Receipts)
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
