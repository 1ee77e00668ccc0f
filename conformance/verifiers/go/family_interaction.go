package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
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
	r := objFields{obj: e}
	kind := r.str("kind")
	latency := r.uintOrNull("latency_ns")
	seg := r.uint("segment_tick")
	tick := r.uint("tick")
	window := r.uintOrNull("window_id")
	if r.err != nil {
		return out, r.err
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

// imUintMap reads an object of exactly keys, each an unsigned integer, in the order of keys.
func imUintMap(obj map[string]any, keys []string, what string) (map[string]int64, error) {
	if err := voiceFields(obj, keys, keys, what); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, k := range keys {
		v, err := voiceUint(obj[k], k)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
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
	r := objFields{obj: obj}
	steward := r.str("steward")
	streamID := r.str("stream_id")
	r.uint("window_count")
	frames := r.uint("frame_count")
	deadline := r.uint("deadline_ns")
	rr := r.str("receipts_root")
	if r.err != nil {
		return nil, r.err
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
	cfg, err := imUintMap(config, imConfig, "config")
	if err != nil {
		return nil, err
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
	given, err := imUintMap(counts, keys, "counts")
	if err != nil {
		return nil, err
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

// imVerifySigned returns the document of a signed interaction-metrics/1 (spec section 5).
func imVerifySigned(data, pub []byte) (*imDoc, error) {
	payload, iss, sub, err := openSignedDoc(data, pub, imMaxSigned, imContentType)
	if err != nil {
		return nil, err
	}
	doc, err := imDecode(payload)
	if err != nil {
		return nil, err
	}
	if err := checkSignedDocClaims(iss, sub, doc.obj, "interaction-metrics"); err != nil {
		return nil, err
	}
	return doc, nil
}

// imBindingProblems is spec section 6, in order.
func imBindingProblems(doc *imDoc, lines []string) ([]string, error) {
	receipts, out, err := signedDocBinding(doc.obj, lines)
	if err != nil {
		return nil, err
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
	var doc signedDocFile[struct {
		signedDocVector
		Panel json.RawMessage `json:"panel"`
	}]
	if !loadInto(rep, name, path, &doc) {
		return
	}
	pub := doc.checkLoad(rep, name, imSchemaID, imContentType, int64(imDeadlineNs))
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
			signed, err := checkSignedBytes(&v.signedDocVector, pub, data, imContentType, d.obj["stream_id"].(string)+":interaction-metrics", d.obj)
			if err != nil {
				return "", err
			}
			if _, err := imVerifySigned(signed, pub); err != nil {
				return "", err
			}
			if err := noBindingProblems(imBindingProblems(d, v.Receipts)); err != nil {
				return "", err
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
	doc.checkRefusals(rep, name, pub, func(data []byte) error {
		_, err := imDecode(data)
		return err
	}, imCodes, func(data, pub []byte) (func([]string) ([]string, error), error) {
		d, err := imVerifySigned(data, pub)
		return func(lines []string) ([]string, error) { return imBindingProblems(d, lines) }, err
	})
}
