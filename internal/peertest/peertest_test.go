package peertest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
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

func TestNginxLimitsPerAddress(t *testing.T) {
	n := StartNginx(t, NginxConfig{Rate: "1r/s", RetryAfter: "7",
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

func TestParseAccessLine(t *testing.T) {
	tests := []struct {
		line string
		want AccessEntry
		ok   bool
	}{
		{`127.0.0.11 429 limit=REJECTED "GET /ip HTTP/1.1"`, AccessEntry{"127.0.0.11", 429, "REJECTED", "GET /ip HTTP/1.1"}, true},
		{`::1 200 limit=- "GET / HTTP/1.0"`, AccessEntry{"::1", 200, "-", "GET / HTTP/1.0"}, true},
		{`127.0.0.1 abc limit=PASSED "GET /"`, AccessEntry{}, false},
		{`127.0.0.1 200 PASSED "GET /"`, AccessEntry{}, false},
		{``, AccessEntry{}, false},
	}
	for _, tt := range tests {
		got, err := ParseAccessLine(tt.line)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseAccessLine(%q) = %+v, %v; want %+v, ok=%v", tt.line, got, err, tt.want, tt.ok)
		}
	}
}

func TestTinyproxyBindsExitAddress(t *testing.T) {
	n := StartNginx(t, NginxConfig{Rate: "100r/s", Burst: 100})
	for _, bind := range []string{"127.0.0.11", "127.0.0.12"} {
		p := StartTinyproxy(t, TinyproxyConfig{Bind: bind})
		pu, err := url.Parse(p.URL())
		if err != nil {
			t.Fatal(err)
		}
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
		code, _, body := get(t, c, n.URL()+"/ip")
		if code != 200 || body != bind {
			t.Errorf("GET /ip via tinyproxy bound to %s = %d %q, want 200 %q", bind, code, body, bind)
		}
	}
}

func TestTinyproxyBasicAuth(t *testing.T) {
	n := StartNginx(t, NginxConfig{Rate: "100r/s", Burst: 100})
	p := StartTinyproxy(t, TinyproxyConfig{Bind: "127.0.0.13", User: "alice", Password: "s3cret"})
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

func TestRedisAnswersPing(t *testing.T) {
	r := StartRedis(t)
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

func TestWaitListeningTimesOut(t *testing.T) {
	// A port nobody listens on: the helper must give up within its bound.
	addr := hostPort("127.0.0.1", FreePort(t))
	start := time.Now()
	err := waitListening(addr, 100*time.Millisecond, nil)
	if err == nil {
		t.Fatalf("waitListening(%s) = nil, want an error", addr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("waitListening took %v, want about 100ms", d)
	}
}

func FuzzParseAccessLine(f *testing.F) {
	f.Add(`127.0.0.11 429 limit=REJECTED "GET /ip HTTP/1.1"`)
	f.Add(`::1 200 limit=- "GET / HTTP/1.0"`)
	f.Add(`127.0.0.1 200 limit=PASSED "GET /\x22 HTTP/1.1"`)
	f.Fuzz(func(t *testing.T, line string) {
		e, err := ParseAccessLine(line)
		if err == nil && (net.ParseIP(e.RemoteAddr) == nil || !strings.HasPrefix(line, e.RemoteAddr+" ")) {
			t.Fatalf("ParseAccessLine(%q) = %+v without error, want a valid address", line, e)
		}
	})
}
