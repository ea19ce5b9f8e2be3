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
	var lines []string
	for _, bind := range []string{"127.0.0.51", "127.0.0.52"} {
		lines = append(lines, peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: bind}).URL())
	}
	exits, err := pool.Parse(strings.NewReader(strings.Join(lines, "\n")+"\n"), "tinyproxies")
	if err != nil {
		t.Fatal(err)
	}
	authority, _, err := ca.Init(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	caRoots := x509.NewCertPool()
	caRoots.AddCert(authority.Certificate())
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
