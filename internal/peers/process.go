package peers

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// procSpec describes one subprocess to start.
type procSpec struct {
	name   string   // names the peer in errors, e.g. "nginx" or "tinyproxy 127.0.0.11"
	dir    workDir  // where it runs; removed by Close when temporary
	addr   string   // Start returns once it listens here
	logs   []string // files whose tail explains a failure, besides its output
	stdout string   // file for its stdout; empty: the output file with stderr
	bin    string
	args   []string
}

// process is a started peer subprocess. It is safe for concurrent use.
type process struct {
	name   string
	cmd    *exec.Cmd
	dir    workDir
	output string   // file holding the subprocess's stderr (and stdout unless redirected)
	logs   []string // more files for diagnostics
	exited chan struct{}
	once   sync.Once
	err    error
}

// startProcess runs spec in its own process group and waits until it
// listens on spec.addr. On failure the process is killed, a temporary
// directory removed, and the error carries the tail of its output and logs.
func startProcess(spec procSpec) (*process, error) {
	p, err := launch(spec)
	if err != nil {
		spec.dir.remove()
	}
	return p, err
}

func launch(spec procSpec) (*process, error) {
	outPath := spec.dir.join(filepath.Base(spec.bin) + ".out")
	out, err := os.Create(outPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.name, err)
	}
	defer out.Close()
	cmd := exec.Command(spec.bin, spec.args...)
	cmd.Dir = spec.dir.path
	cmd.Stdout = out
	cmd.Stderr = out
	logs := spec.logs
	if spec.stdout != "" {
		so, err := os.Create(spec.stdout)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec.name, err)
		}
		defer so.Close()
		cmd.Stdout = so
		logs = append([]string{spec.stdout}, logs...)
	}
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.name, err)
	}
	p := &process{name: spec.name, cmd: cmd, dir: spec.dir, output: outPath, logs: logs, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	err = WaitListening(spec.addr, StartTimeout, p.exited)
	if err != nil && !p.Running() && bindFailed(p.Tail()) {
		// Another process held the port as the peer bound it, and let it go
		// before the readiness check (FreePort beside it holds each port it
		// tries for an instant): no one answers, and the peer exited saying
		// so. CI met it with tinyproxy's "Could not create listening sockets".
		err = fmt.Errorf("%w: %v", ErrPortTaken, err)
	}
	if err == nil && !p.Running() {
		err = fmt.Errorf("%w: exited after %s answered", ErrPortTaken, spec.addr)
	}
	if err == nil {
		if here, perr := listensHere(cmd.Process.Pid, spec.addr); perr == nil && !here {
			err = fmt.Errorf("%w: %s answers, but not from this process", ErrPortTaken, spec.addr)
		}
	}
	if err != nil {
		tail := p.Tail()
		p.Close()
		return nil, fmt.Errorf("%s: %w\n%s", spec.name, err, tail)
	}
	return p, nil
}

// bindMarkers are what the peers print when their listening socket cannot
// be bound: nginx, flask, redis and puma "Address already in use", node
// EADDRINUSE, tinyproxy and haproxy their own words.
var bindMarkers = []string{"Address already in use", "EADDRINUSE", "Could not create listening sockets", "cannot bind socket"}

// bindFailed reports whether a peer's output says it could not bind.
func bindFailed(output string) bool {
	for _, m := range bindMarkers {
		if strings.Contains(output, m) {
			return true
		}
	}
	return false
}

// Close sends SIGKILL to the process group (nginx may fork, flask starts
// threads) and waits for the leader to be reaped, then removes a temporary
// directory. It is safe to call more than once.
func (p *process) Close() error {
	p.once.Do(func() {
		pid := p.cmd.Process.Pid
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
			_ = p.cmd.Process.Kill()
		}
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			p.err = fmt.Errorf("%s (pid %d) still running 5s after SIGKILL", p.name, pid)
		}
		p.dir.remove()
	})
	return p.err
}

// Running reports whether the process has not exited.
func (p *process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Tail returns the last 4 KiB of the peer's output and of each of its log
// files, each under a header line: what to read when it misbehaves.
func (p *process) Tail() string {
	var b bytes.Buffer
	if !p.Running() {
		fmt.Fprintf(&b, "--- %s exited: %v\n", p.name, p.cmd.ProcessState)
	}
	for _, f := range append([]string{p.output}, p.logs...) {
		b.WriteString(fileTail(f, 4096))
	}
	return b.String()
}

// fileTail returns the last n bytes of file under a header line, "" when it
// does not exist.
func fileTail(file string, n int64) string {
	f, err := os.Open(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return ""
		}
		return fmt.Sprintf("--- %s: %v\n", file, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		_, _ = f.Seek(fi.Size()-n, 0)
	}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(f)
	return fmt.Sprintf("--- %s\n%s\n", filepath.Base(file), bytes.TrimRight(buf.Bytes(), "\n"))
}

// server is a running subprocess that serves HTTP on addr and writes one
// access-log line per request to accessLog. Nginx, HAProxy and Flask embed
// it for their common methods.
type server struct {
	proc      *process
	addr      string
	accessLog string
}

// Addr returns the host:port the server listens on.
func (s *server) Addr() string { return s.addr }

// URL returns the base URL, e.g. "http://127.0.0.1:40123", without a
// trailing slash.
func (s *server) URL() string { return "http://" + s.addr }

// AccessLogPath returns the access log's path.
func (s *server) AccessLogPath() string { return s.accessLog }

// AccessLog returns the complete lines of the access log so far. A server
// logs a request just after answering it, so a client that has read its
// response may be a moment ahead of the log.
func (s *server) AccessLog() ([]AccessEntry, error) { return ReadAccessLog(s.accessLog) }

// Tail returns the tail of the server's output and logs.
func (s *server) Tail() string { return s.proc.Tail() }

// Close kills the server (SIGKILL) and removes a temporary directory.
func (s *server) Close() error { return s.proc.Close() }
