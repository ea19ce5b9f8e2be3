package pool

import (
	"context"
	"crypto/tls"
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
}

// Transport returns a new http.Transport that sends every request through this exit:
// via its proxy (HTTP and HTTPS proxies use Proxy-Authorization on plain requests and on
// CONNECT; SOCKS5 uses username/password auth), from its local source address (Bind), or
// directly. Environment proxy settings are ignored: the exit decides. Connections are
// kept alive per exit, so build one transport per exit and reuse it. A non-2xx answer to
// CONNECT is returned as *classify.ProxyConnectError, which classify.Error
// recognises as a proxy failure. The transport is safe for concurrent use.
func (e Exit) Transport(cfg TransportConfig) *http.Transport {
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
	if e.kind == Proxy {
		t.Proxy = http.ProxyURL(e.ProxyURL())
		id := e.ID()
		t.OnProxyConnectResponse = func(_ context.Context, _ *url.URL, _ *http.Request, res *http.Response) error {
			if res.StatusCode/100 != 2 {
				return &classify.ProxyConnectError{Proxy: id, StatusCode: res.StatusCode, Status: res.Status}
			}
			return nil
		}
	}
	return t
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
