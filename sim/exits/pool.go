// Package exits simulates proxy exit pools for the exitgate simulator: N
// exits with distinct IPs, a rotating gateway (a new exit per request),
// sticky sessions chosen through the proxy username (user-session-7), sessions
// whose IP changes after a time or a request count, and failing exits (407,
// connect errors).
//
// Pool.Route is the deterministic virtual-time core. Gateway serves the same
// pool as a real forward proxy on loopback that dials targets from each
// exit's 127.0.0.x source address, so a site keyed on client IP sees each
// exit as its own client.
//
// Pool, Gateway, Server and Singles are safe for concurrent use; the other
// types are plain values.
package exits

import (
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Errors Route returns, wrapped in a *RouteError.
var (
	// ErrProxyAuth: the proxy answered 407 (bad credentials, or a flaky
	// exit's auth backend).
	ErrProxyAuth = errors.New("proxy authentication required")
	// ErrConnect: the exit could not connect (dead or flaky exit).
	ErrConnect = errors.New("exit connect failed")
	// ErrUnknownExit: Route was asked for an exit ID the pool lacks.
	ErrUnknownExit = errors.New("unknown exit")
	// ErrConfig is wrapped by every error New returns.
	ErrConfig = errors.New("invalid exit pool config")
)

// RouteError says which exit failed and why; errors.Is matches its Err.
type RouteError struct {
	ExitID string
	IP     string
	Err    error
}

func (e *RouteError) Error() string {
	if e.ExitID == "" {
		return "exits: " + e.Err.Error()
	}
	return "exits: " + e.ExitID + " (" + e.IP + "): " + e.Err.Error()
}

func (e *RouteError) Unwrap() error { return e.Err }

// Exit is one simulated exit.
type Exit struct {
	ID string
	IP netip.Addr
}

// Config describes a pool. The zero value is 20 healthy exits exit-01 …
// exit-20 on 127.0.0.11 … 127.0.0.30, any credentials accepted, sessions
// that never move.
type Config struct {
	// Exits is the number of exits; default 20.
	Exits int
	// FirstIP is the first exit's IP; the others follow consecutively.
	// Default 127.0.0.11. Real sockets need loopback addresses.
	FirstIP netip.Addr
	// Username and Password are the credentials the gateway accepts. The
	// username may carry a session suffix (Username-session-ID). Empty
	// Username accepts any credentials, or none.
	Username, Password string
	// SessionTTL moves a sticky session to another exit (a new IP) after
	// this long; 0 = never.
	SessionTTL time.Duration
	// SessionRequests moves a sticky session after this many requests;
	// 0 = never.
	SessionRequests int
	// AuthFailRate is the fraction of routes answered 407 at random.
	AuthFailRate float64
	// ConnectFailRate is the fraction of routes failing to connect at random.
	ConnectFailRate float64
	// AuthFailExits always answer 407; ConnectFailExits never connect.
	AuthFailExits, ConnectFailExits []string
	// Rand picks rotations, session moves and random failures; nil means a
	// fixed seed, so runs repeat. The pool serialises its use; do not share
	// it with other users.
	Rand *rand.Rand
}

// ExitStats counts one exit's routes.
type ExitStats struct {
	Routed, AuthFailures, ConnectFailures int64
}

// Pool is a simulated exit pool. It is safe for concurrent use.
type Pool struct {
	cfg      Config
	exits    []Exit
	ips      []string
	byID     map[string]int
	authFail []bool
	dead     []bool

	mu       sync.Mutex
	rng      *rand.Rand
	last     int // last rotating pick, -1 before the first
	sessions map[string]*session
	stats    []ExitStats
}

type session struct {
	exit  int
	since int64 // ns, when it last moved
	count int
}

// New validates cfg and returns a pool.
func New(cfg Config) (*Pool, error) {
	if cfg.Exits == 0 {
		cfg.Exits = 20
	}
	if !cfg.FirstIP.IsValid() {
		cfg.FirstIP = netip.AddrFrom4([4]byte{127, 0, 0, 11})
	}
	switch {
	case cfg.Exits < 0:
		return nil, fmt.Errorf("%w: %d exits", ErrConfig, cfg.Exits)
	case cfg.SessionTTL < 0 || cfg.SessionRequests < 0:
		return nil, fmt.Errorf("%w: negative session limit", ErrConfig)
	case !isRate(cfg.AuthFailRate) || !isRate(cfg.ConnectFailRate):
		return nil, fmt.Errorf("%w: failure rates must lie in [0, 1]", ErrConfig)
	case cfg.Password != "" && cfg.Username == "":
		return nil, fmt.Errorf("%w: password without username", ErrConfig)
	}
	p := &Pool{
		cfg:      cfg,
		byID:     make(map[string]int, cfg.Exits),
		authFail: make([]bool, cfg.Exits),
		dead:     make([]bool, cfg.Exits),
		rng:      cfg.Rand,
		last:     -1,
		sessions: make(map[string]*session),
		stats:    make([]ExitStats, cfg.Exits),
	}
	if p.rng == nil {
		p.rng = rand.New(rand.NewPCG(1, 2))
	}
	width := len(strconv.Itoa(cfg.Exits))
	ip := cfg.FirstIP
	for i := range cfg.Exits {
		if !ip.IsValid() {
			return nil, fmt.Errorf("%w: %d exits overflow the address space after %v", ErrConfig, cfg.Exits, cfg.FirstIP)
		}
		e := Exit{ID: fmt.Sprintf("exit-%0*d", max(width, 2), i+1), IP: ip}
		p.exits = append(p.exits, e)
		p.ips = append(p.ips, ip.String())
		p.byID[e.ID] = i
		ip = ip.Next()
	}
	for _, id := range cfg.AuthFailExits {
		i, ok := p.byID[id]
		if !ok {
			return nil, fmt.Errorf("%w: auth-fail exit %q not in pool", ErrConfig, id)
		}
		p.authFail[i] = true
	}
	for _, id := range cfg.ConnectFailExits {
		i, ok := p.byID[id]
		if !ok {
			return nil, fmt.Errorf("%w: connect-fail exit %q not in pool", ErrConfig, id)
		}
		p.dead[i] = true
	}
	return p, nil
}

func isRate(f float64) bool { return f >= 0 && f <= 1 && !math.IsNaN(f) }

// Exits returns the pool's exits in order.
func (p *Pool) Exits() []Exit { return append([]Exit(nil), p.exits...) }

// Exit returns the exit with the given ID.
func (p *Pool) Exit(id string) (Exit, bool) {
	i, ok := p.byID[id]
	if !ok {
		return Exit{}, false
	}
	return p.exits[i], true
}

// Route picks the exit for one request at now and returns the IP the target
// sees. A non-empty exitID pins that exit (a single-exit proxy); otherwise a
// non-empty session is sticky (the same exit until SessionTTL or
// SessionRequests moves it); otherwise the exit rotates: a different one
// from the previous request, at random. Errors are *RouteError wrapping
// ErrProxyAuth, ErrConnect or ErrUnknownExit.
func (p *Pool) Route(exitID, session string, now time.Time) (ip string, err error) {
	i, err := p.route(exitID, session, now)
	if err != nil {
		return "", err
	}
	return p.ips[i], nil
}

// RouteUser checks proxy credentials, then routes as Route with the session
// parsed from user (see ParseUser). It returns the chosen exit.
func (p *Pool) RouteUser(user, pass string, now time.Time) (Exit, error) {
	base, sess := ParseUser(user)
	if p.cfg.Username != "" && (base != p.cfg.Username || pass != p.cfg.Password) {
		return Exit{}, &RouteError{Err: ErrProxyAuth}
	}
	i, err := p.route("", sess, now)
	if err != nil {
		return Exit{}, err
	}
	return p.exits[i], nil
}

// CheckUser reports whether user and pass are accepted credentials.
func (p *Pool) CheckUser(user, pass string) bool {
	base, _ := ParseUser(user)
	return p.cfg.Username == "" || (base == p.cfg.Username && pass == p.cfg.Password)
}

func (p *Pool) route(exitID, sess string, now time.Time) (int, error) {
	if len(p.exits) == 0 {
		return 0, &RouteError{Err: ErrUnknownExit}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var i int
	switch {
	case exitID != "":
		var ok bool
		if i, ok = p.byID[exitID]; !ok {
			return 0, &RouteError{ExitID: exitID, Err: ErrUnknownExit}
		}
	case sess != "":
		i = p.stickyLocked(sess, now.UnixNano())
	default:
		i = p.otherLocked(p.last)
		p.last = i
	}
	st := &p.stats[i]
	fail := func(err error) (int, error) {
		return 0, &RouteError{ExitID: p.exits[i].ID, IP: p.ips[i], Err: err}
	}
	if p.authFail[i] || (p.cfg.AuthFailRate > 0 && p.rng.Float64() < p.cfg.AuthFailRate) {
		st.AuthFailures++
		return fail(ErrProxyAuth)
	}
	if p.dead[i] || (p.cfg.ConnectFailRate > 0 && p.rng.Float64() < p.cfg.ConnectFailRate) {
		st.ConnectFailures++
		return fail(ErrConnect)
	}
	st.Routed++
	return i, nil
}

// otherLocked picks an exit at random, different from not when possible.
func (p *Pool) otherLocked(not int) int {
	n := len(p.exits)
	if not < 0 || n == 1 {
		return p.rng.IntN(n)
	}
	return (not + 1 + p.rng.IntN(n-1)) % n
}

// stickyLocked returns the session's exit, moving it when it has aged or
// served its count. A new session starts on an exit chosen by hashing its
// name, so it does not depend on the order sessions appear in.
func (p *Pool) stickyLocked(name string, t int64) int {
	s := p.sessions[name]
	if s == nil {
		h := fnv.New64a()
		h.Write([]byte(name))
		s = &session{exit: int(h.Sum64() % uint64(len(p.exits))), since: t}
		p.sessions[name] = s
	}
	if (p.cfg.SessionTTL > 0 && t-s.since >= int64(p.cfg.SessionTTL)) ||
		(p.cfg.SessionRequests > 0 && s.count >= p.cfg.SessionRequests) {
		s.exit = p.otherLocked(s.exit)
		s.since, s.count = t, 0
	}
	s.count++
	return s.exit
}

// Stats returns the counts per exit ID.
func (p *Pool) Stats() map[string]ExitStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[string]ExitStats, len(p.exits))
	for i, e := range p.exits {
		m[e.ID] = p.stats[i]
	}
	return m
}

// ParseUser splits a proxy username into its base and sticky session:
// "user-session-7" gives ("user", "7"). The session runs to the next '-' so
// provider options may follow ("user-session-7-country-us"). A username
// without "-session-" has no session. It never panics.
func ParseUser(user string) (base, session string) {
	const marker = "-session-"
	i := strings.Index(user, marker)
	if i < 0 {
		return user, ""
	}
	base, rest := user[:i], user[i+len(marker):]
	session, _, _ = strings.Cut(rest, "-")
	return base, session
}

// BasicAuth parses a Basic Proxy-Authorization value. It never panics.
func BasicAuth(v string) (user, pass string, ok bool) {
	scheme, cred, found := strings.Cut(strings.TrimSpace(v), " ")
	if !found || !strings.EqualFold(scheme, "basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return "", "", false
	}
	user, pass, ok = strings.Cut(string(raw), ":")
	if !ok {
		return "", "", false
	}
	return user, pass, true
}
