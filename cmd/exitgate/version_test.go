package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionLine(t *testing.T) {
	plat := runtime.GOOS + "/" + runtime.GOARCH
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "19ea4c1e33bbfb1cf8e1db3717c16e6830929985"},
		{Key: "vcs.time", Value: "2026-12-01T03:54:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	for _, tt := range []struct {
		name    string
		bi      *debug.BuildInfo
		ldflags string
		want    string
	}{
		{"go install @version", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}},
			"", "exitgate v1.2.0 (go1.26.8 " + plat + ")"},
		{"checkout with VCS", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			"", "exitgate (devel) commit 19ea4c1e33bb 2026-12-01T03:54:00Z, modified (go1.26.8 " + plat + ")"},
		{"ldflags win", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}, Settings: vcs[:2]},
			"v1.3.0-rc1", "exitgate v1.3.0-rc1 commit 19ea4c1e33bb (go1.26.8 " + plat + ")"},
		{"no build info", nil, "", "exitgate (devel) (" + runtime.Version() + " " + plat + ")"},
	} {
		if got := versionLine(tt.bi, tt.ldflags); got != tt.want {
			t.Errorf("%s: versionLine = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestVersionBinary: the built binary answers --version and `version`
// alike, with the version stamped at build time and, when the checkout is a
// git repository the go command stamps (not a git worktree, whose .git is a
// file), the commit it was built from.
func TestVersionBinary(t *testing.T) {
	bin := exitgateBinary(t)
	var lines []string
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("exitgate %s: %v\n%s", args[0], err, out)
		}
		lines = append(lines, strings.TrimSpace(string(out)))
	}
	if lines[0] != lines[1] {
		t.Errorf("--version says %q, version says %q", lines[0], lines[1])
	}
	re := regexp.MustCompile(`^exitgate ` + regexp.QuoteMeta(testVersion) + `( commit [0-9a-f]{12} \S+(, modified)?)? \(go1\.\d+\S* ` + runtime.GOOS + `/` + runtime.GOARCH + `\)$`)
	if !re.MatchString(lines[0]) {
		t.Errorf("exitgate --version = %q, want it to match %s", lines[0], re)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	top, err2 := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil || err2 != nil {
		t.Logf("not a git checkout: commit not checked")
		return
	}
	if fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !fi.IsDir() {
		t.Logf("a git worktree: the go command does not stamp VCS information; commit not checked")
		return
	}
	if want := "commit " + string(head[:12]); !strings.Contains(lines[0], want) {
		t.Errorf("exitgate --version = %q, want %q", lines[0], want)
	}
}
