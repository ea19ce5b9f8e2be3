package pool

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/exitgate/exitgate/classify"
)

// DialConfig tunes Exit.Dial. The zero value means the defaults of each
// field.
type DialConfig struct {
	// Timeout bounds reaching the target: the TCP connect, and through a
	// proxy the proxy's handshake too. Zero means 10s.
	Timeout time.Duration
	// KeepAlive is the TCP keep-alive period. Zero means 30s; negative
	// disables.
	KeepAlive time.Duration
	// Control, if set, is called with the address a direct or bind exit is
	// about to connect to, after name resolution and before the connect
	// (net.Dialer.Control): returning an error refuses it. It is not called
	// for the connection to a proxy, which is the exit's own configured
	// address; the proxy resolves and reaches the target itself.
	Control func(network, address string, c syscall.RawConn) error
	// TLSClientConfig is used for HTTPS proxies. Nil means Go's defaults.
	TLSClientConfig *tls.Config
}

// Dial opens a TCP connection to addr (host:port) through the exit, for a
// tunnel whose bytes the caller relays as they are: directly or from the
// exit's local address, through an HTTP or HTTPS proxy with CONNECT
// (Proxy-Authorization from the proxy URL), or through a SOCKS5 proxy
// (RFC 1928, with RFC 1929 credentials). A proxy that cannot be reached, or
// refuses the tunnel or the credentials, is a proxy failure for
// classify.Error (*classify.ProxyConnectError for an HTTP proxy's non-2xx
// answer, a *net.OpError with Op "proxyconnect" otherwise); a SOCKS5
// proxy's report that the target is unreachable is the target's error.
// Errors never contain the proxy's password.
func (e Exit) Dial(ctx context.Context, addr string, cfg DialConfig) (net.Conn, error) {
	timeout := cmp.Or(cfg.Timeout, 10*time.Second)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := &net.Dialer{KeepAlive: cmp.Or(cfg.KeepAlive, 30*time.Second)}
	if e.kind != Proxy {
		d.Control = cfg.Control
		if e.kind == Bind {
			d.LocalAddr = &net.TCPAddr{IP: e.local.AsSlice()}
		}
		return d.DialContext(ctx, "tcp", addr)
	}
	u := e.proxy
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, &net.OpError{Op: "proxyconnect", Net: "tcp", Err: errors.New(e.Scrub(err.Error()))}
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	var out net.Conn
	switch u.Scheme {
	case "socks5", "socks5h":
		err = e.socksConnect(conn, addr)
		out = conn
	case "https":
		tc := &tls.Config{}
		if cfg.TLSClientConfig != nil {
			tc = cfg.TLSClientConfig.Clone()
		}
		if tc.ServerName == "" {
			tc.ServerName = u.Hostname()
		}
		tlsConn := tls.Client(conn, tc)
		if err = tlsConn.HandshakeContext(ctx); err == nil {
			out, err = e.httpConnect(tlsConn, addr)
		} else {
			err = &net.OpError{Op: "proxyconnect", Net: "tcp", Err: errors.New(e.Scrub(err.Error()))}
		}
	default:
		out, err = e.httpConnect(conn, addr)
	}
	if !stop() || err != nil {
		conn.Close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return out, nil
}

// httpConnect asks an HTTP proxy for a tunnel to addr on conn.
func (e Exit) httpConnect(conn net.Conn, addr string) (net.Conn, error) {
	req := "CONNECT " + addr + " HTTP/1.1\r\nHost: " + addr + "\r\n"
	if u := e.proxy.User; u != nil {
		pass, _ := u.Password()
		req += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pass)) + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		return nil, &net.OpError{Op: "proxyconnect", Net: "tcp", Err: errors.New(e.Scrub(err.Error()))}
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return nil, &net.OpError{Op: "proxyconnect", Net: "tcp", Err: fmt.Errorf("answer to CONNECT: %s", e.Scrub(err.Error()))}
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, &classify.ProxyConnectError{Proxy: e.ID(), StatusCode: resp.StatusCode, Status: resp.Status}
	}
	if br.Buffered() > 0 { // the target spoke first, within the same read
		return &bufferedConn{Conn: conn, r: br}, nil
	}
	return conn, nil
}

// bufferedConn is a connection whose first bytes were read into r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// socksConnect greets a SOCKS5 proxy (with credentials when the exit has
// them) and asks it to connect to addr.
func (e Exit) socksConnect(conn net.Conn, addr string) error {
	if err := probeSOCKS5(conn, e.proxy.User); err != nil {
		return &net.OpError{Op: "proxyconnect", Net: "tcp", Err: errors.New(e.Scrub(err.Error()))}
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return fmt.Errorf("bad port in %q", addr)
	}
	req := []byte{5, 1, 0}
	if ip := net.ParseIP(host); ip != nil {
		if ip4 := ip.To4(); ip4 != nil {
			req = append(append(req, 1), ip4...)
		} else {
			req = append(append(req, 4), ip...)
		}
	} else {
		if len(host) > 255 {
			return fmt.Errorf("host name longer than 255 bytes")
		}
		req = append(append(req, 3, byte(len(host))), host...)
	}
	req = append(req, byte(port>>8), byte(port))
	if _, err := conn.Write(req); err != nil {
		return &net.OpError{Op: "proxyconnect", Net: "tcp", Err: err}
	}
	var head [4]byte
	if _, err := io.ReadFull(conn, head[:]); err != nil {
		return &net.OpError{Op: "proxyconnect", Net: "tcp", Err: socksReadErr(err)}
	}
	if head[0] != 5 {
		return &net.OpError{Op: "proxyconnect", Net: "tcp", Err: errors.New("answered something that is not SOCKS5")}
	}
	if head[1] != 0 {
		// 1 general failure, 2 not allowed by ruleset: the proxy's; 3-5
		// network or host unreachable, refused: the target's.
		why := fmt.Errorf("SOCKS5 connect to %s failed: reply %d", addr, head[1])
		if head[1] >= 3 && head[1] <= 5 {
			return why
		}
		return &net.OpError{Op: "proxyconnect", Net: "tcp", Err: why}
	}
	var skip int
	switch head[3] {
	case 1:
		skip = 4
	case 4:
		skip = 16
	case 3:
		var l [1]byte
		if _, err := io.ReadFull(conn, l[:]); err != nil {
			return &net.OpError{Op: "proxyconnect", Net: "tcp", Err: socksReadErr(err)}
		}
		skip = int(l[0])
	default:
		return &net.OpError{Op: "proxyconnect", Net: "tcp", Err: fmt.Errorf("SOCKS5 reply with address type %d", head[3])}
	}
	if _, err := io.ReadFull(conn, make([]byte, skip+2)); err != nil {
		return &net.OpError{Op: "proxyconnect", Net: "tcp", Err: socksReadErr(err)}
	}
	return nil
}
