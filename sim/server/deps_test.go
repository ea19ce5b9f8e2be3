package server

import (
	"go/build"
	"strings"
	"testing"
)

// The simulated site must stay independent of the engine it judges: it
// imports only the standard library.
func TestDeps(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.Contains(imp, ".") {
			t.Errorf("sim/server imports %s; want the standard library only", imp)
		}
	}
}
