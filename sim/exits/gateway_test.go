package exits

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
)

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func newGateway(t *testing.T, c GatewayConfig) *Gateway {
	t.Helper()
	g, err := NewGateway(c)
	if err != nil {
		t.Fatalf("NewGateway error %v", err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// Failure answers need no sockets: the gateway refuses before dialing.
func TestGatewayRefusals(t *testing.T) {
	pool := newPool(t, Config{Exits: 3, Username: "user", Password: "pw", ConnectFailExits: []string{"exit-02"}})
	rotating := newGateway(t, GatewayConfig{Pool: pool})
	pinnedDead := newGateway(t, GatewayConfig{Pool: pool, Exit: "exit-02"})
	for _, tc := range []struct {
		name       string
		g          *Gateway
		method     string
		target     string
		auth       string
		want       int
		wantHeader string
	}{
		{"no credentials", rotating, "GET", "http://127.0.0.1:1/", "", 407, "Proxy-Authenticate"},
		{"bad password", rotating, "GET", "http://127.0.0.1:1/", basic("user", "no"), 407, "Proxy-Authenticate"},
		{"pinned bad credentials", pinnedDead, "GET", "http://127.0.0.1:1/", basic("x", "pw"), 407, "Proxy-Authenticate"},
		{"dead exit", pinnedDead, "GET", "http://127.0.0.1:1/", basic("user", "pw"), 502, "Proxy-Status"},
		{"dead exit connect", pinnedDead, "CONNECT", "127.0.0.1:1", basic("user", "pw"), 502, "Proxy-Status"},
		{"not loopback", rotating, "GET", "http://192.0.2.1/", basic("user", "pw"), 403, ""},
		{"origin form", rotating, "GET", "/path", basic("user", "pw"), 400, ""},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		if tc.method == "CONNECT" {
			r.Host, r.URL = tc.target, &url.URL{Host: tc.target}
		}
		if tc.auth != "" {
			r.Header.Set("Proxy-Authorization", tc.auth)
		}
		w := httptest.NewRecorder()
		tc.g.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, w.Code, tc.want, w.Body.String())
		}
		if tc.wantHeader != "" && w.Header().Get(tc.wantHeader) == "" {
			t.Errorf("%s: header %s missing", tc.name, tc.wantHeader)
		}
	}
	if _, err := NewGateway(GatewayConfig{}); !errors.Is(err, ErrConfig) {
		t.Errorf("NewGateway without pool: %v, want ErrConfig", err)
	}
	if _, err := NewGateway(GatewayConfig{Pool: pool, Exit: "exit-77"}); !errors.Is(err, ErrConfig) {
		t.Errorf("NewGateway pinned to a missing exit: %v, want ErrConfig", err)
	}
}

func skipUnlessLoopbackAliases(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("binding 127.0.0.x source addresses without setup needs Linux")
	}
}

// echo answers with the client address it sees and the credential header.
func echo(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	io.WriteString(w, host+"|"+r.Header.Get("Proxy-Authorization"))
}

func fetch(t *testing.T, c *http.Client, u string) (ip, auth string, resp *http.Response) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	ip, auth, _ = strings.Cut(string(b), "|")
	return ip, auth, resp
}

func proxyClient(proxy *url.URL, tlsConf *tls.Config) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: tlsConf, DisableKeepAlives: true}}
}

// Real sockets: the gateway dials from each exit's 127.0.0.x address, sticky
// by session username, rotating without one, plain HTTP and CONNECT alike.
func TestGatewayRealSockets(t *testing.T) {
	skipUnlessLoopbackAliases(t)
	site := httptest.NewServer(http.HandlerFunc(echo))
	defer site.Close()
	tlsSite := httptest.NewTLSServer(http.HandlerFunc(echo))
	defer tlsSite.Close()
	tlsConf := tlsSite.Client().Transport.(*http.Transport).TLSClientConfig

	pool := newPool(t, Config{Exits: 4, Username: "user", Password: "pw"})
	gw, err := StartGateway(GatewayConfig{Pool: pool, ExitIPHeader: "X-Exit-IP", ForwardProxyAuth: true})
	if err != nil {
		t.Fatalf("StartGateway: %v", err)
	}
	defer gw.Close()

	sticky := *gw.URL
	sticky.User = url.UserPassword("user-session-9", "pw")
	c := proxyClient(&sticky, tlsConf)
	want, _ := pool.Route("", "9", t0)
	for range 3 {
		ip, auth, resp := fetch(t, c, site.URL)
		if ip != want || resp.Header.Get("X-Exit-IP") != want {
			t.Errorf("sticky session 9: site saw %s (X-Exit-IP %q), want %s", ip, resp.Header.Get("X-Exit-IP"), want)
		}
		if auth != basic("user-session-9", "pw") {
			t.Errorf("ForwardProxyAuth: site saw Proxy-Authorization %q", auth)
		}
		if ip, _, _ := fetch(t, c, tlsSite.URL); ip != want {
			t.Errorf("sticky session 9 over CONNECT: site saw %s, want %s", ip, want)
		}
	}

	rot := *gw.URL
	rot.User = url.UserPassword("user", "pw")
	c = proxyClient(&rot, tlsConf)
	prev := ""
	for i := range 6 {
		ip, _, _ := fetch(t, c, site.URL)
		if !strings.HasPrefix(ip, "127.0.0.1") || ip == prev {
			t.Errorf("rotation %d: site saw %s after %s, want a new exit", i, ip, prev)
		}
		prev = ip
	}

	bad := *gw.URL
	bad.User = url.UserPassword("user", "wrong")
	if _, _, resp := fetch(t, proxyClient(&bad, nil), site.URL); resp.StatusCode != 407 {
		t.Errorf("bad credentials: status %d, want 407", resp.StatusCode)
	}
}

func TestStartExits(t *testing.T) {
	skipUnlessLoopbackAliases(t)
	site := httptest.NewServer(http.HandlerFunc(echo))
	defer site.Close()
	pool := newPool(t, Config{Exits: 3})
	singles, err := StartExits(GatewayConfig{Pool: pool})
	if err != nil {
		t.Fatalf("StartExits: %v", err)
	}
	defer singles.Close()
	for i, u := range singles.URLs() {
		want := pool.Exits()[i].IP.String()
		for range 2 {
			if ip, auth, _ := fetch(t, proxyClient(u, nil), site.URL); ip != want || auth != "" {
				t.Errorf("single exit %d: site saw %s (auth %q), want %s and no credential", i, ip, auth, want)
			}
		}
	}
	if err := singles.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := http.Get(singles.URLs()[0].String()); err == nil {
		t.Errorf("proxy still answers after Close")
	}
}
