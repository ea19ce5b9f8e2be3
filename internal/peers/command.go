package peers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// Command describes a program run to completion, such as an `exitgate
// crawl` under test.
type Command struct {
	// Name names it in errors. Default: the program's base name.
	Name string
	// Bin and Args are the program and its arguments. Bin is required.
	Bin  string
	Args []string
	// Dir is its working directory, which receives <name>.stdout and
	// <name>.stderr. Required.
	Dir string
	// Success lists exit codes other than 0 that are not failures (e.g.
	// exitgate crawl's 4: URLs left unfinished by --duration).
	Success []int
}

// Run runs c in its own process group and waits for it. When ctx ends, the
// whole group is killed with SIGKILL. A failure names the program and
// carries the tail of its stderr.
func (c Command) Run(ctx context.Context) error {
	if c.Name == "" {
		c.Name = filepath.Base(c.Bin)
	}
	base := filepath.Join(c.Dir, filepath.Base(c.Name))
	stdout, err := os.Create(base + ".stdout")
	if err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	defer stdout.Close()
	stderr, err := os.Create(base + ".stderr")
	if err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	defer stderr.Close()
	cmd := exec.CommandContext(ctx, c.Bin, c.Args...)
	cmd.Dir = c.Dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ctx.Err() == nil && slices.Contains(c.Success, ee.ExitCode()) {
			return nil
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return fmt.Errorf("%s: %w\n%s", c.Name, err, fileTail(base+".stderr", 4096))
	}
	return nil
}
