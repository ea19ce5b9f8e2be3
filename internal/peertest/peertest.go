// Package peertest starts real Debian programs (nginx, tinyproxy, redis-server) on
// loopback for tests. Each peer runs in the foreground as a subprocess in its own
// t.TempDir() on a free port, and is killed with SIGKILL in t.Cleanup, so a test never
// leaves a process behind.
//
// A missing binary skips the test, unless EXITGATE_REQUIRE_PEERS=1 is set (the project
// test script sets it), in which case the test fails: CI never silently skips.
//
// All helpers must be called from the test goroutine (they call t.Fatal). The returned
// peer values are safe for concurrent use once started.
package peertest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// RequireEnv is the environment variable that turns a missing peer binary from a skip
// into a failure.
const RequireEnv = "EXITGATE_REQUIRE_PEERS"

// StartTimeout bounds how long a peer may take to start listening.
const StartTimeout = 15 * time.Second

// Require returns the path of bin as found by exec.LookPath (also searching the sbin
// directories, where Debian puts nginx). If bin is missing it skips the test with the
// package to install, or fails it when EXITGATE_REQUIRE_PEERS=1.
func Require(t testing.TB, bin string) string {
	t.Helper()
	path, err := lookPath(bin)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("peer %q not installed (apt-get install -y --no-install-recommends %s): %v", bin, debianPackage(bin), err)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s; %s=1 forbids skipping", msg, RequireEnv)
	}
	t.Skip(msg)
	return ""
}

func lookPath(bin string) (string, error) {
	path, err := exec.LookPath(bin)
	if err == nil {
		return path, nil
	}
	// Non-root PATHs often lack sbin.
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(dir, bin)
		if fi, statErr := os.Stat(p); statErr == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", err
}

func debianPackage(bin string) string {
	switch bin {
	case "redis-server", "redis-cli":
		return "redis-server"
	}
	return bin
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. There is a small
// window in which another process may take it; peers fail loudly if that happens.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("FreePort: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WaitListening polls a TCP dial to addr until it succeeds or timeout passes, then fails
// the test. It is for peers that do not say when they are ready.
func WaitListening(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	if err := waitListening(addr, timeout, nil); err != nil {
		t.Fatal(err)
	}
}

// waitListening dials addr every 10 ms until it connects, exited is closed (the
// process died) or timeout passes.
func waitListening(addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 250*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening after %v: %v", addr, timeout, err)
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited before listening on %s", addr)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// sharedDir returns a fresh t.TempDir() that peers which drop privileges to nobody
// (nginx workers, tinyproxy) can enter: the testing package creates the per-test parent
// directory with mode 0700.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatalf("chmod %s: %v", d, err)
		}
	}
	return dir
}

// writeFile writes content to path with mode perm, failing the test on error.
func writeFile(t testing.TB, path, content string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	// WriteFile's perm is filtered by the umask; peers running as nobody need it exact.
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

// process is a started peer subprocess.
type process struct {
	name   string
	cmd    *exec.Cmd
	output string        // file holding the subprocess's stdout and stderr
	exited chan struct{} // closed once Wait returned
}

// start runs bin with args in dir, kills its whole process group in t.Cleanup and waits
// until it listens on addr. On failure it reports the peer's output and the extra log
// files given.
func start(t testing.TB, name, dir, addr string, logs []string, bin string, args ...string) *process {
	t.Helper()
	outPath := filepath.Join(dir, name+".out")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	out.Close()
	p := &process{name: name, cmd: cmd, output: outPath, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.kill)
	if err := waitListening(addr, StartTimeout, p.exited); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, p.diagnostics(logs))
	}
	return p
}

// kill sends SIGKILL to the process group (nginx forks workers) and waits for the
// leader to be reaped.
func (p *process) kill() {
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		_ = p.cmd.Process.Kill()
	}
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
	}
}

// diagnostics returns the tail of the peer's output and log files.
func (p *process) diagnostics(logs []string) string {
	var b bytes.Buffer
	for _, f := range append([]string{p.output}, logs...) {
		data, err := os.ReadFile(f)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(&b, "--- %s: %v\n", f, err)
			}
			continue
		}
		if len(data) > 4096 {
			data = data[len(data)-4096:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(f), data)
	}
	return b.String()
}

func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
