package pool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/verdict"
)

// TestRealTinyproxyExits: two tinyproxy exits bound to 127.0.0.11 and .12 in front of
// nginx /ip resolve to their bind addresses, for Check and for Identity.
func TestRealTinyproxyExits(t *testing.T) {
	ng := peertest.StartNginx(t, peertest.NginxConfig{Rate: "100r/s", Burst: 50})
	p1 := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.11"})
	p2 := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.12"})
	exits, err := Parse(strings.NewReader(p1.URL()+"\n"+strings.TrimPrefix(p2.URL(), "http://")+"\n"), "real")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(context.Background(), exits, CheckConfig{EchoURL: ng.URL() + "/ip", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"127.0.0.11", "127.0.0.12"} {
		if r := res[i]; r.Problem != NoProblem || r.IP.String() != want {
			t.Errorf("Check(%v) = %v %v %q, want ok %s", r.Exit, r.Problem, r.IP, r.Detail, want)
		}
	}
	id, err := NewIdentity(IdentityConfig{EchoURL: ng.URL() + "/ip"})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"127.0.0.11", "127.0.0.12"} {
		tr := exits[i].Transport(TransportConfig{})
		ip, err := id.Resolve(context.Background(), exits[i].ID(), tr)
		tr.CloseIdleConnections()
		if err != nil || ip.String() != want || id.Key(exits[i].ID()) != want {
			t.Errorf("Resolve(%v) = %v, %v (key %q); want %s", exits[i], ip, err, id.Key(exits[i].ID()), want)
		}
	}
	// nginx saw each exit as its own client address.
	seen := map[string]bool{}
	for _, e := range ng.AccessLog(t, 4) {
		seen[e.RemoteAddr] = true
	}
	if !seen["127.0.0.11"] || !seen["127.0.0.12"] || seen["127.0.0.1"] {
		t.Errorf("nginx saw clients %v, want exactly 127.0.0.11 and 127.0.0.12", seen)
	}
}

// TestRealTinyproxyCredentials: wrong or missing credentials are reported as a
// credential problem, over plain HTTP and over CONNECT.
func TestRealTinyproxyCredentials(t *testing.T) {
	ng := peertest.StartNginx(t, peertest.NginxConfig{Rate: "100r/s", Burst: 50})
	p := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.13", User: "alice", Password: "rightpw"})
	tlsEcho := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprint(w, host)
	}))
	defer tlsEcho.Close()
	tcfg := TransportConfig{TLSClientConfig: tlsEcho.Client().Transport.(*http.Transport).TLSClientConfig}
	addr := p.Addr()
	tests := []struct {
		line, echo string
		problem    Problem
		detail     string
	}{
		{"http://alice:rightpw@" + addr, ng.URL() + "/ip", NoProblem, ""},
		{"http://alice:WRONGpw@" + addr, ng.URL() + "/ip", Credentials, "proxy rejected credentials (401)"},
		{addr, ng.URL() + "/ip", Credentials, "proxy rejected credentials (407)"},
		{"http://alice:rightpw@" + addr, tlsEcho.URL, NoProblem, ""},
		{"http://alice:WRONGpw@" + addr, tlsEcho.URL, Credentials, "proxy rejected credentials (401)"},
		{addr, tlsEcho.URL, Credentials, "proxy rejected credentials (407)"},
	}
	for _, tt := range tests {
		e := mustExit(t, tt.line)
		res, err := Check(context.Background(), []Exit{e}, CheckConfig{EchoURL: tt.echo, Timeout: 10 * time.Second, Transport: tcfg})
		if err != nil {
			t.Fatal(err)
		}
		r := res[0]
		if r.Problem != tt.problem || r.Detail != tt.detail {
			t.Errorf("Check(%v via %s) = %v %q, want %v %q", e, tt.echo, r.Problem, r.Detail, tt.problem, tt.detail)
		}
		if tt.problem == NoProblem && r.IP.String() != "127.0.0.13" {
			t.Errorf("Check(%v via %s) IP = %v, want 127.0.0.13", e, tt.echo, r.IP)
		}
	}
}

// TestRealTinyproxyConnectDenied: a tinyproxy that allows CONNECT to port
// 443 only refuses one to the test's TLS server with 403: it works, and it
// refuses that target, a *classify.TargetDeniedError (the URL's answer
// through this exit, verdict.Forbidden), not the exit failing; read as a
// proxy failure, one such CONNECT quarantined every exit of a gateway's
// pool. A tinyproxy that does not serve this client at all answers 403 to
// everything, and a check of it finds so: a proxy failure.
func TestRealTinyproxyConnectDenied(t *testing.T) {
	tlsEcho := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer tlsEcho.Close()
	tcfg := TransportConfig{TLSClientConfig: tlsEcho.Client().Transport.(*http.Transport).TLSClientConfig}
	for _, tc := range []struct {
		name string
		cfg  peertest.TinyproxyConfig
		want verdict.Verdict
	}{
		{"a port it does not allow", peertest.TinyproxyConfig{Bind: "127.0.0.13", ConnectPorts: []int{443}}, verdict.Forbidden},
		{"a client it does not serve", peertest.TinyproxyConfig{Bind: "127.0.0.13", Allow: "127.0.0.2"}, verdict.ProxyFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := peertest.StartTinyproxy(t, tc.cfg)
			tr := mustExit(t, p.Addr()).Transport(tcfg)
			defer tr.CloseIdleConnections()
			req, _ := http.NewRequest(http.MethodGet, tlsEcho.URL, nil)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("CONNECT through the proxy passed (%d), want it refused", resp.StatusCode)
			}
			if got := classify.Error(err); got != tc.want {
				t.Errorf("CONNECT refused: %v, verdict %v; want %v", err, got, tc.want)
			}
		})
	}
}

// TestRealTinyproxyKilledMidRequest: a request through a tinyproxy killed
// with SIGKILL while it waits for the origin fails as the proxy's
// (*classify.ProxyError), not as the URL's transport error. The check its
// silence made a moment before the kill found the proxy working, and that
// outcome stood for the failure after it: a crawl charged the URLs in
// flight and abandoned them ("retries exhausted: retryable: closed without
// a response") with a working exit in the pool.
func TestRealTinyproxyKilledMidRequest(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "late")
	}))
	defer origin.Close()
	px := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.13"})
	exits, err := Parse(strings.NewReader(px.URL()), "real")
	if err != nil {
		t.Fatal(err)
	}
	tr := exits[0].Transport(TransportConfig{SilentAfter: 300 * time.Millisecond})
	defer tr.CloseIdleConnections()
	time.AfterFunc(time.Second, func() { px.Kill() }) // after the silence's check passed
	req, _ := http.NewRequest(http.MethodGet, origin.URL+"/slow", nil)
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("a request through a killed proxy answered")
	}
	var pe *classify.ProxyError
	if !errors.As(err, &pe) || classify.Error(err) != verdict.ProxyFailure {
		t.Errorf("through a proxy killed mid-request: %v (%T), want a proxy failure", err, err)
	}
}
