package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Every call-registry vector passes through x/mod's note, torchwood and x/mod's tlog, the
// negative ones included (a tampered root, a cosignature's altered timestamp, a missing quorum).
func TestCallRegistryVectorsPassWithOutsideLibraries(t *testing.T) {
	if _, err := os.Stat(filepath.Join(conformanceDir, "call-registry-vectors.json")); err != nil {
		t.Fatal(err)
	}
	rep := &Report{}
	checkRegistryFile(rep, conformanceDir, filepath.Join(conformanceDir, "call-registry-vectors.json"))
	if rep.Failed != 0 || rep.Passed < 25 {
		t.Fatalf("%d passed, %d failed", rep.Passed, rep.Failed)
	}
}
