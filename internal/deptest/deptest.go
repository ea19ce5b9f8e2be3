// Package deptest keeps the package graph pointing one way: a test calls Only
// with what its package may depend on, and fails when it depends, directly or
// through another package, on anything else outside the standard library.
// The model is tailscale's tstest/deptest.
package deptest

import (
	"os/exec"
	"strings"
	"testing"
)

// Only fails t when the package in the test's directory depends on a
// non-standard package that is neither itself nor listed in allowed. It runs
// `go list -deps`, so the go command must be on PATH, as it is under go test.
func Only(t *testing.T, allowed ...string) {
	t.Helper()
	self, err := exec.Command("go", "list", ".").Output()
	if err != nil {
		t.Fatalf("go list .: %v", err)
	}
	ok := map[string]bool{strings.TrimSpace(string(self)): true}
	for _, a := range allowed {
		ok[a] = true
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if !ok[p] {
			t.Errorf("%s depends on %s; it may use only the standard library and %v", strings.TrimSpace(string(self)), p, allowed)
		}
	}
}

// NoStd fails t when the package in the test's directory depends, directly or
// through another package, on any of the listed standard-library packages
// (for example "net/http": a pure package must not pull in an HTTP stack).
func NoStd(t *testing.T, forbidden ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	for _, f := range forbidden {
		if deps[f] {
			t.Errorf("package depends on %s, which it must not", f)
		}
	}
}
