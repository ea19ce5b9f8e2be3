package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exitgate/exitgate/ca"
	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/pool"
)

// HTTPS through real tinyproxy exits, intercepted and passed through: the
// origin sees each exit's own address, never the gateway's.
func TestHTTPSThroughTinyproxyExits(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	o, originRoots := tlsOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[clientIP(r)]++
		mu.Unlock()
		io.WriteString(w, clientIP(r))
	})
	exits := tinyproxyExits(t, "127.0.0.51", "127.0.0.52")
	authority, caRoots := newCA(t)
	for _, mode := range []struct {
		name  string
		ca    *ca.CA
		roots *x509.CertPool
	}{{"intercepted", authority, caRoots}, {"passthrough", nil, originRoots}} {
		t.Run(mode.name, func(t *testing.T) {
			mu.Lock()
			clear(seen)
			mu.Unlock()
			_, proxy := newGateway(t, Config{AllowPrivate: true, CA: mode.ca, Exits: exits, ConnectPorts: []int{port(t, o.URL)},
				Transport: pool.TransportConfig{TLSClientConfig: &tls.Config{RootCAs: originRoots}}})
			for i := range 6 {
				// A new connection each time: a passed-through tunnel picks its lane once.
				c := client(proxy, mode.roots)
				resp, body := get(t, c, fmt.Sprintf("%s/%d", o.URL, i))
				c.CloseIdleConnections()
				if resp.StatusCode != 200 || (body != "127.0.0.51" && body != "127.0.0.52") {
					t.Fatalf("GET %d = %d %q, want 200 from an exit's address", i, resp.StatusCode, body)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 2 {
				t.Errorf("the origin saw clients %v, want both exits", seen)
			}
		})
	}
}

// An HTTPS link to a site that is down is that site's problem: tinyproxy
// answers the CONNECT with 500 ("Unable to connect"), which once read as
// the exit failing and quarantined every exit of the pool, for every
// host, for half a minute. The client gets its 502, and the next request
// to a live origin goes at once.
func TestDeadHTTPSTargetLeavesExitsUp(t *testing.T) {
	o, originRoots := tlsOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up") })
	deadURL := "https://" + peertest.DeadAddr(t) + "/"
	exits := tinyproxyExits(t, "127.0.0.53", "127.0.0.54")
	authority, roots := newCA(t)
	_, proxy := newGateway(t, Config{AllowPrivate: true, CA: authority, Exits: exits,
		ConnectPorts: []int{port(t, o.URL), port(t, deadURL)},
		Transport:    pool.TransportConfig{TLSClientConfig: &tls.Config{RootCAs: originRoots}}})
	c := client(proxy, roots)
	if resp, body := get(t, c, deadURL, HeaderWait, "3s"); resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("GET a dead HTTPS site = %d %q, want 502", resp.StatusCode, body)
	}
	start := time.Now()
	resp, body := get(t, c, o.URL+"/after", HeaderWait, "0")
	if resp.StatusCode != 200 || body != "up" {
		t.Fatalf("GET a live origin after a dead one = %d %q (%s), want 200 at once: the exits were taken for failing",
			resp.StatusCode, body, resp.Header.Get(HeaderReason))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the live origin answered after %v", d)
	}
}

// tinyproxyExits starts a real tinyproxy exit bound to each address and
// returns the pool of them.
func tinyproxyExits(t *testing.T, binds ...string) []pool.Exit {
	t.Helper()
	var lines []string
	for _, bind := range binds {
		lines = append(lines, peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: bind}).URL())
	}
	exits, err := pool.Parse(strings.NewReader(strings.Join(lines, "\n")+"\n"), "tinyproxies")
	if err != nil {
		t.Fatal(err)
	}
	return exits
}

// newCA makes a fresh interception CA and a root pool that trusts it.
func newCA(t *testing.T) (*ca.CA, *x509.CertPool) {
	t.Helper()
	authority, _, err := ca.Init(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(authority.Certificate())
	return authority, roots
}
