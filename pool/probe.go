package pool

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// probeProxy asks the exit's proxy something it answers by itself, without
// reaching any target, and returns nil if it answered as a proxy of its kind
// should, else what was wrong (a timeout as a net.Error). An HTTP proxy is sent an origin-form request,
// which proxies refuse at once (400), and its answer must be HTTP and not a
// refusal of the credentials (401, 407), nor, when strict, of this client
// (403). A SOCKS5 proxy is greeted and, with credentials, authenticated
// (RFC 1928, 1929), then left.
func probeProxy(ctx context.Context, u *url.URL, dialer *net.Dialer, tlsCfg *tls.Config, strict bool) error {
	conn, err := dialer.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return fmt.Errorf("unreachable: %w", err)
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	switch u.Scheme {
	case "socks5", "socks5h":
		err = probeSOCKS5(conn, u.User)
	case "https":
		cfg := &tls.Config{}
		if tlsCfg != nil {
			cfg = tlsCfg.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		tc := tls.Client(conn, cfg)
		if err = tc.HandshakeContext(ctx); err == nil {
			err = probeHTTP(tc, u, strict)
		}
	default:
		err = probeHTTP(conn, u, strict)
	}
	return err
}

func probeHTTP(conn net.Conn, u *url.URL, strict bool) error {
	req := "GET / HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: close\r\n"
	if u.User != nil {
		pass, _ := u.User.Password()
		req += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass)) + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(io.LimitReader(conn, 64<<10)), nil)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return err
		}
		return errors.New("answered something that is not HTTP")
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusProxyAuthRequired || resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("rejected the credentials (%d)", resp.StatusCode)
	}
	if strict && resp.StatusCode == http.StatusForbidden {
		// A request to the proxy itself, refused: it does not serve
		// this client (tinyproxy's Allow, squid's http_access; one it
		// serves answers 400 or the like: not a proxy request). Only
		// asked where a 403 to CONNECT is to be told from a target the
		// proxy denies: a provider may answer its own URL so and work.
		return fmt.Errorf("refused this client (%d)", resp.StatusCode)
	}
	return nil
}

func probeSOCKS5(conn net.Conn, user *url.Userinfo) error {
	hello := []byte{5, 1, 0} // no authentication
	if user != nil {
		hello = []byte{5, 1, 2} // username/password
	}
	if _, err := conn.Write(hello); err != nil {
		return err
	}
	var reply [2]byte
	if _, err := io.ReadFull(conn, reply[:]); err != nil {
		return socksReadErr(err)
	}
	switch {
	case reply[0] != 5:
		return errors.New("answered something that is not SOCKS5")
	case reply[1] == 0xff:
		return errors.New("SOCKS5 handshake refused: no acceptable authentication method")
	case reply[1] == 0 && user == nil:
		return nil
	case reply[1] != 2 || user == nil:
		return fmt.Errorf("SOCKS5 handshake: unexpected method %d", reply[1])
	}
	name := user.Username()
	pass, _ := user.Password()
	if len(name) > 255 || len(pass) > 255 {
		return errors.New("SOCKS5 credentials longer than 255 bytes")
	}
	auth := append([]byte{1, byte(len(name))}, name...)
	auth = append(append(auth, byte(len(pass))), pass...)
	if _, err := conn.Write(auth); err != nil {
		return err
	}
	if _, err := io.ReadFull(conn, reply[:]); err != nil {
		return socksReadErr(err)
	}
	if reply[1] != 0 {
		return errors.New("SOCKS5 proxy rejected the credentials")
	}
	return nil
}

func socksReadErr(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err
	}
	return errors.New("closed the connection during the SOCKS5 handshake")
}

// DefaultProbeTimeout bounds the check of a proxy after a request through
// it failed (TransportConfig.ProbeTimeout).
const DefaultProbeTimeout = 5 * time.Second

// minProbe is the least time a check of a proxy gets after a request its
// deadline ended (Transport.judge gives it as long as the request took).
const minProbe = 100 * time.Millisecond

// probeTTL is how long the outcome of a check of a proxy stands for further
// failures through it, so that a burst of failures costs one check.
const probeTTL = 5 * time.Second

// prober checks one exit's proxy, at most once per probeTTL; concurrent
// callers share one check. It is safe for concurrent use.
type prober struct {
	run func(context.Context) error

	mu      sync.Mutex
	started time.Time // when the last check began
	at      time.Time // when it ended
	err     error
	busy    chan struct{} // closed when the check under way ends
}

// check returns the outcome of a recent check, or runs one. A check that
// found the proxy at fault stands for probeTTL; one that found it working
// stands only for failures it could have seen: those before it began (less
// probeShare, for failures of one event a moment apart). A proxy killed with
// requests in flight failed them after the check their silence had made a
// second before, which cleared it: they were charged as the URLs' transport
// errors and abandoned with a working exit in the pool.
func (p *prober) check(since time.Time, timeout time.Duration) error {
	for {
		p.mu.Lock()
		if busy := p.busy; busy != nil {
			p.mu.Unlock()
			<-busy
			continue // its outcome is read as a cached one
		}
		fresh := !p.at.IsZero() && time.Since(p.at) < probeTTL
		if fresh && (p.err != nil || !p.started.Before(since.Add(-probeShare))) {
			defer p.mu.Unlock()
			return p.err
		}
		busy := make(chan struct{})
		p.busy, p.started = busy, time.Now()
		p.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := p.run(ctx)
		cancel()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
			// A bound taken from a request's time reads 2.000724731s: said
			// to the hundredth.
			err = fmt.Errorf("no answer within %v", timeout.Round(10*time.Millisecond))
		}

		p.mu.Lock()
		p.at, p.err, p.busy = time.Now(), err, nil
		p.mu.Unlock()
		close(busy)
		return err
	}
}

// probeShare is how long before a failure a check that found its proxy
// working may have begun and still stand for it: the failures of one event
// (a proxy killed under ten requests) reach their transports a moment apart.
const probeShare = 50 * time.Millisecond
