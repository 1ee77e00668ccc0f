package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"path/filepath"
	"regexp"
	"strconv"
)

// voice-turn-vectors.json: voice-turn/1 turn results (spec/VOICE-TURN-V1.md section 6): levels
// of PCM decided with exact integers (math/big), canonical turn documents (JCR-1 under the
// voice-turn limits, then the schema rules of section 5 in order), and negatives.
func init() {
	register(Family{Order: 80, File: "voice-turn-vectors.json", Check: checkVoiceTurnFile, Counts: true})
}

const (
	voiceTurnSchemaID = "voice-turn/1"
	nsPerSample       = 62_500
	peakFloor         = -9031
)

var (
	voiceTurnLimits   = &Limits{DocumentBytes: 262_144, Depth: 2, StringBytes: 32_768, ArrayLen: 64}
	voiceTopFields    = []string{"error", "jc_voice_turn", "measurement", "text"}
	voiceMeasFields   = []string{"duration_ns", "peak_dbfs_hundredths", "rms_dbfs_hundredths", "samples"}
	voiceErrorCode    = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	fullScalePower    = big.NewInt(32768 * 32768)
	voiceSchemaCodes  = map[string]bool{}
	bigTen            = big.NewInt(10)
	voiceSchemaCodeLs = []string{
		"wrong_type", "null", "unknown_field", "missing_field", "wrong_schema", "negative_unsigned",
		"text_and_error", "bad_error_code", "duration_mismatch", "silence_mismatch",
		"level_out_of_range", "rms_above_peak",
	}
)

func init() {
	for _, c := range voiceSchemaCodeLs {
		voiceSchemaCodes[c] = true
	}
}

// levelAbove is 1000*log10(a/b) > k - 1/2, decided on a^2000 and b^2000 (spec section 1.1).
func levelAbove(a2000, b2000 *big.Int, k int64) bool {
	e := 1 - 2*k
	if e >= 0 {
		l := new(big.Int).Mul(a2000, new(big.Int).Exp(bigTen, big.NewInt(e), nil))
		return l.Cmp(b2000) > 0
	}
	r := new(big.Int).Mul(b2000, new(big.Int).Exp(bigTen, big.NewInt(-e), nil))
	return a2000.Cmp(r) > 0
}

// levelHundredths is L(power, reference): the integer nearest to 1000*log10(power/reference),
// exact (there are no ties); ok is false for silence (power 0).
func levelHundredths(power, reference *big.Int) (int64, bool) {
	if power.Sign() == 0 {
		return 0, false
	}
	two000 := big.NewInt(2000)
	a2000 := new(big.Int).Exp(power, two000, nil)
	b2000 := new(big.Int).Exp(reference, two000, nil)
	// A starting point only; the walks below decide with integers.
	pf, _ := new(big.Float).SetInt(power).Float64()
	rf, _ := new(big.Float).SetInt(reference).Float64()
	return levelWalk(a2000, b2000, int64(math.Round(1000*(math.Log10(pf)-math.Log10(rf))))), true
}

// levelWalk walks from any guess k to the one k with above(k) and not above(k+1).
func levelWalk(a2000, b2000 *big.Int, k int64) int64 {
	for !levelAbove(a2000, b2000, k) {
		k--
	}
	for levelAbove(a2000, b2000, k+1) {
		k++
	}
	return k
}

type pcmSegment struct {
	Samples []int64 `json:"samples"`
	Repeat  int64   `json:"repeat"`
}

// measurePCM returns the measurement of the PCM as `duration_ns=.. peak=.. rms=.. samples=..`,
// the exact sum of squares and the peak magnitude.
func measurePCM(pcm []pcmSegment) (string, *big.Int, int64, error) {
	var n int64
	sum := new(big.Int)
	var peak int64
	for _, seg := range pcm {
		if seg.Repeat < 0 {
			return "", nil, 0, refuse("mismatch", "negative repeat")
		}
		var segSum, segPeak int64
		for _, s := range seg.Samples {
			if s < -32768 || s > 32767 {
				return "", nil, 0, refuse("mismatch", "sample %d outside 16 bits", s)
			}
			segSum += s * s // at most 2^30 per sample; a segment is far below 2^33 samples
			if s < 0 {
				s = -s
			}
			segPeak = max(segPeak, s)
		}
		if seg.Repeat > 0 {
			peak = max(peak, segPeak)
		}
		sum.Add(sum, new(big.Int).Mul(big.NewInt(segSum), big.NewInt(seg.Repeat)))
		n += int64(len(seg.Samples)) * seg.Repeat
	}
	peakLevel, rmsLevel := "null", "null"
	if l, ok := levelHundredths(big.NewInt(peak*peak), fullScalePower); ok {
		peakLevel = strconv.FormatInt(l, 10)
	}
	if n > 0 {
		ref := new(big.Int).Mul(big.NewInt(n), fullScalePower)
		if l, ok := levelHundredths(sum, ref); ok {
			rmsLevel = strconv.FormatInt(l, 10)
		}
	}
	dur := new(big.Int).Mul(big.NewInt(n), big.NewInt(nsPerSample))
	return fmt.Sprintf("duration_ns=%s peak=%s rms=%s samples=%d", dur, peakLevel, rmsLevel, n), sum, peak, nil
}

// measurementString formats a decoded measurement object like measurePCM does.
func measurementString(m map[string]any) string {
	f := func(k string) string {
		switch v := m[k].(type) {
		case nil:
			return "null"
		case json.Number:
			return string(v)
		default:
			return fmt.Sprintf("%T(%v)", v, v)
		}
	}
	return fmt.Sprintf("duration_ns=%s peak=%s rms=%s samples=%s",
		f("duration_ns"), f("peak_dbfs_hundredths"), f("rms_dbfs_hundredths"), f("samples"))
}

func voiceRefuse(code, format string, args ...any) error { return refuse(code, format, args...) }

func nullOrWrong(v any, what string) error {
	if v == nil {
		return voiceRefuse("null", "%s is null", what)
	}
	return voiceRefuse("wrong_type", "%s has the wrong type", what)
}

// voiceInt is a JSON integer (json.Number tokens are integers within +-(2^53-1) after parseJCR1).
func voiceInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

func voiceUint(v any, what string) (int64, error) {
	i, ok := voiceInt(v)
	if !ok {
		return 0, nullOrWrong(v, what)
	}
	if i < 0 {
		return 0, voiceRefuse("negative_unsigned", "%s is negative", what)
	}
	return i, nil
}

func voiceLevel(v any, what string) (*int64, error) {
	if v == nil {
		return nil, nil
	}
	if i, ok := voiceInt(v); ok {
		return &i, nil
	}
	return nil, voiceRefuse("wrong_type", "%s is neither an integer nor null", what)
}

// objFields reads typed fields of one JSON object in order, each refused as its reader refuses
// it; after the first refusal (kept in err) the later reads return zero values and check nothing.
type objFields struct {
	obj map[string]any
	err error
}

// readField is one read of objFields: skipped (zero value) once a read has refused.
func readField[T any](r *objFields, k string, read func(any, string) (T, error)) T {
	var v T
	if r.err == nil {
		v, r.err = read(r.obj[k], k)
	}
	return v
}

func (r *objFields) str(k string) string        { return readField(r, k, slString) }
func (r *objFields) uint(k string) int64        { return readField(r, k, voiceUint) }
func (r *objFields) uintOrNull(k string) *int64 { return readField(r, k, slUintOrNull) }
func (r *objFields) level(k string) *int64      { return readField(r, k, voiceLevel) }

func voiceFields(obj map[string]any, known, required []string, what string) error {
	for k := range obj {
		found := false
		for _, w := range known {
			found = found || k == w
		}
		if !found {
			return voiceRefuse("unknown_field", "%s has an unknown key %q", what, k)
		}
	}
	for _, k := range required {
		if _, ok := obj[k]; !ok {
			return voiceRefuse("missing_field", "%s has no %q", what, k)
		}
	}
	return nil
}

// checkVoiceTurnSchema applies spec section 5 in order and returns the measurement and what
// was heard (said, failed or unasked).
func checkVoiceTurnSchema(root any) (map[string]any, string, error) {
	obj, ok := root.(map[string]any)
	if !ok {
		return nil, "", nullOrWrong(root, "the root")
	}
	if err := voiceFields(obj, voiceTopFields, []string{"jc_voice_turn", "measurement"}, "the turn"); err != nil {
		return nil, "", err
	}
	id, ok := obj["jc_voice_turn"].(string)
	if !ok {
		return nil, "", nullOrWrong(obj["jc_voice_turn"], "jc_voice_turn")
	}
	if id != voiceTurnSchemaID {
		return nil, "", voiceRefuse("wrong_schema", "jc_voice_turn is %q", id)
	}
	m, ok := obj["measurement"].(map[string]any)
	if !ok {
		return nil, "", nullOrWrong(obj["measurement"], "measurement")
	}
	if err := voiceFields(m, voiceMeasFields, voiceMeasFields, "the measurement"); err != nil {
		return nil, "", err
	}
	r := objFields{obj: m}
	duration := r.uint("duration_ns")
	peak := r.level("peak_dbfs_hundredths")
	rms := r.level("rms_dbfs_hundredths")
	samples := r.uint("samples")
	if r.err != nil {
		return nil, "", r.err
	}
	text, hasText := obj["text"]
	if hasText {
		if _, ok := text.(string); !ok {
			return nil, "", nullOrWrong(text, "text")
		}
	}
	errv, hasError := obj["error"]
	if hasError {
		if _, ok := errv.(string); !ok {
			return nil, "", nullOrWrong(errv, "error")
		}
	}
	if hasText && hasError {
		return nil, "", voiceRefuse("text_and_error", "both text and error")
	}
	if hasError && !voiceErrorCode.MatchString(errv.(string)) {
		return nil, "", voiceRefuse("bad_error_code", "error %q is not a code", errv)
	}
	want := new(big.Int).Mul(big.NewInt(samples), big.NewInt(nsPerSample))
	if want.Cmp(big.NewInt(duration)) != 0 {
		return nil, "", voiceRefuse("duration_mismatch", "duration_ns %d is not samples * 62500 = %s", duration, want)
	}
	if (peak == nil) != (rms == nil) || (peak != nil && samples == 0) {
		return nil, "", voiceRefuse("silence_mismatch", "levels and silence disagree")
	}
	if peak != nil {
		floor, _ := levelHundredths(big.NewInt(1), new(big.Int).Mul(big.NewInt(samples), fullScalePower))
		if *peak < peakFloor || *peak > 0 || *rms > 0 || *rms < floor {
			return nil, "", voiceRefuse("level_out_of_range", "peak %d or rms %d outside [%d, 0] / [%d, 0]", *peak, *rms, peakFloor, floor)
		}
		if *rms > *peak {
			return nil, "", voiceRefuse("rms_above_peak", "rms %d above peak %d", *rms, *peak)
		}
	}
	heard := "unasked"
	if hasText {
		heard = "said"
	} else if hasError {
		heard = "failed"
	}
	return m, heard, nil
}

// decodeVoiceTurn accepts exactly the canonical encoding of a valid voice-turn/1 value.
func decodeVoiceTurn(data []byte) (map[string]any, string, error) {
	if len(data) == 0 {
		return nil, "", refuse("json", "empty input")
	}
	v, err := parseJCR1(data, voiceTurnLimits)
	if err != nil {
		return nil, "", err
	}
	return checkVoiceTurnSchema(v)
}

func checkVoiceTurnFile(rep *Report, _ string, path string) {
	name := filepath.Base(path)
	var doc struct {
		Schema string `json:"schema"`
		Levels []struct {
			N           any             `json:"n"`
			Description string          `json:"description"`
			PCM         []pcmSegment    `json:"pcm"`
			SumSquares  string          `json:"sum_squares"`
			PeakAbs     int64           `json:"peak_abs"`
			Expect      json.RawMessage `json:"expect"`
		} `json:"levels"`
		Turns []struct {
			N           any          `json:"n"`
			Description string       `json:"description"`
			PCM         []pcmSegment `json:"pcm"`
			Heard       string       `json:"heard"`
			Canonical   string       `json:"canonical"`
			ContentHash string       `json:"content_hash"`
		} `json:"turns"`
		Negative []negativeInput `json:"negative"`
	}
	if !loadInto(rep, name, path, &doc) {
		return
	}
	rep.Check(name+" load", func() (string, error) {
		if err := expectEqual("schema", doc.Schema, voiceTurnSchemaID); err != nil {
			return "", err
		}
		if len(doc.Levels) == 0 || len(doc.Turns) == 0 || len(doc.Negative) == 0 {
			return "", refuse("mismatch", "levels, turns and negative must each hold vectors")
		}
		return "", nil
	})
	rep.Check(name+" level rule: full scale is 0, one quantum of peak is the floor, silence has none", func() (string, error) {
		if l, ok := levelHundredths(fullScalePower, fullScalePower); !ok || l != 0 {
			return "", refuse("mismatch", "full scale: %d", l)
		}
		if l, ok := levelHundredths(big.NewInt(1), fullScalePower); !ok || l != peakFloor {
			return "", refuse("mismatch", "floor: %d", l)
		}
		if _, ok := levelHundredths(big.NewInt(0), fullScalePower); ok {
			return "", refuse("mismatch", "silence has a level")
		}
		return "", nil
	})
	for _, v := range doc.Levels {
		rep.Check(name+" levels "+label(v.N, v.Description), func() (string, error) {
			got, sum, peak, err := measurePCM(v.PCM)
			if err != nil {
				return "", err
			}
			if err := expectEqual("sum_squares", sum.String(), v.SumSquares); err != nil {
				return "", err
			}
			if err := expectEqual("peak_abs", peak, v.PeakAbs); err != nil {
				return "", err
			}
			ev, err := parseStrictJSON(v.Expect, nil)
			if err != nil {
				return "", err
			}
			em, ok := ev.(map[string]any)
			if !ok || !sameKeys(em, voiceMeasFields) {
				return "", refuse("mismatch", "expect is not a measurement object")
			}
			return got, expectEqual("measurement", got, measurementString(em))
		})
	}
	for _, v := range doc.Turns {
		rep.Check(name+" turns "+label(v.N, v.Description), func() (string, error) {
			data := []byte(v.Canonical)
			if err := expectEqual("content_hash", blake3Hex(data), v.ContentHash); err != nil {
				return "", err
			}
			m, heard, err := decodeVoiceTurn(data)
			if err != nil {
				return "", err
			}
			if err := expectEqual("heard", heard, v.Heard); err != nil {
				return "", err
			}
			want, _, _, err := measurePCM(v.PCM)
			if err != nil {
				return "", err
			}
			return heard, expectEqual("measurement", measurementString(m), want)
		})
	}
	for _, c := range doc.Negative {
		rep.Check(fmt.Sprintf("%s negative %s (%s)", name, label(c.N, c.Description), c.ExpectRefusal), func() (string, error) {
			input, err := unhex(c.InputHex)
			if err != nil {
				return "", err
			}
			_, _, err = decodeVoiceTurn(input)
			if err == nil {
				return "", refuse("accepted", "input was ACCEPTED; expected refusal %s", c.ExpectRefusal)
			}
			cls := refusalClass(err)
			if cls == "" {
				return "", err
			}
			if voiceSchemaCodes[c.ExpectRefusal] && cls != c.ExpectRefusal {
				return "", refuse("mismatch", "refused with %s (%v); the spec's rule order gives %s", cls, err, c.ExpectRefusal)
			}
			return "refused [" + cls + "]", nil
		})
	}
}
