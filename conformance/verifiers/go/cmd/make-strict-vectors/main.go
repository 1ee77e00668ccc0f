// Command make-strict-vectors writes stream-window-signed-negative-extra-vectors.json.
//
//	go run ./cmd/make-strict-vectors [CONFORMANCE_DIR]   (default ../..)
//
// It reads vector 1 of stream-window-signed-vectors.json (payload and test seed) and writes the
// extra negative vectors beside it. The output is deterministic.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"jouleclaw.dev/conformance/verifiers/go/strictvec"
)

func main() {
	dir := "../.."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	out, err := build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "make-strict-vectors:", err)
		os.Exit(2)
	}
	path := filepath.Join(dir, strictvec.File)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "make-strict-vectors:", err)
		os.Exit(2)
	}
	fmt.Println("wrote", path)
}

func build(dir string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, "stream-window-signed-vectors.json"))
	if err != nil {
		return nil, err
	}
	payload, seed, err := strictvec.Inputs(data)
	if err != nil {
		return nil, err
	}
	return strictvec.Build(payload, seed)
}
