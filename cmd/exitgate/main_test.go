package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
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
	buildOut  []byte
)

// exitgateBinary builds cmd/exitgate once per test run, with version
// testVersion and VCS stamping as the checkout allows, and returns its path.
func exitgateBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goBin); err != nil {
			if goBin, err = exec.LookPath("go"); err != nil {
				buildErr = err
				return
			}
		}
		if binDir, buildErr = os.MkdirTemp("", "exitgate-bin-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "exitgate")
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goBin, "build", "-buildvcs=auto", "-ldflags", "-X main.version="+testVersion, "-o", binPath, ".")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build exitgate: %v\n%s", buildErr, buildOut)
	}
	return binPath
}
