package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

var echoTests = []struct {
	body string
	want string // "" means error
}{
	{"203.0.113.7", "203.0.113.7"},
	{"203.0.113.7\n", "203.0.113.7"},
	{"2001:db8::7", "2001:db8::7"},
	{"::ffff:203.0.113.7", "203.0.113.7"},
	{`{"ip":"203.0.113.8"}`, "203.0.113.8"},
	{`{"origin": "203.0.113.9, 10.0.0.1"}`, "203.0.113.9"},
	{`{"status":"success","query":"203.0.113.10"}`, "203.0.113.10"},
	{"fl=1\nh=x\nip=203.0.113.11\nts=1\n", "203.0.113.11"},
	{"", ""},
	{"not an ip", ""},
	{`{"ip": 7}`, ""},
	{`{"ip":`, ""},
	{"fl=1\nh=x\n", ""},
	{"<html>203.0.113.7</html>", ""},
}

func TestParseEcho(t *testing.T) {
	for _, tt := range echoTests {
		got, err := ParseEcho([]byte(tt.body))
		if tt.want == "" {
			if err == nil || !errors.Is(err, ErrNoIdentity) {
				t.Errorf("ParseEcho(%q) = %v, %v; want ErrNoIdentity", tt.body, got, err)
			}
			continue
		}
		if err != nil || got.String() != tt.want {
			t.Errorf("ParseEcho(%q) = %v, %v; want %s", tt.body, got, err, tt.want)
		}
	}
}

func TestParseIPHeader(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{" 203.0.113.7 , 10.0.0.1", "203.0.113.7"},
		{"203.0.113.7:4711", "203.0.113.7"},
		{"[2001:db8::1]:80", "2001:db8::1"},
		{"[2001:db8::1]", "2001:db8::1"},
		{"", ""},
		{"fe80::1%eth0", ""},
		{"example.com", ""},
	} {
		got, err := ParseIPHeader(tt.in)
		if (tt.want == "") != (err != nil) || (err == nil && got.String() != tt.want) {
			t.Errorf("ParseIPHeader(%q) = %v, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestIdentityObserveRekeys(t *testing.T) {
	id, err := NewIdentity(IdentityConfig{Header: "X-Exit-IP"})
	if err != nil {
		t.Fatal(err)
	}
	const exit = "gw:7777#session-3"
	if got := id.Key(exit); got != exit {
		t.Errorf("Key before resolution = %q, want the exit ID %q", got, exit)
	}
	a, b := netip.MustParseAddr("203.0.113.1"), netip.MustParseAddr("203.0.113.2")
	steps := []struct {
		header     string
		wantChange bool
		wantOld    netip.Addr
		wantKey    string
	}{
		{"203.0.113.1", true, netip.Addr{}, "203.0.113.1"},
		{"203.0.113.1", false, netip.Addr{}, "203.0.113.1"},
		{"garbage", false, netip.Addr{}, "203.0.113.1"},
		{"", false, netip.Addr{}, "203.0.113.1"},
		{"203.0.113.2", true, a, "203.0.113.2"}, // the sticky session moved
	}
	for i, s := range steps {
		h := http.Header{}
		if s.header != "" {
			h.Set("X-Exit-IP", s.header)
		}
		c, changed := id.ObserveResponse(exit, h)
		if changed != s.wantChange || (changed && (c.Old != s.wantOld || c.ExitID != exit)) {
			t.Errorf("step %d: ObserveResponse(%q) = %+v, %v; want change=%v old=%v", i, s.header, c, changed, s.wantChange, s.wantOld)
		}
		if got := id.Key(exit); got != s.wantKey {
			t.Errorf("step %d: Key = %q, want %q", i, got, s.wantKey)
		}
	}
	if ip, ok := id.IP(exit); !ok || ip != b {
		t.Errorf("IP = %v, %v; want %v", ip, ok, b)
	}
	id.Forget(exit)
	if got := id.Key(exit); got != exit {
		t.Errorf("Key after Forget = %q, want %q", got, exit)
	}
	noHeader, _ := NewIdentity(IdentityConfig{})
	if _, changed := noHeader.ObserveResponse(exit, http.Header{"X-Exit-Ip": {"203.0.113.1"}}); changed {
		t.Error("ObserveResponse without a configured header changed the identity")
	}
}

func TestNewIdentityValidates(t *testing.T) {
	for _, cfg := range []IdentityConfig{
		{Header: "X Exit"},
		{EchoURL: "ftp://x/"},
		{EchoURL: "http://"},
		{EchoURL: "::"},
	} {
		if _, err := NewIdentity(cfg); err == nil {
			t.Errorf("NewIdentity(%+v) = nil error, want one", cfg)
		}
	}
}

// rtFunc adapts a function to http.RoundTripper.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestIdentityResolveOncePerSession: concurrent callers share one echo fetch, and the
// next fetch happens only after Forget. In a synctest bubble with an in-memory
// RoundTripper, synctest.Wait proves every caller is blocked on the shared fetch.
func TestIdentityResolveOncePerSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hits atomic.Int32
		release := make(chan struct{})
		rt := rtFunc(func(r *http.Request) (*http.Response, error) {
			hits.Add(1)
			<-release
			return &http.Response{StatusCode: 200, Header: http.Header{},
				Body: io.NopCloser(strings.NewReader("203.0.113.5"))}, nil
		})
		id, err := NewIdentity(IdentityConfig{EchoURL: "http://echo.test/ip"})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				ip, err := id.Resolve(context.Background(), "gw:1#session-1", rt)
				if err != nil || ip.String() != "203.0.113.5" {
					t.Errorf("Resolve = %v, %v; want 203.0.113.5", ip, err)
				}
			})
		}
		synctest.Wait() // all 8 are blocked: one in the fetch, seven waiting on it
		if got := hits.Load(); got != 1 {
			t.Fatalf("echo fetches with 8 concurrent callers = %d, want 1", got)
		}
		close(release)
		wg.Wait()
		if _, err := id.Resolve(context.Background(), "gw:1#session-1", rt); err != nil || hits.Load() != 1 {
			t.Errorf("cached Resolve = %v, fetches %d; want no new fetch", err, hits.Load())
		}
		id.Forget("gw:1#session-1")
		if _, err := id.Resolve(context.Background(), "gw:1#session-1", rt); err != nil || hits.Load() != 2 {
			t.Errorf("Resolve after Forget = %v, fetches %d; want 2", err, hits.Load())
		}
	})
	none, _ := NewIdentity(IdentityConfig{})
	if _, err := none.Resolve(context.Background(), "x", http.DefaultTransport); !errors.Is(err, ErrNoIdentity) {
		t.Errorf("Resolve without echo URL = %v, want ErrNoIdentity", err)
	}
}

// TestIdentityResolveRealEcho resolves through a direct exit against a loopback echo
// server, and reports a non-200 answer as an EchoStatusError.
func TestIdentityResolveRealEcho(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/down" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		host, _, _ := strings.Cut(r.RemoteAddr, ":")
		fmt.Fprint(w, host)
	}))
	defer srv.Close()
	rt := DirectExit().Transport(TransportConfig{})
	defer rt.CloseIdleConnections()
	id, _ := NewIdentity(IdentityConfig{EchoURL: srv.URL + "/ip"})
	if ip, err := id.Resolve(context.Background(), "direct", rt); err != nil || ip.String() != "127.0.0.1" {
		t.Errorf("Resolve = %v, %v; want 127.0.0.1", ip, err)
	}
	down, _ := NewIdentity(IdentityConfig{EchoURL: srv.URL + "/down"})
	var ese *EchoStatusError
	if _, err := down.Resolve(context.Background(), "direct", rt); !errors.As(err, &ese) || ese.StatusCode != 503 {
		t.Errorf("Resolve(503) = %v, want EchoStatusError 503", err)
	}
}

func FuzzParseEcho(f *testing.F) {
	for _, tt := range echoTests {
		f.Add([]byte(tt.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ip, err := ParseEcho(body)
		if err == nil && !ip.IsValid() {
			t.Fatalf("ParseEcho(%q) = invalid address and no error", body)
		}
		if err != nil && !errors.Is(err, ErrNoIdentity) {
			t.Fatalf("ParseEcho(%q) error %v does not wrap ErrNoIdentity", body, err)
		}
	})
}
