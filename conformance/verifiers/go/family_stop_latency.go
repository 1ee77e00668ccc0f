package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
)

// stop-latency-vectors.json: stop-latency/1 documents (spec/STOP-LATENCY-V1.md section 8):
// canonical documents and their schema rules in order, the COSE_Sign1 rebuilt byte for byte
// and verified strictly, the binding to the window receipts, the nearest-rank summary.
func init() {
	register(Family{Order: 85, File: "stop-latency-vectors.json", Check: checkStopLatencyFile, Counts: true})
}

const (
	slSchemaID    = "stop-latency/1"
	slSchemaIDV2  = "stop-latency/2"
	slContentType = "application/vnd.jouleclaw.stop-latency+json"
	slDeadlineNs  = 150_000_000
	slMaxSigned   = 8<<20 + 16_384
)

var (
	slLimits      = &Limits{DocumentBytes: 8 << 20, Depth: 3, StringBytes: 4_096, ArrayLen: 16_384}
	slTop         = []string{"barge_ins", "deadline_ns", "jc_stop_latency", "receipts_root", "steward", "stream_id", "window_count"}
	slTopV2       = append(append([]string{}, slTop...), "vantage")
	slVantage     = []string{"excluded_buffer_ns", "point"}
	slBarge       = []string{"audio_bytes", "barge_in_ts_ns", "end_ts_ns", "ended_by", "last_audio_ts_ns", "late_audio_bytes", "stop_latency_ns", "window_id"}
	slHex64       = regexp.MustCompile(`^[0-9a-f]{64}$`)
	slSchemaCodes = map[string]bool{
		"wrong_type": true, "null": true, "unknown_field": true, "missing_field": true, "wrong_schema": true,
		"negative_unsigned": true, "empty_name": true, "bad_root": true, "wrong_deadline": true,
		"bad_ended_by": true, "end_mismatch": true, "latency_mismatch": true, "late_mismatch": true,
		"out_of_order": true, "bad_vantage": true,
	}
)

// slUintOrNull is an unsigned integer or null (anything else: wrong_type).
func slUintOrNull(v any, what string) (*int64, error) {
	if v == nil {
		return nil, nil
	}
	i, ok := voiceInt(v)
	if !ok {
		return nil, refuse("wrong_type", "%s is neither an integer nor null", what)
	}
	if i < 0 {
		return nil, refuse("negative_unsigned", "%s is negative", what)
	}
	return &i, nil
}

func slString(v any, what string) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", nullOrWrong(v, what)
	}
	return s, nil
}

// slBargeIn is what the binding reads of a barge-in; end and last are nil when null.
type slBargeIn struct {
	window, ts, latency, late int64
	end, last                 *int64
}

func slCheckBargeIn(v any) (slBargeIn, error) {
	var out slBargeIn
	b, ok := v.(map[string]any)
	if !ok {
		return out, nullOrWrong(v, "a barge-in")
	}
	if err := voiceFields(b, slBarge, slBarge, "a barge-in"); err != nil {
		return out, err
	}
	r := objFields{obj: b}
	audio := r.uint("audio_bytes")
	t := r.uint("barge_in_ts_ns")
	end := r.uintOrNull("end_ts_ns")
	endedBy := r.str("ended_by")
	last := r.uintOrNull("last_audio_ts_ns")
	late := r.uint("late_audio_bytes")
	latency := r.uint("stop_latency_ns")
	window := r.uint("window_id")
	if r.err != nil {
		return out, r.err
	}
	if endedBy != "start" && endedBy != "stream_end" {
		return out, refuse("bad_ended_by", "ended_by is %q", endedBy)
	}
	if !((endedBy == "start" && end != nil && *end >= t) || (endedBy == "stream_end" && end == nil)) {
		return out, refuse("end_mismatch", "ended_by and end_ts_ns disagree")
	}
	var ok2 bool
	if last == nil {
		ok2 = latency == 0 && audio == 0
	} else {
		ok2 = t <= *last && (end == nil || *last <= *end) && audio > 0 && latency == *last-t
	}
	if !ok2 {
		return out, refuse("latency_mismatch", "stop_latency_ns is not last_audio_ts_ns - barge_in_ts_ns")
	}
	if late > audio || (late > 0) != (latency > slDeadlineNs) {
		return out, refuse("late_mismatch", "late_audio_bytes")
	}
	return slBargeIn{window: window, ts: t, latency: latency, late: late, end: end, last: last}, nil
}

// slCheckSchema applies spec section 4 in order.
func slCheckSchema(root any) (map[string]any, []slBargeIn, error) {
	obj, ok := root.(map[string]any)
	if !ok {
		return nil, nil, nullOrWrong(root, "the document")
	}
	// stop-latency/2 (spec section 10) adds `vantage`; the id selects the field set.
	v2 := obj["jc_stop_latency"] == slSchemaIDV2
	top := slTop
	if v2 {
		top = slTopV2
	}
	if err := voiceFields(obj, top, top, "the document"); err != nil {
		return nil, nil, err
	}
	id, err := slString(obj["jc_stop_latency"], "jc_stop_latency")
	if err != nil {
		return nil, nil, err
	}
	if id != slSchemaID && id != slSchemaIDV2 {
		return nil, nil, refuse("wrong_schema", "jc_stop_latency is %q", id)
	}
	r := objFields{obj: obj}
	steward := r.str("steward")
	streamID := r.str("stream_id")
	r.uint("window_count")
	deadline := r.uint("deadline_ns")
	rr := r.str("receipts_root")
	if r.err != nil {
		return nil, nil, r.err
	}
	list, ok := obj["barge_ins"].([]any)
	if !ok {
		return nil, nil, nullOrWrong(obj["barge_ins"], "barge_ins")
	}
	if steward == "" || streamID == "" {
		return nil, nil, refuse("empty_name", "steward or stream_id empty")
	}
	if !slHex64.MatchString(rr) {
		return nil, nil, refuse("bad_root", "receipts_root %q", rr)
	}
	if deadline != slDeadlineNs {
		return nil, nil, refuse("wrong_deadline", "deadline_ns %d", deadline)
	}
	if v2 {
		v, ok := obj["vantage"].(map[string]any)
		if !ok {
			return nil, nil, nullOrWrong(obj["vantage"], "vantage")
		}
		if err := voiceFields(v, slVantage, slVantage, "vantage"); err != nil {
			return nil, nil, err
		}
		if v["excluded_buffer_ns"] != nil {
			if _, err := voiceUint(v["excluded_buffer_ns"], "excluded_buffer_ns"); err != nil {
				return nil, nil, err
			}
		}
		point, err := slString(v["point"], "point")
		if err != nil {
			return nil, nil, err
		}
		if point != "sent" && point != "played" {
			return nil, nil, refuse("bad_vantage", "vantage point %q", point)
		}
	}
	bs := make([]slBargeIn, 0, len(list))
	for _, v := range list {
		b, err := slCheckBargeIn(v)
		if err != nil {
			return nil, nil, err
		}
		bs = append(bs, b)
	}
	for i := 1; i < len(bs); i++ {
		if bs[i].window < bs[i-1].window || bs[i].ts < bs[i-1].ts {
			return nil, nil, refuse("out_of_order", "barge-in %d", i)
		}
	}
	return obj, bs, nil
}

func slDecode(data []byte) (map[string]any, []slBargeIn, error) {
	if len(data) == 0 {
		return nil, nil, refuse("json", "empty input")
	}
	v, err := parseJCR1(data, slLimits)
	if err != nil {
		return nil, nil, err
	}
	return slCheckSchema(v)
}

func slHead(major byte, n int) []byte {
	m := major << 5
	switch {
	case n < 24:
		return []byte{m | byte(n)}
	case n < 0x100:
		return []byte{m | 24, byte(n)}
	case n < 0x10000:
		return []byte{m | 25, byte(n >> 8), byte(n)}
	default:
		return []byte{m | 26, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	}
}

func slBstr(b []byte) []byte { return append(slHead(2, len(b)), b...) }
func slTstr(s string) []byte { return append(slHead(3, len(s)), s...) }

func slCat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func slSigStructure(prot, payload []byte) []byte {
	return slCat([]byte{0x84}, slTstr("Signature1"), slBstr(prot), []byte{0x40}, slBstr(payload))
}

func slEnvelope(prot, payload, sig []byte) []byte {
	return slCat([]byte{0xd2, 0x84}, slBstr(prot), []byte{0xa0}, slBstr(payload), slBstr(sig))
}

// slVerifySigned returns the document of a signed stop-latency/1 (spec section 6, in order).
func slVerifySigned(data, pub []byte) (map[string]any, []slBargeIn, error) {
	payload, iss, sub, err := openSignedDoc(data, pub, slMaxSigned, slContentType)
	if err != nil {
		return nil, nil, err
	}
	doc, bs, err := slDecode(payload)
	if err != nil {
		return nil, nil, err
	}
	if err := checkSignedDocClaims(iss, sub, doc, "stop-latency"); err != nil {
		return nil, nil, err
	}
	return doc, bs, nil
}

type slReceipt struct {
	Steward  string `json:"steward"`
	StreamID string `json:"stream_id"`
	WindowID int64  `json:"window_id"`
	Verdict  struct {
		Kind   string `json:"kind"`
		SeenAt *int64 `json:"seen_at"`
	} `json:"verdict"`
	Conservation struct {
		Kind         string `json:"kind"`
		BargeInTsNs  int64  `json:"barge_in_ts_ns"`
		OutboundTsNs int64  `json:"outbound_ts_ns"`
	} `json:"conservation"`
}

// recordsBargeIn says whether a receipt records a barge-in: a yield verdict, or a
// barge_in_ignored finding whatever the verdict (a fail outranks the yield of its window).
func (r *slReceipt) recordsBargeIn() bool {
	return r.Verdict.Kind == "yield" || r.Conservation.Kind == "barge_in_ignored"
}

// slRequired is section 7's rule for a stream without a document: refused
// (stop_latency_missing) when any receipt records a barge-in.
func slRequired(lines []string) (bool, error) {
	for _, l := range lines {
		var r slReceipt
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			return false, err
		}
		if r.recordsBargeIn() {
			return true, nil
		}
	}
	return false, nil
}

// slYieldsFailed returns the receipts with every yield verdict turned into a fail.
func slYieldsFailed(lines []string) ([]string, error) {
	out := make([]string, len(lines))
	for i, l := range lines {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			return nil, err
		}
		if v, _ := r["verdict"].(map[string]any); v["kind"] == "yield" {
			r["verdict"] = map[string]any{"kind": "fail", "chain": []string{"barge-in-detector"}}
		}
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		out[i] = string(b)
	}
	return out, nil
}

// slBindingProblems is spec section 7, in order.
func slBindingProblems(doc map[string]any, bs []slBargeIn, lines []string) ([]string, error) {
	receipts, out, err := signedDocBinding(doc, lines)
	if err != nil {
		return nil, err
	}
	byWindow := map[int64]slReceipt{}
	for _, r := range receipts {
		byWindow[r.WindowID] = r
	}
	listedSet := map[int64]bool{}
	for _, b := range bs {
		listedSet[b.window] = true
	}
	listed := make([]int64, 0, len(listedSet))
	for w := range listedSet {
		listed = append(listed, w)
	}
	sort.Slice(listed, func(i, j int) bool { return listed[i] < listed[j] })
	for _, w := range listed {
		r, ok := byWindow[w]
		if !ok {
			out = append(out, "barge_in_window_missing")
			continue
		}
		yielded := r.Verdict.Kind == "yield" && r.Verdict.SeenAt != nil && *r.Verdict.SeenAt == w
		if !yielded && r.Verdict.Kind != "fail" {
			out = append(out, "barge_in_not_yielded")
		}
	}
	for _, r := range receipts {
		if r.Verdict.Kind == "yield" && !listedSet[r.WindowID] {
			out = append(out, "yield_unlisted")
		}
	}
	// Values, not only membership: what a receipt's barge_in_ignored finding states (the
	// barge-in at B, outbound past its deadline at T) must be what the first listed barge-in at
	// B says.
	for _, r := range receipts {
		c := r.Conservation
		if c.Kind != "barge_in_ignored" {
			continue
		}
		var b *slBargeIn
		for i := range bs {
			if bs[i].ts == c.BargeInTsNs {
				b = &bs[i]
				break
			}
		}
		if b == nil {
			out = append(out, "finding_unlisted")
			continue
		}
		openThen := b.end == nil || *b.end >= c.OutboundTsNs
		lateThen := b.late > 0 && b.last != nil && *b.last >= c.OutboundTsNs
		if b.window > r.WindowID || !openThen || !lateThen {
			out = append(out, "finding_contradicted")
		}
	}
	return out, nil
}

// slSummary is the nearest-rank p50, p95 and max of stop_latency_ns, as JSON ("null" for none).
func slSummary(bs []slBargeIn) string {
	if len(bs) == 0 {
		return "null"
	}
	v := make([]int64, len(bs))
	for i, b := range bs {
		v[i] = b.latency
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	at := func(p int) int64 {
		rank := (p*len(v) + 99) / 100
		if rank < 1 {
			rank = 1
		}
		return v[rank-1]
	}
	return fmt.Sprintf(`{"max_ns":%d,"p50_ns":%d,"p95_ns":%d}`, at(100), at(50), at(95))
}

func checkStopLatencyFile(rep *Report, _ string, path string) {
	name := filepath.Base(path)
	var doc signedDocFile[struct {
		signedDocVector
		Summary json.RawMessage `json:"summary"`
	}]
	if !loadInto(rep, name, path, &doc) {
		return
	}
	pub := doc.checkLoad(rep, name, slSchemaID, slContentType, int64(slDeadlineNs))
	for _, v := range doc.Documents {
		rep.Check(name+" documents "+label(v.N, v.Description), func() (string, error) {
			data := []byte(v.Canonical)
			if err := expectEqual("content_hash", blake3Hex(data), v.ContentHash); err != nil {
				return "", err
			}
			d, bs, err := slDecode(data)
			if err != nil {
				return "", err
			}
			signed, err := checkSignedBytes(&v.signedDocVector, pub, data, slContentType, d["stream_id"].(string)+":stop-latency", d)
			if err != nil {
				return "", err
			}
			if _, _, err := slVerifySigned(signed, pub); err != nil {
				return "", err
			}
			if err := noBindingProblems(slBindingProblems(d, bs, v.Receipts)); err != nil {
				return "", err
			}
			// Deleting the document: refused when the call has a barge-in (each vector's document
			// lists its call's barge-ins), also when the yield verdicts are failures but a receipt
			// records barge_in_ignored.
			req, err := slRequired(v.Receipts)
			if err != nil {
				return "", err
			}
			if err := expectEqual("refused without the document (stop_latency_missing)", req, len(bs) > 0); err != nil {
				return "", err
			}
			failed, err := slYieldsFailed(v.Receipts)
			if err != nil {
				return "", err
			}
			findings := false
			for _, l := range v.Receipts {
				var r slReceipt
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					return "", err
				}
				findings = findings || r.Conservation.Kind == "barge_in_ignored"
			}
			if req, err = slRequired(failed); err != nil {
				return "", err
			}
			if err := expectEqual("refused without the document, yields failed", req, findings); err != nil {
				return "", err
			}
			var want any
			if err := json.Unmarshal(v.Summary, &want); err != nil {
				return "", err
			}
			wantJSON, _ := json.Marshal(want)
			return fmt.Sprintf("%d barge-ins", len(bs)), expectEqual("summary", slSummary(bs), string(wantJSON))
		})
	}
	doc.checkRefusals(rep, name, pub, func(data []byte) error {
		_, _, err := slDecode(data)
		return err
	}, slSchemaCodes, func(data, pub []byte) (func([]string) ([]string, error), error) {
		d, bs, err := slVerifySigned(data, pub)
		return func(lines []string) ([]string, error) { return slBindingProblems(d, bs, lines) }, err
	})
}
