package peertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// GoBuild builds the package pkg into the file out with the go command of
// the toolchain running the tests (GOROOT's, else the one on PATH), adding
// flags to `go build`, in at most four minutes. It returns the build's
// output with its error. It does not call t.Fatal, so it may run in a
// sync.Once shared by tests.
func GoBuild(out, pkg string, flags ...string) error {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			return fmt.Errorf("no go command to build %s: %w", pkg, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	args := append(append([]string{"build"}, flags...), "-o", out, pkg)
	if b, err := exec.CommandContext(ctx, goBin, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}
