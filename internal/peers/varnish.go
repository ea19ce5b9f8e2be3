package peers

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// VarnishConfig configures a Varnish Cache target limited by varnish-modules'
// vsthrottle (Debian's varnish and varnish-modules): every request of a
// client address takes a token of its bucket, vsthrottle.is_denied(
// client.identity, Limit, Period, Block), and a denied one is answered 429
// by vcl_synth; the others are answered 200 "ok" by Varnish itself (no
// backend), as the vmod's README writes its rules.
type VarnishConfig struct {
	// Limit requests per Period per client address: a bucket of Limit
	// tokens refilled at Limit per Period. Both required; Period whole
	// milliseconds.
	Limit  int
	Period time.Duration
	// Block, when positive, denies a client everything for that long
	// after it ran out (is_denied's block argument); requests sent while
	// blocked still take tokens, as the vmod does.
	Block time.Duration
	// RetryAfter sets a 429's Retry-After to the block's remaining
	// seconds, rounded up (vsthrottle.blocked); only with Block.
	RetryAfter bool
	// Remaining sets X-RateLimit-Remaining on every response to the
	// bucket's tokens (vsthrottle.remaining, as the vmod's README shows
	// it), and nothing else.
	Remaining bool
	// LimitHeader sets X-RateLimit-Limit to Limit beside Remaining: a
	// bucket's size and level told, with nothing of when it refills, as
	// Shopify tells them (X-Shopify-Shop-Api-Call-Limit: used/size).
	// Only with Remaining.
	LimitHeader bool
	// Listen is the address to listen on. Empty means 127.0.0.1 on a free
	// port.
	Listen string
	// Dir holds the VCL, Varnish's working directory and the logs. Empty:
	// a temporary directory that Close removes.
	Dir string
}

// Varnish is a running varnishd with varnishncsa writing its access log,
// "<unix time with ms> <client address> <status>", one line per request.
type Varnish struct {
	server
	ncsa *exec.Cmd
	done chan struct{}
}

// varnishVCL is the target's VCL: vsthrottle's README rule, answered by
// Varnish itself.
const varnishVCL = `vcl 4.1;
import vsthrottle;
import std;
backend default none;
sub vcl_recv {
    if (req.url == "{{ready}}") {
        return (synth(204, "ready"));
    }
    if (vsthrottle.is_denied(client.identity, {{limit}}, {{period}}{{block}})) {
        return (synth(429, "Too Many Requests"));
    }
    return (synth(200, "ok"));
}
sub vcl_synth {
    set resp.http.Content-Type = "text/plain";
    set resp.body = resp.reason;
{{synth}}    return (deliver);
}
`

// varnishReady is the path the start-up probe asks for, to see varnishncsa
// attached; its log line is removed before Start returns.
const varnishReady = "/__exitgate_ready"

// StartVarnish starts varnishd and varnishncsa with cfg and returns once
// the server answers and its requests are logged.
func StartVarnish(cfg VarnishConfig) (*Varnish, error) {
	if cfg.Limit <= 0 || cfg.Period < time.Millisecond || cfg.Period%time.Millisecond != 0 || cfg.Block < 0 {
		return nil, fmt.Errorf("varnish: Limit %d per Period %v, Block %v: want a positive limit, whole milliseconds and no negative block", cfg.Limit, cfg.Period, cfg.Block)
	}
	if cfg.RetryAfter && cfg.Block == 0 {
		return nil, errors.New("varnish: RetryAfter tells a block's remaining time: set Block too")
	}
	bin, err := LookPath("varnishd")
	if err != nil {
		return nil, err
	}
	ncsaBin, err := LookPath("varnishncsa")
	if err != nil {
		return nil, err
	}
	if cfg.Listen, err = freeAddr(cfg.Listen); err != nil {
		return nil, fmt.Errorf("varnish: %w", err)
	}
	if err := checkConf("varnish", "Listen", cfg.Listen); err != nil {
		return nil, err
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }
	rule := fmt.Sprintf("client.identity, %d, %s", cfg.Limit, ms(cfg.Period))
	block, synth := "", ""
	if cfg.Block > 0 {
		block = ", " + ms(cfg.Block)
		rule += block
	} else {
		rule += ", 0s"
	}
	if cfg.RetryAfter {
		// Whole seconds, rounded up: a duration prints with decimals.
		synth += fmt.Sprintf("    if (resp.status == 429) {\n        set resp.http.Retry-After = std.integer(duration=vsthrottle.blocked(%s) + 0.999s, fallback=1);\n    }\n", rule)
	}
	if cfg.Remaining {
		synth += fmt.Sprintf("    set resp.http.X-RateLimit-Remaining = vsthrottle.remaining(%s);\n", rule)
		if cfg.LimitHeader {
			synth += fmt.Sprintf("    set resp.http.X-RateLimit-Limit = \"%d\";\n", cfg.Limit)
		}
	}
	vcl := strings.NewReplacer("{{ready}}", varnishReady, "{{limit}}", strconv.Itoa(cfg.Limit),
		"{{period}}", ms(cfg.Period), "{{block}}", block, "{{synth}}", synth).Replace(varnishVCL)
	dir, err := newWorkDir(cfg.Dir, "varnish")
	if err != nil {
		return nil, fmt.Errorf("varnish: %w", err)
	}
	vclPath := dir.join("limit.vcl")
	if err := writeFile(vclPath, vcl, 0o644); err != nil {
		dir.remove()
		return nil, fmt.Errorf("varnish: %w", err)
	}
	name := dir.join("varnish") // varnishd's working directory (-n), shared with varnishncsa
	// Compile the VCL first: a missing vmod is a package to install.
	if out, err := exec.Command(bin, "-C", "-n", name, "-f", vclPath).CombinedOutput(); err != nil {
		dir.remove()
		if strings.Contains(string(out), "vsthrottle") {
			return nil, &NotInstalledError{Bin: "varnish's vsthrottle vmod", Package: "varnish-modules", Err: fmt.Errorf("%v: %s", err, lastLines(out, 5))}
		}
		return nil, fmt.Errorf("varnish: the VCL does not compile: %v\n%s", err, lastLines(out, 20))
	}
	p, err := startProcess(procSpec{name: "varnishd " + cfg.Listen, dir: dir, addr: cfg.Listen,
		bin: bin, args: []string{"-F", "-n", name, "-a", cfg.Listen, "-f", vclPath, "-s", "malloc,16m", "-j", "none",
			"-p", "thread_pools=1", "-p", "thread_pool_min=20"}})
	if err != nil {
		return nil, err
	}
	accessLog := dir.join("access.log")
	v := &Varnish{server: server{proc: p, addr: cfg.Listen, accessLog: accessLog}, done: make(chan struct{})}
	ncsaOut, err := os.Create(dir.join("varnishncsa.out"))
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("varnish: %w", err)
	}
	defer ncsaOut.Close()
	v.ncsa = exec.Command(ncsaBin, "-n", name, "-t", "10", "-a", "-F", "%{sec}t.%{msec_frac}t %h %s", "-w", accessLog)
	v.ncsa.Dir, v.ncsa.Stdout, v.ncsa.Stderr = dir.path, ncsaOut, ncsaOut
	v.ncsa.SysProcAttr = sysProcAttr()
	if err := v.ncsa.Start(); err != nil {
		p.Close()
		return nil, fmt.Errorf("start varnishncsa: %w", err)
	}
	go func() {
		_ = v.ncsa.Wait()
		close(v.done)
	}()
	if err := v.awaitLogging(); err != nil {
		tail := v.Tail()
		v.Close()
		return nil, fmt.Errorf("varnish %s: %w\n%s", cfg.Listen, err, tail)
	}
	return v, nil
}

// awaitLogging asks for the probe path until varnishncsa logs it (it reads
// Varnish's shared log from its tail once attached, and misses what came
// before), then empties the access log for the target's own requests.
func (v *Varnish) awaitLogging() error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(StartTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-v.done:
			return errors.New("varnishncsa exited")
		default:
		}
		if resp, err := client.Get(v.URL() + varnishReady); err == nil {
			resp.Body.Close()
		}
		time.Sleep(100 * time.Millisecond)
		if fi, err := os.Stat(v.accessLog); err == nil && fi.Size() > 0 {
			// varnishncsa appends (-a): it goes on at the start
			// of the emptied file.
			return os.Truncate(v.accessLog, 0)
		}
	}
	return fmt.Errorf("varnishncsa logged nothing within %v", StartTimeout)
}

// Tail returns the tail of varnishd's and varnishncsa's output and the
// access log.
func (v *Varnish) Tail() string {
	return v.proc.Tail() + fileTail(v.proc.dir.join("varnishncsa.out"), 2048) + fileTail(v.accessLog, 1024)
}

// Close kills varnishncsa, then varnishd (SIGKILL to each process group),
// and removes a temporary directory.
func (v *Varnish) Close() error {
	if v.ncsa != nil && v.ncsa.Process != nil {
		if err := syscall.Kill(-v.ncsa.Process.Pid, syscall.SIGKILL); err != nil {
			_ = v.ncsa.Process.Kill()
		}
		select {
		case <-v.done:
		case <-time.After(5 * time.Second):
		}
	}
	return v.proc.Close()
}

// lastLines returns the last n lines of out.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
