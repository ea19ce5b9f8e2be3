package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/pool"
)

// CheckListen refuses an address to listen on that is not loopback unless
// the gateway requires credentials (ErrOpenBind). Every interface (":8899",
// "0.0.0.0:8899", "[::]:8899") is not loopback; "localhost" is. Other names
// are resolved, and every address must be loopback.
func CheckListen(addr string, hasAuth bool) error {
	if hasAuth {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("gateway: listen address %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Unmap().IsLoopback() {
			return nil
		}
		return fmt.Errorf("%w: %s", ErrOpenBind, addr)
	}
	if host == "" {
		return fmt.Errorf("%w: %s listens on every interface", ErrOpenBind, addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("gateway: listen address %q: %w", addr, err)
	}
	for _, a := range addrs {
		if !a.Unmap().IsLoopback() {
			return fmt.Errorf("%w: %s resolves to %s", ErrOpenBind, host, a)
		}
	}
	return nil
}

// authorize checks the client's Proxy-Authorization when credentials are
// required, answering 407 when they are missing or wrong. It returns the
// user name the client sent (credentials or not), for sticky sessions.
func (g *Gateway) authorize(w http.ResponseWriter, r *http.Request) (user string, ok bool) {
	user, pass, has := proxyBasicAuth(r)
	a := g.cfg.Auth
	if a == nil {
		return user, true
	}
	// The user name alone, or with -session-ID after it: the whole name
	// is compared too, so that a configured name holding "-session-"
	// (scraper-session-team) logs in.
	base, last := user, user
	if i := strings.Index(user, "-session-"); i >= 0 {
		base, last = user[:i], user[:strings.LastIndex(user, "-session-")]
	}
	whole := subtle.ConstantTimeCompare([]byte(user), []byte(a.User))
	nameOK := subtle.ConstantTimeCompare([]byte(base), []byte(a.User)) | subtle.ConstantTimeCompare([]byte(last), []byte(a.User)) | whole
	good := has && nameOK == 1 &&
		subtle.ConstantTimeCompare([]byte(pass), []byte(a.Password)) == 1
	if good && whole == 1 {
		return "", true // the configured name itself: no session in it
	}
	if good {
		return user, true
	}
	reason := "no credentials"
	if has {
		reason = "wrong credentials"
	}
	g.stats.refused(reason)
	g.log.Info("gateway: refused", "reason", reason, "client", r.RemoteAddr) // never the credentials themselves
	w.Header().Set("Proxy-Authenticate", `Basic realm="exitgate"`)
	w.Header().Set(HeaderAttempts, "0")
	g.answer(w, http.StatusProxyAuthRequired, reason, 0, "exitgate: proxy credentials required (Proxy-Authorization: Basic)")
	return "", false
}

// proxyBasicAuth reads Proxy-Authorization: Basic.
func proxyBasicAuth(r *http.Request) (user, pass string, ok bool) {
	auth := r.Header.Get("Proxy-Authorization")
	const prefix = "Basic "
	if len(auth) < len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return "", "", false
	}
	c, err := base64.StdEncoding.DecodeString(strings.TrimSpace(auth[len(prefix):]))
	if err != nil {
		return "", "", false
	}
	user, pass, ok = strings.Cut(string(c), ":")
	return user, pass, ok
}

// Control headers, read and removed before the server sees the request.
const (
	HeaderWait    = "X-Exitgate-Wait"
	HeaderSession = "X-Exitgate-Session"
	// Set on answers.
	HeaderExit     = "X-Exitgate-Exit"
	HeaderAttempts = "X-Exitgate-Attempts"
	HeaderReason   = "X-Exitgate-Reason"
	controlPrefix  = "X-Exitgate-"
)

// sessionOf is the sticky session a request asks for: the header, else the
// proxy user name session-ID (or USER-session-ID).
func sessionOf(user string, h http.Header) string {
	if s := strings.TrimSpace(h.Get(HeaderSession)); s != "" {
		return sessionKey(s)
	}
	if s, ok := strings.CutPrefix(user, "session-"); ok {
		return sessionKey(s)
	}
	if _, s, ok := strings.Cut(user, "-session-"); ok {
		return sessionKey(s)
	}
	return ""
}

// maxSessionID is the longest session ID kept as written; a longer one is
// kept as its SHA-256, the same session for the same ID. Kept whole, 200
// IDs of 500 KB held 160 MB for the sessions' 30 minutes.
const maxSessionID = 64

func sessionKey(id string) string {
	if len(id) <= maxSessionID {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// longDuration is what time.ParseDuration reads, unsigned, when it refuses
// one only for its size.
var longDuration = regexp.MustCompile(`^\+?([0-9]*\.?[0-9]+(ns|us|µs|ms|s|m|h))+$`)

// waitBudget reads X-Exitgate-Wait: a Go duration (30s, 1m30s) or seconds
// (30, 2.5); 0 means answer at once. It is capped at MaxWaitBudget.
func (g *Gateway) waitBudget(h http.Header) (time.Duration, error) {
	if vs := h.Values(HeaderWait); len(vs) > 1 && slices.ContainsFunc(vs[1:], func(v string) bool { return strings.TrimSpace(v) != strings.TrimSpace(vs[0]) }) {
		// Two that differ: the first won without a word (0 and 600s
		// was a 429 at once).
		return 0, fmt.Errorf("%s given twice, %q and %q: give one", HeaderWait, vs[0], vs[1])
	}
	v := strings.TrimSpace(h.Get(HeaderWait))
	if v == "" {
		return max(g.cfg.WaitBudget, 0), nil
	}
	// Past the cap, the cap: a budget of centuries asks for the longest
	// one (9999999h and 1e300 were refused with a 400).
	d, err := time.ParseDuration(v)
	switch {
	case err != nil && longDuration.MatchString(v):
		d = g.cfg.MaxWaitBudget // a duration too long for time.Duration
	case err != nil:
		s, ferr := strconv.ParseFloat(v, 64)
		if errors.Is(ferr, strconv.ErrRange) && !strings.HasPrefix(v, "-") {
			s, ferr = g.cfg.MaxWaitBudget.Seconds(), nil // a number too large for a float
		}
		if ferr != nil || !(s >= 0) { // NaN too
			return 0, fmt.Errorf("%s: %q is not a duration (30s, 2m) or a number of seconds", HeaderWait, v)
		}
		d = time.Duration(min(s, g.cfg.MaxWaitBudget.Seconds()) * float64(time.Second))
	}
	if d < 0 {
		return 0, fmt.Errorf("%s: %q is negative", HeaderWait, v)
	}
	return min(d, g.cfg.MaxWaitBudget), nil
}

// splitHostPort splits an authority into a host (without brackets) and a
// port, the scheme's default when absent.
func splitHostPort(authority, scheme string) (string, int) {
	host, p, err := net.SplitHostPort(authority)
	if err != nil {
		host = strings.Trim(authority, "[]")
	}
	if err != nil || p == "" { // "host:" is the default port too (RFC 3986 3.2.3)
		p = "80"
		if scheme == "https" {
			p = "443"
		}
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return host, -1
	}
	return host, port
}

// checkTarget refuses a target that is the gateway itself (508), or on a
// private network without AllowPrivate (403). Names are judged as written,
// and resolved only when the port is one the gateway listens on; a direct
// exit also checks the address it dials (guard).
func (g *Gateway) checkTarget(ctx context.Context, host string, port int) (why string, status int, reason string) {
	if port < 1 {
		return "bad port", http.StatusBadRequest, "bad port"
	}
	if a, ok := fetch.NumericIPv4(host); ok {
		// 2130706433 and 127.1 are 127.0.0.1 to the exit's resolver:
		// judged as the address they are.
		host = a.String()
	}
	self := g.self.Load()
	if self.ports[port] {
		if isSelf := self.host(ctx, host); isSelf {
			return fmt.Sprintf("%s is this gateway: a request to it would loop", net.JoinHostPort(host, strconv.Itoa(port))), http.StatusLoopDetected, "loop"
		}
	}
	if !g.cfg.AllowPrivate && fetch.IsPrivateHost(host) {
		return fmt.Sprintf("%s is a private, loopback or link-local address (allow with --allow-private)", host), http.StatusForbidden, "private target"
	}
	if !g.cfg.AllowPrivate {
		if a, ok := g.names.private(ctx, host); ok {
			return fmt.Sprintf("%s resolves to %s, a private, loopback or link-local address (allow with --allow-private)", host, a), http.StatusForbidden, "private target"
		}
	}
	return "", 0, ""
}

// nameCache answers whether a target's name resolves, here, to a private,
// loopback or link-local address, for a minute a name. A proxy exit
// resolves the name itself, and one on this machine (tinyproxy, squid)
// reaches what the name says: a name for 127.0.0.1 in /etc/hosts fetched
// the gateway's own metrics through it, in a helper's blind run. A name
// this machine cannot resolve is let through to the exit's resolver.
type nameCache struct {
	mu sync.Mutex
	m  map[string]nameSeen
	// lookup resolves a name (nil: the system's resolver); tests set it.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

type nameSeen struct {
	private netip.Addr // the private address it resolved to; invalid: none
	at      time.Time
}

const (
	nameKept    = time.Minute
	nameMax     = 4096 // names kept at most: past it the cache starts over
	nameTimeout = 2 * time.Second
)

// resolve is the system resolver's answer for a name, within nameTimeout.
func resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, nameTimeout)
	defer cancel()
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// private reports the private address host resolves to, if it does. IP
// literals are judged by the caller.
func (c *nameCache) private(ctx context.Context, host string) (netip.Addr, bool) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if _, err := netip.ParseAddr(h); err == nil || h == "" {
		return netip.Addr{}, false
	}
	now := time.Now()
	c.mu.Lock()
	if s, ok := c.m[h]; ok && now.Sub(s.at) < nameKept {
		c.mu.Unlock()
		return s.private, s.private.IsValid()
	}
	lookup := c.lookup
	c.mu.Unlock()
	if lookup == nil {
		lookup = resolve
	}
	addrs, err := lookup(ctx, h)
	var seen nameSeen
	seen.at = now
	if err == nil {
		for _, a := range addrs {
			if fetch.IsPrivateHost(a.Unmap().String()) {
				seen.private = a.Unmap()
				break
			}
		}
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= nameMax {
		c.m = map[string]nameSeen{}
	}
	c.m[h] = seen
	c.mu.Unlock()
	return seen.private, seen.private.IsValid()
}

// badPorts are the ports the Fetch standard forbids browsers to send HTTP
// to (fetch.spec.whatwg.org, "bad port"): mail, shell, name and file
// services that a request line could be smuggled into. A plain request to
// one of them is refused like a CONNECT to a port not allowed.
var badPorts = map[int]bool{1: true, 7: true, 9: true, 11: true, 13: true, 15: true, 17: true, 19: true,
	20: true, 21: true, 22: true, 23: true, 25: true, 37: true, 42: true, 43: true, 53: true, 69: true,
	77: true, 79: true, 87: true, 95: true, 101: true, 102: true, 103: true, 104: true, 109: true, 110: true,
	111: true, 113: true, 115: true, 117: true, 119: true, 123: true, 135: true, 137: true, 139: true,
	143: true, 161: true, 179: true, 389: true, 427: true, 465: true, 512: true, 513: true, 514: true,
	515: true, 526: true, 530: true, 531: true, 532: true, 540: true, 548: true, 554: true, 556: true,
	563: true, 587: true, 601: true, 636: true, 989: true, 990: true, 993: true, 995: true, 1719: true,
	1720: true, 1723: true, 2049: true, 3659: true, 4045: true, 4190: true, 5060: true, 5061: true,
	6000: true, 6566: true, 6665: true, 6666: true, 6667: true, 6668: true, 6669: true, 6679: true,
	6697: true, 10080: true}

// RefusedError is what the dial guard returns for a target the gateway
// must not reach. Nothing was sent. It is immutable once made.
type RefusedError struct {
	Reason string // "loop" or "private target"
	Addr   string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("gateway: refused to connect to %s: %s", e.Addr, e.Reason)
}

// guard is the Control of the dialers of exits that connect to targets
// themselves: it sees the address after name resolution.
func (g *Gateway) guard(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Reason: "bad address", Addr: address}
	}
	a := ap.Addr().Unmap()
	if g.self.Load().is(a, int(ap.Port())) {
		return &RefusedError{Reason: "loop", Addr: address}
	}
	if !g.cfg.AllowPrivate && fetch.IsPrivateHost(a.String()) {
		return &RefusedError{Reason: "private target", Addr: address}
	}
	return nil
}

// ErrSelfExit reports an exit whose proxy is the gateway itself: every
// request through it would come back in as a new one, each waiting on the
// next, and the client got nothing (22 requests deep in 30 s).
var ErrSelfExit = errors.New("gateway: the exit is this gateway's own address: requests through it would come back to it")

// CheckExits refuses exits whose proxy address reaches the gateway on ln.
func CheckExits(ctx context.Context, ln net.Listener, exits []pool.Exit) error {
	return newSelfAddrs([]net.Listener{ln}).checkExits(ctx, exits)
}

// checkExits refuses exits whose proxy is one of the gateway's addresses.
func (s *selfAddrs) checkExits(ctx context.Context, exits []pool.Exit) error {
	for _, e := range exits {
		u := e.ProxyURL()
		if u == nil {
			continue
		}
		port, err := strconv.Atoi(u.Port())
		if err != nil || !s.ports[port] {
			continue
		}
		if s.host(ctx, u.Hostname()) {
			return fmt.Errorf("%w: %s", ErrSelfExit, e.ID())
		}
	}
	return nil
}

// selfAddrs are the addresses clients reach the gateway on.
type selfAddrs struct {
	ports map[int]bool
	addrs map[netip.AddrPort]bool
	any   map[int]bool // ports listened on every interface
}

func newSelfAddrs(lns []net.Listener) *selfAddrs {
	s := &selfAddrs{ports: map[int]bool{}, addrs: map[netip.AddrPort]bool{}, any: map[int]bool{}}
	for _, ln := range lns {
		ap, err := netip.ParseAddrPort(ln.Addr().String())
		if err != nil {
			continue
		}
		port := int(ap.Port())
		s.ports[port] = true
		if a := ap.Addr().Unmap(); a.IsUnspecified() {
			s.any[port] = true
		} else {
			s.addrs[netip.AddrPortFrom(a, ap.Port())] = true
		}
	}
	return s
}

// is reports whether a:port reaches the gateway. Any loopback address with
// a port the gateway listens on counts (127.0.0.2 may not reach a listener
// on 127.0.0.1, but refusing it costs nothing).
func (s *selfAddrs) is(a netip.Addr, port int) bool {
	if !s.ports[port] {
		return false
	}
	if a.IsLoopback() || a.IsUnspecified() || s.addrs[netip.AddrPortFrom(a, uint16(port))] {
		return true
	}
	if s.any[port] {
		return isLocalAddr(a)
	}
	return false
}

// host reports whether a host name or address, on a port the gateway
// listens on (the caller checked), reaches it.
func (s *selfAddrs) host(ctx context.Context, host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return s.isAnyPort(a.Unmap())
	}
	addrs, err := resolve(ctx, h)
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if s.isAnyPort(a.Unmap()) {
			return true
		}
	}
	return false
}

// isAnyPort reports whether a is an address the gateway listens on for
// some port it listens on.
func (s *selfAddrs) isAnyPort(a netip.Addr) bool {
	for p := range s.ports {
		if s.is(a, p) {
			return true
		}
	}
	return false
}

// isLocalAddr reports whether a is an address of one of this machine's
// interfaces.
func isLocalAddr(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ia := range addrs {
		if p, err := netip.ParsePrefix(ia.String()); err == nil && p.Addr().Unmap() == a {
			return true
		}
	}
	return false
}

// refuse answers a request the gateway will not forward, and counts it.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, host string, status int, reason, why string) {
	g.stats.refused(reason)
	g.log.Info("gateway: refused", "reason", reason, "host", host, "client", r.RemoteAddr)
	w.Header().Set(HeaderAttempts, "0") // nothing sent, as every answer says
	g.answer(w, status, reason, 0, "exitgate: refused: "+why)
}

// answer writes an answer the gateway makes itself.
func (g *Gateway) answer(w http.ResponseWriter, status int, reason string, retryAfter time.Duration, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set(HeaderReason, reason)
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((retryAfter+time.Second-1)/time.Second), 10))
	}
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

// errRefused tells whether err is the guard's refusal.
func errRefused(err error) (*RefusedError, bool) {
	var re *RefusedError
	ok := errors.As(err, &re)
	return re, ok
}
