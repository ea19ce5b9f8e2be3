package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/exitgate/exitgate/internal/peertest"
)

// binDir holds the exitgate binary that tests about the binary itself run as
// a subprocess; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// testVersion is stamped into the test binary with -ldflags -X.
const testVersion = "v9.8.7-test"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// exitgateBinary builds cmd/exitgate once per test run, with version
// testVersion and VCS stamping as the checkout allows, and returns its path.
func exitgateBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "exitgate-bin-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "exitgate")
		buildErr = peertest.GoBuild(binPath, ".", "-buildvcs=auto", "-ldflags", "-X main.version="+testVersion)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// TestUnknownCommand: a command a group does not have is a usage error,
// exit 2, with a suggestion (`proxies chek` printed the help and exited 0,
// a script's && carrying on; `exitgate bogus` exited 1).
func TestUnknownCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		sug  string
	}{{[]string{"proxies", "chek"}, "check"}, {[]string{"ca", "expotr"}, "export"}, {[]string{"crawel"}, "crawl"}, {[]string{"bogus"}, ""}} {
		r := runCmd(t, tc.args...)
		if exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), "unknown command") || !strings.Contains(r.err.Error(), tc.sug) {
			t.Errorf("exitgate %v: %v (exit %d), want exit 2 with the suggestion %q", tc.args, r.err, exitCode(r.err), tc.sug)
		}
	}
	if r := runCmd(t, "proxies"); r.err != nil || !strings.Contains(r.stdout, "check") {
		t.Errorf("exitgate proxies: %v, want its help listing check", r.err)
	}
	// So is a help topic: `exitgate help bogus` printed the root's help
	// and exited 0.
	for _, tc := range []struct {
		args []string
		sug  string
	}{{[]string{"help", "bogus"}, ""}, {[]string{"help", "crawll"}, "crawl"}, {[]string{"help", "proxies", "chek"}, "check"}, {[]string{"help", "crawl", "bogus"}, ""}} {
		r := runCmd(t, tc.args...)
		if exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), "no help topic") || !strings.Contains(r.err.Error(), tc.sug) {
			t.Errorf("exitgate %v: %v (exit %d), want exit 2 with the suggestion %q", tc.args, r.err, exitCode(r.err), tc.sug)
		}
	}
	for _, args := range [][]string{{"help"}, {"help", "serve"}, {"help", "proxies", "check"}} {
		if r := runCmd(t, args...); r.err != nil || !strings.Contains(r.stdout, "Usage:") {
			t.Errorf("exitgate %v: %v, want help", args, r.err)
		}
	}
	// `exitgate help cr<TAB>` completes the commands, as cobra's own help
	// command did.
	if r := runCmd(t, "__complete", "help", "cr"); !strings.Contains(r.stdout, "crawl\t") || strings.Contains(r.stdout, "bench") {
		t.Errorf("completing help cr: %q, want crawl alone", r.stdout)
	}
}
