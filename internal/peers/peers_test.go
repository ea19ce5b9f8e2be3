package peers_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/exitgate/exitgate/internal/peers"
	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/rlheader"
)

func get(t *testing.T, c *http.Client, u string) (int, http.Header, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", u, err)
	}
	return resp.StatusCode, resp.Header, string(body)
}

// viaProxy is a client that sends through a tinyproxy bound to bind, so the
// target sees that address.
func viaProxy(t *testing.T, bind string) *http.Client {
	t.Helper()
	p := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: bind})
	pu, err := url.Parse(p.URL())
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
}

// untilLimited sends GETs until the first 429 (at most max) and returns the
// statuses and the 429's header; it fails when none came.
func untilLimited(t *testing.T, c *http.Client, u string, max int) ([]int, http.Header) {
	t.Helper()
	var codes []int
	for range max {
		code, h, _ := get(t, c, u)
		codes = append(codes, code)
		if code == 429 {
			return codes, h
		}
		if code != 200 {
			t.Fatalf("GET %s = %d, want 200 or 429", u, code)
		}
	}
	t.Fatalf("GET %s: %d requests, no 429 (%v)", u, max, codes)
	return nil, nil
}

// twoThenLimited sends requests to u through a tinyproxy exit bound to
// bind until one is refused, and checks that two passed before it, as every
// target set to allow 2 per window does. It returns the client, when it
// began, the statuses and the refusal's headers.
func twoThenLimited(t *testing.T, bind, u string) (*http.Client, time.Time, []int, http.Header) {
	t.Helper()
	c := viaProxy(t, bind)
	start := time.Now()
	codes, hdr := untilLimited(t, c, u, 5)
	if want := []int{200, 200, 429}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("statuses = %v, want %v", codes, want)
	}
	return c, start, codes, hdr
}

// passesAgain sends one request to u at start+after and checks that it
// passes (the window ended, or the bucket refilled: why); it returns codes
// with its status added.
func passesAgain(t *testing.T, c *http.Client, u string, start time.Time, after time.Duration, codes []int, why string) []int {
	t.Helper()
	time.Sleep(time.Until(start.Add(after)))
	code, _, _ := get(t, c, u)
	if code != 200 {
		t.Errorf("%s: %d, want 200", why, code)
	}
	return append(codes, code)
}

// waitLog returns the target's access log once it holds want lines.
func waitLog(t *testing.T, read func() ([]peers.AccessEntry, error), want int) []peers.AccessEntry {
	t.Helper()
	deadline := time.Now().Add(peers.StartTimeout)
	for {
		log, err := read()
		if err != nil {
			t.Fatal(err)
		}
		if len(log) >= want || time.Now().After(deadline) {
			return log
		}
		time.Sleep(5 * time.Millisecond) // polling a file the server appends to; bounded above
	}
}

// checkLog checks that log holds codes, in order, all from addr, timed
// within the test's span.
func checkLog(t *testing.T, log []peers.AccessEntry, codes []int, addr string, from time.Time) {
	t.Helper()
	if len(log) != len(codes) {
		t.Fatalf("access log has %d lines, want %d (%v): %+v", len(log), len(codes), codes, log)
	}
	for i, e := range log {
		if e.RemoteAddr != addr || e.Status != codes[i] {
			t.Errorf("access log line %d = %s %d, want %s %d", i, e.RemoteAddr, e.Status, addr, codes[i])
		}
		if e.Time.Before(from.Add(-time.Second)) || e.Time.After(time.Now().Add(time.Second)) {
			t.Errorf("access log line %d at %v, want within the test (from %v)", i, e.Time, from)
		}
	}
}

func TestNginxLimitsPerAddress(t *testing.T) {
	n := peertest.StartNginx(t, peertest.NginxConfig{Rate: "1r/s", RetryAfter: "7",
		Files: map[string]string{"page.txt": "hello\n"}})
	c := &http.Client{Timeout: 5 * time.Second}

	code, _, body := get(t, c, n.URL()+"/ip")
	if code != 200 || body != "127.0.0.1" {
		t.Fatalf("GET /ip = %d %q, want 200 %q", code, body, "127.0.0.1")
	}
	// At 1r/s with no burst, a second request within the same second is rejected; a few
	// tries bound the case where the first one straddled a second boundary.
	var got429 bool
	requests := 1
	for range 5 {
		requests++
		code, h, body := get(t, c, n.URL()+"/page.txt")
		if code == 429 {
			if ra := h.Get("Retry-After"); ra != "7" {
				t.Errorf("429 Retry-After = %q, want %q", ra, "7")
			}
			got429 = true
			break
		}
		if code != 200 || body != "hello\n" {
			t.Fatalf("GET /page.txt = %d %q, want 200 %q or 429", code, body, "hello\n")
		}
		if ra := h.Get("Retry-After"); ra != "" {
			t.Errorf("200 carries Retry-After %q, want none", ra)
		}
	}
	if !got429 {
		t.Fatal("5 requests in a row at 1r/s: no 429")
	}
	log := n.AccessLog(t, requests)
	var rejected, passed int
	for _, e := range log {
		if e.RemoteAddr != "127.0.0.1" {
			t.Errorf("access log addr = %q, want 127.0.0.1", e.RemoteAddr)
		}
		switch {
		case e.Status == 429 && e.Limit == "REJECTED":
			rejected++
		case e.Status == 200 && e.Limit == "PASSED":
			passed++
		default:
			t.Errorf("access log entry %+v: want 200 PASSED or 429 REJECTED", e)
		}
	}
	if rejected != 1 || passed < 1 {
		t.Errorf("access log: %d rejected, %d passed; want 1 and >= 1 (%+v)", rejected, passed, log)
	}
}

// A fallback file serves any path, limited like the rest; NoRetryAfter
// sends a bare 429.
func TestNginxFallbackWithoutRetryAfter(t *testing.T) {
	n := peertest.StartNginx(t, peertest.NginxConfig{Rate: "1r/m", Burst: 2, NoRetryAfter: true,
		Files: map[string]string{"page.txt": "page\n"}, Fallback: "page.txt"})
	c := &http.Client{Timeout: 5 * time.Second}
	start := time.Now()
	var codes []int
	for i := range 4 {
		code, h, body := get(t, c, fmt.Sprintf("%s/p/%d", n.URL(), i))
		codes = append(codes, code)
		if code == 200 && body != "page\n" {
			t.Errorf("GET /p/%d = %q, want the fallback page", i, body)
		}
		if ra, ok := h["Retry-After"]; ok {
			t.Errorf("GET /p/%d: Retry-After %q, want none", i, ra)
		}
	}
	// 1r/m with burst 2 nodelay: 3 pass at once, the fourth is rejected.
	if want := []int{200, 200, 200, 429}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("statuses = %v, want %v", codes, want)
	}
	checkLog(t, n.AccessLog(t, len(codes)), codes, "127.0.0.1", start)
}

// At nginx's default limit_req_status a rejected request is a bare 503,
// which only the access log's limit=REJECTED tells from an overload; an
// out-of-range Status is refused before nginx starts.
func TestNginxStatus503(t *testing.T) {
	n := peertest.StartNginx(t, peertest.NginxConfig{Rate: "1r/m", Status: 503, NoRetryAfter: true,
		Files: map[string]string{"page.txt": "page\n"}, Fallback: "page.txt"})
	c := &http.Client{Timeout: 5 * time.Second}
	var codes []int
	for i := range 2 {
		code, h, _ := get(t, c, fmt.Sprintf("%s/p/%d", n.URL(), i))
		codes = append(codes, code)
		if ra, ok := h["Retry-After"]; ok {
			t.Errorf("GET /p/%d: Retry-After %q, want none", i, ra)
		}
	}
	if want := []int{200, 503}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("statuses = %v, want %v", codes, want)
	}
	log := n.AccessLog(t, len(codes))
	if len(log) != 2 || log[1].Status != 503 || log[1].Limit != "REJECTED" || log[0].Limit != "PASSED" {
		t.Errorf("access log = %+v, want a PASSED 200 and a REJECTED 503", log)
	}
	if _, err := peers.StartNginx(peers.NginxConfig{Status: 200}); err == nil || !strings.Contains(err.Error(), "Status 200") {
		t.Errorf("StartNginx(Status: 200) error = %v, want one naming Status 200", err)
	}
}

// Without nodelay a burst is queued: requests beyond the rate wait their
// turn and are answered late, and only those beyond the burst get a 429.
func TestNginxBurstWithoutNodelay(t *testing.T) {
	n := peertest.StartNginx(t, peertest.NginxConfig{Rate: "2r/s", Burst: 2, Delay: true, NoRetryAfter: true,
		Files: map[string]string{"page.txt": "page\n"}, Fallback: "page.txt"})
	c := &http.Client{Timeout: 10 * time.Second}
	start := time.Now()
	codes := make([]int, 4)
	took := make([]time.Duration, 4)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() {
			resp, err := c.Get(fmt.Sprintf("%s/p/%d", n.URL(), i))
			if err != nil {
				t.Error(err) // not get: no t.Fatal outside the test's goroutine
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i], took[i] = resp.StatusCode, time.Since(start)
		})
	}
	wg.Wait()
	var ok, limited int
	var slowest time.Duration
	for i, code := range codes {
		switch code {
		case 200:
			ok++
			slowest = max(slowest, took[i])
		case 429:
			limited++
		}
	}
	// 2r/s, burst 2: one at once, two held 0.5 s and 1 s, the fourth rejected.
	if ok != 3 || limited != 1 {
		t.Errorf("statuses = %v, want three 200s and one 429", codes)
	}
	if slowest < 900*time.Millisecond {
		t.Errorf("the last 200 came after %v, want about 1 s: held, not served at once", slowest)
	}
}

func TestTinyproxyBindsExitAddress(t *testing.T) {
	n := peertest.StartNginx(t, peertest.NginxConfig{Rate: "100r/s", Burst: 100})
	for _, bind := range []string{"127.0.0.11", "127.0.0.12"} {
		code, _, body := get(t, viaProxy(t, bind), n.URL()+"/ip")
		if code != 200 || body != bind {
			t.Errorf("GET /ip via tinyproxy bound to %s = %d %q, want 200 %q", bind, code, body, bind)
		}
	}
}

func TestTinyproxyBasicAuth(t *testing.T) {
	n := peertest.StartNginx(t, peertest.NginxConfig{Rate: "100r/s", Burst: 100})
	p := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.13", User: "alice", Password: "s3cret"})
	if !strings.Contains(p.URL(), "alice:s3cret@") {
		t.Fatalf("URL() = %q, want credentials in it", p.URL())
	}
	for _, tt := range []struct {
		user *url.Userinfo
		want int
	}{
		{url.UserPassword("alice", "s3cret"), 200},
		// tinyproxy 1.11 answers missing credentials with 407 but wrong ones with
		// 401 and WWW-Authenticate; callers that classify proxy failures must know.
		{url.UserPassword("alice", "wrong"), 401},
		{nil, 407},
	} {
		pu := &url.URL{Scheme: "http", Host: p.Addr(), User: tt.user}
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
		code, _, _ := get(t, c, n.URL()+"/ip")
		if code != tt.want {
			t.Errorf("GET via proxy with %v = %d, want %d", tt.user, code, tt.want)
		}
	}
}

// haproxy counts the denied requests too: past the limit, every request is
// denied while the client keeps sending, with the configured Retry-After.
func TestHAProxyCountsDenied(t *testing.T) {
	h := peertest.StartHAProxy(t, peertest.HAProxyConfig{Limit: 2, Period: 10 * time.Second, RetryAfter: "30"})
	c, start, codes, hdr := twoThenLimited(t, "127.0.0.15", h.URL()+"/p/1")
	if ra := hdr.Get("Retry-After"); ra != "30" {
		t.Errorf("429 Retry-After = %q, want 30", ra)
	}
	for range 2 {
		code, _, _ := get(t, c, h.URL()+"/p/2")
		codes = append(codes, code)
	}
	checkLog(t, waitLog(t, h.AccessLog, len(codes)), codes, "127.0.0.15", start)
}

// haproxy's ban (gpc0 set over the rate) denies a client while it keeps
// sending, long after its rate fell under the limit, and lets it through
// once it was quiet for the ban's length.
func TestHAProxyBan(t *testing.T) {
	h := peertest.StartHAProxy(t, peertest.HAProxyConfig{Limit: 2, Period: time.Second, Ban: 2 * time.Second})
	c, start, codes, _ := twoThenLimited(t, "127.0.0.35", h.URL()+"/p/1")
	// 1.5 s on, the rate over a second is under the limit: the ban alone
	// denies it, and renews itself.
	time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
	code, _, _ := get(t, c, h.URL()+"/p/2")
	if code != 429 {
		t.Errorf("1.5 s after the 429, under the rate: %d, want 429 (banned)", code)
	}
	codes = append(codes, code)
	codes = passesAgain(t, c, h.URL()+"/p/3", start, 4*time.Second, codes, "2.5 s after the last denied request, the ban expired")
	checkLog(t, waitLog(t, h.AccessLog, len(codes)), codes, "127.0.0.35", start)
}

// flask-limiter's moving window sends its headers on every response,
// Retry-After included.
func TestFlaskMovingWindow(t *testing.T) {
	f := peertest.StartFlask(t, peertest.FlaskConfig{Limit: "3 per minute", Strategy: "moving-window"})
	c := viaProxy(t, "127.0.0.16")
	start := time.Now()
	codes, hdr := untilLimited(t, c, f.URL()+"/p/1", 5)
	if want := []int{200, 200, 200, 429}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("statuses = %v, want %v", codes, want)
	}
	for _, k := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"} {
		if hdr.Get(k) == "" {
			t.Errorf("429 has no %s header (%v)", k, hdr)
		}
	}
	if hdr.Get("X-RateLimit-Limit") != "3" || hdr.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("429 X-RateLimit-Limit %q Remaining %q, want 3 and 0", hdr.Get("X-RateLimit-Limit"), hdr.Get("X-RateLimit-Remaining"))
	}
	checkLog(t, waitLog(t, f.AccessLog, len(codes)), codes, "127.0.0.16", start)
}

// With its headers off (flask-limiter's default), a 429 is bare and no
// response carries a rate-limit field.
func TestFlaskNoHeaders(t *testing.T) {
	f := peertest.StartFlask(t, peertest.FlaskConfig{Limit: "2 per minute", Strategy: "moving-window", NoHeaders: true})
	c := &http.Client{Timeout: 5 * time.Second}
	for i := range 3 {
		code, h, _ := get(t, c, f.URL()+"/p/1")
		if want := []int{200, 200, 429}[i]; code != want {
			t.Errorf("request %d: status %d, want %d", i+1, code, want)
		}
		for k := range h {
			if strings.HasPrefix(k, "X-Ratelimit") || k == "Retry-After" {
				t.Errorf("request %d: %s: %q, want no rate-limit header", i+1, k, h.Get(k))
			}
		}
	}
}

func TestGoServers(t *testing.T) {
	for _, tt := range []struct {
		name    string
		limiter func(http.Handler) http.Handler
		codes   []int
		headers []string // on the 429
	}{
		{"xrate", peers.XRate(0.5, 2), []int{200, 200, 429}, nil},
		{"httprate", peers.HTTPRate(2, time.Minute, false), []int{200, 200, 429},
			[]string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Retry-After"}},
		{"httprate-stripped", peers.HTTPRate(2, time.Minute, true), []int{200, 200, 429}, nil},
		// The held-out middlewares (peerbench.Holdouts).
		{"throttled", must(peers.Throttled(0.5, 1)), []int{200, 200, 429},
			[]string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Retry-After"}},
		{"go-limiter", must(peers.GoLimiter(2, time.Minute)), []int{200, 200, 429},
			[]string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Retry-After"}},
		{"ulule", peers.Ulule(2, time.Minute), []int{200, 200, 429},
			[]string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"}},
		{"tollbooth", peers.Tollbooth(0.5, 2), []int{200, 200, 429}, nil}, // RateLimit-*, not X-RateLimit-*
		{"fiber-fixed", peers.Fiber(2, time.Minute, false), []int{200, 200, 429}, []string{"Retry-After"}},
		{"fiber-sliding", peers.Fiber(2, time.Minute, true), []int{200, 200, 429}, []string{"Retry-After"}},
		{"echo", peers.Echo(0.5), []int{200, 429}, nil}, // a burst of 0.5 rounded up
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := peertest.StartGoServer(t, peertest.GoServerConfig{Name: tt.name, Limiter: tt.limiter})
			c := &http.Client{Timeout: 5 * time.Second}
			start := time.Now()
			codes, hdr := untilLimited(t, c, s.URL()+"/p/1", 5)
			if fmt.Sprint(codes) != fmt.Sprint(tt.codes) {
				t.Errorf("statuses = %v, want %v", codes, tt.codes)
			}
			var got []string
			for k := range hdr {
				if strings.HasPrefix(k, "X-Ratelimit") || k == "Retry-After" {
					got = append(got, k)
				}
			}
			if len(got) != len(tt.headers) {
				t.Errorf("429 rate-limit headers %v, want %v", got, tt.headers)
			}
			checkLog(t, waitLog(t, s.AccessLog, len(codes)), codes, "127.0.0.1", start)
		})
	}
}

// must is a middleware constructor's result that cannot fail here.
func must(mw func(http.Handler) http.Handler, err error) func(http.Handler) http.Handler {
	if err != nil {
		panic(err)
	}
	return mw
}

func TestRedisAnswersPing(t *testing.T) {
	r := peertest.StartRedis(t)
	c, err := net.DialTimeout("tcp", r.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprint(c, "*1\r\n$4\r\nPING\r\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "+PONG\r\n" {
		t.Fatalf("PING = %q, %v; want %q", line, err, "+PONG\r\n")
	}
}

// Close kills the peer: its port stops answering, and a temporary
// directory is gone.
func TestCloseStopsPeer(t *testing.T) {
	n, err := peers.StartNginx(peers.NginxConfig{})
	peertest.Check(t, err)
	dir := filepath.Dir(n.Root())
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if c, err := net.DialTimeout("tcp", n.Addr(), time.Second); err == nil {
		c.Close()
		t.Errorf("nginx still listens on %s after Close", n.Addr())
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary dir %s after Close: %v, want gone", dir, err)
	}
}

// A peer that cannot start names itself and shows its log.
func TestStartFailureNamesPeer(t *testing.T) {
	peertest.Require(t, "nginx")
	_, err := peers.StartNginx(peers.NginxConfig{Rate: "fast"})
	if err == nil || !strings.Contains(err.Error(), "nginx 127.0.0.1:") || !strings.Contains(err.Error(), `invalid rate "rate=fast"`) {
		t.Fatalf("StartNginx with a bad rate = %v, want an error naming nginx with its log", err)
	}
}

func TestNotInstalled(t *testing.T) {
	_, err := peers.LookPath("exitgate-no-such-peer")
	var nie *peers.NotInstalledError
	if !errors.Is(err, peers.ErrNotInstalled) || !errors.As(err, &nie) || nie.Package != "exitgate-no-such-peer" {
		t.Fatalf("LookPath(missing) = %v, want a NotInstalledError naming the package", err)
	}
	_, err = peers.StartFlask(peers.FlaskConfig{Limit: "1 per second", Python: "/nonexistent/python3"})
	if !errors.Is(err, peers.ErrNotInstalled) || !strings.Contains(err.Error(), "python3-flask-limiter") {
		t.Fatalf("StartFlask without flask_limiter = %v, want ErrNotInstalled naming python3-flask-limiter", err)
	}
}

func TestWaitListeningTimesOut(t *testing.T) {
	// A port nobody listens on: the helper must give up within its bound.
	port, err := peers.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	start := time.Now()
	if err := peers.WaitListening(addr, 100*time.Millisecond, nil); err == nil {
		t.Fatalf("WaitListening(%s) = nil, want an error", addr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("WaitListening took %v, want about 100ms", d)
	}
}

func TestParseAccessLine(t *testing.T) {
	at := time.Unix(1796092103, 281e6)
	tests := []struct {
		line string
		want peers.AccessEntry
		ok   bool
	}{
		{`1796092103.281 127.0.0.11 429 limit=REJECTED "GET /ip HTTP/1.1"`, peers.AccessEntry{Time: at, RemoteAddr: "127.0.0.11", Status: 429, Limit: "REJECTED", Request: "GET /ip HTTP/1.1"}, true},
		{`1796092103.281 ::1 200 limit=- "GET / HTTP/1.0"`, peers.AccessEntry{Time: at, RemoteAddr: "::1", Status: 200, Limit: "-", Request: "GET / HTTP/1.0"}, true},
		{`1796092103.281 127.0.0.12 200`, peers.AccessEntry{Time: at, RemoteAddr: "127.0.0.12", Status: 200}, true},
		{`1796092103.28 127.0.0.12 200`, peers.AccessEntry{Time: time.Unix(1796092103, 280e6), RemoteAddr: "127.0.0.12", Status: 200}, true},
		{`1796092103 127.0.0.12 503`, peers.AccessEntry{Time: time.Unix(1796092103, 0), RemoteAddr: "127.0.0.12", Status: 503}, true},
		{`1796092103.281 127.0.0.1 abc`, peers.AccessEntry{}, false},
		{`1796092103.281 127.0.0.1 200 PASSED "GET /"`, peers.AccessEntry{}, false},
		{`127.0.0.1 200 limit=PASSED "GET /"`, peers.AccessEntry{}, false},
		{`x.281 127.0.0.1 200`, peers.AccessEntry{}, false},
		{`1796092103. 127.0.0.1 200`, peers.AccessEntry{}, false},
		{`1796092103.281 nohost 200`, peers.AccessEntry{}, false},
		{``, peers.AccessEntry{}, false},
	}
	for _, tt := range tests {
		got, err := peers.ParseAccessLine(tt.line)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseAccessLine(%q) = %+v, %v; want %+v, ok=%v", tt.line, got, err, tt.want, tt.ok)
		}
	}
}

// AccessTail returns each complete line once, and a line still being
// written only once it is complete.
func TestAccessTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	tail := &peers.AccessTail{Path: path}
	if got, err := tail.Read(); err != nil || len(got) != 0 {
		t.Fatalf("Read of a missing log = %v, %v; want nothing", got, err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	steps := []struct {
		write string
		want  []int
	}{
		{"1.000 127.0.0.1 200\n1.100 127.0.0.1 42", []int{200}},
		{"9\n", []int{429}},
		{"", nil},
		{"2.000 127.0.0.2 503\n2.5 127.0.0.2 200\n", []int{503, 200}},
	}
	for i, s := range steps {
		if _, err := f.WriteString(s.write); err != nil {
			t.Fatal(err)
		}
		got, err := tail.Read()
		if err != nil {
			t.Fatalf("step %d: Read: %v", i, err)
		}
		var codes []int
		for _, e := range got {
			codes = append(codes, e.Status)
		}
		if fmt.Sprint(codes) != fmt.Sprint(s.want) {
			t.Errorf("step %d: Read statuses %v, want %v", i, codes, s.want)
		}
	}
	all, err := peers.ReadAccessLog(path)
	if err != nil || len(all) != 4 {
		t.Errorf("ReadAccessLog = %d entries, %v; want 4", len(all), err)
	}
}

func FuzzParseAccessLine(f *testing.F) {
	f.Add(`1796092103.281 127.0.0.11 429 limit=REJECTED "GET /ip HTTP/1.1"`)
	f.Add(`1796092103.281 ::1 200 limit=- "GET / HTTP/1.0"`)
	f.Add(`1796092103.281 127.0.0.1 200 limit=PASSED "GET /\x22 HTTP/1.1"`)
	f.Add(`1796092103.281 127.0.0.12 200`)
	f.Fuzz(func(t *testing.T, line string) {
		e, err := peers.ParseAccessLine(line)
		if err != nil {
			return
		}
		if net.ParseIP(e.RemoteAddr) == nil || !strings.Contains(line, " "+e.RemoteAddr+" ") || e.Status < 100 || e.Status > 999 {
			t.Fatalf("ParseAccessLine(%q) = %+v without error, want a valid address and status", line, e)
		}
	})
}

// express-rate-limit with draft-8 headers sends RateLimit and
// RateLimit-Policy structured fields on every response, Retry-After on its
// 429s.
func TestExpressDraft8(t *testing.T) {
	e := peertest.StartExpress(t, peertest.ExpressConfig{Limit: 2, Window: time.Minute})
	_, start, codes, hdr := twoThenLimited(t, "127.0.0.17", e.URL()+"/p/1")
	if got := hdr.Get("RateLimit-Policy"); !strings.HasPrefix(got, `"2-in-1min"; q=2; w=60; pk=:`) {
		t.Errorf("429 RateLimit-Policy = %q, want the draft-8 policy", got)
	}
	if got := hdr.Get("RateLimit"); !strings.HasPrefix(got, `"2-in-1min"; r=0; t=`) {
		t.Errorf("429 RateLimit = %q, want the draft-8 field", got)
	}
	if ra, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Errorf("429 Retry-After = %q, want the seconds to the reset", hdr.Get("Retry-After"))
	}
	checkLog(t, waitLog(t, e.AccessLog, len(codes)), codes, "127.0.0.17", start)
}

// @fastify/rate-limit answers its default headers on every response and
// Retry-After on its 429s; with continueExceeding a refused request opens
// the window again.
func TestFastify(t *testing.T) {
	for _, cont := range []bool{false, true} {
		t.Run(fmt.Sprint("continueExceeding=", cont), func(t *testing.T) {
			f := peertest.StartFastify(t, peertest.FastifyConfig{Max: 2, Window: 3 * time.Second, ContinueExceeding: cont})
			c := viaProxy(t, "127.0.0.18")
			start := time.Now()
			codes, hdr := untilLimited(t, c, f.URL()+"/p/1", 5)
			if want := []int{200, 200, 429}; fmt.Sprint(codes) != fmt.Sprint(want) {
				t.Errorf("statuses = %v, want %v", codes, want)
			}
			if hdr.Get("X-Ratelimit-Limit") != "2" || hdr.Get("X-Ratelimit-Remaining") != "0" {
				t.Errorf("429 headers %v, want limit 2, remaining 0", hdr)
			}
			if ra, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || ra < 1 || ra > 3 {
				t.Errorf("429 Retry-After = %q, want the seconds to the window's end", hdr.Get("Retry-After"))
			}
			// Two seconds after the first request, a request over the
			// limit is refused again; one more second on, the first
			// window is out, but a window opened by the refusal is not.
			time.Sleep(time.Until(start.Add(2 * time.Second)))
			code, _, _ := get(t, c, f.URL()+"/p/1")
			time.Sleep(time.Until(start.Add(3200 * time.Millisecond)))
			last, _, _ := get(t, c, f.URL()+"/p/1")
			codes = append(codes, code, last)
			if want := map[bool]int{false: 200, true: 429}[cont]; code != 429 || last != want {
				t.Errorf("at 2 s: %d, at 3.2 s: %d; want 429, %d", code, last, want)
			}
			checkLog(t, waitLog(t, f.AccessLog, len(codes)), codes, "127.0.0.18", start)
		})
	}
}

// rate-limiter-flexible's app sets the headers its README shows:
// X-RateLimit-Reset in epoch seconds and Retry-After in seconds (fractional
// but for a block's first refusal); a block refuses the client past the
// window's end.
func TestFlexible(t *testing.T) {
	f := peertest.StartFlexible(t, peertest.FlexibleConfig{Points: 2, Duration: time.Second, Block: 3 * time.Second})
	c, start, codes, hdr := twoThenLimited(t, "127.0.0.19", f.URL()+"/p/1")
	if ra, err := strconv.ParseFloat(hdr.Get("Retry-After"), 64); err != nil || ra <= 2 || ra > 3 {
		t.Errorf("429 Retry-After = %q, want the block's seconds", hdr.Get("Retry-After"))
	}
	if reset, err := strconv.ParseInt(hdr.Get("X-Ratelimit-Reset"), 10, 64); err != nil || reset < start.Unix()+2 || reset > time.Now().Unix()+4 {
		t.Errorf("429 X-RateLimit-Reset = %q, want the block's end in epoch seconds", hdr.Get("X-Ratelimit-Reset"))
	}
	time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
	code, _, _ := get(t, c, f.URL()+"/p/1")
	codes = append(codes, code)
	if code != 429 {
		t.Errorf("past the window, within the block: %d, want 429", code)
	}
	checkLog(t, waitLog(t, f.AccessLog, len(codes)), codes, "127.0.0.19", start)
}

// The flexible app as an app that sets no header of its own writes it:
// Retry-After alone, in whole seconds rounded up; or nothing at all.
func TestFlexibleHeaders(t *testing.T) {
	f := peertest.StartFlexible(t, peertest.FlexibleConfig{Points: 2, Duration: 3 * time.Second, Headers: "retry-after"})
	_, start, codes, hdr := twoThenLimited(t, "127.0.0.33", f.URL()+"/p/1")
	if hdr.Get("Retry-After") != "3" || hdr.Get("X-Ratelimit-Limit") != "" || hdr.Get("X-Ratelimit-Reset") != "" {
		t.Errorf("429 headers %v, want Retry-After: 3 alone", hdr)
	}
	checkLog(t, waitLog(t, f.AccessLog, len(codes)), codes, "127.0.0.33", start)
	bare := peertest.StartFlexible(t, peertest.FlexibleConfig{Points: 2, Duration: 3 * time.Second, Headers: "none"})
	_, start, codes, hdr = twoThenLimited(t, "127.0.0.34", bare.URL()+"/p/1")
	if hdr.Get("Retry-After") != "" || hdr.Get("X-Ratelimit-Limit") != "" {
		t.Errorf("429 headers %v, want none", hdr)
	}
	checkLog(t, waitLog(t, bare.AccessLog, len(codes)), codes, "127.0.0.34", start)
}

// Rack::Attack's windows are whole periods of the clock, the same for every
// client: a client pushed back is let through again at the period's end,
// not a period after its first request; its Retry-After says the seconds to
// that end, and it sees the exit's address (req.ip behind tinyproxy).
func TestRackAttack(t *testing.T) {
	f := peertest.StartRackAttack(t, peertest.RackAttackConfig{Limit: 2, Period: 2 * time.Second, RetryAfter: true})
	c := viaProxy(t, "127.0.0.20")
	// Start 1.2 s into a period of the clock, so a window opened by the
	// first request would still hold it at the period's end.
	const period = 2 * time.Second
	time.Sleep(time.Until(time.Now().Truncate(period).Add(period + 1200*time.Millisecond)))
	start := time.Now()
	codes, hdr := untilLimited(t, c, f.URL()+"/p/1", 5)
	if want := []int{200, 200, 429}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("statuses = %v, want %v", codes, want)
	}
	if ra := hdr.Get("Retry-After"); ra != "1" {
		t.Errorf("429 Retry-After = %q, want 1 (the seconds to the period's end)", ra)
	}
	time.Sleep(time.Until(start.Truncate(period).Add(period + 100*time.Millisecond)))
	code, _, _ := get(t, c, f.URL()+"/p/1")
	codes = append(codes, code)
	if code != 200 {
		t.Errorf("just after the period's end, %v after the first request: %d, want 200", time.Since(start).Round(time.Millisecond), code)
	}
	checkLog(t, waitLog(t, f.AccessLog, len(codes)), codes, "127.0.0.20", start)
}

// TestVarnish: Varnish's vsthrottle lets a client's bucket of Limit through
// and denies the next; blocked, it denies everything for the block and says
// so in Retry-After (whole seconds, rounded up), X-RateLimit-Remaining
// tells the tokens left and X-RateLimit-Limit the bucket's size. Each
// request is logged with the exit's address.
func TestVarnish(t *testing.T) {
	v := peertest.StartVarnish(t, peertest.VarnishConfig{Limit: 3, Period: 10 * time.Second, Block: 2 * time.Second, RetryAfter: true, Remaining: true, LimitHeader: true})
	c := viaProxy(t, "127.0.0.21")
	start := time.Now()
	var remaining []string
	var codes []int
	for range 4 {
		code, h, _ := get(t, c, v.URL()+"/p/1")
		codes = append(codes, code)
		remaining = append(remaining, h.Get("X-RateLimit-Remaining"))
		if l := h.Get("X-RateLimit-Limit"); l != "3" {
			t.Errorf("X-RateLimit-Limit = %q, want 3", l)
		}
		if code == 429 && h.Get("Retry-After") != "2" {
			t.Errorf("429 Retry-After = %q, want 2 (the block's seconds, rounded up)", h.Get("Retry-After"))
		}
	}
	if want := []int{200, 200, 200, 429}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("statuses = %v, want %v", codes, want)
	}
	if want := "[2 1 0 0]"; fmt.Sprint(remaining) != want {
		t.Errorf("X-RateLimit-Remaining = %v, want %v", remaining, want)
	}
	// 3.4 s on, the bucket has a token again (one per 3.3 s) and the
	// block of 2 s is over.
	codes = passesAgain(t, c, v.URL()+"/p/2", start, 3400*time.Millisecond, codes, "after the block, a token refilled")
	checkLog(t, waitLog(t, v.AccessLog, len(codes)), codes, "127.0.0.21", start)
}

// restify's throttle plugin is a token bucket per client address: with
// setHeaders it tells the burst as X-RateLimit-Limit, the whole tokens left
// and its rate on every response; its 429s carry no Retry-After; a token
// refills at the rate.
func TestRestify(t *testing.T) {
	r := peertest.StartRestify(t, peertest.RestifyConfig{Rate: 1, Burst: 2, Headers: true})
	c, start, codes, hdr := twoThenLimited(t, "127.0.0.22", r.URL()+"/p/1")
	if hdr.Get("X-Ratelimit-Limit") != "2" || hdr.Get("X-Ratelimit-Remaining") != "0" || hdr.Get("X-Ratelimit-Rate") != "1" || hdr.Get("Retry-After") != "" {
		t.Errorf("429 headers %v, want limit 2 (the burst), remaining 0, rate 1, no Retry-After", hdr)
	}
	codes = passesAgain(t, c, r.URL()+"/p/2", start, 1200*time.Millisecond, codes, "a second on, a token refilled")
	checkLog(t, waitLog(t, r.AccessLog, len(codes)), codes, "127.0.0.22", start)
}

// hono-rate-limiter with draft-7 headers sends one RateLimit field and
// RateLimit-Policy on every response and Retry-After (the seconds to the
// window's end) on its 429s.
func TestHono(t *testing.T) {
	h := peertest.StartHono(t, peertest.HonoConfig{WindowConfig: peertest.WindowConfig{Limit: 2, Window: 3 * time.Second}, Headers: "draft-7"})
	_, start, codes, hdr := twoThenLimited(t, "127.0.0.23", h.URL()+"/p/1")
	if got := hdr.Get("RateLimit"); !strings.HasPrefix(got, "limit=2, remaining=0, reset=") {
		t.Errorf("429 RateLimit = %q, want the draft-7 field", got)
	}
	if got := hdr.Get("RateLimit-Policy"); got != "2;w=3" {
		t.Errorf("429 RateLimit-Policy = %q, want 2;w=3", got)
	}
	if ra, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || ra < 1 || ra > 3 {
		t.Errorf("429 Retry-After = %q, want the seconds to the window's end", hdr.Get("Retry-After"))
	}
	checkLog(t, waitLog(t, h.AccessLog, len(codes)), codes, "127.0.0.23", start)
}

// koa-ratelimit's memory driver tells the window's end in Unix seconds with
// a fraction and Retry-After in whole seconds rounded down; the window,
// opened by the client's first request, lets it through again at its end.
func TestKoa(t *testing.T) {
	k := peertest.StartKoa(t, peertest.WindowConfig{Limit: 2, Window: 3 * time.Second})
	c, start, codes, hdr := twoThenLimited(t, "127.0.0.24", k.URL()+"/p/1")
	reset, err := strconv.ParseFloat(hdr.Get("X-Ratelimit-Reset"), 64)
	if end := float64(start.UnixMicro()) / 1e6; err != nil || reset == math.Trunc(reset) || reset < end+2.5 || reset > end+3.5 {
		t.Errorf("429 X-RateLimit-Reset = %q, want the window's end in Unix seconds with a fraction", hdr.Get("X-Ratelimit-Reset"))
	}
	if ra, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || ra < 0 || ra > 2 {
		t.Errorf("429 Retry-After = %q, want the whole seconds to the window's end, rounded down", hdr.Get("Retry-After"))
	}
	codes = passesAgain(t, c, k.URL()+"/p/2", start, 3200*time.Millisecond, codes, "past the window")
	checkLog(t, waitLog(t, k.AccessLog, len(codes)), codes, "127.0.0.24", start)
}

// hapi-rate-limit's userLimit answers bare 429s (Boom's, no Retry-After)
// and names its headers its own way, the window's end in Unix
// milliseconds.
func TestHapi(t *testing.T) {
	h := peertest.StartHapi(t, peertest.WindowConfig{Limit: 2, Window: 3 * time.Second})
	_, start, codes, hdr := twoThenLimited(t, "127.0.0.25", h.URL()+"/p/1")
	reset, err := strconv.ParseInt(hdr.Get("X-Ratelimit-Userreset"), 10, 64)
	if end := start.UnixMilli(); err != nil || reset < end+2500 || reset > end+3500 || hdr.Get("X-Ratelimit-Userlimit") != "2" || hdr.Get("Retry-After") != "" {
		t.Errorf("429 headers %v, want UserLimit 2, UserReset the window's end in Unix ms, no Retry-After", hdr)
	}
	// exitgate reads hapi's dialect: the qualifier before the field names
	// a policy of requests.
	if s := rlheader.Parse(hdr, time.Now(), rlheader.Profile{}); !s.HasLimit || s.Limit != 2 || !s.HasRemaining || s.Remaining != 0 || !s.HasReset || s.Reset > 3*time.Second {
		t.Errorf("rlheader.Parse(%v) = limit %d (%v), remaining %d (%v), reset %v (%v); want 2, 0 and the window's end", hdr, s.Limit, s.HasLimit, s.Remaining, s.HasRemaining, s.Reset, s.HasReset)
	}
	checkLog(t, waitLog(t, h.AccessLog, len(codes)), codes, "127.0.0.25", start)
}

// NestJS's throttler names its headers after each throttler (short, long),
// counts a sliding log per throttler, and tells on its 429 how long until
// the oldest hit of the one that refused expires, as Retry-After-short.
func TestNest(t *testing.T) {
	n := peertest.StartNest(t, peertest.NestConfig{Short: peertest.WindowConfig{Limit: 2, Window: 3 * time.Second},
		Long: peertest.WindowConfig{Limit: 100, Window: time.Minute}})
	c, start, codes, hdr := twoThenLimited(t, "127.0.0.27", n.URL()+"/p/1")
	if ra := hdr.Get("Retry-After-Short"); ra != "3" && ra != "2" || hdr.Get("Retry-After") != "" {
		t.Errorf("429 headers %v, want Retry-After-short the 3 s until the first hit expires, no Retry-After", hdr)
	}
	// exitgate reads the named wait as the 429's.
	if s := rlheader.Parse(hdr, time.Now(), rlheader.Profile{}); !s.HasRetryAfter || s.RetryAfter > 3*time.Second || s.Sources.RetryAfter != "Retry-After-Short" {
		t.Errorf("rlheader.Parse(%v) = wait %v (%v) from %q; want Retry-After-short's", hdr, s.RetryAfter, s.HasRetryAfter, s.Sources.RetryAfter)
	}
	codes = passesAgain(t, c, n.URL()+"/p/2", start, 3200*time.Millisecond, codes, "3.2 s after the first hit, it expired")
	code, ok, _ := get(t, c, n.URL()+"/p/3")
	codes = append(codes, code)
	// The short throttler holds one hit still: its policy governs, and
	// the long one is listed beside it.
	s := rlheader.Parse(ok, time.Now(), rlheader.Profile{})
	if code != 200 || ok.Get("X-Ratelimit-Limit-Short") != "2" || ok.Get("X-Ratelimit-Remaining-Long") != "96" ||
		!s.HasLimit || s.Limit != 2 || s.Remaining != 0 || len(s.Policies) != 2 {
		t.Errorf("a fourth request: %d %v, read as limit %d, remaining %d, %d policies; want 200 with short 2 (0 left) and long 100 (96 left)", code, ok, s.Limit, s.Remaining, len(s.Policies))
	}
	checkLog(t, waitLog(t, n.AccessLog, len(codes)), codes, "127.0.0.27", start)
}

// Apache's mod_qos lets Count-1 requests of a client through per window,
// opened by its first request: the request that brings the counter to
// Count is refused (429, nothing said of when), so are the ones after it.
// The window runs on whole seconds: it ends once Seconds whole seconds have
// passed after the second its first request came in, up to a second later
// than Seconds after that request.
func TestApacheQoS(t *testing.T) {
	a := peertest.StartApacheQoS(t, peertest.ApacheQoSConfig{Count: 3, Seconds: 3})
	c, start, codes, hdr := twoThenLimited(t, "127.0.0.26", a.URL()+"/p/1")
	if hdr.Get("Retry-After") != "" {
		t.Errorf("429 Retry-After = %q, want none", hdr.Get("Retry-After"))
	}
	first := waitLog(t, a.AccessLog, len(codes))[0].Time
	end := first.Truncate(time.Second).Add(4 * time.Second) // the second 0 + 3 whole seconds passed
	time.Sleep(time.Until(end.Add(-300 * time.Millisecond)))
	before, _, _ := get(t, c, a.URL()+"/p/2")
	time.Sleep(time.Until(end.Add(100 * time.Millisecond)))
	after, _, body := get(t, c, a.URL()+"/p/3")
	if codes = append(codes, before, after); before != 429 || after != 200 || body != "ok\n" {
		t.Errorf("first request at %s: %d 0.3 s before %s, %d (%q) 0.1 s after; want 429, then 200 ok",
			first.Format("15:04:05.000"), before, end.Format("15:04:05"), after, body)
	}
	checkLog(t, waitLog(t, a.AccessLog, len(codes)), codes, "127.0.0.26", start)
}

// The npm limiter's RateLimiter lets Limit through at once (its bucket
// starts full) and refuses the next, with the Retry-After the app was given;
// past the window its bucket has refilled.
func TestNpmLimiter(t *testing.T) {
	l := peertest.StartNpmLimiter(t, peertest.NpmLimiterConfig{WindowConfig: peertest.WindowConfig{Limit: 2, Window: 3 * time.Second}, RetryAfter: time.Second})
	c, start, codes, hdr := twoThenLimited(t, "127.0.0.28", l.URL()+"/p/1")
	if hdr.Get("Retry-After") != "1" {
		t.Errorf("429 Retry-After = %q, want 1", hdr.Get("Retry-After"))
	}
	codes = passesAgain(t, c, l.URL()+"/p/2", start, 3200*time.Millisecond, codes, "past the window, the bucket refilled")
	checkLog(t, waitLog(t, l.AccessLog, len(codes)), codes, "127.0.0.28", start)
}

// express-throttle's bucket of 2 at 2 per 3 s: two pass, the third is a
// bare 429 (no header), and a token later (1.5 s) one passes again.
func TestExpressThrottle(t *testing.T) {
	th := peertest.StartExpressThrottle(t, peertest.ThrottleConfig{Rate: "2/3s"})
	c, start, codes, hdr := twoThenLimited(t, "127.0.0.29", th.URL()+"/p/1")
	if hdr.Get("Retry-After") != "" || hdr.Get("X-Ratelimit-Limit") != "" || hdr.Get("Ratelimit") != "" {
		t.Errorf("429 headers %v, want a bare 429", hdr)
	}
	codes = passesAgain(t, c, th.URL()+"/p/2", start, 1700*time.Millisecond, codes, "a token refilled")
	checkLog(t, waitLog(t, th.AccessLog, len(codes)), codes, "127.0.0.29", start)
}

// A command's exit code listed in Success is not a failure; any other is,
// and the error carries the tail of its stderr.
func TestCommandSuccessCodes(t *testing.T) {
	dir := t.TempDir()
	run := func(success []int) error {
		return peers.Command{Name: "four", Bin: "/bin/sh", Args: []string{"-c", "echo unfinished >&2; exit 4"}, Dir: dir, Success: success}.Run(t.Context())
	}
	if err := run([]int{4}); err != nil {
		t.Errorf("exit 4 listed as success: %v", err)
	}
	err := run(nil)
	if err == nil || !strings.Contains(err.Error(), "exit status 4") || !strings.Contains(err.Error(), "unfinished") {
		t.Errorf("exit 4 not listed: %v, want an error with the status and stderr", err)
	}
}

// TestPortTaken: a peer started on a port another process listens on is
// refused at once with ErrPortTaken, though the other process answers the
// readiness check and the peer is still running (nginx retries its bind for
// two seconds): under the whole suite a test's server took the port
// FreePort had found for nginx, and a 60-s crawl met that server instead.
// StartRetry starts again on a new port.
func TestPortTaken(t *testing.T) {
	peertest.Require(t, "nginx")
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	taken := other.Addr().String()
	n := startedAgain(t, "nginx", func(first bool) (*peers.Nginx, error) {
		cfg := peers.NginxConfig{}
		if first {
			cfg.Listen = taken
		}
		return peers.StartNginx(cfg)
	})
	if n.Addr() == taken {
		t.Errorf("started again on %s, the port another process holds", taken)
	}
}

// startedAgain checks that start, told to use a port another process
// holds (first), fails with ErrPortTaken, and that StartRetry then starts
// the peer on a new port at its second call; the peer is closed when the
// test ends.
func startedAgain[P interface{ Close() error }](t *testing.T, name string, start func(first bool) (P, error)) P {
	t.Helper()
	p, err := start(true)
	if err == nil {
		p.Close()
		t.Fatalf("%s started on a port another process holds", name)
	}
	if !errors.Is(err, peers.ErrPortTaken) {
		t.Fatalf("%s: err = %v, want ErrPortTaken", name, err)
	}
	calls := 0
	p, err = peers.StartRetry(func() (P, error) {
		calls++
		return start(calls == 1)
	})
	if err != nil {
		t.Fatalf("StartRetry: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	if calls != 2 {
		t.Errorf("StartRetry: %d calls, want a second on a new port", calls)
	}
	return p
}

// TestPortTakenAtBind: a peer whose bind fails on a port another process
// holds only as the peer binds (FreePort beside it holds each port it tries
// for an instant) exits with no one answering there, and that too is
// ErrPortTaken, so StartRetry starts it again: CI met tinyproxy's "Could not
// create listening sockets" this way. A socket bound but not listening, its
// address not reusable, refuses the bind and answers nothing.
func TestPortTakenAtBind(t *testing.T) {
	peertest.Require(t, "tinyproxy")
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := sa.(*syscall.SockaddrInet4).Port
	startedAgain(t, "tinyproxy", func(first bool) (*peers.Proxy, error) {
		cfg := peers.TinyproxyConfig{}
		if first {
			cfg.Port = port
		}
		return peers.StartTinyproxy(cfg)
	})
}

// TestFreePort: the ports found free lie below the kernel's ephemeral range,
// which every outgoing connection draws from, and are free.
func TestFreePort(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral range to compare with: %v", err)
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for range 20 {
		port, err := peers.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port >= lo && port <= hi {
			t.Errorf("port %d lies in the ephemeral range %d-%d", port, lo, hi)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Errorf("port %d not free: %v", port, err)
			continue
		}
		l.Close()
		seen[port] = true
	}
	if len(seen) < 15 {
		t.Errorf("20 calls gave %d ports; want them drawn at random", len(seen))
	}
}

// TestNginxLongZone: a second zone per address that every request passes
// too: with a generous first one (100r/s, burst 100) the long one, 6r/m
// with a burst of 2, lets three through at once and refuses the fourth.
func TestNginxLongZone(t *testing.T) {
	n := peertest.StartNginx(t, peertest.NginxConfig{Rate: "100r/s", Burst: 100, LongRate: "6r/m", LongBurst: 2,
		NoRetryAfter: true, Files: map[string]string{"page.txt": "page\n"}, Fallback: "page.txt"})
	c := &http.Client{Timeout: 10 * time.Second}
	var codes []int
	for i := range 4 {
		resp, err := c.Get(fmt.Sprintf("%s/p/%d", n.URL(), i))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if !slices.Equal(codes, []int{200, 200, 200, 429}) {
		t.Errorf("statuses = %v, want three 200s, then the long zone's 429", codes)
	}
}

// mod_evasive lets SiteCount requests of an address through in a second
// (its first second, one more: the counter's first request makes it and is
// not counted), refuses the next with a bare 403 and holds the address:
// every request within Block whole seconds of the last one refused is
// refused too, and holds it on. After Block quiet seconds it passes again.
func TestApacheEvasive(t *testing.T) {
	a := peertest.StartApacheEvasive(t, peertest.ApacheEvasiveConfig{SiteCount: 3, SiteInterval: 1, Block: 2})
	c := viaProxy(t, "127.0.0.31")
	// Warm the counter (its first request is not counted), then start at
	// the beginning of a whole second so the burst stays within it.
	warm, _, _ := get(t, c, a.URL()+"/w")
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	start := time.Now()
	codes := []int{warm}
	for i := range 5 {
		code, hdr, _ := get(t, c, fmt.Sprintf("%s/p/%d", a.URL(), i))
		codes = append(codes, code)
		if code == 403 && hdr.Get("Retry-After") != "" {
			t.Errorf("403 Retry-After = %q, want none", hdr.Get("Retry-After"))
		}
	}
	if want := []int{200, 200, 200, 200, 403, 403}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("statuses = %v, want %v (3 a second, then held)", codes, want)
	}
	// Held: a request a second on is refused and holds the address on.
	time.Sleep(time.Until(start.Truncate(time.Second).Add(1100 * time.Millisecond)))
	held, _, _ := get(t, c, a.URL()+"/h")
	time.Sleep(time.Until(start.Truncate(time.Second).Add(3100 * time.Millisecond)))
	after, _, body := get(t, c, a.URL()+"/a")
	if codes = append(codes, held, after); held != 403 || after != 200 || body != "ok\n" {
		t.Errorf("a second into the hold %d, two quiet seconds after it %d (%q); want 403, then 200 ok", held, after, body)
	}
	checkLog(t, waitLog(t, a.AccessLog, len(codes)), codes, "127.0.0.31", start.Add(-2*time.Second))
}
