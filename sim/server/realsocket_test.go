package server_test

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/exitgate/exitgate/sim/exits"
	"github.com/exitgate/exitgate/sim/server"
)

// A token-bucket site behind two single-exit proxies bound to 127.0.0.11
// and 127.0.0.12 sees two client IPs and limits each on its own.
func TestRealSocketsPerIP(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("binding 127.0.0.x source addresses without setup needs Linux")
	}
	// Burst 2, refilling once an hour: the outcome cannot depend on timing.
	site, err := server.New(server.Config{Policy: server.Policy{Quota: 1, Window: time.Hour, Burst: 2}, Headers: server.HeadersRetryAfter})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(site)
	defer ts.Close()

	pool, err := exits.New(exits.Config{Exits: 2})
	if err != nil {
		t.Fatal(err)
	}
	proxies, err := exits.StartExits(exits.GatewayConfig{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer proxies.Close()

	for i, u := range proxies.URLs() {
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
		var got []int
		for range 3 {
			resp, err := c.Get(ts.URL + "/page")
			if err != nil {
				t.Fatalf("proxy %d: %v", i, err)
			}
			resp.Body.Close()
			got = append(got, resp.StatusCode)
			if resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "" {
				t.Errorf("proxy %d: 429 without Retry-After", i)
			}
		}
		if got[0] != 200 || got[1] != 200 || got[2] != 429 {
			t.Errorf("proxy %d statuses = %v, want [200 200 429]", i, got)
		}
		c.CloseIdleConnections()
	}
	st := site.Stats()
	if len(st.Keys) != 2 {
		t.Fatalf("site saw keys %v, want 127.0.0.11 and 127.0.0.12", st.Keys)
	}
	for _, ip := range []string{"127.0.0.11", "127.0.0.12"} {
		if c := st.Keys[ip]; c.Allowed != 2 || c.Limited != 1 {
			t.Errorf("site counts for %s = %+v, want 2 allowed, 1 limited", ip, c)
		}
	}
}
