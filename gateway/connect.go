package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/pool"
	"github.com/exitgate/exitgate/verdict"
)

// Timeouts of a tunnel's start.
const (
	// firstByteTimeout bounds the wait for the client's first byte in an
	// intercepted tunnel (its TLS hello, or a plain request).
	firstByteTimeout = 30 * time.Second
	// handshakeTimeout bounds the TLS handshake with the client.
	handshakeTimeout = 10 * time.Second
)

// connect handles a CONNECT: it checks the target, then intercepts the
// tunnel (with a CA) or passes it through.
func (g *Gateway) connect(w http.ResponseWriter, r *http.Request) {
	user, ok := g.authorize(w, r)
	if !ok {
		return
	}
	authority := r.Host
	host, portStr, err := net.SplitHostPort(authority)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || host == "" {
		g.refuse(w, r, "", http.StatusBadRequest, "bad connect target", fmt.Sprintf("CONNECT wants host:port, not %q", authority))
		return
	}
	if !g.ports[port] {
		g.refuse(w, r, host, http.StatusForbidden, "connect port",
			fmt.Sprintf("CONNECT to port %d is not allowed (allowed: %v); a forward proxy that tunnels anywhere is an open relay", port, g.cfg.ConnectPorts))
		return
	}
	if why, status, reason := g.checkTarget(r.Context(), host, port); why != "" {
		g.refuse(w, r, host, status, reason, why)
		return
	}
	session := sessionOf(user, r.Header)
	if g.cfg.CA == nil {
		g.passthrough(w, r, authority, port, session)
		return
	}
	g.intercept(w, host, port, session, strings.TrimSpace(r.Header.Get(HeaderWait)))
}

// tunnel is what an intercepted tunnel's requests share: where they go and
// the session the CONNECT asked for.
type tunnel struct {
	scheme    string // https, or http for a plain request inside
	authority string // host[:port], the port left out when it is the scheme's default
	host      string
	session   string
	wait      string // the CONNECT's X-Exitgate-Wait, as written; "": none
}

// intercept answers the CONNECT, then serves the requests inside the
// tunnel: TLS with a leaf of the CA when the client starts a handshake,
// plain HTTP otherwise.
func (g *Gateway) intercept(w http.ResponseWriter, host string, port int, session, wait string) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	g.stats.tunnels.Add(1)
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		conn.Close()
		return
	}
	conn.SetReadDeadline(time.Now().Add(firstByteTimeout))
	first, err := brw.Reader.Peek(1)
	if err != nil {
		conn.Close()
		return
	}
	conn.SetReadDeadline(time.Time{})
	var c net.Conn = &bufferedConn{Conn: conn, r: brw.Reader}
	t := &tunnel{scheme: "http", host: host, session: session, wait: wait}
	if first[0] == 0x16 { // a TLS record: the handshake
		tc := tls.Server(c, g.cfg.CA.TLSConfig(host))
		ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			// Typically a client that does not trust the CA.
			g.stats.refused("tls handshake")
			g.log.Info("gateway: TLS handshake with the client failed (does it trust the CA?)", "host", host, "err", err)
			conn.Close()
			return
		}
		c, t.scheme = tc, "https"
	}
	t.authority = host
	if strings.Contains(host, ":") {
		t.authority = "[" + host + "]"
	}
	if (t.scheme == "https" && port != 443) || (t.scheme == "http" && port != 80) {
		t.authority = net.JoinHostPort(host, strconv.Itoa(port))
	}
	if !g.innerLn.push(&tunnelConn{Conn: c, t: t}) {
		c.Close()
	}
}

// serveTunneled handles one request inside an intercepted tunnel.
func (g *Gateway) serveTunneled(w http.ResponseWriter, r *http.Request) {
	t, _ := r.Context().Value(tunnelKey{}).(*tunnel)
	if t == nil {
		http.Error(w, "exitgate: no tunnel", http.StatusInternalServerError)
		return
	}
	g.stats.requests.Add(1)
	if r.Method == http.MethodConnect {
		g.refuse(w, r, t.host, http.StatusMethodNotAllowed, "connect in tunnel", "CONNECT inside a tunnel")
		return
	}
	// The tunnel's target decides where the request goes; a Host that names
	// another host is refused rather than followed.
	// Its port too: a Host naming another port was sent to the tunnel's,
	// its Host rewritten without a word.
	h, hp := splitHostPort(r.Host, t.scheme)
	_, tp := splitHostPort(t.authority, t.scheme)
	if r.Host != "" && (!strings.EqualFold(strings.TrimSuffix(h, "."), strings.TrimSuffix(t.host, ".")) || hp != tp) {
		g.refuse(w, r, t.host, http.StatusMisdirectedRequest, "host mismatch",
			fmt.Sprintf("Host %q is not the tunnel's target %q", r.Host, t.authority))
		return
	}
	session := t.session
	if s := strings.TrimSpace(r.Header.Get(HeaderSession)); s != "" {
		session = sessionKey(s)
	}
	if _, ok := r.Header[HeaderWait]; !ok && t.wait != "" {
		// The CONNECT's wait budget holds for the requests inside, as
		// its session does, unless one says its own.
		r.Header.Set(HeaderWait, t.wait)
	}
	g.forward(w, r, target{scheme: t.scheme, authority: t.authority, session: session})
}

// passthrough opens the tunnel through the exit of one lane and relays its
// bytes unseen. The limiter paces tunnels like requests and learns nothing
// from them: the lane is charged one request, answered with a verdict that
// teaches nothing (fatal, in the limiter's counters). An exit that fails as
// a proxy is replaced within the wait budget: nothing reached the target.
func (g *Gateway) passthrough(w http.ResponseWriter, r *http.Request, authority string, port int, session string) {
	ctx := r.Context()
	budget, err := g.waitBudget(r.Header)
	if err != nil {
		g.refuse(w, r, authority, http.StatusBadRequest, "bad control header", err.Error())
		return
	}
	scheme := "https"
	if port == 80 {
		scheme = "http"
	}
	host := g.hostKey(&url.URL{Scheme: scheme, Host: authority})
	deadline := time.Now().Add(budget)
	var last verdict.Verdict
	for attempt := 1; ; attempt++ {
		ticket, next, err := g.acquire(ctx, host, session, deadline)
		if err != nil {
			w.Header().Set(HeaderAttempts, strconv.Itoa(attempt-1)) // 0: nothing sent
			switch {
			case ctx.Err() != nil:
			case errors.Is(err, errExitsDown):
				g.giveUp(w, host, http.StatusBadGateway, "no working exit", next, g.exitsDownText())
			case errors.Is(err, errBanned):
				g.giveUp(w, host, http.StatusForbidden, "banned on every exit", next,
					fmt.Sprintf("exitgate: %s answered every exit with a block page; no tunnel opens to it until the time in Retry-After", host))
			case errors.Is(err, errBudget) && last == verdict.ProxyFailure:
				g.giveUp(w, host, http.StatusBadGateway, "no working exit", next,
					fmt.Sprintf("exitgate: no exit could open a tunnel to %s within the wait budget (%v)", authority, budget))
			case errors.Is(err, errBudget):
				g.stats.throttled.Add(1)
				g.giveUp(w, host, http.StatusTooManyRequests, "wait budget spent", next,
					fmt.Sprintf("exitgate: no exit may open a tunnel to %s within the wait budget (%v)", authority, budget))
			case errors.Is(err, errExitsComing), errors.Is(err, limit.ErrNoExits):
				g.giveUpNoExit(w, host, err, next, budget)
			default:
				g.giveUp(w, host, http.StatusBadGateway, "limiter error", time.Time{}, "exitgate: "+err.Error())
			}
			return
		}
		m, ok := g.exits.Route(ticket.Exit)
		e, known := g.byID[m.ID]
		if !ok || !known {
			g.lim.Cancel(ticket, time.Now())
			g.giveUp(w, host, http.StatusBadGateway, "no exit", time.Time{}, "exitgate: no exit "+ticket.Exit)
			return
		}
		sent := time.Now()
		up, err := e.Dial(ctx, authority, pool.DialConfig{Control: g.guard, Timeout: g.cfg.Transport.DialTimeout,
			KeepAlive: g.cfg.Transport.KeepAlive, TLSClientConfig: g.cfg.Transport.TLSClientConfig})
		now := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				g.lim.Cancel(ticket, now)
				return
			}
			if re, ok := errRefused(err); ok {
				g.lim.Cancel(ticket, now)
				status := http.StatusForbidden
				if re.Reason == "loop" {
					status = http.StatusLoopDetected
				}
				g.refuse(w, r, host, status, re.Reason, re.Error())
				return
			}
			v := classify.Error(err)
			g.lim.Done(ticket, limit.Outcome{Verdict: v, SentAt: sent}, now)
			last = v
			if v == verdict.ProxyFailure && attempt < g.cfg.MaxAttempts {
				g.retried(host, ticket.Exit)
				continue
			}
			w.Header().Set(HeaderAttempts, strconv.Itoa(attempt))
			g.giveUp(w, host, http.StatusBadGateway, "tunnel "+fetch.ErrorClass(err), time.Time{},
				fmt.Sprintf("exitgate: tunnel to %s through exit %s: %s", authority, ticket.Exit, g.scrub(m.ID, err.Error())))
			return
		}
		g.lim.Done(ticket, limit.Outcome{Verdict: verdict.Fatal, SentAt: sent, AnsweredAt: now}, now)
		if !g.holds(m.ID) {
			// Its exit left the pool while the tunnel was opened (a
			// fleet's handover during a slow proxy's connect).
			up.Close()
			w.Header().Set(HeaderAttempts, strconv.Itoa(attempt))
			g.giveUp(w, host, http.StatusServiceUnavailable, "no exit owned", now.Add(time.Second),
				fmt.Sprintf("exitgate: the exit of the tunnel to %s moved to another gateway while it was opened: retry", authority))
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			up.Close()
			return
		}
		g.stats.tunnels.Add(1)
		g.stats.passed.Add(1)
		if !g.trackTunnel(conn, true) {
			conn.Close()
			up.Close()
			return
		}
		defer g.trackTunnel(conn, false)
		defer conn.Close()
		if !g.passTunnel(conn, m.ID) {
			up.Close()
			return // (its exit moved on while it was opened: the client sees the connection close)
		}
		defer g.unpassTunnel(conn)
		if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			up.Close()
			return
		}
		splice(conn, brw.Reader, up)
		return
	}
}

// splice relays bytes both ways between the client (conn, whose first
// bytes may wait in br) and up, until both directions end; when one ends,
// the other side's write half is closed so that it sees the end too. It
// returns the bytes relayed from up to the client.
func splice(conn net.Conn, br *bufio.Reader, up io.ReadWriteCloser) int64 {
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(up, br)
		closeWrite(up)
	}()
	n, _ := io.Copy(conn, up)
	closeWrite(conn)
	<-done
	up.Close()
	return n
}

// closeWrite half-closes c when it can (TCP, TLS), else closes it.
func closeWrite(c io.Closer) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// bufferedConn is a connection whose first bytes wait in r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite half-closes the underlying TCP connection.
func (c *bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// tunnelConn is an intercepted tunnel's connection, handed to the inner
// server with its tunnel.
type tunnelConn struct {
	net.Conn
	t *tunnel
}

type tunnelKey struct{}

// tunnelContext is the inner server's ConnContext: each request learns its
// tunnel.
func tunnelContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tunnelConn); ok {
		return context.WithValue(ctx, tunnelKey{}, tc.t)
	}
	return ctx
}

// chanListener is the inner server's listener: intercepted tunnels are
// pushed to it. It is safe for concurrent use.
type chanListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newChanListener() *chanListener {
	return &chanListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return tunnelAddr{} }

// push hands c to the inner server; false once the listener is closed.
func (l *chanListener) push(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

type tunnelAddr struct{}

func (tunnelAddr) Network() string { return "tunnel" }
func (tunnelAddr) String() string  { return "intercepted-tunnels" }
