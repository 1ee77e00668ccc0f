package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// maxSafe is 2^53-1, the largest integer JCR-1 allows (and every IEEE double holds exactly).
const maxSafe = 1<<53 - 1

// Limits are the receipt decoder's bounds, at their exact values (Limits::RECEIPT of the Rust
// decoder): a document of 65,536 bytes is accepted and one byte more is refused; the root
// object is depth 1; string lengths (keys included) count UTF-8 bytes.
type Limits struct {
	DocumentBytes, Depth, StringBytes, ArrayLen int
}

var receiptLimits = &Limits{DocumentBytes: 65_536, Depth: 3, StringBytes: 4_096, ArrayLen: 64}

var integerToken = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// checkNumberToken refuses fractions, exponents, -0 and integers outside [-(2^53-1), 2^53-1].
// The token is the raw text (json.Number with UseNumber), so nothing was rounded yet.
func checkNumberToken(tok string) error {
	if strings.ContainsAny(tok, ".eE") {
		return refuse("number", "number %q has a fraction or exponent", tok)
	}
	if tok == "-0" {
		return refuse("number", "negative zero")
	}
	if !integerToken.MatchString(tok) {
		return refuse("json", "number %q is not JSON", tok)
	}
	digits := strings.TrimPrefix(tok, "-")
	if len(digits) > 16 {
		return refuse("number", "integer %s outside [-(2^53-1), 2^53-1]", tok)
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || v > maxSafe {
		return refuse("number", "integer %s outside [-(2^53-1), 2^53-1]", tok)
	}
	return nil
}

// strictDecoder walks encoding/json tokens and builds the value itself, so that it sees what
// json.Unmarshal hides: duplicate keys (Unmarshal keeps the last), number tokens as written
// (Unmarshal rounds them to float64), and the decoder's bounds.
type strictDecoder struct {
	dec    *json.Decoder
	limits *Limits
}

// parseStrictJSON decodes one JSON value: no duplicate keys, integers only, in the safe range;
// nothing but whitespace after it. Objects become map[string]any, numbers json.Number.
func parseStrictJSON(data []byte, limits *Limits) (any, error) {
	d := &strictDecoder{dec: json.NewDecoder(bytes.NewReader(data)), limits: limits}
	d.dec.UseNumber()
	v, err := d.value(1)
	if err != nil {
		return nil, err
	}
	if _, err := d.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, refuse("json", "data after the JSON value")
	}
	return v, nil
}

func (d *strictDecoder) token() (json.Token, error) {
	t, err := d.dec.Token()
	if err != nil {
		return nil, refuse("json", "not JSON: %v", err)
	}
	return t, nil
}

func (d *strictDecoder) str(s string) error {
	if d.limits != nil && len(s) > d.limits.StringBytes {
		return refuse("limit", "string longer than %d bytes", d.limits.StringBytes)
	}
	return nil
}

func (d *strictDecoder) value(depth int) (any, error) {
	t, err := d.token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		if d.limits != nil && depth > d.limits.Depth {
			return nil, refuse("limit", "nesting deeper than %d", d.limits.Depth)
		}
		switch t {
		case '{':
			obj := map[string]any{}
			for d.dec.More() {
				kt, err := d.token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, refuse("json", "object key is not a string")
				}
				if err := d.str(k); err != nil {
					return nil, err
				}
				if _, dup := obj[k]; dup {
					return nil, refuse("duplicate_key", "duplicate key %q", k)
				}
				v, err := d.value(depth + 1)
				if err != nil {
					return nil, err
				}
				obj[k] = v
			}
			if _, err := d.token(); err != nil { // '}'
				return nil, err
			}
			return obj, nil
		case '[':
			arr := []any{}
			for d.dec.More() {
				v, err := d.value(depth + 1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
				if d.limits != nil && len(arr) > d.limits.ArrayLen {
					return nil, refuse("limit", "array longer than %d elements", d.limits.ArrayLen)
				}
			}
			if _, err := d.token(); err != nil { // ']'
				return nil, err
			}
			return arr, nil
		default:
			return nil, refuse("json", "unexpected %v", t)
		}
	case json.Number:
		if err := checkNumberToken(string(t)); err != nil {
			return nil, err
		}
		return t, nil
	case string:
		if err := d.str(t); err != nil {
			return nil, err
		}
		return t, nil
	default: // bool, nil
		return t, nil
	}
}

// canonicalJSON re-encodes JSON text with the RFC 8785 library.
func canonicalJSON(data []byte) ([]byte, error) {
	out, err := jcs.Transform(data)
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "surrogate") {
			return nil, refuse("string", "cannot canonicalize: %v", err)
		}
		return nil, refuse("json", "cannot canonicalize: %v", err)
	}
	return out, nil
}

// parseJCR1 strictly decodes bytes that must be exactly the canonical JCR-1 encoding of a value.
func parseJCR1(data []byte, limits *Limits) (any, error) {
	if limits != nil && len(data) > limits.DocumentBytes {
		return nil, refuse("limit", "document larger than %d bytes", limits.DocumentBytes)
	}
	if !utf8.Valid(data) {
		return nil, refuse("utf8", "invalid UTF-8")
	}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return nil, refuse("utf8", "byte order mark")
	}
	value, err := parseStrictJSON(data, limits)
	if err != nil {
		return nil, err
	}
	again, err := canonicalJSON(data)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, data) {
		return nil, refuse("non_canonical", "not the canonical encoding (first difference at byte %d)", firstDiff(again, data))
	}
	return value, nil
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// loadVectorFile reads a (pretty-printed) vector file strictly: valid UTF-8, no duplicate keys,
// integers only and in the safe range. It returns the raw bytes for typed decoding.
func loadVectorFile(path string) ([]byte, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(data) {
		return nil, refuse("utf8", "vector file is not UTF-8")
	}
	if _, err := parseStrictJSON(data, nil); err != nil {
		return nil, fmt.Errorf("cannot load: %w", err)
	}
	return data, nil
}
