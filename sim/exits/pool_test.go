package exits

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_000_000_000, 0)

func newPool(t *testing.T, c Config) *Pool {
	t.Helper()
	p, err := New(c)
	if err != nil {
		t.Fatalf("New(%+v) error %v", c, err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	p := newPool(t, Config{})
	ex := p.Exits()
	if len(ex) != 20 {
		t.Fatalf("len(Exits()) = %d, want 20", len(ex))
	}
	if ex[0].ID != "exit-01" || ex[0].IP != netip.MustParseAddr("127.0.0.11") ||
		ex[19].ID != "exit-20" || ex[19].IP != netip.MustParseAddr("127.0.0.30") {
		t.Errorf("Exits() = %v … %v, want exit-01 127.0.0.11 … exit-20 127.0.0.30", ex[0], ex[19])
	}
	p = newPool(t, Config{Exits: 150, FirstIP: netip.MustParseAddr("10.0.0.250")})
	ex = p.Exits()
	if ex[0].ID != "exit-001" || ex[6].IP != netip.MustParseAddr("10.0.1.0") {
		t.Errorf("150 exits from 10.0.0.250: %v, %v", ex[0], ex[6])
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{
		{Exits: -1},
		{SessionTTL: -1},
		{SessionRequests: -1},
		{AuthFailRate: 1.5},
		{ConnectFailRate: -0.1},
		{Password: "x"},
		{AuthFailExits: []string{"exit-99"}},
		{ConnectFailExits: []string{"nope"}},
		{Exits: 3, FirstIP: netip.MustParseAddr("255.255.255.254")},
	} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v) error = %v, want ErrConfig", c, err)
		}
	}
}

func TestRoutePinned(t *testing.T) {
	p := newPool(t, Config{Exits: 3})
	for range 3 {
		if ip, err := p.Route("exit-02", "", t0); ip != "127.0.0.12" || err != nil {
			t.Errorf("Route(exit-02) = %q, %v, want 127.0.0.12", ip, err)
		}
	}
	if _, err := p.Route("exit-09", "", t0); !errors.Is(err, ErrUnknownExit) {
		t.Errorf("Route(exit-09) error = %v, want ErrUnknownExit", err)
	}
	if got := p.Stats()["exit-02"].Routed; got != 3 {
		t.Errorf("Stats()[exit-02].Routed = %d, want 3", got)
	}
}

func TestRouteRotating(t *testing.T) {
	seq := func() []string {
		p := newPool(t, Config{Exits: 5, Rand: rand.New(rand.NewPCG(3, 4))})
		var ips []string
		for range 200 {
			ip, err := p.Route("", "", t0)
			if err != nil {
				t.Fatalf("Route error %v", err)
			}
			ips = append(ips, ip)
		}
		return ips
	}
	a, b := seq(), seq()
	seen := map[string]int{}
	for i, ip := range a {
		seen[ip]++
		if i > 0 && ip == a[i-1] {
			t.Errorf("rotation %d repeated %s", i, ip)
		}
		if ip != b[i] {
			t.Fatalf("rotation %d: %s vs %s with the same seed", i, ip, b[i])
		}
	}
	if len(seen) != 5 {
		t.Errorf("rotation over 200 requests used %d exits, want 5", len(seen))
	}
	for ip, n := range seen {
		if n < 20 {
			t.Errorf("exit %s got %d of 200 rotations, want a fair share", ip, n)
		}
	}
	one := newPool(t, Config{Exits: 1})
	if ip, _ := one.Route("", "", t0); ip != "127.0.0.11" {
		t.Errorf("rotating a one-exit pool gave %q", ip)
	}
}

func TestRouteSticky(t *testing.T) {
	p := newPool(t, Config{Exits: 20})
	first, _ := p.Route("", "7", t0)
	for i := range 50 {
		if ip, _ := p.Route("", "7", t0.Add(time.Duration(i)*time.Hour)); ip != first {
			t.Fatalf("session 7 moved from %s to %s with no TTL", first, ip)
		}
	}
	// Sessions spread over the pool, independent of arrival order.
	seen := map[string]bool{}
	for i := range 100 {
		ip, _ := p.Route("", "s"+string(rune('a'+i%26))+string(rune('a'+i/26)), t0)
		seen[ip] = true
	}
	if len(seen) < 15 {
		t.Errorf("100 sessions landed on %d exits, want most of 20", len(seen))
	}
	q := newPool(t, Config{Exits: 20})
	if ip, _ := q.Route("", "7", t0); ip != first {
		t.Errorf("session 7 starts on %s in another pool, want %s", ip, first)
	}
}

func TestSessionMoves(t *testing.T) {
	p := newPool(t, Config{Exits: 4, SessionRequests: 3})
	var ips []string
	for range 7 {
		ip, _ := p.Route("", "x", t0)
		ips = append(ips, ip)
	}
	if ips[0] != ips[1] || ips[1] != ips[2] || ips[3] == ips[2] || ips[3] != ips[4] || ips[4] != ips[5] || ips[6] == ips[5] {
		t.Errorf("SessionRequests 3: IPs %v, want a change after every 3", ips)
	}

	p = newPool(t, Config{Exits: 4, SessionTTL: 10 * time.Minute})
	a, _ := p.Route("", "x", t0)
	for _, st := range []struct {
		at   time.Duration
		same bool
	}{{time.Minute, true}, {10*time.Minute - 1, true}, {10 * time.Minute, false}} {
		ip, _ := p.Route("", "x", t0.Add(st.at))
		if (ip == a) != st.same {
			t.Errorf("SessionTTL 10m: at t0+%v IP %s (was %s), want same=%v", st.at, ip, a, st.same)
		}
	}
}

func TestFailures(t *testing.T) {
	p := newPool(t, Config{Exits: 4, AuthFailExits: []string{"exit-02"}, ConnectFailExits: []string{"exit-03"}})
	for _, tc := range []struct {
		id   string
		want error
	}{{"exit-01", nil}, {"exit-02", ErrProxyAuth}, {"exit-03", ErrConnect}} {
		_, err := p.Route(tc.id, "", t0)
		if !errors.Is(err, tc.want) {
			t.Errorf("Route(%s) error = %v, want %v", tc.id, err, tc.want)
		}
		var re *RouteError
		if tc.want != nil && (!errors.As(err, &re) || re.ExitID != tc.id) {
			t.Errorf("Route(%s) error %v is not a *RouteError naming the exit", tc.id, err)
		}
	}
	st := p.Stats()
	if st["exit-02"].AuthFailures != 1 || st["exit-03"].ConnectFailures != 1 {
		t.Errorf("Stats() = %+v", st)
	}

	p = newPool(t, Config{Exits: 10, AuthFailRate: 0.1, ConnectFailRate: 0.2, Rand: rand.New(rand.NewPCG(9, 9))})
	var auth, conn int
	for range 10000 {
		_, err := p.Route("", "", t0)
		switch {
		case errors.Is(err, ErrProxyAuth):
			auth++
		case errors.Is(err, ErrConnect):
			conn++
		}
	}
	// Connect failures are drawn among the requests that passed auth.
	if auth < 900 || auth > 1100 || conn < 1620 || conn > 1980 {
		t.Errorf("rates 0.1/0.2 over 10000: %d auth, %d connect failures", auth, conn)
	}
}

func TestRouteUser(t *testing.T) {
	p := newPool(t, Config{Exits: 5, Username: "user", Password: "pw"})
	for _, tc := range []struct {
		user, pass string
		ok         bool
	}{
		{"user", "pw", true},
		{"user-session-3", "pw", true},
		{"user-session-3", "bad", false},
		{"other-session-3", "pw", false},
		{"", "", false},
	} {
		_, err := p.RouteUser(tc.user, tc.pass, t0)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrProxyAuth)) {
			t.Errorf("RouteUser(%q, %q) error = %v, want ok=%v", tc.user, tc.pass, err, tc.ok)
		}
		if p.CheckUser(tc.user, tc.pass) != tc.ok {
			t.Errorf("CheckUser(%q, %q) != %v", tc.user, tc.pass, tc.ok)
		}
	}
	a, _ := p.RouteUser("user-session-3", "pw", t0)
	b, _ := p.RouteUser("user-session-3-country-us", "pw", t0)
	ip, _ := p.Route("", "3", t0)
	if a.IP != b.IP || a.IP.String() != ip {
		t.Errorf("session 3: %v, %v, %s: want one exit", a, b, ip)
	}
	open := newPool(t, Config{Exits: 2})
	if _, err := open.RouteUser("", "", t0); err != nil {
		t.Errorf("open pool RouteUser without credentials: %v", err)
	}
}

var parseUserTests = []struct{ in, base, session string }{
	{"user-session-7", "user", "7"},
	{"user", "user", ""},
	{"user-session-abc-country-us", "user", "abc"},
	{"brd-customer-x-zone-y-session-r1", "brd-customer-x-zone-y", "r1"},
	{"-session-", "", ""},
	{"", "", ""},
	{"u-session-", "u", ""},
}

func TestParseUser(t *testing.T) {
	for _, tc := range parseUserTests {
		if b, s := ParseUser(tc.in); b != tc.base || s != tc.session {
			t.Errorf("ParseUser(%q) = %q, %q, want %q, %q", tc.in, b, s, tc.base, tc.session)
		}
	}
}

func FuzzParseUser(f *testing.F) {
	for _, tc := range parseUserTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, u string) {
		b, s := ParseUser(u)
		if !strings.HasPrefix(u, b) || strings.Contains(s, "-") || len(b)+len(s) > len(u) {
			t.Errorf("ParseUser(%q) = %q, %q", u, b, s)
		}
	})
}

var basicTests = []struct {
	in, user, pass string
	ok             bool
}{
	{"Basic dXNlcjpwYXNz", "user", "pass", true},
	{"basic dXNlci1zZXNzaW9uLTc6OnA=", "user-session-7", ":p", true},
	{"Basic dXNlcg==", "", "", false},
	{"Digest x", "", "", false},
	{"Basic %%%", "", "", false},
	{"", "", "", false},
}

func TestBasicAuth(t *testing.T) {
	for _, tc := range basicTests {
		u, p, ok := BasicAuth(tc.in)
		if u != tc.user || p != tc.pass || ok != tc.ok {
			t.Errorf("BasicAuth(%q) = %q, %q, %v, want %q, %q, %v", tc.in, u, p, ok, tc.user, tc.pass, tc.ok)
		}
	}
}

func FuzzBasicAuth(f *testing.F) {
	for _, tc := range basicTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, v string) {
		u, p, ok := BasicAuth(v)
		if !ok && (u != "" || p != "") {
			t.Errorf("BasicAuth(%q) = %q, %q, false: values without ok", v, u, p)
		}
		if strings.Contains(u, ":") {
			t.Errorf("BasicAuth(%q) user %q contains a colon", v, u)
		}
	})
}

func BenchmarkRoute(b *testing.B) {
	p, _ := New(Config{Exits: 20})
	b.ReportAllocs()
	for b.Loop() {
		p.Route("", "", t0)
	}
}
