package pool

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/exitgate/exitgate/classify"
)

// TransportConfig tunes the transports built for exits. The zero value means the
// defaults documented on each field.
type TransportConfig struct {
	// DialTimeout bounds each TCP connect, to the proxy or the target. Zero means 10s.
	DialTimeout time.Duration
	// KeepAlive is the TCP keep-alive period. Zero means 30s; negative disables.
	KeepAlive time.Duration
	// TLSHandshakeTimeout bounds TLS handshakes. Zero means 10s.
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for response headers after the request is
	// written. Zero means no limit (use a request context deadline).
	ResponseHeaderTimeout time.Duration
	// IdleConnTimeout closes idle keep-alive connections. Zero means 90s.
	IdleConnTimeout time.Duration
	// MaxIdleConnsPerHost is the keep-alive pool size per target host. Zero means 8.
	MaxIdleConnsPerHost int
	// TLSClientConfig is cloned into each transport, for targets and HTTPS proxies.
	// Nil means Go's defaults.
	TLSClientConfig *tls.Config
	// DisableHTTP2 keeps transports on HTTP/1.1.
	DisableHTTP2 bool
	// ProbeTimeout bounds the check of a proxy exit's proxy after a request
	// through it failed (see Transport); after a request its deadline ended, at
	// most as long as that request took. Zero means DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// SilentAfter is how long a request through a proxy goes without
	// response headers before the proxy is checked while it waits: a proxy
	// that accepts connections and never answers is found then, not at
	// ResponseHeaderTimeout. Zero means DefaultSilentAfter; negative
	// turns the watch off.
	SilentAfter time.Duration
}

// DefaultSilentAfter is TransportConfig.SilentAfter's default: long enough
// that most answers come before it (a check is then never made), short
// against the half minute a silent proxy held each request.
const DefaultSilentAfter = 2 * time.Second

// Transport sends requests through one exit. It is an *http.Transport (its
// fields and methods are promoted) whose RoundTrip, when a request through a
// proxy fails with anything but a typed proxy error, checks the proxy itself
// (an HTTP proxy must answer a request it serves by itself; a SOCKS5 proxy
// must complete its handshake and accept the credentials) and, if the proxy
// is at fault, returns a *classify.ProxyError: so a proxy that speaks
// garbage, never answers or refuses the SOCKS5 credentials costs the exit,
// not the URL, while a slow or broken target behind a working proxy stays
// the URL's error. Checks are shared by concurrent failures and their outcome
// stands for a few seconds. A Transport is safe for concurrent use.
type Transport struct {
	*http.Transport
	exit    Exit
	timeout time.Duration
	silent  time.Duration // SilentAfter; <= 0: no watch
	prober  *prober       // nil unless the exit is a proxy
	strict  *prober       // prober's check, a 403 to the proxy's own URL failing it too
}

// errSilentProxy is the cause a request is cancelled with when the check of
// its proxy, made while it waited, blamed the proxy.
var errSilentProxy = errors.New("the proxy sent nothing and failed its check")

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.prober != nil && t.silent > 0 {
		return t.watched(req)
	}
	start := time.Now()
	resp, err := t.Transport.RoundTrip(req)
	resp, err = t.judge(req, resp, err, start)
	return t.refused(req, resp, err)
}

// refused returns a 401 to a plain request through a proxy that holds
// credentials as the proxy's refusal of them when a check of the proxy
// says so: tinyproxy 1.11 answers wrong credentials with 401, not 407, and
// read as the site's answer each URL sent through that exit was abandoned
// as fatal with a working exit in the pool. A site's own 401 behind a
// proxy that takes its credentials stays the URL's answer.
func (t *Transport) refused(req *http.Request, resp *http.Response, err error) (*http.Response, error) {
	if err != nil || resp.StatusCode != http.StatusUnauthorized || t.prober == nil ||
		!t.exit.HasCredentials() || req.URL.Scheme != "http" {
		return resp, err
	}
	if why := t.prober.check(time.Now(), t.timeout); why != nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // (a short page: keep the connection)
		resp.Body.Close()
		return nil, &classify.ProxyError{Proxy: t.exit.ID(), Why: t.exit.Scrub(why.Error()), Err: &credentialsRefused{resp.StatusCode}}
	}
	return resp, nil
}

// credentialsRefused is the cause of the error refused returns: the status
// the proxy answered a request with, refusing its credentials.
type credentialsRefused struct{ status int }

func (e *credentialsRefused) Error() string {
	return fmt.Sprintf("status %d through the proxy", e.status)
}

// watched sends req through the proxy and, if no headers came within
// SilentAfter, checks the proxy meanwhile: a proxy at fault ends the
// request at once with a *classify.ProxyError.
func (t *Transport) watched(req *http.Request) (*http.Response, error) {
	start := time.Now()
	ctx, cancel := context.WithCancelCause(req.Context())
	var blamed atomic.Pointer[error]
	watch := time.AfterFunc(t.silent, func() {
		if why := t.prober.check(start, t.timeout); why != nil {
			blamed.Store(&why)
			cancel(errSilentProxy)
		}
	})
	resp, err := t.Transport.RoundTrip(req.WithContext(ctx))
	watch.Stop()
	if why := blamed.Load(); why != nil && err != nil {
		cancel(nil)
		return nil, &classify.ProxyError{Proxy: t.exit.ID(), Why: t.exit.Scrub((*why).Error()), Err: err}
	}
	if err != nil {
		cancel(nil)
		return t.judge(req, resp, err, start)
	}
	if resp, err = t.refused(req, resp, nil); err != nil {
		cancel(nil)
		return nil, err
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// An upgraded connection's body is the connection, read and
		// written (io.ReadWriteCloser): left as it is, and ctx with it,
		// released when the caller's context ends.
		return resp, nil
	}
	// The body is read under ctx: it is released when the body is closed.
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: func() { cancel(nil) }}
	return resp, nil
}

// cancelOnClose releases a watched request's context when its body closes.
type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// judge returns a failed request's error as the proxy's when a check of the
// proxy blames it. A request its deadline ended (sent at start) waits for
// the check at most as long again as it took: with ProbeTimeout's 5 s, a
// client's 500 ms deadline was overrun elevenfold by a proxy that never
// answers (a check already made answers at once).
func (t *Transport) judge(req *http.Request, resp *http.Response, err error, start time.Time) (*http.Response, error) {
	if err == nil || t.prober == nil || errors.Is(req.Context().Err(), context.Canceled) {
		return resp, err
	}
	timeout := t.timeout
	if req.Context().Err() != nil {
		timeout = min(timeout, max(time.Since(start), minProbe))
	}
	var pce *classify.ProxyConnectError
	var op *net.OpError
	if errors.As(err, &pce) && pce.StatusCode == http.StatusForbidden {
		// A 403 to CONNECT: the proxy refuses this target (a port or a
		// site its rules do not allow), or us altogether. Read as the
		// exit failing, one client's CONNECT to a port the exits' proxies
		// deny took every exit offline for half a minute.
		if why := t.strict.check(time.Now(), timeout); why != nil {
			return nil, &classify.ProxyError{Proxy: t.exit.ID(), Why: t.exit.Scrub(why.Error()), Err: err}
		}
		return nil, &classify.TargetDeniedError{Proxy: t.exit.ID(), StatusCode: pce.StatusCode}
	}
	if errors.As(err, &pce) || errors.As(err, &op) && op.Op == "proxyconnect" {
		return nil, err // already the proxy's, by type
	}
	if why := t.prober.check(time.Now(), timeout); why != nil {
		return nil, &classify.ProxyError{Proxy: t.exit.ID(), Why: t.exit.Scrub(why.Error()), Err: err}
	}
	return nil, err
}

// Transport returns a new Transport that sends every request through this exit:
// via its proxy (HTTP and HTTPS proxies use Proxy-Authorization on plain requests and on
// CONNECT; SOCKS5 uses username/password auth), from its local source address (Bind), or
// directly. Environment proxy settings are ignored: the exit decides. Connections are
// kept alive per exit, so build one transport per exit and reuse it. A non-2xx answer to
// CONNECT is returned as *classify.ProxyConnectError, and a failure that a check of the
// proxy blames on it as *classify.ProxyError; classify.Error recognises both as proxy
// failures. The transport is safe for concurrent use.
func (e Exit) Transport(cfg TransportConfig) *Transport {
	dialer := &net.Dialer{
		Timeout:   cmp.Or(cfg.DialTimeout, 10*time.Second),
		KeepAlive: cmp.Or(cfg.KeepAlive, 30*time.Second),
	}
	if e.kind == Bind {
		// Port 0: the kernel picks an ephemeral port on the chosen address.
		dialer.LocalAddr = &net.TCPAddr{IP: e.local.AsSlice()}
	}
	dial := dialer.DialContext
	if e.kind == Bind {
		dial = bindDial(dialer, e.ID())
	}
	t := &http.Transport{
		DialContext:           dial,
		TLSHandshakeTimeout:   cmp.Or(cfg.TLSHandshakeTimeout, 10*time.Second),
		ResponseHeaderTimeout: cfg.ResponseHeaderTimeout,
		IdleConnTimeout:       cmp.Or(cfg.IdleConnTimeout, 90*time.Second),
		MaxIdleConnsPerHost:   cmp.Or(cfg.MaxIdleConnsPerHost, 8),
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     !cfg.DisableHTTP2,
	}
	if cfg.TLSClientConfig != nil {
		t.TLSClientConfig = cfg.TLSClientConfig.Clone()
	}
	if cfg.DisableHTTP2 {
		// A non-nil empty map is net/http's documented switch to turn HTTP/2 off.
		t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	out := &Transport{Transport: t, exit: e, timeout: cmp.Or(cfg.ProbeTimeout, DefaultProbeTimeout),
		silent: cmp.Or(cfg.SilentAfter, DefaultSilentAfter)}
	if e.kind == Proxy {
		u := e.ProxyURL()
		out.prober = &prober{run: func(ctx context.Context) error { return probeProxy(ctx, u, dialer, cfg.TLSClientConfig, false) }}
		out.strict = &prober{run: func(ctx context.Context) error { return probeProxy(ctx, u, dialer, cfg.TLSClientConfig, true) }}
		t.Proxy = http.ProxyURL(u)
		id := e.ID()
		t.OnProxyConnectResponse = func(_ context.Context, _ *url.URL, _ *http.Request, res *http.Response) error {
			if res.StatusCode/100 != 2 {
				return &classify.ProxyConnectError{Proxy: id, StatusCode: res.StatusCode, Status: res.Status}
			}
			return nil
		}
	}
	return out
}

// bindDial dials from a bind exit's source address. An address error (a
// source of one family for a target of the other: bind:::1 for 127.0.0.1,
// "no suitable address found") is the exit's failure, not the URL's: it
// comes back as a *classify.ProxyError, so the exit is quarantined and the
// URL goes elsewhere uncharged (it was charged, and abandoned as "retries
// exhausted" with a working exit in the pool).
func bindDial(d *net.Dialer, id string) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		var ae *net.AddrError
		if err != nil && errors.As(err, &ae) {
			return nil, &classify.ProxyError{Proxy: id, Why: "its source address cannot reach " + addr + ": " + ae.Err, Err: err}
		}
		return c, err
	}
}
