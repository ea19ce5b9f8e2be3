package pool

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/url"
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
	// through it failed (see Transport). Zero means DefaultProbeTimeout.
	ProbeTimeout time.Duration
}

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
	prober  *prober // nil unless the exit is a proxy
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.Transport.RoundTrip(req)
	if err == nil || t.prober == nil || errors.Is(req.Context().Err(), context.Canceled) {
		return resp, err
	}
	var pce *classify.ProxyConnectError
	var op *net.OpError
	if errors.As(err, &pce) || errors.As(err, &op) && op.Op == "proxyconnect" {
		return nil, err // already the proxy's, by type
	}
	if why := t.prober.check(t.timeout); why != nil {
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
		Timeout:   orDuration(cfg.DialTimeout, 10*time.Second),
		KeepAlive: orDuration(cfg.KeepAlive, 30*time.Second),
	}
	if e.kind == Bind {
		// Port 0: the kernel picks an ephemeral port on the chosen address.
		dialer.LocalAddr = &net.TCPAddr{IP: e.local.AsSlice()}
	}
	t := &http.Transport{
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   orDuration(cfg.TLSHandshakeTimeout, 10*time.Second),
		ResponseHeaderTimeout: cfg.ResponseHeaderTimeout,
		IdleConnTimeout:       orDuration(cfg.IdleConnTimeout, 90*time.Second),
		MaxIdleConnsPerHost:   orInt(cfg.MaxIdleConnsPerHost, 8),
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
	out := &Transport{Transport: t, exit: e, timeout: orDuration(cfg.ProbeTimeout, DefaultProbeTimeout)}
	if e.kind == Proxy {
		u := e.ProxyURL()
		out.prober = &prober{run: func(ctx context.Context) error { return probeProxy(ctx, u, dialer, cfg.TLSClientConfig) }}
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

func orDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func orInt(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}
