package exits

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"sync"
	"time"
)

// GatewayConfig configures a Gateway. Only Pool is required.
type GatewayConfig struct {
	// Pool supplies the exits.
	Pool *Pool
	// Exit pins every request to this exit ID (a single-exit proxy); empty
	// routes by the session in the proxy username, or rotates per request.
	Exit string
	// Addr is the listen address for StartGateway and StartExits (whose
	// proxies each take a fresh port on its host); default "127.0.0.1:0".
	Addr string
	// ForwardProxyAuth keeps Proxy-Authorization on forwarded plain-HTTP
	// requests, so a simulated site keyed on the proxy credential can see
	// it. Real proxies strip it; this is a simulator-only switch.
	ForwardProxyAuth bool
	// ExitIPHeader, when set, names a response header that carries the
	// exit's IP, as some providers report it.
	ExitIPHeader string
	// AllowNonLoopback lets the gateway reach targets outside 127.0.0.0/8
	// and ::1. Off by default: the simulator talks to loopback only.
	AllowNonLoopback bool
	// DialTimeout bounds dialing a target; default 5 s.
	DialTimeout time.Duration
	// Logger receives routing failures; nil discards.
	Logger *slog.Logger
}

// Gateway is a forward proxy over a Pool: plain HTTP (absolute-form
// requests) and CONNECT tunnels, each dialed from the chosen exit's IP as
// source address. Failures answer as a proxy would: 407 with
// Proxy-Authenticate for ErrProxyAuth, 502 with Proxy-Status (RFC 9209) for
// ErrConnect and dial errors. It is safe for concurrent use; Close ends its
// tunnels and idle connections.
type Gateway struct {
	cfg   GatewayConfig
	log   *slog.Logger
	proxy *httputil.ReverseProxy

	mu         sync.Mutex
	transports map[netip.Addr]*http.Transport
	tunnels    map[net.Conn]struct{}
	closed     bool
	wg         sync.WaitGroup
}

type exitKey struct{}

// NewGateway validates cfg and returns a gateway.
func NewGateway(cfg GatewayConfig) (*Gateway, error) {
	if cfg.Pool == nil {
		return nil, fmt.Errorf("%w: gateway needs a pool", ErrConfig)
	}
	if cfg.Exit != "" {
		if _, ok := cfg.Pool.Exit(cfg.Exit); !ok {
			return nil, fmt.Errorf("%w: pinned exit %q not in pool", ErrConfig, cfg.Exit)
		}
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	g := &Gateway{
		cfg:        cfg,
		log:        cfg.Logger,
		transports: make(map[netip.Addr]*http.Transport),
		tunnels:    make(map[net.Conn]struct{}),
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// Hop-by-hop fields are gone from Out already; the URL is the
			// absolute one the client sent.
			if cfg.ForwardProxyAuth {
				if v := pr.In.Header.Values("Proxy-Authorization"); len(v) > 0 {
					pr.Out.Header["Proxy-Authorization"] = v
				}
			}
		},
		Transport: roundTripFunc(g.roundTrip),
		ModifyResponse: func(resp *http.Response) error {
			if cfg.ExitIPHeader != "" {
				if ex, ok := resp.Request.Context().Value(exitKey{}).(Exit); ok {
					resp.Header.Set(cfg.ExitIPHeader, ex.IP.String())
				}
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			g.log.Debug("forward failed", "url", r.URL.String(), "err", err)
			badGateway(w, "destination_unavailable")
		},
	}
	return g, nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (g *Gateway) roundTrip(r *http.Request) (*http.Response, error) {
	ex, ok := r.Context().Value(exitKey{}).(Exit)
	if !ok {
		return nil, errors.New("exits: request carries no exit")
	}
	t, err := g.transport(ex.IP)
	if err != nil {
		return nil, err
	}
	return t.RoundTrip(r)
}

// transport returns the keep-alive transport dialing from ip.
func (g *Gateway) transport(ip netip.Addr) (*http.Transport, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, errors.New("exits: gateway closed")
	}
	t := g.transports[ip]
	if t == nil {
		d := g.dialer(ip)
		t = &http.Transport{
			Proxy:               nil, // never chain to an environment proxy
			DialContext:         d.DialContext,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true,
		}
		g.transports[ip] = t
	}
	return t, nil
}

func (g *Gateway) dialer(ip netip.Addr) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip.AsSlice()}, Timeout: g.cfg.DialTimeout}
}

// ServeHTTP routes r through an exit.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Host
	if r.Method != http.MethodConnect {
		if !r.URL.IsAbs() || r.URL.Scheme != "http" || r.URL.Host == "" {
			http.Error(w, "exits: send absolute http:// URLs (or CONNECT) to this proxy", http.StatusBadRequest)
			return
		}
		target = r.URL.Host
	}
	if !g.cfg.AllowNonLoopback && !isLoopbackTarget(target) {
		http.Error(w, "exits: target is not loopback", http.StatusForbidden)
		return
	}
	ex, err := g.pick(r)
	if err != nil {
		g.log.Debug("route failed", "err", err)
		switch {
		case errors.Is(err, ErrProxyAuth):
			w.Header().Set("Proxy-Authenticate", `Basic realm="exitgate-sim"`)
			http.Error(w, "proxy authentication required", http.StatusProxyAuthRequired)
		default:
			badGateway(w, "connection_refused")
		}
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), exitKey{}, ex))
	if r.Method == http.MethodConnect {
		g.tunnel(w, r, ex)
		return
	}
	g.proxy.ServeHTTP(w, r)
}

func (g *Gateway) pick(r *http.Request) (Exit, error) {
	user, pass, _ := BasicAuth(r.Header.Get("Proxy-Authorization"))
	p := g.cfg.Pool
	now := time.Now()
	if g.cfg.Exit == "" {
		return p.RouteUser(user, pass, now)
	}
	if !p.CheckUser(user, pass) {
		return Exit{}, &RouteError{Err: ErrProxyAuth}
	}
	i, err := p.route(g.cfg.Exit, "", now)
	if err != nil {
		return Exit{}, err
	}
	return p.exits[i], nil
}

func badGateway(w http.ResponseWriter, reason string) {
	w.Header().Set("Proxy-Status", "exitgate-sim; error="+reason)
	http.Error(w, "bad gateway: "+reason, http.StatusBadGateway)
}

// isLoopbackTarget reports whether host[:port] names a loopback address.
func isLoopbackTarget(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// tunnel serves CONNECT: dial from the exit, answer 200, then splice.
func (g *Gateway) tunnel(w http.ResponseWriter, r *http.Request, ex Exit) {
	up, err := g.dialer(ex.IP).DialContext(r.Context(), "tcp", r.Host)
	if err != nil {
		g.log.Debug("tunnel dial failed", "target", r.Host, "exit", ex.ID, "err", err)
		badGateway(w, "connection_refused")
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "exits: connection cannot be hijacked", http.StatusInternalServerError)
		return
	}
	down, brw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !g.track(up, down) {
		up.Close()
		down.Close()
		return
	}
	defer g.untrack(up, down)
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// brw.Reader may hold bytes the client sent after CONNECT.
		io.Copy(up, brw.Reader)
		closeWrite(up)
	}()
	io.Copy(down, up)
	closeWrite(down)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

func (g *Gateway) track(conns ...net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	for _, c := range conns {
		g.tunnels[c] = struct{}{}
	}
	g.wg.Add(1)
	return true
}

func (g *Gateway) untrack(conns ...net.Conn) {
	g.mu.Lock()
	for _, c := range conns {
		delete(g.tunnels, c)
		c.Close()
	}
	g.mu.Unlock()
	g.wg.Done()
}

// Close ends open tunnels, waits for them and drops idle upstream
// connections. The gateway refuses requests afterwards.
func (g *Gateway) Close() error {
	g.mu.Lock()
	g.closed = true
	for c := range g.tunnels {
		c.Close()
	}
	for _, t := range g.transports {
		t.CloseIdleConnections()
	}
	g.mu.Unlock()
	g.wg.Wait()
	return nil
}

// Server is a Gateway listening on a socket.
type Server struct {
	// URL is the proxy URL to give clients (http://127.0.0.1:port).
	URL     *url.URL
	Gateway *Gateway
	srv     *http.Server
	done    chan struct{}
}

// StartGateway listens on cfg.Addr and serves a gateway until Close.
func StartGateway(cfg GatewayConfig) (*Server, error) {
	g, err := NewGateway(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", g.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("exits: listen: %w", err)
	}
	s := &Server{
		URL:     &url.URL{Scheme: "http", Host: ln.Addr().String()},
		Gateway: g,
		srv:     &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(g.log.Handler(), slog.LevelDebug)},
		done:    make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln) // returns http.ErrServerClosed on Close
	}()
	return s, nil
}

// Close stops the listener and every connection, tunnels included, and
// waits for the serving goroutine.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	s.Gateway.Close()
	return err
}

// Singles is a set of single-exit proxies, one per pool exit.
type Singles struct {
	// Servers is in pool order: Servers[i] exits through Pool.Exits()[i].
	Servers []*Server
}

// StartExits starts one single-exit proxy per exit of cfg.Pool, each on its
// own port of cfg.Addr's host and pinned to its exit (cfg.Exit is ignored):
// the "N local exits" a client can treat as an ordinary proxy list.
func StartExits(cfg GatewayConfig) (*Singles, error) {
	if cfg.Pool == nil {
		return nil, fmt.Errorf("%w: exits need a pool", ErrConfig)
	}
	host := "127.0.0.1"
	if cfg.Addr != "" {
		h, _, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("%w: addr %q: %v", ErrConfig, cfg.Addr, err)
		}
		host = h
	}
	s := &Singles{}
	for _, ex := range cfg.Pool.Exits() {
		c := cfg
		c.Exit = ex.ID
		c.Addr = net.JoinHostPort(host, "0")
		srv, err := StartGateway(c)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.Servers = append(s.Servers, srv)
	}
	return s, nil
}

// URLs returns the proxies' URLs in pool order.
func (s *Singles) URLs() []*url.URL {
	u := make([]*url.URL, len(s.Servers))
	for i, srv := range s.Servers {
		u[i] = srv.URL
	}
	return u
}

// Close stops every proxy.
func (s *Singles) Close() error {
	var errs []error
	for _, srv := range s.Servers {
		errs = append(errs, srv.Close())
	}
	return errors.Join(errs...)
}
