// Package peers starts real programs on loopback for tests and for the
// real-limiter bench: rate-limited targets (nginx limit_req, haproxy stick
// tables, a Python flask-limiter app, Node apps on express-rate-limit,
// @fastify/rate-limit and rate-limiter-flexible, and Go servers wrapping
// golang.org/x/time/rate, github.com/go-chi/httprate and the held-out
// middlewares of other frameworks), forward proxies
// (tinyproxy, each bound to its own outgoing address so that a target keyed
// on the client IP sees each as its own exit) and redis-server.
//
// Every subprocess runs in the foreground in its own process group, on a
// free port, in a directory of its own, and Close kills the whole group with
// SIGKILL and waits for it, so nothing is left running. Errors name the peer
// and carry the tail of its output and logs.
//
// A missing program is reported as a *NotInstalledError (errors.Is
// ErrNotInstalled) naming the Debian package to install.
//
// Every target writes an access log of its own, one line per request:
// "<unix time with ms> <client IP> <status> [more]". ReadAccessLog parses it.
//
// Start functions may be called from any goroutine; the returned peers are
// safe for concurrent use.
package peers

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// StartTimeout bounds how long a peer may take to start listening.
const StartTimeout = 15 * time.Second

// ErrNotInstalled is matched (errors.Is) by every *NotInstalledError.
var ErrNotInstalled = errors.New("peer not installed")

// ErrPortTaken: the free port a peer was started on was taken by another
// process before the peer bound it (FreePort frees the port it finds, and a
// test running beside may bind it first), so another process answers there.
// Starting again on a new port is the remedy (StartRetry).
var ErrPortTaken = errors.New("another process holds the port")

// StartRetry calls start up to three times while it fails with
// ErrPortTaken: each call picks a new free port.
func StartRetry[T any](start func() (T, error)) (T, error) {
	var v T
	var err error
	for range 3 {
		if v, err = start(); !errors.Is(err, ErrPortTaken) {
			break
		}
	}
	return v, err
}

// NotInstalledError says which program is missing and which Debian package
// provides it.
type NotInstalledError struct {
	Bin     string // the program or module looked for
	Package string // the Debian package that provides it
	Err     error  // why it was judged missing
}

func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("peer %q not installed (apt-get install -y --no-install-recommends %s): %v", e.Bin, e.Package, e.Err)
}

// Is makes errors.Is(err, ErrNotInstalled) true.
func (e *NotInstalledError) Is(target error) bool { return target == ErrNotInstalled }

// Unwrap returns the lookup error.
func (e *NotInstalledError) Unwrap() error { return e.Err }

// LookPath returns the path of bin as found by exec.LookPath, also searching
// the sbin directories (where Debian puts nginx and haproxy, often missing
// from a non-root PATH). A missing bin is a *NotInstalledError.
func LookPath(bin string) (string, error) {
	path, err := exec.LookPath(bin)
	if err == nil {
		return path, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(dir, bin)
		if fi, statErr := os.Stat(p); statErr == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &NotInstalledError{Bin: bin, Package: debianPackage(bin), Err: err}
}

func debianPackage(bin string) string {
	switch bin {
	case "redis-server", "redis-cli":
		return "redis-server"
	}
	return bin
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. There
// is a small window in which another process may take it; a peer that loses
// it fails to start, loudly, with ErrPortTaken (StartRetry starts it again).
//
// The port is drawn at random below the kernel's ephemeral range, which the
// kernel hands out to every outgoing connection and to every listener asking
// for port 0: a crawl beside opens thousands of connections, and two callers
// asking the kernel at once can be handed the same port in turn. When the
// range cannot be read the kernel picks.
func FreePort() (int, error) {
	if lo, ok := ephemeralLow(); ok && lo > freePortSpan+1024 {
		for range 64 {
			port := lo - 1 - rand.IntN(freePortSpan)
			if l, err := net.Listen("tcp", hostPort("127.0.0.1", port)); err == nil {
				l.Close()
				return port, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freePortSpan is how many ports under the ephemeral range FreePort draws
// from.
const freePortSpan = 10000

// ephemeralLow returns the first port of the kernel's ephemeral range.
func ephemeralLow() (int, bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false
	}
	lo, err := strconv.Atoi(f[0])
	return lo, err == nil
}

// freeAddr returns listen when set, else 127.0.0.1 on a free port.
func freeAddr(listen string) (string, error) {
	if listen != "" {
		return listen, nil
	}
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	return hostPort("127.0.0.1", port), nil
}

// splitListen is freeAddr for programs that take the host and the port
// apart.
func splitListen(listen string) (addr, host, port string, err error) {
	if addr, err = freeAddr(listen); err != nil {
		return "", "", "", err
	}
	if host, port, err = net.SplitHostPort(addr); err != nil {
		return "", "", "", fmt.Errorf("listen address: %w", err)
	}
	return addr, host, port, nil
}

// WaitListening dials addr every 10 ms until it connects, exited is closed
// (the process died; nil means never) or timeout passes.
func WaitListening(addr string, timeout time.Duration, exited <-chan struct{}) error {
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

// confValue matches values safe to paste unquoted into a configuration file.
var confValue = regexp.MustCompile(`^[A-Za-z0-9./:\[\]_-]+$`)

// checkConf returns an error naming the first field whose value a
// configuration file cannot take unquoted.
func checkConf(peer string, fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if !confValue.MatchString(fields[i+1]) {
			return fmt.Errorf("%s: %s %q has characters its configuration cannot take unquoted", peer, fields[i], fields[i+1])
		}
	}
	return nil
}

// workDir is a peer's directory: dir when given (made if missing), else a
// new temporary directory that Close removes. It is made enterable by
// peers that drop privileges to nobody (tinyproxy).
type workDir struct {
	path string
	temp bool
}

func newWorkDir(dir, pattern string) (workDir, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "exitgate-"+pattern+"-*")
		if err != nil {
			return workDir{}, err
		}
		dir = d
		if err := os.Chmod(dir, 0o755); err != nil {
			os.RemoveAll(dir)
			return workDir{}, err
		}
		return workDir{path: dir, temp: true}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return workDir{}, err
	}
	return workDir{path: dir}, nil
}

func (d workDir) join(name string) string { return filepath.Join(d.path, name) }

// remove deletes the directory if it was made temporary.
func (d workDir) remove() {
	if d.temp {
		os.RemoveAll(d.path)
	}
}

// writeFile writes content to path with exactly mode perm (not filtered by
// the umask: peers running as nobody need it).
func writeFile(path, content string, perm os.FileMode) error {
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		return err
	}
	return os.Chmod(path, perm)
}

func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
