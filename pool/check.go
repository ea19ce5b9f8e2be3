package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/exitgate/exitgate/classify"
)

// DefaultEchoURL is the IP-echo service Check uses when none is configured.
const DefaultEchoURL = "https://api.ipify.org"

// CheckConfig configures Check. The zero value checks through DefaultEchoURL, 16 exits
// at a time, 15s per exit.
type CheckConfig struct {
	// EchoURL answers with the caller's address; see IdentityConfig.EchoURL.
	// Empty means DefaultEchoURL.
	EchoURL string
	// Header, if set, names a response header carrying the exit IP; it wins over the body.
	Header string
	// Timeout bounds each exit's check. Zero means 15s.
	Timeout time.Duration
	// Concurrency is how many exits are checked at once. Zero means 16.
	Concurrency int
	// Transport tunes the per-exit transports.
	Transport TransportConfig
}

// Problem classifies what is wrong with an exit.
type Problem uint8

const (
	NoProblem   Problem = iota
	Credentials         // the proxy rejected the credentials (407, or tinyproxy's 401)
	Unreachable         // connection refused, no route, unknown host, bind address not local
	Timeout             // no answer within the timeout
	ProxyError          // the proxy failed otherwise (CONNECT refused, SOCKS handshake, TLS)
	EchoError           // the echo URL answered, but not with an address
	DuplicateIP         // works, but shares its exit IP with an earlier exit
)

func (p Problem) String() string {
	switch p {
	case NoProblem:
		return "ok"
	case Credentials:
		return "credentials"
	case Unreachable:
		return "unreachable"
	case Timeout:
		return "timeout"
	case ProxyError:
		return "proxy"
	case EchoError:
		return "echo"
	case DuplicateIP:
		return "duplicate-ip"
	}
	return fmt.Sprintf("Problem(%d)", uint8(p))
}

// CheckResult is the outcome for one exit. Detail never contains credentials.
type CheckResult struct {
	Exit        Exit
	IP          netip.Addr    // resolved exit IP; invalid on failure
	Latency     time.Duration // time to the echo answer, connect included
	Problem     Problem
	Detail      string // human-readable problem, e.g. "proxy rejected credentials (407)"
	DuplicateOf string // for DuplicateIP: the ID of the first exit with this IP
}

// Failed reports whether the exit cannot be used. A duplicate IP is a warning, not a
// failure: the exit works, it just is not a distinct identity.
func (r CheckResult) Failed() bool { return r.Problem != NoProblem && r.Problem != DuplicateIP }

// Check fetches the echo URL through every exit concurrently and returns one result per
// exit, in the order given. Exits that resolve to an IP already seen are marked
// DuplicateIP. It returns an error only for an invalid config; it returns early, with
// Timeout results for the exits not yet done, when ctx ends.
func Check(ctx context.Context, exits []Exit, cfg CheckConfig) ([]CheckResult, error) {
	if cfg.EchoURL == "" {
		cfg.EchoURL = DefaultEchoURL
	}
	if _, err := NewIdentity(IdentityConfig{Header: cfg.Header, EchoURL: cfg.EchoURL}); err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 || cfg.Concurrency < 0 {
		return nil, errors.New("check: negative timeout or concurrency")
	}
	timeout := cmp.Or(cfg.Timeout, 15*time.Second)
	sem := make(chan struct{}, cmp.Or(cfg.Concurrency, 16))
	results := make([]CheckResult, len(exits))
	var wg sync.WaitGroup
	for i, e := range exits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				results[i] = CheckResult{Exit: e, Problem: Timeout, Detail: "not checked: " + ctx.Err().Error()}
				return
			}
			results[i] = checkOne(ctx, e, cfg, timeout)
		}()
	}
	wg.Wait()
	markDuplicates(results)
	return results, nil
}

// checkGrace is how long past its timeout the check of one exit may take
// to say why it failed (a check of the proxy already under way).
const checkGrace = 250 * time.Millisecond

// checkOne checks exit e within timeout (and checkGrace): the echo request
// is bounded by it, and so is the check of the proxy its transport makes
// after a failure, which could take as long again (up to the transport's
// 5-s ProbeTimeout: --timeout 2s took 7 s on a proxy that never answers).
// Past the bound the exit is reported as not answering, and the request's
// own goroutine ends by itself within its transport's bounds.
func checkOne(ctx context.Context, e Exit, cfg CheckConfig, timeout time.Duration) CheckResult {
	start := time.Now()
	done := make(chan CheckResult, 1)
	go func() { done <- checkExit(ctx, e, cfg, timeout) }()
	bound := time.NewTimer(timeout + checkGrace)
	defer bound.Stop()
	select {
	case r := <-done:
		return r
	case <-bound.C:
		return CheckResult{Exit: e, Latency: time.Since(start), Problem: Timeout, Detail: fmt.Sprintf("no answer within %v", timeout)}
	}
}

func checkExit(ctx context.Context, e Exit, cfg CheckConfig, timeout time.Duration) CheckResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := e.Transport(cfg.Transport)
	defer t.CloseIdleConnections()
	start := time.Now()
	res := fetchEcho(ctx, t, cfg.EchoURL, cfg.Header)
	r := CheckResult{Exit: e, Latency: time.Since(start)}
	if res.Err == nil {
		r.IP = res.IP
		return r
	}
	r.Problem, r.Detail = checkProblem(e, res.Err, timeout)
	r.Detail = e.Scrub(r.Detail)
	return r
}

// checkProblem turns a check error into a problem and a one-line explanation.
func checkProblem(e Exit, err error, timeout time.Duration) (Problem, string) {
	isProxy := e.Kind() == Proxy
	var pse *classify.ProxyConnectError
	var pe *classify.ProxyError
	var ese *EchoStatusError
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var netErr net.Error
	var refused *credentialsRefused
	switch {
	case errors.As(err, &refused):
		return Credentials, fmt.Sprintf("proxy rejected credentials (%d)", refused.status)
	case errors.As(err, &pe):
		return ProxyError, "proxy " + pe.Why
	case errors.As(err, &pse):
		if pse.StatusCode == http.StatusProxyAuthRequired || pse.StatusCode == http.StatusUnauthorized {
			return Credentials, fmt.Sprintf("proxy rejected credentials (%d)", pse.StatusCode)
		}
		return ProxyError, fmt.Sprintf("proxy refused CONNECT (%d %s)", pse.StatusCode, http.StatusText(pse.StatusCode))
	case errors.As(err, &ese):
		// Over plain HTTP the proxy's own refusal arrives as a response. tinyproxy 1.11
		// answers wrong credentials with 401 instead of 407; an echo service never asks
		// for authentication, so a 401 through an authenticating proxy is the proxy's.
		if isProxy && (ese.StatusCode == http.StatusProxyAuthRequired ||
			ese.StatusCode == http.StatusUnauthorized && e.HasCredentials()) {
			return Credentials, fmt.Sprintf("proxy rejected credentials (%d)", ese.StatusCode)
		}
		return EchoError, ese.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return Timeout, fmt.Sprintf("no answer within %v", timeout)
	case errors.Is(err, context.Canceled):
		return Timeout, "canceled"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return Unreachable, "bind address not available on this host"
	case errors.As(err, &dnsErr):
		who := "echo host"
		if isProxy && errors.As(err, &opErr) && opErr.Op == "proxyconnect" {
			who = "proxy host"
		}
		return Unreachable, fmt.Sprintf("cannot resolve %s %q", who, dnsErr.Name)
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		what := "connection refused"
		if !errors.Is(err, syscall.ECONNREFUSED) {
			what = "no route"
		}
		if isProxy && errors.As(err, &opErr) && opErr.Op == "proxyconnect" {
			return Unreachable, "proxy unreachable (" + what + ")"
		}
		if isProxy {
			return ProxyError, "proxy could not reach the echo URL (" + what + ")"
		}
		return Unreachable, "echo URL unreachable (" + what + ")"
	case errors.Is(err, ErrNoIdentity):
		return EchoError, err.Error()
	}
	if isProxy {
		return ProxyError, err.Error()
	}
	return EchoError, err.Error()
}

func markDuplicates(results []CheckResult) {
	first := map[netip.Addr]string{}
	for i := range results {
		r := &results[i]
		if r.Problem != NoProblem || !r.IP.IsValid() {
			continue
		}
		if id, ok := first[r.IP]; ok {
			r.Problem, r.DuplicateOf = DuplicateIP, id
			r.Detail = "same exit IP as " + id
			continue
		}
		first[r.IP] = r.Exit.ID()
	}
}
