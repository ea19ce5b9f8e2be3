package pool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
)

// ErrNoIdentity means neither the configured header nor the echo URL gave an address.
var ErrNoIdentity = errors.New("exit IP unknown")

// IdentityConfig says how exits learn their public IP. The zero value learns nothing,
// so every exit is keyed by its ID.
type IdentityConfig struct {
	// Header names a response header in which the provider reports the exit IP, e.g.
	// "X-Exit-IP". Empty means none.
	Header string
	// EchoURL answers with the caller's address (plain text, JSON {"ip": …} or
	// {"origin": …}, or an "ip=…" line). It is fetched once per exit session by Resolve.
	// Empty means Resolve only reports what responses showed.
	EchoURL string
}

// Identity tracks which public IP each exit resolves to, so lanes can be keyed on what
// the server sees: two exits behind one IP share a lane, and a sticky session whose IP
// changes moves to a new lane. It is safe for concurrent use.
type Identity struct {
	cfg IdentityConfig

	mu       sync.Mutex
	ips      map[string]netip.Addr  // exit ID -> resolved IP
	inflight map[string]*resolution // exit ID -> running echo fetch
}

type resolution struct {
	done chan struct{}
	ip   netip.Addr
	err  error
}

// Change is an exit whose resolved IP is new or different.
type Change struct {
	ExitID string
	Old    netip.Addr // invalid when the exit had no IP before
	New    netip.Addr
}

// NewIdentity validates cfg and returns an empty Identity.
func NewIdentity(cfg IdentityConfig) (*Identity, error) {
	if cfg.Header != "" && !isToken(strings.ToLower(cfg.Header)) {
		return nil, fmt.Errorf("identity header %q is not a header name", clip(cfg.Header))
	}
	if cfg.EchoURL != "" {
		u, err := url.Parse(cfg.EchoURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("echo URL %q: want an http:// or https:// URL", clip(cfg.EchoURL))
		}
	}
	return &Identity{cfg: cfg, ips: map[string]netip.Addr{}, inflight: map[string]*resolution{}}, nil
}

// Key returns the lane key for an exit: its resolved IP ("203.0.113.7") when known,
// else the exit ID. The two never collide: exit IDs are never bare addresses.
func (id *Identity) Key(exitID string) string {
	if ip, ok := id.IP(exitID); ok {
		return ip.String()
	}
	return exitID
}

// IP returns the resolved IP of an exit, if known.
func (id *Identity) IP(exitID string) (netip.Addr, bool) {
	id.mu.Lock()
	defer id.mu.Unlock()
	ip, ok := id.ips[exitID]
	return ip, ok
}

// Observe records that exitID was seen with ip and reports a change when the IP is new
// or different: the caller re-keys the exit's lanes.
func (id *Identity) Observe(exitID string, ip netip.Addr) (Change, bool) {
	if !ip.IsValid() {
		return Change{}, false
	}
	ip = ip.Unmap()
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.observeLocked(exitID, ip)
}

func (id *Identity) observeLocked(exitID string, ip netip.Addr) (Change, bool) {
	old, ok := id.ips[exitID]
	if ok && old == ip {
		return Change{}, false
	}
	id.ips[exitID] = ip
	return Change{ExitID: exitID, Old: old, New: ip}, true
}

// ObserveResponse reads the configured header from a response that came through exitID
// and records it as for Observe. Without a header name or a parsable value it does
// nothing.
func (id *Identity) ObserveResponse(exitID string, h http.Header) (Change, bool) {
	if id.cfg.Header == "" {
		return Change{}, false
	}
	ip, err := ParseIPHeader(h.Get(id.cfg.Header))
	if err != nil {
		return Change{}, false
	}
	return id.Observe(exitID, ip)
}

// Forget drops what is known about an exit, e.g. when its sticky session ends; the next
// Resolve fetches the echo URL again.
func (id *Identity) Forget(exitID string) {
	id.mu.Lock()
	defer id.mu.Unlock()
	delete(id.ips, exitID)
}

// Resolve returns the exit's IP, fetching the echo URL through rt (the exit's
// transport) once per session; concurrent callers for one exit share one fetch. Without
// an echo URL it returns what responses showed, or ErrNoIdentity.
func (id *Identity) Resolve(ctx context.Context, exitID string, rt http.RoundTripper) (netip.Addr, error) {
	id.mu.Lock()
	if ip, ok := id.ips[exitID]; ok {
		id.mu.Unlock()
		return ip, nil
	}
	if id.cfg.EchoURL == "" {
		id.mu.Unlock()
		return netip.Addr{}, fmt.Errorf("exit %s: %w", exitID, ErrNoIdentity)
	}
	if r, ok := id.inflight[exitID]; ok {
		id.mu.Unlock()
		select {
		case <-r.done:
			return r.ip, r.err
		case <-ctx.Done():
			return netip.Addr{}, ctx.Err()
		}
	}
	r := &resolution{done: make(chan struct{})}
	id.inflight[exitID] = r
	id.mu.Unlock()

	res := fetchEcho(ctx, rt, id.cfg.EchoURL, id.cfg.Header)
	r.ip, r.err = res.IP, res.Err
	if r.err != nil {
		r.err = fmt.Errorf("exit %s: %w", exitID, r.err)
	}

	id.mu.Lock()
	delete(id.inflight, exitID)
	if r.err == nil {
		id.observeLocked(exitID, r.ip)
	}
	id.mu.Unlock()
	close(r.done)
	return r.ip, r.err
}

// EchoStatusError is a non-200 answer from the echo URL (or from a plain-HTTP proxy in
// front of it: a 407 there means the proxy rejected the credentials).
type EchoStatusError struct {
	StatusCode int
}

func (e *EchoStatusError) Error() string {
	return fmt.Sprintf("echo URL answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}

type echoResult struct {
	IP  netip.Addr
	Err error
}

// maxEchoBody bounds what is read from an echo URL.
const maxEchoBody = 4096

// fetchEcho GETs echoURL through rt and returns the address from the header (if named
// and present) or the body.
func fetchEcho(ctx context.Context, rt http.RoundTripper, echoURL, header string) echoResult {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, echoURL, nil)
	if err != nil {
		return echoResult{Err: err}
	}
	req.Header.Set("Accept", "text/plain, application/json;q=0.9")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return echoResult{Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxEchoBody))
	if header != "" {
		if ip, herr := ParseIPHeader(resp.Header.Get(header)); herr == nil {
			return echoResult{IP: ip}
		}
	}
	if resp.StatusCode != http.StatusOK {
		return echoResult{Err: &EchoStatusError{StatusCode: resp.StatusCode}}
	}
	if err != nil {
		return echoResult{Err: fmt.Errorf("read echo body: %w", err)}
	}
	ip, err := ParseEcho(body)
	return echoResult{IP: ip, Err: err}
}

// ParseIPHeader parses a header value carrying an exit IP: "203.0.113.7",
// "203.0.113.7:4711", "[2001:db8::1]:80" or a list whose first element is the address.
func ParseIPHeader(v string) (netip.Addr, error) {
	first, _, _ := strings.Cut(v, ",")
	first = strings.TrimSpace(first)
	if first == "" {
		return netip.Addr{}, ErrNoIdentity
	}
	if a, err := netip.ParseAddr(strings.Trim(first, "[]")); err == nil && a.Zone() == "" {
		return a.Unmap(), nil
	}
	if ap, err := netip.ParseAddrPort(first); err == nil && ap.Addr().Zone() == "" {
		return ap.Addr().Unmap(), nil
	}
	return netip.Addr{}, fmt.Errorf("%w: %q is not an IP address", ErrNoIdentity, clip(first))
}

// ParseEcho extracts the caller's address from an IP-echo response body: a bare address
// (api.ipify.org, nginx SSI), JSON with "ip", "origin" (httpbin) or "query" (ip-api), or
// a key=value text with an "ip=" line (Cloudflare's /cdn-cgi/trace).
func ParseEcho(body []byte) (netip.Addr, error) {
	s := bytes.TrimSpace(body)
	if len(s) == 0 {
		return netip.Addr{}, fmt.Errorf("%w: empty echo body", ErrNoIdentity)
	}
	if ip, err := ParseIPHeader(string(s)); err == nil && !bytes.ContainsAny(s, "\n{") {
		return ip, nil
	}
	if s[0] == '{' {
		var m map[string]any
		if err := json.Unmarshal(s, &m); err != nil {
			return netip.Addr{}, fmt.Errorf("%w: echo body is not valid JSON", ErrNoIdentity)
		}
		for _, k := range []string{"ip", "origin", "query", "address"} {
			if v, ok := m[k].(string); ok {
				if ip, err := ParseIPHeader(v); err == nil {
					return ip, nil
				}
			}
		}
		return netip.Addr{}, fmt.Errorf("%w: no address in echo JSON", ErrNoIdentity)
	}
	for line := range strings.Lines(string(s)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "ip="); ok {
			return ParseIPHeader(v)
		}
	}
	return netip.Addr{}, fmt.Errorf("%w: echo body is not an address", ErrNoIdentity)
}
