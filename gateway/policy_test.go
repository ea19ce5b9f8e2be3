package gateway

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestWaitBudget(t *testing.T) {
	g := &Gateway{cfg: Config{WaitBudget: 60 * time.Second, MaxWaitBudget: 10 * time.Minute}}
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"", 60 * time.Second, false},
		{"30s", 30 * time.Second, false},
		{"1m30s", 90 * time.Second, false},
		{"2.5", 2500 * time.Millisecond, false},
		{"0", 0, false},
		{" 5 ", 5 * time.Second, false},
		{"2h", 10 * time.Minute, false}, // capped
		{"-1s", 0, true},
		{"-3", 0, true},
		{"soon", 0, true},
		{"1e309", 10 * time.Minute, false},    // past a float: the cap
		{"1e300", 10 * time.Minute, false},    // capped
		{"9999999h", 10 * time.Minute, false}, // past time.Duration: the cap
		{"-1e309", 0, true},
		{"NaN", 0, true},
		{"9999999x", 0, true},
	} {
		h := http.Header{}
		if tc.in != "" {
			h.Set(HeaderWait, tc.in)
		}
		got, err := g.waitBudget(h)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("waitBudget(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
	// Given twice: alike, taken; differing, refused (the first won).
	if got, err := g.waitBudget(http.Header{HeaderWait: {"5s", "5s"}}); err != nil || got != 5*time.Second {
		t.Errorf("waitBudget of 5s twice = %v, %v", got, err)
	}
	if _, err := g.waitBudget(http.Header{HeaderWait: {"0", "600s"}}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("waitBudget of 0 and 600s = %v, want refused", err)
	}
	g.cfg.WaitBudget = -1 // none
	if got, _ := g.waitBudget(http.Header{}); got != 0 {
		t.Errorf("waitBudget with WaitBudget -1 = %v, want 0", got)
	}
}

func TestSessionOf(t *testing.T) {
	for _, tc := range []struct {
		user, header, want string
	}{
		{"", "", ""},
		{"session-abc", "", "abc"},
		{"scraper-session-x9", "", "x9"},
		{"scraper", "", ""},
		{"session-abc", "hdr", "hdr"},
		{"", " spaced ", "spaced"},
		{"session-" + strings.Repeat("x", 500_000), "", "sha256:" + fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Repeat("x", 500_000))))},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set(HeaderSession, tc.header)
		}
		if got := sessionOf(tc.user, h); got != tc.want {
			t.Errorf("sessionOf(%q, %q) = %q, want %q", tc.user, tc.header, got, tc.want)
		}
	}
}

func TestSplitHostPort(t *testing.T) {
	for _, tc := range []struct {
		in, scheme, host string
		port             int
	}{
		{"example.com", "http", "example.com", 80},
		{"example.com", "https", "example.com", 443},
		{"example.com:8080", "http", "example.com", 8080},
		{"[::1]:443", "https", "::1", 443},
		{"[::1]", "http", "::1", 80},
		{"example.com:99999", "http", "example.com", -1},
		{"example.com:x", "http", "example.com", -1},
		{"example.com:", "http", "example.com", 80}, // an empty port is the default (RFC 3986)
		{"[::1]:", "https", "::1", 443},
	} {
		h, p := splitHostPort(tc.in, tc.scheme)
		if h != tc.host || p != tc.port {
			t.Errorf("splitHostPort(%q, %q) = %q, %d; want %q, %d", tc.in, tc.scheme, h, p, tc.host, tc.port)
		}
	}
}

// Sessions at fixed instants: idle ones are forgotten, the first binding
// wins, and past the cap the least recently used go first.
func TestSessions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSessions(10, time.Minute)
	if got := s.bind("a", "exit1", t0); got != "exit1" {
		t.Fatalf("bind(a) = %q", got)
	}
	if got := s.bind("a", "exit2", t0.Add(time.Second)); got != "exit1" {
		t.Errorf("a second bind(a) = %q, want the first exit kept", got)
	}
	if got := s.get("a", t0.Add(50*time.Second)); got != "exit1" {
		t.Errorf("get(a) within the idle time = %q", got)
	}
	if got := s.get("a", t0.Add(111*time.Second)); got != "" {
		t.Errorf("get(a) after a minute idle = %q, want forgotten", got)
	}
	for i := range 10 {
		s.bind(string(rune('b'+i)), "e", t0.Add(time.Duration(i)*time.Second))
	}
	s.bind("new", "e", t0.Add(20*time.Second)) // over the cap: the oldest tenth goes
	if s.len() > 10 || s.get("b", t0.Add(21*time.Second)) != "" || s.get("new", t0.Add(21*time.Second)) != "e" {
		t.Errorf("after eviction: %d sessions, b %q, new %q; want b forgotten, new kept", s.len(),
			s.get("b", t0.Add(21*time.Second)), s.get("new", t0.Add(21*time.Second)))
	}
}

// FuzzControlHeaders: the control headers and Proxy-Authorization never
// panic whatever a client sends.
func FuzzControlHeaders(f *testing.F) {
	for _, s := range []string{"30s", "2.5", "", "-1", "1e309", "Basic " + base64.StdEncoding.EncodeToString([]byte("session-a:x")), "Basic !!", "basic "} {
		f.Add(s)
	}
	g := &Gateway{cfg: Config{WaitBudget: time.Minute, MaxWaitBudget: time.Hour}}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{HeaderWait: {v}, HeaderSession: {v}, "Proxy-Authorization": {v}}
		d, err := g.waitBudget(h)
		if err == nil && (d < 0 || d > time.Hour) {
			t.Errorf("waitBudget(%q) = %v, out of [0, cap]", v, d)
		}
		user, _, _ := proxyBasicAuth(&http.Request{Header: h})
		sessionOf(user, h)
		splitHostPort(v, "https")
	})
}

// A configured user name may hold "-session-" itself: the whole name logs
// in and carries no session; with -session-ID after it, the ID is the
// session. Cut at its first "-session-", the name never matched.
func TestAuthorizeNameWithSession(t *testing.T) {
	g, err := New(Config{Limiter: fast(t), Auth: &Credentials{User: "scraper-session-team", Password: "pw-Team-3"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	for _, tc := range []struct {
		user    string
		ok      bool
		session string
	}{
		{"scraper-session-team", true, ""},
		{"scraper-session-team-session-x9", true, "team-session-x9"},
		{"scraper", false, ""},
		{"scraper-session-other", false, ""},
	} {
		r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
		r.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(tc.user+":pw-Team-3")))
		user, ok := g.authorize(httptest.NewRecorder(), r)
		if ok != tc.ok || ok && sessionOf(user, http.Header{}) != tc.session {
			t.Errorf("authorize(%q) = %q, %v (session %q); want %v, session %q", tc.user, user, ok, sessionOf(user, http.Header{}), tc.ok, tc.session)
		}
	}
}

// TestLinePaceIgnoresOneLongGap: the line's pace reading moves by four
// times itself at most on one long gap (every lane cooling a moment): taken
// whole, a 10-s gap among 100-ms ones made a place in a line of 200 worth
// 2.6 s, and clients with a minute's budget were refused at once.
func TestLinePaceIgnoresOneLongGap(t *testing.T) {
	q, turns := lineOf(5)
	now := time.Unix(1_800_000_000, 0)
	for i, tk := range turns[:4] {
		gap := 100 * time.Millisecond
		if i == 3 {
			gap = 10 * time.Second
		}
		now = now.Add(gap)
		q.leave("h", tk, true, now)
	}
	if e := q.hosts["h"].every; e > 200*time.Millisecond {
		t.Errorf("after gaps of 100 ms and one of 10 s, a place is worth %v, want under 200 ms", e)
	}
}

// TestLineFirstGapNoReading: one gap, taken whole, is no reading to refuse
// waiters on (the first served after an exit cooled 10 s made a place
// worth 10 s, and everyone past the fourth with a 40-s budget was refused
// at the next recheck); two are.
func TestLineFirstGapNoReading(t *testing.T) {
	q, turns := lineOf(6)
	now := time.Unix(1_800_000_000, 0)
	q.leave("h", turns[0], true, now)
	now = now.Add(10 * time.Second)
	q.leave("h", turns[1], true, now)
	if e := q.expect("h", turns[5]); e != 0 {
		t.Errorf("after one gap of 10 s, the last waiter expects %v, want no reading (0)", e)
	}
	now = now.Add(100 * time.Millisecond)
	q.leave("h", turns[2], true, now)
	if e := q.expect("h", turns[5]); e == 0 {
		t.Errorf("after two gaps, no reading")
	}
}

// lineOf is a line of host "h" with n waiters, oldest first.
func lineOf(n int) (*lines, []*turn) {
	q := newLines()
	var turns []*turn
	for range n {
		tk, _, _ := q.enter("h")
		turns = append(turns, tk)
	}
	return q, turns
}
