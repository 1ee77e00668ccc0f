package main

import (
	"encoding/json"
	"math"
	"math/big"
	"testing"
)

// Level vectors 7-11 lie within 2.1e-12 hundredths of a rounding boundary: the f64 estimate alone
// does not decide them, the integer walk does, and it gives the vectors' values.
func TestLevelsNearARoundingBoundaryAreDecidedByIntegersAndMatchTheVectors(t *testing.T) {
	data := readConformance(t, "voice-turn-vectors.json")
	var doc struct {
		Levels []struct {
			N          int          `json:"n"`
			PCM        []pcmSegment `json:"pcm"`
			SumSquares string       `json:"sum_squares"`
			Expect     struct {
				Samples int64 `json:"samples"`
				Rms     int64 `json:"rms_dbfs_hundredths"`
			} `json:"expect"`
		} `json:"levels"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	near := 0
	for _, v := range doc.Levels {
		if v.N < 7 || v.N > 11 {
			continue
		}
		near++
		sum, ok := new(big.Int).SetString(v.SumSquares, 10)
		if !ok {
			t.Fatalf("level %d: sum_squares %q", v.N, v.SumSquares)
		}
		ref := new(big.Int).Mul(big.NewInt(v.Expect.Samples), fullScalePower)
		sf, _ := new(big.Float).SetInt(sum).Float64()
		rf, _ := new(big.Float).SetInt(ref).Float64()
		est := 1000 * (math.Log10(sf) - math.Log10(rf))
		if d := math.Abs(est - math.Floor(est) - 0.5); d > 1e-6 {
			t.Errorf("level %d: estimate %v is %v from a half, not near a boundary", v.N, est, d)
		}
		got, ok := levelHundredths(sum, ref)
		if !ok || got != v.Expect.Rms {
			t.Errorf("level %d: exact level %d, the vector says %d", v.N, got, v.Expect.Rms)
		}
		// The answer is the only k with above(k) and not above(k+1): one level up is refused.
		two := big.NewInt(2000)
		a, b := new(big.Int).Exp(sum, two, nil), new(big.Int).Exp(ref, two, nil)
		if !levelAbove(a, b, got) || levelAbove(a, b, got+1) {
			t.Errorf("level %d: %d is not the k with above(k) and not above(k+1)", v.N, got)
		}
		// Whatever the f64 estimate rounds to on a platform, the walk reaches the same level.
		for guess := got - 3; guess <= got+3; guess++ {
			if w := levelWalk(a, b, guess); w != got {
				t.Errorf("level %d: from guess %d the walk gives %d, not %d", v.N, guess, w, got)
			}
		}
	}
	if near != 5 {
		t.Fatalf("found %d of the 5 near-boundary level vectors", near)
	}
}

func TestVoiceTurnSchemaRulesRefuseWithTheirCodeAndAcceptTheirNeighbour(t *testing.T) {
	good := `{"jc_voice_turn":"voice-turn/1","measurement":{"duration_ns":200000000,"peak_dbfs_hundredths":-2000,"rms_dbfs_hundredths":-2301,"samples":3200},"text":"hi"}`
	if _, heard, err := decodeVoiceTurn([]byte(good)); err != nil || heard != "said" {
		t.Fatalf("valid turn: %v %q", err, heard)
	}
	for _, c := range []struct{ doc, code string }{
		{`{"jc_voice_turn":"voice-turn/1","measurement":{"duration_ns":200000000,"peak_dbfs_hundredths":-2000,"rms_dbfs_hundredths":-1999,"samples":3200}}`, "rms_above_peak"},
		{`{"jc_voice_turn":"voice-turn/1","measurement":{"duration_ns":200000000,"peak_dbfs_hundredths":-9032,"rms_dbfs_hundredths":-9100,"samples":3200}}`, "level_out_of_range"},
		{`{"jc_voice_turn":"voice-turn/1","measurement":{"duration_ns":200000000,"peak_dbfs_hundredths":-9031,"rms_dbfs_hundredths":-12537,"samples":3200}}`, "level_out_of_range"},
		{`{"jc_voice_turn":"voice-turn/1","measurement":{"duration_ns":199999999,"peak_dbfs_hundredths":null,"rms_dbfs_hundredths":null,"samples":3200}}`, "duration_mismatch"},
		{`{"error":"","jc_voice_turn":"voice-turn/1","measurement":{"duration_ns":0,"peak_dbfs_hundredths":null,"rms_dbfs_hundredths":null,"samples":0}}`, "bad_error_code"},
		{`{"jc_voice_turn":"voice-turn/1","measurement":{"duration_ns":0,"peak_dbfs_hundredths":null,"rms_dbfs_hundredths":-1,"samples":0}}`, "silence_mismatch"},
	} {
		_, _, err := decodeVoiceTurn([]byte(c.doc))
		if refusalClass(err) != c.code {
			t.Errorf("%s: got %v, want %s", c.doc, err, c.code)
		}
	}
	// The accepted neighbours of the floor rules: the floor itself.
	floor := `{"jc_voice_turn":"voice-turn/1","measurement":{"duration_ns":200000000,"peak_dbfs_hundredths":-9031,"rms_dbfs_hundredths":-12536,"samples":3200}}`
	if _, _, err := decodeVoiceTurn([]byte(floor)); err != nil {
		t.Fatalf("the floors are accepted: %v", err)
	}
}
