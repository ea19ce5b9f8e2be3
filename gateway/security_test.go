package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exitgate/exitgate/ca"
	"github.com/exitgate/exitgate/internal/syncbuf"
	"github.com/exitgate/exitgate/pool"
)

// rawRequest writes one request to the gateway on a new connection and
// returns the answer's status, headers and body.
func rawRequest(t *testing.T, proxy *url.URL, head string) (int, http.Header, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", proxy.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	req := &http.Request{Method: strings.Fields(head)[0]}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", strings.SplitN(head, "\r\n", 2)[0], err)
	}
	var b []byte
	if resp.StatusCode != 200 || req.Method != http.MethodConnect {
		b, _ = io.ReadAll(resp.Body)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header, string(b)
}

// listenerSpy listens on loopback and counts the connections it accepts:
// a refused request must not reach it.
func listenerSpy(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), &n
}

// loopbackName is a name other than localhost that resolves to loopback
// here (the machine's own name often does), or "".
func loopbackName() string {
	h, err := os.Hostname()
	if err != nil || h == "" || strings.EqualFold(h, "localhost") {
		return ""
	}
	addrs, err := net.LookupHost(h)
	if err != nil || len(addrs) == 0 {
		return ""
	}
	for _, a := range addrs {
		if ip, err := netip.ParseAddr(a); err != nil || !ip.Unmap().IsLoopback() {
			return ""
		}
	}
	return h
}

// The gateway is no open relay: CONNECT reaches ports 443 and 80 only
// (unless configured), and no request reaches a private, loopback or
// link-local target unless allowed; nothing reaches the refused target.
func TestNotAnOpenRelay(t *testing.T) {
	spyAddr, spied := listenerSpy(t)
	_, spyPort, _ := net.SplitHostPort(spyAddr)
	g, proxy := newGateway(t, Config{})
	for _, tc := range []struct {
		name, head string
		status     int
		reason     string
	}{
		{"CONNECT to SMTP", "CONNECT 127.0.0.1:25 HTTP/1.1\r\nHost: 127.0.0.1:25\r\n\r\n", 403, "connect port"},
		{"CONNECT to SSH by name", "CONNECT mail.example.com:22 HTTP/1.1\r\nHost: mail.example.com:22\r\n\r\n", 403, "connect port"},
		{"CONNECT to a local listener", "CONNECT " + spyAddr + " HTTP/1.1\r\nHost: " + spyAddr + "\r\n\r\n", 403, "connect port"},
		{"CONNECT to a private address on 443", "CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\n\r\n", 403, "private target"},
		{"CONNECT to loopback on 443", "CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n", 403, "private target"},
		{"GET a local listener", "GET http://" + spyAddr + "/ HTTP/1.1\r\nHost: " + spyAddr + "\r\n\r\n", 403, "private target"},
		{"GET localhost", "GET http://localhost:" + spyPort + "/ HTTP/1.1\r\nHost: localhost\r\n\r\n", 403, "private target"},
		{"GET IPv6 loopback", "GET http://[::1]:" + spyPort + "/ HTTP/1.1\r\nHost: [::1]\r\n\r\n", 403, "private target"},
		{"GET cloud metadata", "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n", 403, "private target"},
		{"GET a private network", "GET http://192.168.1.1/admin HTTP/1.1\r\nHost: 192.168.1.1\r\n\r\n", 403, "private target"},
		// Numeric forms a proxy's resolver reads as loopback and metadata.
		{"GET loopback as one number", "GET http://2130706433:" + spyPort + "/ HTTP/1.1\r\nHost: 2130706433\r\n\r\n", 403, "private target"},
		{"GET loopback in hex", "GET http://0x7f000001:" + spyPort + "/ HTTP/1.1\r\nHost: 0x7f000001\r\n\r\n", 403, "private target"},
		{"GET loopback short", "GET http://127.1:" + spyPort + "/ HTTP/1.1\r\nHost: 127.1\r\n\r\n", 403, "private target"},
		{"GET loopback in octal", "GET http://0177.0.0.1:" + spyPort + "/ HTTP/1.1\r\nHost: 0177.0.0.1\r\n\r\n", 403, "private target"},
		{"GET metadata as one number", "GET http://2852039166/latest/meta-data/ HTTP/1.1\r\nHost: 2852039166\r\n\r\n", 403, "private target"},
		{"CONNECT to loopback as one number", "CONNECT 2130706433:443 HTTP/1.1\r\nHost: 2130706433:443\r\n\r\n", 403, "private target"},
		{"GET ftp", "GET ftp://example.com/file HTTP/1.1\r\nHost: example.com\r\n\r\n", 400, "scheme"},
		{"GET to SMTP", "GET http://mail.example.com:25/ HTTP/1.1\r\nHost: mail.example.com:25\r\n\r\n", 403, "bad port"},
		{"GET https to IMAP", "GET https://mail.example.com:993/ HTTP/1.1\r\nHost: mail.example.com:993\r\n\r\n", 403, "bad port"},
	} {
		status, h, body := rawRequest(t, proxy, tc.head)
		if status != tc.status || h.Get(HeaderReason) != tc.reason {
			t.Errorf("%s: %d (%s) %q, want %d (%s)", tc.name, status, h.Get(HeaderReason), body, tc.status, tc.reason)
		}
	}
	// A name that resolves to loopback is caught where the direct exit
	// dials: the address it resolved to is refused.
	if name := loopbackName(); name != "" {
		status, h, body := rawRequest(t, proxy, "GET http://"+name+":"+spyPort+"/ HTTP/1.1\r\nHost: "+name+"\r\n\r\n")
		if status != 403 || h.Get(HeaderReason) != "private target" {
			t.Errorf("GET %s (resolves to loopback): %d (%s) %q, want 403 private target", name, status, h.Get(HeaderReason), body)
		}
	} else {
		t.Log("no name here resolves to loopback but localhost: the dial guard's name case is not exercised")
	}
	if n := spied.Load(); n != 0 {
		t.Errorf("the refused target accepted %d connections, want 0", n)
	}
	if st := g.Stats(); st.Refused["private target"] < 13 || st.Refused["connect port"] != 3 {
		t.Errorf("refusals counted %v", st.Refused)
	}
	// The limiter heard of no request: each was refused before anything
	// was sent (the dial guard's ticket is given back).
	for _, h := range g.cfg.Limiter.Snapshot(time.Now()).Hosts {
		if h.Counters.Requests != 0 {
			t.Errorf("the limiter counts %d requests to %s, want none", h.Counters.Requests, h.Host)
		}
	}
}

// A name that resolves to a private address here is refused when the exit
// is a proxy, which resolves the name itself (and, on this machine, reaches
// what it says: a name for 127.0.0.1 fetched the gateway's own metrics
// through a tinyproxy exit, GET and CONNECT alike, in a helper's blind run).
// The machine's own name is used where it resolves to loopback; a name no
// resolver here knows goes through a resolver the test sets (a mock: no DNS
// server to run here), to check the refusal on every machine.
func TestPrivateNameThroughProxyExit(t *testing.T) {
	spyAddr, spied := listenerSpy(t)
	_, spyPort, _ := net.SplitHostPort(spyAddr)
	exits, err := pool.Parse(strings.NewReader("http://"+spyAddr+"\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	g, proxy := newGateway(t, Config{Exits: exits})
	g.names.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		if host == "inside.test" {
			return []netip.Addr{netip.MustParseAddr("10.0.0.7")}, nil
		}
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}
	names := []string{"inside.test"}
	if name := loopbackName(); name != "" {
		names = append(names, name)
	}
	for _, name := range names {
		for _, head := range []string{
			"GET http://" + name + ":" + spyPort + "/metrics HTTP/1.1\r\nHost: " + name + "\r\n\r\n",
			"CONNECT " + name + ":443 HTTP/1.1\r\nHost: " + name + ":443\r\n\r\n",
		} {
			status, h, body := rawRequest(t, proxy, head)
			if status != 403 || h.Get(HeaderReason) != "private target" {
				t.Errorf("%q: %d (%s) %q, want 403 private target", strings.SplitN(head, "\r", 2)[0], status, h.Get(HeaderReason), body)
			}
		}
	}
	if n := spied.Load(); n != 0 {
		t.Errorf("the proxy exit was asked %d times, want 0: nothing sent", n)
	}
}

// A request that would come back to the gateway is refused, even with
// private targets allowed: by address, by localhost, by a name, and
// through CONNECT.
func TestLoopRefused(t *testing.T) {
	var logs syncbuf.Buffer
	g, err := New(Config{Limiter: fast(t), AllowPrivate: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gwPort := ln.Addr().(*net.TCPAddr).Port
	g.cfg.ConnectPorts = append(g.cfg.ConnectPorts, gwPort) // so that CONNECT gets as far as the loop check
	g.ports[gwPort] = true
	go g.Serve(ln)
	t.Cleanup(func() { g.Close() })
	proxy := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	self := ln.Addr().String()
	p := strconv.Itoa(gwPort)
	heads := []string{
		"GET http://" + self + "/ HTTP/1.1\r\nHost: " + self + "\r\n\r\n",
		"GET http://localhost:" + p + "/x HTTP/1.1\r\nHost: localhost:" + p + "\r\n\r\n",
		"GET http://127.0.0.9:" + p + "/x HTTP/1.1\r\nHost: 127.0.0.9:" + p + "\r\n\r\n",
		"CONNECT " + self + " HTTP/1.1\r\nHost: " + self + "\r\n\r\n",
	}
	if name := loopbackName(); name != "" {
		heads = append(heads, "GET http://"+name+":"+p+"/ HTTP/1.1\r\nHost: "+name+"\r\n\r\n")
	}
	// An IPv6 address is said with its brackets (it read ::1:8899).
	status, _, body := rawRequest(t, proxy, "GET http://[::1]:"+p+"/ HTTP/1.1\r\nHost: [::1]:"+p+"\r\n\r\n")
	if status != http.StatusLoopDetected || !strings.Contains(body, "[::1]:"+p+" is this gateway") {
		t.Errorf("GET [::1]:%s: %d %q, want 508 naming [::1]:%s", p, status, body, p)
	}
	for _, head := range heads {
		status, h, body := rawRequest(t, proxy, head)
		if status != http.StatusLoopDetected || h.Get(HeaderReason) != "loop" {
			t.Errorf("%q: %d (%s) %q, want 508 loop", strings.SplitN(head, "\r\n", 2)[0], status, h.Get(HeaderReason), body)
		}
	}
	loops := len(heads) + 1 // and the IPv6 one
	if st := g.Stats(); st.Refused["loop"] != int64(loops) || st.Done != 0 {
		t.Errorf("stats: %v refused, %d done; want %d loops and nothing forwarded", st.Refused, st.Done, loops)
	}
	// Each refusal is logged with the client's address, as the README
	// says (loop and CONNECT-port refusals logged the target alone).
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "gateway: refused") && !strings.Contains(line, "client=127.0.0.1:") {
			t.Errorf("a refusal logged without the client's address: %s", line)
		}
	}
	if n := strings.Count(logs.String(), "gateway: refused"); n != loops {
		t.Errorf("%d refusals logged, want %d", n, loops)
	}
	// The dial guard refuses the gateway's own address even when a check
	// by name could not tell.
	if err := g.guard("tcp", self, nil); err == nil {
		t.Errorf("guard(%s) = nil, want a refusal", self)
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr string
		auth bool
		open bool
	}{
		{"127.0.0.1:8899", false, false},
		{"127.0.0.2:8899", false, false},
		{"localhost:8899", false, false},
		{"[::1]:8899", false, false},
		{":8899", false, true},
		{"0.0.0.0:8899", false, true},
		{"[::]:8899", false, true},
		{"192.0.2.7:8899", false, true},
		{"0.0.0.0:8899", true, false},
		{"192.0.2.7:8899", true, false},
	} {
		err := CheckListen(tc.addr, tc.auth)
		if got := errors.Is(err, ErrOpenBind); got != tc.open {
			t.Errorf("CheckListen(%q, auth %v) = %v, want open-bind refusal %v", tc.addr, tc.auth, err, tc.open)
		}
	}
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// Bound to every interface, the gateway serves only with client
// credentials, and asks for them; neither the clients' nor the exits'
// credentials reach the log.
func TestNonLoopbackBindNeedsCredentials(t *testing.T) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	g, err := New(Config{Limiter: fast(t), AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Serve(ln); !errors.Is(err, ErrOpenBind) {
		t.Fatalf("Serve(0.0.0.0) without credentials = %v, want ErrOpenBind", err)
	}
	g.Close()

	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" {
			t.Errorf("the origin saw Proxy-Authorization")
		}
		io.WriteString(w, "ok")
	})
	var logs bytes.Buffer
	g, err = New(Config{Limiter: fast(t), AllowPrivate: true, Auth: &Credentials{User: "scraper", Password: "Gw-Secret-77"},
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(func() { g.Close() })
	proxy := &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))}
	target := strings.TrimPrefix(o.URL, "http://")
	for _, tc := range []struct {
		auth   string
		status int
	}{
		{"", http.StatusProxyAuthRequired},
		{basic("scraper", "wrong-Secret-1"), http.StatusProxyAuthRequired},
		{basic("intruder", "Gw-Secret-77"), http.StatusProxyAuthRequired},
		{basic("scraper", "Gw-Secret-77"), http.StatusOK},
		{basic("scraper-session-s9", "Gw-Secret-77"), http.StatusOK},
	} {
		head := "GET " + o.URL + "/ HTTP/1.1\r\nHost: " + target + "\r\n"
		if tc.auth != "" {
			head += "Proxy-Authorization: " + tc.auth + "\r\n"
		}
		status, h, _ := rawRequest(t, proxy, head+"\r\n")
		if status != tc.status {
			t.Errorf("GET with %q: %d, want %d", tc.auth, status, tc.status)
		}
		if status == http.StatusProxyAuthRequired && !strings.HasPrefix(h.Get("Proxy-Authenticate"), "Basic") {
			t.Errorf("407 without a Basic challenge: %q", h.Get("Proxy-Authenticate"))
		}
	}
	status, _, _ := rawRequest(t, proxy, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
	if status != http.StatusProxyAuthRequired {
		t.Errorf("CONNECT without credentials: %d, want 407", status)
	}
	if st := g.Stats(); st.Sessions != 1 {
		t.Errorf("%d sessions, want 1 (from the user name scraper-session-s9)", st.Sessions)
	}
	for _, secret := range []string{"Gw-Secret-77", "wrong-Secret-1", base64.StdEncoding.EncodeToString([]byte("scraper:Gw-Secret-77"))} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log shows %q", secret)
		}
	}
	if !strings.Contains(logs.String(), "wrong credentials") {
		t.Errorf("the log does not say why clients were refused:\n%s", logs.String())
	}
}

// A request to the gateway itself in origin form gets a hint, and the CA
// certificate at /ca.pem, never its key.
func TestLocalRequests(t *testing.T) {
	authority, _, err := ca.Init(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, proxy := newGateway(t, Config{CA: authority})
	status, _, body := rawRequest(t, proxy, "GET /ca.pem HTTP/1.1\r\nHost: "+proxy.Host+"\r\n\r\n")
	if status != 200 || body != string(authority.PEM()) {
		t.Errorf("GET /ca.pem = %d %q, want the CA certificate", status, body)
	}
	status, _, body = rawRequest(t, proxy, "GET / HTTP/1.1\r\nHost: "+proxy.Host+"\r\n\r\n")
	if status != 400 || !strings.Contains(body, "forward proxy") {
		t.Errorf("GET / = %d %q, want a hint", status, body)
	}
	if strings.Contains(body, "PRIVATE") {
		t.Error("a local answer holds a private key")
	}
}

// TestServeRefusesSelfExit: Serve refuses a listener one of the exits'
// proxy addresses reaches (ErrSelfExit), by address or by name.
func TestServeRefusesSelfExit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, line := range []string{"http://127.0.0.1:" + port, "socks5://localhost:" + port, "127.0.0.1:" + port + ":user:pw"} {
		exits, err := pool.Parse(strings.NewReader("direct\n"+line+"\n"), "t")
		if err != nil {
			t.Fatal(err)
		}
		g, err := New(Config{Limiter: fast(t), Exits: exits})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Serve(ln); !errors.Is(err, ErrSelfExit) || strings.Contains(err.Error(), "pw") {
			t.Errorf("Serve with exit %s on its own address = %v, want ErrSelfExit, without the password", line, err)
		}
		g.Close()
	}
	exits, _ := pool.Parse(strings.NewReader("http://127.0.0.1:1\n"), "t")
	if err := CheckExits(context.Background(), ln, exits); err != nil {
		t.Errorf("CheckExits(another port) = %v, want nil", err)
	}
}
