// Command verify is the Go verifier for the conformance vectors: stream-window/1 receipts
// (JCR-1 canonical JSON, BLAKE3 content hash), their COSE_Sign1/Ed25519 envelopes, and
// stream-seal/1 (RFC 9162 Merkle proofs, checkpoints, RFC 9942 inclusion receipts).
//
// Usage: go run . [CONFORMANCE_DIR]   (default: the conformance/ directory two levels up)
//
// It checks every vector file it knows in CONFORMANCE_DIR (formats in ../../README.md), prints
// one line per check, and closes with `go: N passed, N failed`. The exit status is 0 only if
// every check passed and at least one vector file was present. It reads only the vector files;
// it shares no code with the Rust implementation.
//
// Libraries: github.com/veraison/go-cose (COSE_Sign1), github.com/fxamacker/cbor/v2 (CBOR),
// github.com/gowebpki/jcs (RFC 8785), lukechampine.com/blake3, filippo.io/edwards25519 (the
// strict Ed25519 point checks), crypto/ed25519, crypto/ecdsa, crypto/sha256.
//
// Each vector family is one file (family_*.go) that registers itself in init(); a new family
// is a new file, nothing else changes.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Refusal is a refused input, with the class of the refusal (see ../README.md).
type Refusal struct {
	Class  string
	Detail string
}

func (r *Refusal) Error() string { return "[" + r.Class + "] " + r.Detail }

func refuse(class, format string, args ...any) error {
	return &Refusal{Class: class, Detail: fmt.Sprintf(format, args...)}
}

// refusalClass returns the class of a Refusal, or "" for any other error.
func refusalClass(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Class
	}
	return ""
}

// Report counts and prints the checks.
type Report struct {
	Passed, Failed int
}

// Ok records a passed check.
func (r *Report) Ok(name, note string) {
	r.Passed++
	if note != "" {
		fmt.Printf("ok    %s  (%s)\n", name, note)
	} else {
		fmt.Printf("ok    %s\n", name)
	}
}

// Fail records a failed check.
func (r *Report) Fail(name, why string) {
	r.Failed++
	fmt.Printf("FAIL  %s: %s\n", name, why)
}

// Check runs one check: an error (or a panic, e.g. from a malformed vector file) is a failure.
func (r *Report) Check(name string, fn func() (string, error)) {
	note, err := func() (note string, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		return fn()
	}()
	if err != nil {
		r.Fail(name, err.Error())
		return
	}
	r.Ok(name, note)
}

// Family is one kind of vector file: its file name in the conformance directory and the
// function that checks it. Check is nil for a family whose Go checker does not exist yet.
type Family struct {
	Order int
	File  string
	Check func(rep *Report, dir, path string)
	// Counts says whether the family's file counts as a vector file for discovery (the schema
	// file alone does not).
	Counts bool
}

var families []Family

func register(f Family) { families = append(families, f) }

func label(n any, description string) string {
	d := []rune(description)
	if len(d) > 48 {
		d = d[:48]
	}
	return fmt.Sprintf("#%v %s", n, string(d))
}

func defaultDir() string {
	if _, file, _, ok := runtime.Caller(0); ok {
		return filepath.Join(filepath.Dir(file), "..", "..")
	}
	return "."
}

func run(dir string) int {
	rep := &Report{}
	fmt.Printf("go verifier: %s\n", dir)
	sortFamilies()
	present := 0
	for _, f := range families {
		p := filepath.Join(dir, f.File)
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			if f.Check == nil {
				fmt.Printf("skip  %s: absent (the Go verifier has no checker for this family yet)\n", f.File)
			} else {
				fmt.Printf("skip  %s: absent\n", f.File)
			}
			continue
		}
		if f.Counts {
			present++
		}
	}
	wg := coseWgFiles(dir)
	if len(wg) == 0 {
		fmt.Println("skip  cose-wg/*.json: absent")
	}
	if present == 0 && len(wg) == 0 {
		rep.Fail("discovery", "no vector file in "+dir)
		return finish(rep)
	}
	for _, f := range families {
		p := filepath.Join(dir, f.File)
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			continue
		}
		if f.Check == nil {
			rep.Fail(f.File, "present, but the Go verifier has no checker for this family yet (add a family_*.go file)")
			continue
		}
		f.Check(rep, dir, p)
	}
	runCoseWg(rep, dir, wg)
	return finish(rep)
}

func finish(rep *Report) int {
	fmt.Printf("go: %d passed, %d failed\n", rep.Passed, rep.Failed)
	if rep.Failed > 0 {
		return 1
	}
	return 0
}

func sortFamilies() {
	for i := 1; i < len(families); i++ {
		for j := i; j > 0 && families[j].Order < families[j-1].Order; j-- {
			families[j], families[j-1] = families[j-1], families[j]
		}
	}
}

func main() {
	dir := defaultDir()
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: verify [CONFORMANCE_DIR]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		dir = os.Args[1]
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	dir = strings.TrimRight(dir, "/")
	os.Exit(run(dir))
}
