package main

import (
	"os"
	"path/filepath"
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
