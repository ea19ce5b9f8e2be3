package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/verdict"
)

// TestTransportBlamesBrokenProxy: a failure through a proxy that speaks
// garbage, never answers or refuses the SOCKS5 credentials is a proxy
// failure (classify.ProxyError), for plain and tunnelled (CONNECT) targets
// alike; a target that is slow or refuses, behind a working proxy, stays the
// URL's retryable error. These used to be ordinary transport errors, charged
// to the URL until it was abandoned as "retries exhausted".
func TestTransportBlamesBrokenProxy(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing := "http://" + closed.Addr().String() + "/"
	closed.Close()
	socks := startSocks(t, "sam", "SockPw9")
	// A working HTTP proxy in front of a slow target: it answers what it
	// serves itself (the check) at once, and proxied requests late.
	slowProxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.IsAbs() {
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
			return
		}
		http.Error(w, "not a proxy request", http.StatusBadRequest)
	}))
	defer slowProxy.Close()

	tests := []struct {
		name, line, target string
		want               verdict.Verdict
	}{
		{"garbage, plain target", "http://" + peertest.BrokenProxy(t, peertest.Garbage), "http://target.test/x", verdict.ProxyFailure},
		{"garbage, CONNECT", "http://" + peertest.BrokenProxy(t, peertest.Garbage), "https://target.test/x", verdict.ProxyFailure},
		{"black hole, plain target", "http://" + peertest.BrokenProxy(t, peertest.Silent), "http://target.test/x", verdict.ProxyFailure},
		{"black hole, CONNECT", "http://" + peertest.BrokenProxy(t, peertest.Silent), "https://target.test/x", verdict.ProxyFailure},
		{"socks5 garbage", "socks5://" + peertest.BrokenProxy(t, peertest.Garbage), "http://target.test/x", verdict.ProxyFailure},
		{"socks5 black hole", "socks5://" + peertest.BrokenProxy(t, peertest.Silent), "http://target.test/x", verdict.ProxyFailure},
		{"socks5 wrong password", "socks5://sam:nope@" + socks.ln.Addr().String(), "http://target.test/x", verdict.ProxyFailure},
		{"socks5 fine, target refuses", "socks5://sam:SockPw9@" + socks.ln.Addr().String(), refusing, verdict.Retryable},
		{"socks5 fine, target slow", "socks5://sam:SockPw9@" + socks.ln.Addr().String(), slow.URL, verdict.Retryable},
		{"http proxy fine, target slow", "http://" + slowProxy.Listener.Addr().String(), "http://target.test/x", verdict.Retryable},
	}
	for _, tt := range tests {
		e := mustExit(t, tt.line)
		tr := e.Transport(TransportConfig{ProbeTimeout: 300 * time.Millisecond})
		ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tt.target, nil)
		resp, err := tr.RoundTrip(req)
		cancel()
		tr.CloseIdleConnections()
		if resp != nil {
			resp.Body.Close()
		}
		if got := classify.Error(err); got != tt.want {
			t.Errorf("%s: RoundTrip error %v is %v, want %v", tt.name, err, got, tt.want)
		}
		var pe *classify.ProxyError
		if errors.As(err, &pe) && pe.Proxy != e.ID() {
			t.Errorf("%s: ProxyError names %q, want the exit %q", tt.name, pe.Proxy, e.ID())
		}
	}
}

// TestProberSharesOneCheck: failures in a burst cost one check of the proxy.
func TestProberSharesOneCheck(t *testing.T) {
	var mu sync.Mutex
	n := 0
	release := make(chan struct{})
	p := &prober{run: func(context.Context) error {
		mu.Lock()
		n++
		mu.Unlock()
		<-release
		return errors.New("broken")
	}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := p.check(time.Now(), time.Second); err == nil || err.Error() != "broken" {
				t.Errorf("check() = %v, want broken", err)
			}
		})
	}
	close(release)
	wg.Wait()
	if err := p.check(time.Now(), time.Second); err == nil {
		t.Errorf("check() right after = nil, want the standing outcome")
	}
	if n != 1 {
		t.Errorf("%d checks for 9 failures within the TTL, want 1", n)
	}
}

// TestSilentProxyFoundWhileWaiting: a proxy that accepts connections and
// never answers is checked while a request through it waits (SilentAfter),
// and the request ends with a *classify.ProxyError then, not at
// ResponseHeaderTimeout: an explorer on such an exit held its host's search
// for the half minute of --timeout. A slow target behind a working proxy is
// left to answer.
func TestSilentProxyFoundWhileWaiting(t *testing.T) {
	silent := peertest.BrokenProxy(t, peertest.Silent)
	cfg := TransportConfig{ResponseHeaderTimeout: 30 * time.Second, ProbeTimeout: 300 * time.Millisecond, SilentAfter: 200 * time.Millisecond}
	tr := mustExit(t, "http://"+silent).Transport(cfg)
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "http://127.0.0.1:9/x", nil)
	start := time.Now()
	_, err := tr.RoundTrip(req)
	var pe *classify.ProxyError
	if !errors.As(err, &pe) {
		t.Fatalf("request through a silent proxy: %v, want a classify.ProxyError", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the silent proxy was found after %v, want within SilentAfter and a check (0.5 s)", took)
	}

	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.RequestURI, "http://") { // proxied: a slow target
			time.Sleep(time.Second)
		}
		fmt.Fprint(w, "answer")
	}))
	defer slow.Close()
	tr = mustExit(t, slow.URL).Transport(cfg)
	defer tr.CloseIdleConnections()
	req, _ = http.NewRequest("GET", "http://127.0.0.1:9/slow", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("a slow target behind a working proxy: %v, want its answer", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "answer" {
		t.Errorf("slow target's body = %q, %v, want %q", body, err, "answer")
	}
}

// TestProbeWithinTheRequestsTime: after a request its deadline ended, the
// check of the proxy takes at most as long again as the request did, not
// ProbeTimeout: a client's 500 ms through a proxy that never answers took
// 5.5 s. The verdict is the same: the proxy's failure.
func TestProbeWithinTheRequestsTime(t *testing.T) {
	e := mustExit(t, "http://"+peertest.BrokenProxy(t, peertest.Silent))
	tr := e.Transport(TransportConfig{}) // ProbeTimeout: DefaultProbeTimeout
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://target.test/x", nil)
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	took := time.Since(start)
	if resp != nil {
		resp.Body.Close()
	}
	if took > 1500*time.Millisecond {
		t.Errorf("RoundTrip with a 500 ms deadline took %v, want at most about twice that", took.Round(time.Millisecond))
	}
	if got := classify.Error(err); got != verdict.ProxyFailure {
		t.Errorf("RoundTrip error %v is %v, want the proxy's failure", err, got)
	}
}
