package pool

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/verdict"
)

// echoServer answers every request with the client's address.
func echoServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprint(w, host)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func getVia(t *testing.T, rt http.RoundTripper, u string) (int, string, error) {
	t.Helper()
	c := &http.Client{Transport: rt, Timeout: 10 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestBindExitSourceAddress: a bind exit connects from its own loopback address.
func TestBindExitSourceAddress(t *testing.T) {
	srv := echoServer(t)
	for _, a := range []string{"127.0.0.11", "127.0.0.12"} {
		e := BindExit(netip.MustParseAddr(a))
		tr := e.Transport(TransportConfig{})
		code, body, err := getVia(t, tr, srv.URL)
		tr.CloseIdleConnections()
		if err != nil || code != 200 || body != a {
			t.Errorf("GET via %v = %d %q, %v; want 200 %q", e, code, body, err, a)
		}
	}
}

// fakeProxy records the Proxy-Authorization of each request and answers with status
// (to CONNECT too), or forwards nothing and answers "via-proxy".
type fakeProxy struct {
	srv    *httptest.Server
	status int
	mu     sync.Mutex
	seen   []string // method + " " + Proxy-Authorization
}

func newFakeProxy(t *testing.T, status int) *fakeProxy {
	p := &fakeProxy{status: status}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+r.Header.Get("Proxy-Authorization"))
		p.mu.Unlock()
		if p.status == http.StatusProxyAuthRequired {
			w.Header().Set("Proxy-Authenticate", `Basic realm="fake"`)
		}
		w.WriteHeader(p.status)
		fmt.Fprint(w, "via-proxy")
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakeProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func mustExit(t testing.TB, line string) Exit {
	t.Helper()
	exits, err := Parse(strings.NewReader(line), "test")
	if err != nil || len(exits) != 1 {
		t.Fatalf("Parse(%q) = %v, %v", line, exits, err)
	}
	return exits[0]
}

// TestProxyAuthorization: credentials go out as Proxy-Authorization on plain HTTP and on
// CONNECT, and a refused CONNECT comes back as a classify.ProxyConnectError.
func TestProxyAuthorization(t *testing.T) {
	wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("al ice:p@ss:w"))
	okProxy := newFakeProxy(t, http.StatusOK)
	e := mustExit(t, "http://al%20ice:p%40ss%3Aw@"+okProxy.srv.Listener.Addr().String())
	tr := e.Transport(TransportConfig{})
	defer tr.CloseIdleConnections()
	code, body, err := getVia(t, tr, "http://target.test/x")
	if err != nil || code != 200 || body != "via-proxy" {
		t.Fatalf("plain GET via proxy = %d %q, %v; want 200 via-proxy", code, body, err)
	}
	if got := okProxy.requests(); len(got) != 1 || got[0] != "GET "+wantAuth {
		t.Errorf("plain GET: proxy saw %q, want [%q]", got, "GET "+wantAuth)
	}

	denyProxy := newFakeProxy(t, http.StatusProxyAuthRequired)
	e = mustExit(t, "http://al%20ice:p%40ss%3Aw@"+denyProxy.srv.Listener.Addr().String())
	tr2 := e.Transport(TransportConfig{})
	defer tr2.CloseIdleConnections()
	_, _, err = getVia(t, tr2, "https://target.test/x")
	var pse *classify.ProxyConnectError
	if !errors.As(err, &pse) || pse.StatusCode != 407 || pse.Proxy != e.ID() {
		t.Fatalf("CONNECT via refusing proxy: err = %v, want classify.ProxyConnectError 407", err)
	}
	if strings.Contains(err.Error(), "p@ss") {
		t.Errorf("error %q leaks the password", err)
	}
	if got := denyProxy.requests(); len(got) != 1 || got[0] != "CONNECT "+wantAuth {
		t.Errorf("CONNECT: proxy saw %q, want [%q]", got, "CONNECT "+wantAuth)
	}
}

func TestTransportIgnoresEnvironmentProxy(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	srv := echoServer(t)
	tr := DirectExit().Transport(TransportConfig{DisableHTTP2: true, KeepAlive: -1})
	defer tr.CloseIdleConnections()
	if code, body, err := getVia(t, tr, srv.URL); err != nil || code != 200 || body != "127.0.0.1" {
		t.Errorf("direct GET with HTTP_PROXY set = %d %q, %v; want 200 127.0.0.1", code, body, err)
	}
}

func TestCheckClassifies(t *testing.T) {
	srv := echoServer(t)
	deny := newFakeProxy(t, http.StatusProxyAuthRequired)
	bad := newFakeProxy(t, http.StatusBadGateway)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	lines := []string{
		"bind:127.0.0.21",
		"bind:127.0.0.22",
		"direct",
		"http://u:SECRETpw@" + deny.srv.Listener.Addr().String(),
		"http://u:SECRETpw@" + closedAddr,
		bad.srv.Listener.Addr().String(),
	}
	exits, err := Parse(strings.NewReader(strings.Join(lines, "\n")+"\nbind:127.0.0.21-127.0.0.21x"), "list")
	if err == nil {
		t.Fatal("want an error for the last line")
	}
	exits = append(exits, BindExit(netip.MustParseAddr("127.0.0.1"))) // same IP as direct
	res, err := Check(context.Background(), exits, CheckConfig{EchoURL: srv.URL + "/ip", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		problem Problem
		ip      string
		detail  string
	}{
		{NoProblem, "127.0.0.21", ""},
		{NoProblem, "127.0.0.22", ""},
		{NoProblem, "127.0.0.1", ""},
		{Credentials, "invalid IP", "proxy rejected credentials (407)"},
		{Unreachable, "invalid IP", "proxy unreachable (connection refused)"},
		{EchoError, "invalid IP", "echo URL answered 502 Bad Gateway"},
		{DuplicateIP, "127.0.0.1", "same exit IP as direct"},
	}
	if len(res) != len(want) {
		t.Fatalf("Check: %d results, want %d", len(res), len(want))
	}
	for i, w := range want {
		r := res[i]
		if r.Problem != w.problem || r.IP.String() != w.ip || r.Detail != w.detail {
			t.Errorf("Check(%v) = %v %v %q, want %v %v %q", r.Exit, r.Problem, r.IP, r.Detail, w.problem, w.ip, w.detail)
		}
		if r.Failed() != (w.problem != NoProblem && w.problem != DuplicateIP) {
			t.Errorf("Check(%v).Failed() = %v", r.Exit, r.Failed())
		}
		if strings.Contains(r.Detail, "SECRETpw") {
			t.Errorf("Check(%v) detail %q leaks the password", r.Exit, r.Detail)
		}
	}
	if res[6].DuplicateOf != "direct" {
		t.Errorf("DuplicateOf = %q, want direct", res[6].DuplicateOf)
	}
	if _, err := Check(context.Background(), exits, CheckConfig{EchoURL: "gopher://x"}); err == nil {
		t.Error("Check with a gopher echo URL: nil error, want one")
	}
}

// TestCheckTimeout: an echo server that never answers yields Timeout within the bound.
func TestCheckTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	res, err := Check(context.Background(), []Exit{DirectExit()}, CheckConfig{EchoURL: srv.URL, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Problem != Timeout || res[0].Detail != "no answer within 50ms" {
		t.Errorf("Check(hanging echo) = %v %q, want timeout", res[0].Problem, res[0].Detail)
	}
}

// TestCheckTimeoutBoundsProxyCheck: the check of an exit whose proxy takes
// connections and never answers ends at its timeout, for an HTTP proxy and
// a SOCKS5 one alike: the check of the proxy the transport makes after the
// request's deadline took as long again (SOCKS5: --timeout 2s took 4 s and
// said "no answer within 2.000724731s") or the transport's own 5 s (HTTP:
// 7 s).
func TestCheckTimeoutBoundsProxyCheck(t *testing.T) {
	addr := peertest.BrokenProxy(t, peertest.Silent)
	for _, line := range []string{"http://" + addr, "socks5://" + addr} {
		exits, err := Parse(strings.NewReader(line), "list")
		if err != nil {
			t.Fatal(err)
		}
		timeout := 300 * time.Millisecond
		start := time.Now()
		res, err := Check(context.Background(), exits, CheckConfig{EchoURL: "http://127.0.0.1:1/ip", Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if took > timeout+checkGrace+time.Second {
			t.Errorf("%s: the check took %v, want about its timeout %v", line, took, timeout)
		}
		if r := res[0]; r.Problem != Timeout || r.Detail != "no answer within 300ms" {
			t.Errorf("%s: %v %q, want a timeout said as no answer within 300ms", line, r.Problem, r.Detail)
		}
	}
}

// TestCheckLocal: a bind: exit's source address must be one of this
// machine's; other exits are not checked.
func TestCheckLocal(t *testing.T) {
	if err := BindExit(netip.MustParseAddr("127.0.0.5")).CheckLocal(); err != nil {
		t.Errorf("bind:127.0.0.5 (loopback): %v, want nil", err)
	}
	err := BindExit(netip.MustParseAddr("192.0.2.7")).CheckLocal() // TEST-NET-1: on no machine
	if err == nil || !strings.Contains(err.Error(), "bind:192.0.2.7: 192.0.2.7 is not an address of this machine") {
		t.Errorf("bind:192.0.2.7: %v, want it named as not this machine's", err)
	}
	if err := DirectExit().CheckLocal(); err != nil {
		t.Errorf("direct: %v", err)
	}
}

// A bind exit whose source address cannot reach the target (an IPv6 source
// for an IPv4 target) fails as the exit, a proxy failure, so that the URL
// goes elsewhere uncharged: it was a transport error charged to the URL,
// and a crawl of such an exit alone abandoned every URL as "retries
// exhausted".
func TestBindWrongFamilyIsExitFailure(t *testing.T) {
	srv := echoServer(t)
	tr := BindExit(netip.MustParseAddr("::1")).Transport(TransportConfig{})
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	_, err := tr.RoundTrip(req)
	if err == nil {
		t.Fatal("an IPv6 source reached an IPv4 target")
	}
	if v := classify.Error(err); v != verdict.ProxyFailure {
		t.Errorf("error %v classified %v, want a proxy failure", err, v)
	}
}
