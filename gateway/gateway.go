// Package gateway is exitgate's forward proxy: a scraper in any language
// sets it as its HTTP proxy and becomes rate-limit-aware. Each request goes
// through the same limiter as a crawl (exit choice, lane and host limits,
// verdicts and learning); throttled, banned and proxy-failed requests of
// idempotent methods are sent again through another exit within a wait
// budget, and past it the client gets an honest 429 with Retry-After.
//
// Plain HTTP requests are forwarded; CONNECT tunnels are intercepted with a
// local CA (package ca) so that each request inside is seen and limited, or,
// without a CA, passed through with one lane chosen per tunnel (the limiter
// then paces tunnels and learns nothing: it cannot see their answers).
//
// The client controls its requests with headers that are removed before the
// server sees the request:
//
//	X-Exitgate-Wait: 30s      the wait budget of this request (or seconds: 30)
//	X-Exitgate-Session: abc   a sticky session: every request of it leaves
//	                          through the same exit (so does the proxy user
//	                          name session-abc)
//
// and reads, on every answer, X-Exitgate-Exit (the exit that carried it) and
// X-Exitgate-Attempts; an answer the gateway made itself carries
// X-Exitgate-Reason.
//
// Safe defaults: a Gateway refuses to serve on a listener that is not
// loopback unless Config.Auth is set; CONNECT reaches ports 443 and 80 only;
// targets on loopback, private and link-local networks, and the gateway's
// own address, are refused. Credentials, the client's and the exits', are
// never logged.
package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exitgate/exitgate/ca"
	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/pool"
	"github.com/exitgate/exitgate/rlheader"
)

// Defaults of Config's zero fields.
const (
	DefaultWaitBudget    = 60 * time.Second
	DefaultMaxWaitBudget = 10 * time.Minute
	DefaultMaxSessions   = 100_000
	DefaultMaxHosts      = 1000
	DefaultSessionIdle   = 30 * time.Minute
	DefaultIdleTimeout   = 2 * time.Minute
	DefaultHeaderTimeout = 30 * time.Second
	DefaultMaxAttempts   = 20
	// DefaultMaxIdleConnsPerHost is Config.MaxIdleConnsPerHost's default.
	DefaultMaxIdleConnsPerHost = 256
)

// DefaultConnectPorts are the ports a CONNECT may reach by default.
func DefaultConnectPorts() []int { return []int{443, 80} }

// Credentials are what clients must send in Proxy-Authorization (Basic).
// A plain value; never logged.
type Credentials struct {
	User, Password string
}

// Config configures a Gateway. The zero value of each field means its
// documented default; New validates it once. It is a plain value: the
// Gateway keeps its own copy.
type Config struct {
	// Limiter decides when and through which exit each request goes, and
	// learns from the answers. Required.
	Limiter *limit.Limiter
	// Exits are the pool; empty means one direct exit. The Gateway builds
	// one transport per exit (HTTP/2 to servers that offer it) and keeps
	// the limiter's exit list in step (fetch.ExitSet).
	Exits []pool.Exit
	// Identity, if set, keys exits on the IP the server sees.
	Identity *pool.Identity
	// SetExits receives the exits as the limiter should see them, at New
	// and whenever they change (an exit keyed on its IP). Nil: the
	// Limiter's SetExits. A gateway of a distributed fleet passes on only
	// the exits it owns; while it owns none, its requests are answered
	// 503 at once (ErrNoExits), nothing sent.
	SetExits func([]limit.Exit)
	// NoExits, if set, is asked when the limiter has no exits (a fleet
	// member whose share is empty): soon reports that exits are on their
	// way (a join, a handover), and requests then wait for them within
	// their budget; otherwise they are answered 503 at once, with
	// retry (at least 1s) as Retry-After. Nil: 503 at once, Retry-After 1s.
	NoExits func() (soon bool, retry time.Duration)
	// Transport tunes the exits' transports. Its ResponseHeaderTimeout
	// bounds one attempt's wait for the answer's headers; zero means
	// DefaultHeaderTimeout. Bodies are never cut by a timeout.
	Transport pool.TransportConfig
	// CA intercepts CONNECT tunnels. Nil: tunnels are passed through.
	CA *ca.CA
	// Tally counts every attempt, as a crawl does, for the summary and
	// Prometheus. Nil: a new one (see Tally).
	Tally *metrics.Tally
	// Auth, if set, is required of every client (Proxy-Authorization:
	// Basic). A client may ask for a sticky session with the user name
	// USER-session-ID. Nil: no credentials, allowed only on loopback; the
	// user name session-ID asks for a session.
	Auth *Credentials
	// ConnectPorts are the ports CONNECT may reach. Nil: 443 and 80.
	ConnectPorts []int
	// AllowPrivate lets requests reach loopback, private, shared and
	// link-local addresses. The gateway's own address is refused even then.
	AllowPrivate bool
	// WaitBudget is how long a request may wait for a lane, retries
	// included, when the client does not say (X-Exitgate-Wait). Zero means
	// DefaultWaitBudget; negative means none (answer at once).
	WaitBudget time.Duration
	// MaxWaitBudget caps what a client may ask for. Zero means
	// DefaultMaxWaitBudget.
	MaxWaitBudget time.Duration
	// MaxAttempts bounds the attempts of one request. Zero means
	// DefaultMaxAttempts.
	MaxAttempts int
	// HostKey maps a URL to the limiter's host key. Nil: fetch.DefaultHostKey.
	HostKey func(*url.URL) string
	// Verdicts tunes classification per host. Nil: the defaults.
	Verdicts func(host string) classify.Rules
	// Profile pins ambiguous rate-limit headers per host. Nil: guess.
	Profile func(host string) rlheader.Profile
	// MaxSessions bounds the sticky sessions remembered; SessionIdle
	// forgets a session unused that long. Zero: the defaults.
	MaxSessions int
	SessionIdle time.Duration
	// MaxHosts bounds the hosts counted each on its own in the tally
	// (metrics.Tally.LimitHosts); later ones are counted together. Zero:
	// DefaultMaxHosts.
	MaxHosts int
	// MaxIdleConnsPerHost is how many idle keep-alive connections each
	// exit keeps per target host, for the next requests. It should be at
	// least the requests in flight per host (the limiter's
	// HostConcurrency), or connections are closed and opened again under
	// load. Zero means DefaultMaxIdleConnsPerHost.
	MaxIdleConnsPerHost int
	// IdleTimeout closes a client's keep-alive connection idle that long;
	// ReadHeaderTimeout bounds reading a client's request headers. Zero:
	// the defaults.
	IdleTimeout, ReadHeaderTimeout time.Duration
	// Logger receives refusals (info) and each request (debug). Nil
	// discards. Credentials are never logged.
	Logger *slog.Logger
}

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("gateway: invalid config")

// ErrOpenBind reports a listener that others could reach, for a Gateway
// without Auth: it would be an open proxy.
var ErrOpenBind = errors.New("gateway: not a loopback address, and no client credentials are set: it would be an open proxy")

// Gateway is the forward proxy. Serve it on listeners; Shutdown drains it.
// It is safe for concurrent use.
type Gateway struct {
	cfg      Config
	lim      *limit.Limiter
	exits    *fetch.ExitSet
	byID     map[string]pool.Exit // member ID -> exit, for tunnels and scrubbing
	tally    *metrics.Tally
	hostKey  func(*url.URL) string
	log      *slog.Logger
	ports    map[int]bool
	sessions *sessions
	lines    *lines // requests waiting for a lane, per host, in order
	stats    stats

	outer, inner *http.Server
	innerLn      *chanListener
	innerOnce    sync.Once

	self atomic.Pointer[selfAddrs]
	// names is the private-name check's cache (privateName).
	names nameCache
	mu    sync.Mutex // guards listeners and tunnels
	lns   []net.Listener
	tuns  map[net.Conn]struct{}
	// passing maps each passed-through tunnel to the member (exit) it
	// holds: one whose exit leaves the limiter's pool (a fleet's
	// handover) is closed, or it went on through an exit another gateway
	// then sent through. By member, not the limiter's key: an exit re-keyed
	// on its IP (--exit-ip-header) stays.
	passing map[net.Conn]string
	wg      sync.WaitGroup // tunnel goroutines

	closing atomic.Bool
	// closed ends once closing is set: it wakes the requests still
	// waiting for a lane (wait), which are answered at once.
	closed      context.Context
	closeWaiter context.CancelFunc
	// cut is set when Close cuts what is still running: a request that
	// ends then was cut at shutdown, not left by its client.
	cut atomic.Bool
}

// New validates cfg and returns a Gateway ready to Serve.
func New(cfg Config) (*Gateway, error) {
	if cfg.Limiter == nil {
		return nil, fmt.Errorf("%w: Limiter is required", ErrConfig)
	}
	if cfg.WaitBudget == 0 {
		cfg.WaitBudget = DefaultWaitBudget
	}
	if cfg.MaxWaitBudget <= 0 {
		cfg.MaxWaitBudget = DefaultMaxWaitBudget
	}
	if cfg.WaitBudget > cfg.MaxWaitBudget {
		return nil, fmt.Errorf("%w: WaitBudget %v above MaxWaitBudget %v", ErrConfig, cfg.WaitBudget, cfg.MaxWaitBudget)
	}
	if cfg.MaxAttempts < 0 {
		return nil, fmt.Errorf("%w: MaxAttempts %d", ErrConfig, cfg.MaxAttempts)
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.Auth != nil && (cfg.Auth.User == "" || cfg.Auth.Password == "") {
		return nil, fmt.Errorf("%w: Auth needs a user name and a password", ErrConfig)
	}
	if cfg.ConnectPorts == nil {
		cfg.ConnectPorts = DefaultConnectPorts()
	}
	ports := map[int]bool{}
	for _, p := range cfg.ConnectPorts {
		if p < 1 || p > 65535 {
			return nil, fmt.Errorf("%w: connect port %d", ErrConfig, p)
		}
		ports[p] = true
	}
	if cfg.Transport.ResponseHeaderTimeout == 0 {
		cfg.Transport.ResponseHeaderTimeout = DefaultHeaderTimeout
	}
	g := &Gateway{
		cfg: cfg, lim: cfg.Limiter, tally: cfg.Tally, hostKey: cfg.HostKey, log: cfg.Logger, ports: ports,
		byID: map[string]pool.Exit{}, tuns: map[net.Conn]struct{}{}, passing: map[net.Conn]string{},
		sessions: newSessions(cmp.Or(cfg.MaxSessions, DefaultMaxSessions), cmp.Or(cfg.SessionIdle, DefaultSessionIdle)),
		lines:    newLines(),
	}
	g.closed, g.closeWaiter = context.WithCancel(context.Background())
	if g.tally == nil {
		g.tally = metrics.NewTally(time.Now())
	}
	// A gateway's hosts are whatever its clients ask for, for as long as
	// it runs: counted each on its own up to a bound.
	g.tally.LimitHosts(cmp.Or(cfg.MaxHosts, DefaultMaxHosts))
	if g.hostKey == nil {
		g.hostKey = fetch.DefaultHostKey
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.self.Store(&selfAddrs{})
	exits := cfg.Exits
	if len(exits) == 0 {
		exits = []pool.Exit{pool.DirectExit()}
	}
	members := make([]fetch.Member, 0, len(exits))
	for _, e := range exits {
		if _, dup := g.byID[e.ID()]; dup {
			return nil, fmt.Errorf("%w: exit %s listed twice", ErrConfig, e.ID())
		}
		g.byID[e.ID()] = e
		members = append(members, fetch.Member{ID: e.ID(), Transport: g.transport(e), ForwardProxy: e.ForwardsHTTP()})
	}
	setExits := cfg.SetExits
	if setExits == nil {
		setExits = g.lim.SetExits
	}
	g.exits = fetch.NewExitSet(members, cfg.Identity, func(exits []limit.Exit) {
		setExits(exits)
		g.CloseTunnelsOff()
	})
	idle := cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout)
	rht := cmp.Or(cfg.ReadHeaderTimeout, DefaultHeaderTimeout)
	g.outer = &http.Server{Handler: http.HandlerFunc(g.serveClient), IdleTimeout: idle, ReadHeaderTimeout: rht,
		ConnState: g.connState, ErrorLog: slog.NewLogLogger(g.log.Handler(), slog.LevelDebug)}
	g.inner = &http.Server{Handler: http.HandlerFunc(g.serveTunneled), IdleTimeout: idle, ReadHeaderTimeout: rht,
		ConnContext: tunnelContext, ConnState: g.connState, ErrorLog: slog.NewLogLogger(g.log.Handler(), slog.LevelDebug)}
	g.innerLn = newChanListener()
	return g, nil
}

// transport builds the transport of one exit: pool's, with compression
// left to the client (the answer reaches it as the server sent it), and,
// for exits that connect to targets themselves, the dial guarded against
// private targets and the gateway's own address.
func (g *Gateway) transport(e pool.Exit) http.RoundTripper {
	t := e.Transport(g.cfg.Transport)
	t.DisableCompression = true
	t.MaxIdleConnsPerHost = cmp.Or(g.cfg.MaxIdleConnsPerHost, DefaultMaxIdleConnsPerHost)
	if e.Kind() != pool.Proxy {
		d := &net.Dialer{Timeout: cmp.Or(g.cfg.Transport.DialTimeout, 10*time.Second),
			KeepAlive: cmp.Or(g.cfg.Transport.KeepAlive, 30*time.Second), Control: g.guard}
		if e.Kind() == pool.Bind {
			d.LocalAddr = &net.TCPAddr{IP: e.LocalAddr().AsSlice()}
		}
		t.DialContext = d.DialContext
	}
	return t
}

// ExitSet returns the exits as the limiter sees them: call its Resolve to
// key exits on their IP (with Config.Identity).
func (g *Gateway) ExitSet() *fetch.ExitSet { return g.exits }

// Tally returns the counts of every attempt.
func (g *Gateway) Tally() *metrics.Tally { return g.tally }

// Serve accepts clients on ln until Shutdown or Close, and returns
// http.ErrServerClosed then. A listener that is not loopback is refused
// (ErrOpenBind) unless Config.Auth is set, and so is one an exit's proxy
// address reaches (ErrSelfExit).
func (g *Gateway) Serve(ln net.Listener) error {
	if err := CheckListen(ln.Addr().String(), g.cfg.Auth != nil); err != nil {
		return err
	}
	if g.closing.Load() {
		return http.ErrServerClosed
	}
	g.mu.Lock()
	lns := append(g.lns, ln)
	self := newSelfAddrs(lns)
	if err := self.checkExits(context.Background(), g.cfg.Exits); err != nil {
		g.mu.Unlock()
		return err
	}
	g.lns = lns
	g.self.Store(self)
	g.mu.Unlock()
	g.innerOnce.Do(func() {
		g.wg.Go(func() { g.inner.Serve(g.innerLn) })
	})
	return g.outer.Serve(ln)
}

// Shutdown stops accepting clients, lets requests in flight finish, closes
// idle connections, and returns when all is done or ctx ends; then it
// closes what is left (passed-through tunnels, requests still running) and
// returns ctx's error.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.startClosing()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { errs[0] = g.outer.Shutdown(ctx) })
	wg.Go(func() { errs[1] = g.inner.Shutdown(ctx) })
	wg.Wait()
	g.innerLn.Close()
	err := errors.Join(errs...)
	// Passed-through tunnels carry requests the gateway cannot see: they
	// get until ctx ends, then they are closed. Most clients keep a tunnel
	// open after its last request, so that is said as what it is
	// (ErrTunnelsClosed), not as requests cut short.
	if !g.waitTunnels(ctx) && err == nil {
		g.mu.Lock()
		n := len(g.tuns)
		g.mu.Unlock()
		err = fmt.Errorf("%w: %d", ErrTunnelsClosed, n)
	}
	g.Close()
	return err
}

// startClosing marks the gateway closing and wakes the waiting requests.
func (g *Gateway) startClosing() {
	g.closing.Store(true)
	g.closeWaiter()
}

// ErrTunnelsClosed is Shutdown's error when every request it could see was
// answered but passed-through tunnels were still open when ctx ended: they
// were closed, idle or not (the gateway cannot tell).
var ErrTunnelsClosed = errors.New("passed-through tunnels still open were closed")

// Close closes every listener and connection at once.
func (g *Gateway) Close() error {
	g.startClosing()
	g.cut.Store(true)
	err := errors.Join(g.outer.Close(), g.inner.Close())
	g.innerLn.Close()
	g.mu.Lock()
	for c := range g.tuns {
		c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
	// The requests in flight end as their connections close: wait a moment
	// for them to count themselves, so that Stats after Close has them.
	for deadline := time.Now().Add(2 * time.Second); g.stats.inFlight.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	g.exits.CloseIdleConnections()
	return err
}

// waitTunnels waits until no passed-through tunnel is open or ctx ends.
func (g *Gateway) waitTunnels(ctx context.Context) bool {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		g.mu.Lock()
		n := len(g.tuns)
		g.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// CloseTunnelsOff closes the passed-through tunnels whose exit is no
// longer in the limiter's pool. The Gateway calls it whenever its ExitSet
// gives the limiter exits (Config.SetExits); a caller that changes the
// limiter's exits itself (a fleet member whose share moved) calls it then:
// a tunnel holds its exit for its whole life, and went on through an exit
// another gateway had taken over.
func (g *Gateway) CloseTunnelsOff() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c, member := range g.passing {
		if !g.holds(member) {
			c.Close()
			delete(g.passing, c)
		}
	}
}

// holds reports whether the limiter has member's exit, under the key it
// is under now.
func (g *Gateway) holds(member string) bool {
	key, ok := g.exits.KeyOf(member)
	return ok && g.lim.HasExit(key)
}

// passTunnel records the passed-through tunnel c through member, and
// reports whether it may go on: an exit that left the pool while the
// tunnel was being opened (a slow proxy's seconds) closes it at once, or
// it stayed open on an exit another gateway had taken over.
func (g *Gateway) passTunnel(c net.Conn, member string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.holds(member) {
		return false
	}
	g.passing[c] = member
	return true
}

// unpassTunnel forgets the passed-through tunnel c.
func (g *Gateway) unpassTunnel(c net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.passing, c)
}

func (g *Gateway) trackTunnel(c net.Conn, open bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if open {
		if g.closing.Load() {
			return false
		}
		g.tuns[c] = struct{}{}
	} else {
		delete(g.tuns, c)
	}
	return true
}

// connState counts the clients' open connections.
func (g *Gateway) connState(_ net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		g.stats.conns.Add(1)
	case http.StateClosed, http.StateHijacked:
		g.stats.conns.Add(-1)
	}
}

// serveClient handles one request a client sent to the gateway: a CONNECT,
// a request in absolute form to forward, or a request for the gateway
// itself.
func (g *Gateway) serveClient(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		g.connect(w, r)
		return
	}
	if !r.URL.IsAbs() {
		g.serveLocal(w, r)
		return
	}
	user, ok := g.authorize(w, r)
	if !ok {
		return
	}
	g.stats.requests.Add(1)
	scheme := r.URL.Scheme
	if scheme != "http" && scheme != "https" {
		g.refuse(w, r, r.URL.Host, http.StatusBadRequest, "scheme", fmt.Sprintf("scheme %q cannot be forwarded (http and https can)", scheme))
		return
	}
	host, port := splitHostPort(r.URL.Host, scheme)
	if host == "" {
		g.refuse(w, r, "", http.StatusBadRequest, "no host", "the request names no host")
		return
	}
	if badPorts[port] {
		g.refuse(w, r, host, http.StatusForbidden, "bad port", fmt.Sprintf("port %d is not for HTTP (the Fetch standard's bad ports)", port))
		return
	}
	if why, status, reason := g.checkTarget(r.Context(), host, port); why != "" {
		g.refuse(w, r, host, status, reason, why)
		return
	}
	g.forward(w, r, target{scheme: scheme, authority: r.URL.Host, session: sessionOf(user, r.Header)})
}

// serveLocal answers a request addressed to the gateway itself (origin
// form): the CA certificate at /ca.pem, a hint elsewhere.
func (g *Gateway) serveLocal(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ca.pem" && g.cfg.CA != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Header().Set("Content-Disposition", `attachment; filename="exitgate-ca.pem"`)
		w.Write(g.cfg.CA.PEM())
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintln(w, "exitgate gateway: this is a forward proxy; set it as your client's HTTP and HTTPS proxy.")
	if g.cfg.CA != nil {
		fmt.Fprintln(w, "Its CA certificate, to trust for HTTPS, is at /ca.pem.")
	}
}
