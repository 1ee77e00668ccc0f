package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
)

const (
	schemaID    = "stream-window/1"
	contentType = "application/vnd.jouleclaw.stream-window+json"
)

var (
	receiptFields = []string{
		"jc_receipt", "id", "closed_at", "steward", "stream_id", "window_id", "window_hash", "tick_count",
		"inbound_bytes", "outbound_bytes", "joules_uj", "energy_provenance", "verdict", "conservation",
	}
	uintFields = []string{"window_id", "tick_count", "inbound_bytes", "outbound_bytes", "joules_uj"}
	provenance = map[string]bool{"Estimator": true, "Rapl": true, "HwShunt": true}
	hex64      = regexp.MustCompile(`^[0-9a-f]{64}$`)
	closedAtRe = regexp.MustCompile(`^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z$`)
)

// asUint returns v as an integer in [0, 2^53-1] (a json.Number token with no sign, fraction or
// exponent; booleans and strings are not integers).
func asUint(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok || checkNumberToken(string(n)) != nil {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || i < 0 || i > maxSafe {
		return 0, false
	}
	return i, true
}

func isUint(v any) bool { _, ok := asUint(v); return ok }

func isText(v any) bool { s, ok := v.(string); return ok && s != "" }

func isAnyText(v any) bool { _, ok := v.(string); return ok }

func sameKeys(obj map[string]any, keys []string) bool {
	if len(obj) != len(keys) {
		return false
	}
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			return false
		}
	}
	return true
}

func sortedKeys(obj map[string]any) []string {
	ks := make([]string, 0, len(obj))
	for k := range obj {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

type fieldRule struct {
	name string
	ok   func(any) bool
}

var verdicts = map[string][]fieldRule{
	"pass": {{"chain", func(v any) bool {
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			return false
		}
		for _, x := range arr {
			if !isText(x) {
				return false
			}
		}
		return true
	}}},
	"yield":     {{"seen_at", isUint}},
	"fail":      {{"oracle", isText}, {"reason", isAnyText}},
	"need_more": {{"oracle", isText}, {"reason", isAnyText}},
}

var conservations = map[string][]fieldRule{
	"conforming":       {},
	"hallucination":    {{"unaccounted", isUint}},
	"barge_in_ignored": {{"barge_in_ts_ns", isUint}, {"outbound_ts_ns", isUint}},
}

func checkVariant(v any, what string, variants map[string][]fieldRule) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return refuse("schema", "%s is not an object", what)
	}
	kind, _ := obj["kind"].(string)
	rules, known := variants[kind]
	if !known {
		return refuse("schema", "%s.kind %v unknown", what, obj["kind"])
	}
	want := []string{"kind"}
	for _, r := range rules {
		want = append(want, r.name)
	}
	if !sameKeys(obj, want) {
		return refuse("schema", "%s (%s) has fields %v, expected %v", what, kind, sortedKeys(obj), want)
	}
	for _, r := range rules {
		if !r.ok(obj[r.name]) {
			return refuse("schema", "%s.%s invalid", what, r.name)
		}
	}
	return nil
}

func daysInMonth(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func checkClosedAt(v any) error {
	s, _ := v.(string)
	m := closedAtRe.FindStringSubmatch(s)
	if m == nil {
		return refuse("schema", "closed_at is not YYYY-MM-DDTHH:MM:SSZ")
	}
	n := make([]int, 6)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	y, mo, d, h, mi, se := n[0], n[1], n[2], n[3], n[4], n[5]
	if !(mo >= 1 && mo <= 12 && d >= 1 && d <= daysInMonth(y, mo) && h <= 23 && mi <= 59 && se <= 59) {
		return refuse("calendar", "closed_at %s is not a real UTC date-time", s)
	}
	return nil
}

// checkReceipt applies the stream-window/1 rules, including those a JSON Schema cannot express
// (the id derivation, calendar validity).
func checkReceipt(v any) error {
	r, ok := v.(map[string]any)
	if !ok {
		return refuse("schema", "receipt is not an object")
	}
	if !sameKeys(r, receiptFields) {
		return refuse("schema", "fields %v are not the 14 stream-window/1 fields", sortedKeys(r))
	}
	if r["jc_receipt"] != schemaID {
		return refuse("schema", "jc_receipt %v", r["jc_receipt"])
	}
	for _, k := range []string{"steward", "stream_id"} {
		if !isText(r[k]) {
			return refuse("schema", "%s must be a non-empty string", k)
		}
	}
	for _, k := range uintFields {
		if !isUint(r[k]) {
			return refuse("schema", "%s must be an integer in [0, 2^53-1]", k)
		}
	}
	if s, ok := r["window_hash"].(string); !ok || !hex64.MatchString(s) {
		return refuse("schema", "window_hash must be 64 lowercase hex digits")
	}
	if s, ok := r["energy_provenance"].(string); !ok || !provenance[s] {
		return refuse("schema", "energy_provenance %v", r["energy_provenance"])
	}
	if err := checkVariant(r["verdict"], "verdict", verdicts); err != nil {
		return err
	}
	if err := checkVariant(r["conservation"], "conservation", conservations); err != nil {
		return err
	}
	if err := checkClosedAt(r["closed_at"]); err != nil {
		return err
	}
	wid, _ := asUint(r["window_id"])
	if id, ok := r["id"].(string); !ok || id != fmt.Sprintf("%s:%04d", r["stream_id"], wid) {
		return refuse("id", "id %v is not stream_id:window_id (4-digit zero pad)", r["id"])
	}
	return nil
}

// checkReceiptBytes decodes a receipt: canonical JCR-1 under the receipt limits, then the rules.
func checkReceiptBytes(data []byte) (map[string]any, error) {
	v, err := parseJCR1(data, receiptLimits)
	if err != nil {
		return nil, err
	}
	if err := checkReceipt(v); err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}
