package server

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func newSite(t *testing.T, c Config) *Site {
	t.Helper()
	s, err := New(c)
	if err != nil {
		t.Fatalf("New(%+v) error %v", c, err)
	}
	return s
}

func get(s *Site, ip string, at time.Duration) SimResponse {
	return s.Handle(SimRequest{IP: ip, Now: t0.Add(at)})
}

// sfItem parses one Structured Fields item of the simple shape the site
// writes: "name";k=int;k=int. Deliberately plain, independent of rlheader.
func sfItem(t *testing.T, v string) (string, map[string]int) {
	t.Helper()
	parts := strings.Split(v, ";")
	name, err := strconv.Unquote(parts[0])
	if err != nil {
		t.Fatalf("item %q: name %q is not a quoted string", v, parts[0])
	}
	params := map[string]int{}
	for _, p := range parts[1:] {
		k, val, ok := strings.Cut(p, "=")
		n, err := strconv.Atoi(val)
		if !ok || err != nil {
			t.Fatalf("item %q: bad parameter %q", v, p)
		}
		params[k] = n
	}
	return name, params
}

func TestHeaderModes(t *testing.T) {
	fw := Policy{Quota: 3, Window: 10 * time.Second}
	type hdr map[string]string // "" value means must be absent
	for _, tc := range []struct {
		name string
		cfg  Config
		at   []time.Duration // requests; the last one is checked
		want int
		h    hdr
	}{
		{"none 200", Config{Algorithm: FixedWindow, Policy: fw}, []time.Duration{sec(1)}, 200,
			hdr{"Retry-After": "", "X-RateLimit-Limit": "", "RateLimit": "", "RateLimit-Policy": ""}},
		{"none 429", Config{Algorithm: FixedWindow, Policy: fw}, []time.Duration{0, 0, 0, sec(1)}, 429,
			hdr{"Retry-After": "", "X-RateLimit-Limit": "", "RateLimit": ""}},
		{"retry-after 200", Config{Algorithm: FixedWindow, Policy: fw, Headers: HeadersRetryAfter}, []time.Duration{sec(1)}, 200,
			hdr{"Retry-After": "", "X-RateLimit-Limit": ""}},
		{"retry-after 429", Config{Algorithm: FixedWindow, Policy: fw, Headers: HeadersRetryAfter}, []time.Duration{0, 0, 0, sec(1)}, 429,
			hdr{"Retry-After": "9", "X-RateLimit-Limit": ""}},
		{"retry-after rounds up", Config{Policy: Policy{Quota: 2, Window: time.Second, Burst: 1}, Headers: HeadersRetryAfter}, []time.Duration{0, ms(100)}, 429,
			hdr{"Retry-After": "1"}},
		{"xrl epoch 200", Config{Algorithm: FixedWindow, Policy: fw, Headers: HeadersXRateLimit}, []time.Duration{sec(1)}, 200,
			hdr{"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": "2", "X-RateLimit-Reset": "1000000010", "Retry-After": ""}},
		{"xrl epoch rounds up", Config{Algorithm: FixedWindow, Policy: fw, Headers: HeadersXRateLimit}, []time.Duration{ms(10500)}, 200,
			hdr{"X-RateLimit-Reset": "1000000020"}},
		{"xrl epoch 429", Config{Algorithm: FixedWindow, Policy: fw, Headers: HeadersXRateLimit}, []time.Duration{0, 0, 0, ms(1500)}, 429,
			hdr{"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1000000010", "Retry-After": "9"}},
		{"xrl delta", Config{Algorithm: FixedWindow, Policy: fw, Headers: HeadersXRateLimit, ResetFormat: ResetDelta}, []time.Duration{ms(1500)}, 200,
			hdr{"X-RateLimit-Reset": "9", "X-RateLimit-Remaining": "2"}},
		{"xrl no retry-after", Config{Algorithm: FixedWindow, Policy: fw, Headers: HeadersXRateLimit, NoRetryAfter: true}, []time.Duration{0, 0, 0, 0}, 429,
			hdr{"Retry-After": "", "X-RateLimit-Remaining": "0"}},
		{"ietf 200", Config{Algorithm: FixedWindow, Policy: fw, Headers: HeadersIETF}, []time.Duration{sec(1)}, 200,
			hdr{"RateLimit-Policy": `"default";q=3;w=10`, "RateLimit": `"default";r=2;t=9`, "Retry-After": ""}},
		{"ietf 429", Config{Algorithm: FixedWindow, Policy: fw, Headers: HeadersIETF, PolicyName: "burst"}, []time.Duration{0, 0, 0, sec(4)}, 429,
			hdr{"RateLimit-Policy": `"burst";q=3;w=10`, "RateLimit": `"burst";r=0;t=6`, "Retry-After": "6"}},
		{"ietf bucket", Config{Policy: Policy{Quota: 1, Window: time.Second, Burst: 5}, Headers: HeadersIETF}, []time.Duration{0}, 200,
			hdr{"RateLimit-Policy": `"default";q=5;w=5`, "RateLimit": `"default";r=4;t=1`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t, tc.cfg)
			var r SimResponse
			for _, at := range tc.at {
				r = get(s, "10.0.0.1", at)
			}
			if r.Status != tc.want {
				t.Fatalf("status = %d, want %d", r.Status, tc.want)
			}
			for k, want := range tc.h {
				vs := r.Header.Values(k)
				if want == "" {
					if len(vs) != 0 {
						t.Errorf("header %s = %q, want absent", k, vs)
					}
					continue
				}
				if len(vs) != 1 || vs[0] != want {
					t.Errorf("header %s = %q, want %q", k, vs, want)
				}
			}
		})
	}
}

// The IETF fields parse as the draft's shape with a plain parser.
func TestIETFShape(t *testing.T) {
	s := newSite(t, Config{Algorithm: SlidingWindow, Policy: Policy{Quota: 100, Window: time.Minute}, Headers: HeadersIETF})
	r := get(s, "10.0.0.1", sec(20)) // t0+20s starts a minute
	name, pol := sfItem(t, r.Header.Get("RateLimit-Policy"))
	if name != "default" || pol["q"] != 100 || pol["w"] != 60 {
		t.Errorf("RateLimit-Policy = %q, want default q=100 w=60", r.Header.Get("RateLimit-Policy"))
	}
	name, rl := sfItem(t, r.Header.Get("RateLimit"))
	if name != "default" || rl["r"] != 99 || rl["t"] != 60 {
		t.Errorf("RateLimit = %q, want default r=99 t=60", r.Header.Get("RateLimit"))
	}
}

func TestBans(t *testing.T) {
	s := newSite(t, Config{
		Algorithm: FixedWindow, Policy: Policy{Quota: 1, Window: 10 * time.Second},
		Headers: HeadersRetryAfter,
		Ban:     Ban{After: 3, Within: time.Minute, For: 5 * time.Minute},
	})
	for _, st := range []struct {
		at   time.Duration
		want int
	}{
		{0, 200},
		{sec(1), 429}, // told to wait until 10 s: not a strike yet
		{sec(2), 429}, // strike 1
		{sec(3), 429}, // strike 2
		{sec(4), 429}, // strike 3: banned from now
		{sec(5), 403},
		{sec(200), 403},
		{sec(304) - 1, 403},
		{sec(304), 200}, // ban over, a fresh window
	} {
		r := get(s, "10.0.0.1", st.at)
		if r.Status != st.want {
			t.Errorf("Handle(t0+%v) status = %d, want %d", st.at, r.Status, st.want)
		}
		if r.Status == 403 && (!strings.Contains(r.Body, "Attention Required") || r.Header.Get("Content-Type") != "text/html; charset=UTF-8") {
			t.Errorf("403 at t0+%v: body/content type is not a block page: %q", st.at, r.Header.Get("Content-Type"))
		}
	}
	// Another key is untouched.
	if r := get(s, "10.0.0.2", sec(6)); r.Status != 200 {
		t.Errorf("other key status = %d, want 200", r.Status)
	}
	st := s.Stats()
	if st.Bans != 1 || st.Banned != 3 || st.Keys["10.0.0.1"].Banned != 3 || st.Keys["10.0.0.1"].Limited != 4 {
		t.Errorf("Stats() = %+v, want 1 ban, 3 banned, 4 limited for 10.0.0.1", st)
	}
}

func TestPoliteClientNeverBanned(t *testing.T) {
	s := newSite(t, Config{
		Algorithm: FixedWindow, Policy: Policy{Quota: 2, Window: 10 * time.Second},
		Headers: HeadersRetryAfter,
		Ban:     Ban{After: 2, Within: time.Hour, For: time.Hour},
	})
	// Three requests per window: the third draws a 429 whose Retry-After
	// the client honours.
	at := time.Duration(0)
	for range 50 {
		for {
			r := get(s, "10.0.0.1", at)
			if r.Status == 403 {
				t.Fatalf("polite client banned at t0+%v", at)
			}
			if r.Status == 429 {
				ra, _ := strconv.Atoi(r.Header.Get("Retry-After"))
				at += time.Duration(ra) * time.Second
				break
			}
			at += ms(10)
		}
	}
	if st := s.Stats(); st.Bans != 0 || st.Limited != 50 {
		t.Errorf("Stats() = %+v, want no bans and 50 limited", st)
	}
}

func TestOverloadRate(t *testing.T) {
	s := newSite(t, Config{Policy: Policy{Quota: 100}, Overload: Overload{Rate: 2, RetryAfter: 1500 * time.Millisecond}})
	for _, st := range []struct {
		ip   string
		at   time.Duration
		want int
	}{
		{"a", 0, 200}, {"b", 0, 200}, {"c", 0, 503}, {"c", ms(499), 503}, {"c", ms(500), 200}, {"d", ms(600), 503},
	} {
		r := get(s, st.ip, st.at)
		if r.Status != st.want {
			t.Errorf("Handle(%s, t0+%v) = %d, want %d", st.ip, st.at, r.Status, st.want)
		}
		if r.Status == 503 && (r.Header.Get("Retry-After") != "2" || !strings.Contains(r.Body, "503")) {
			t.Errorf("503 Retry-After = %q, want 2 and an overload body", r.Header.Get("Retry-After"))
		}
	}
	if st := s.Stats(); st.Overloaded != 3 || st.Allowed != 3 {
		t.Errorf("Stats() = %+v, want 3 overloaded, 3 allowed", st.Counts)
	}
}

func TestOverloadConcurrent(t *testing.T) {
	s := newSite(t, Config{Policy: Policy{Quota: 100}, Latency: Latency{Base: ms(100)}, Overload: Overload{Concurrent: 2}})
	for _, st := range []struct {
		ip   string
		at   time.Duration
		want int
	}{
		{"a", 0, 200}, {"b", ms(10), 200}, {"c", ms(50), 503}, {"c", ms(100), 200}, {"d", ms(105), 503}, {"d", ms(110), 200},
	} {
		if r := get(s, st.ip, st.at); r.Status != st.want {
			t.Errorf("Handle(%s, t0+%v) = %d, want %d", st.ip, st.at, r.Status, st.want)
		}
	}
	if r := get(s, "e", 0); r.Header.Get("Retry-After") != "" {
		t.Errorf("503 without Overload.RetryAfter has Retry-After %q", r.Header.Get("Retry-After"))
	}
}

func TestLimitChange(t *testing.T) {
	for _, start := range []time.Time{{}, t0} {
		s := newSite(t, Config{
			Policy:   Policy{Quota: 1, Window: time.Second},
			Schedule: []Change{{At: sec(10), Policy: Policy{Quota: 2, Window: time.Second, Burst: 1}}},
			Start:    start,
		})
		n := 0
		for i := range 80 { // every 250 ms for 20 s
			if get(s, "a", time.Duration(i)*ms(250)).Status == 200 {
				n++
			}
		}
		if n != 30 {
			t.Errorf("start %v: %d allowed in 20 s (1 r/s then 2 r/s), want 30", start, n)
		}
		if got := s.Policy(); got.Quota != 2 {
			t.Errorf("Policy() after the change = %+v, want quota 2", got)
		}
		if a, b := s.AllowedRateAt(1, sec(5)), s.AllowedRateAt(1, sec(15)); a != 1 || b != 2 {
			t.Errorf("AllowedRateAt(1, 5s/15s) = %v/%v, want 1/2", a, b)
		}
		if got := s.AllowedRequests(1, sec(20)); got != 30 {
			t.Errorf("AllowedRequests(1, 20s) = %v, want 30", got)
		}
		if got := s.AllowedRate(20); got != 40 {
			t.Errorf("AllowedRate(20) = %v, want 40", got)
		}
	}
}

// TestLayered: flask-limiter's "3 per second;40 per minute" as moving
// windows: each second lets 3 through until the minute has 40, then
// nothing until the minute's first request is a minute old; a request the
// minute refuses was charged by the second (the limits library hits each
// limit in turn), and the measure's allowed rate is the minute's.
func TestLayered(t *testing.T) {
	s := newSite(t, Config{Algorithm: LimitsMoving, Policy: Policy{Quota: 3, Window: time.Second},
		Also: []Policy{{Quota: 40, Window: time.Minute}}})
	ok := 0
	for i := range 100 { // 5 a second for 20 s
		if get(s, "a", time.Duration(i)*ms(200)).Status == 200 {
			ok++
		}
	}
	if ok != 40 {
		t.Errorf("5 a second for 20 s: %d through, want 40 (3 a second until the minute's 40)", ok)
	}
	if got := get(s, "a", sec(59)).Status; got != 429 {
		t.Errorf("at 59 s, the minute still spent: %d, want 429", got)
	}
	// Three requests at 60.0–60.15 s charge the second, though the minute
	// refuses all or all but one of them (its oldest requests, at 0, 0.2
	// and 0.4 s, are a minute old only from 60, 60.2 and 60.4 s); at 60.9 s
	// the minute has room again, and only the second's charges refuse.
	for _, at := range []time.Duration{sec(60), sec(60) + ms(100), sec(60) + ms(150)} {
		get(s, "a", at)
	}
	if got := get(s, "a", sec(60)+ms(900)).Status; got != 429 {
		t.Errorf("a fourth request within the second after three charged it: %d, want 429", got)
	}
	if got := s.AllowedRate(10); math.Abs(got-10*40/60.0) > 1e-9 {
		t.Errorf("AllowedRate(10) = %v, want the minute's %v", got, 10*40/60.0)
	}
}

func TestAllowedRate(t *testing.T) {
	perIP := Policy{Quota: 1, Window: time.Second, Burst: 2}
	for _, tc := range []struct {
		name string
		cfg  Config
		keys int
		want float64
	}{
		{"per-ip 20 exits", Config{Policy: perIP}, 20, 20},
		{"per-ip 30/min", Config{Policy: Policy{Quota: 30, Window: time.Minute}}, 20, 10},
		{"site-wide", Config{Policy: perIP, Key: KeySpec{By: KeySite}}, 20, 1},
		{"overload caps", Config{Policy: perIP, Overload: Overload{Rate: 12}}, 20, 12},
		{"overload above", Config{Policy: perIP, Overload: Overload{Rate: 12}}, 5, 5},
		{"concurrency caps", Config{Policy: perIP, Latency: Latency{Base: ms(500)}, Overload: Overload{Concurrent: 4}}, 20, 8},
		{"no keys", Config{Policy: perIP}, 0, 0},
	} {
		s := newSite(t, tc.cfg)
		if got := s.AllowedRate(tc.keys); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: AllowedRate(%d) = %v, want %v", tc.name, tc.keys, got, tc.want)
		}
	}
}

func TestKeyExtraction(t *testing.T) {
	basic := "Basic dXNlci1zZXNzaW9uLTc6c2VjcmV0" // user-session-7:secret
	h := http.Header{
		"Proxy-Authorization": {basic},
		"Authorization":       {"Bearer tok1"},
		"X-Api-Key":           {"k-42"},
		"Cookie":              {"a=1; session=s-9"},
	}
	for _, tc := range []struct {
		spec KeySpec
		req  SimRequest
		want string
	}{
		{KeySpec{}, SimRequest{IP: "127.0.0.11", Header: h}, "127.0.0.11"},
		{KeySpec{By: KeySite}, SimRequest{IP: "127.0.0.11"}, "site"},
		{KeySpec{By: KeyProxyUser}, SimRequest{IP: "127.0.0.11", Header: h}, "user-session-7"},
		{KeySpec{By: KeyProxyUser}, SimRequest{IP: "127.0.0.11", ProxyUser: "alice", Header: h}, "alice"},
		{KeySpec{By: KeyProxyUser}, SimRequest{IP: "127.0.0.11"}, "127.0.0.11"},
		{KeySpec{By: KeyHeader}, SimRequest{IP: "127.0.0.11", Header: h}, "Bearer tok1"},
		{KeySpec{By: KeyHeader, Header: "x-api-key"}, SimRequest{IP: "127.0.0.11", Header: h}, "k-42"},
		{KeySpec{By: KeyHeader, Header: "X-Missing"}, SimRequest{IP: "127.0.0.11", Header: h}, "127.0.0.11"},
		{KeySpec{By: KeyCookie}, SimRequest{IP: "127.0.0.11", Header: h}, "s-9"},
		{KeySpec{By: KeyCookie, Cookie: "a"}, SimRequest{IP: "127.0.0.11", Header: h}, "1"},
		{KeySpec{By: KeyCookie, Cookie: "zz"}, SimRequest{IP: "127.0.0.11", Header: h}, "127.0.0.11"},
		{KeySpec{By: KeyCookie}, SimRequest{Key: "given", IP: "127.0.0.11", Header: h}, "given"},
	} {
		s := newSite(t, Config{Key: tc.spec})
		if got := s.KeyOf(tc.req); got != tc.want {
			t.Errorf("KeyOf(%+v) with %+v = %q, want %q", tc.req, tc.spec, got, tc.want)
		}
	}
}

var proxyUserTests = []struct{ in, want string }{
	{"Basic dXNlci1zZXNzaW9uLTc6c2VjcmV0", "user-session-7"},
	{"basic   dXNlcjpwYXNz  ", "user"},
	{"Basic dXNlcg==", ""}, // no colon
	{"Bearer dXNlcjpwYXNz", ""},
	{"Basic !!!", ""},
	{"", ""},
	{"Basic", ""},
	{"Basic Ojo=", ""}, // "::": empty user
}

func TestProxyUser(t *testing.T) {
	for _, tc := range proxyUserTests {
		if got := ProxyUser(tc.in); got != tc.want {
			t.Errorf("ProxyUser(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzProxyUser(f *testing.F) {
	for _, tc := range proxyUserTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, v string) {
		u := ProxyUser(v)
		if strings.Contains(u, ":") {
			t.Errorf("ProxyUser(%q) = %q contains a colon", v, u)
		}
	})
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{
		{Algorithm: Algo(42)},
		{Policy: Policy{Quota: -1}},
		{Key: KeySpec{By: KeyBy(9)}},
		{Headers: HeaderMode(9)},
		{ResetFormat: ResetFormat(9)},
		{PolicyName: `a"b`},
		{Latency: Latency{Dist: Uniform, Base: sec(2), Max: sec(1)}},
		{Latency: Latency{Dist: Dist(9)}},
		{Latency: Latency{Base: -1}},
		{Overload: Overload{Rate: math.NaN()}},
		{Overload: Overload{Concurrent: -1}},
		{Ban: Ban{After: -1}},
		{Schedule: []Change{{At: -1}}},
		{Schedule: []Change{{Policy: Policy{Burst: -2}}}},
		{Also: []Policy{{Quota: -1}}},
		{Also: []Policy{{Quota: 40, Window: time.Minute}}, Schedule: []Change{{At: sec(1)}}},
		{Also: []Policy{{Quota: 40, Window: time.Minute}}, Tiers: []Policy{{Quota: 1}}},
	} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v) error = %v, want ErrConfig", c, err)
		}
	}
	if _, err := New(Config{}); err != nil {
		t.Errorf("New(Config{}) error %v", err)
	}
}

func TestZeroConfigDefaults(t *testing.T) {
	s := newSite(t, Config{})
	if r := get(s, "a", 0); r.Status != 200 || r.Latency != 0 || r.Body != BodyOK {
		t.Errorf("first request: %+v, want 200 ok with no latency", r)
	}
	if r := get(s, "a", ms(999)); r.Status != 429 || r.Body != BodyLimited || len(r.Header.Values("Retry-After")) != 0 {
		t.Errorf("second request within 1 s: %+v, want bare 429", r)
	}
	if r := get(s, "a", sec(1)); r.Status != 200 {
		t.Errorf("request after 1 s: %d, want 200", r.Status)
	}
}

func TestLatency(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct {
		l        Latency
		min, max time.Duration
	}{
		{Latency{Base: ms(30)}, ms(30), ms(30)},
		{Latency{Dist: Uniform, Base: ms(10), Max: ms(20)}, ms(10), ms(20)},
		{Latency{Dist: Uniform, Base: ms(10), Max: ms(10)}, ms(10), ms(10)},
		{Latency{Dist: LogNormal, Base: ms(40), Max: ms(400)}.withDefaults(), 0, ms(400)},
	} {
		below := 0
		for range 2000 {
			d := tc.l.draw(rng)
			if d < tc.min || d > tc.max {
				t.Fatalf("%+v drew %v, want within [%v, %v]", tc.l, d, tc.min, tc.max)
			}
			if d < tc.l.Base {
				below++
			}
		}
		if tc.l.Dist == LogNormal && (below < 850 || below > 1150) {
			t.Errorf("lognormal median %v: %d of 2000 below it, want about half", tc.l.Base, below)
		}
	}
	// Same seed, same draws.
	a := newSite(t, Config{Latency: Latency{Dist: LogNormal, Base: ms(40)}, Rand: rand.New(rand.NewPCG(1, 1))})
	b := newSite(t, Config{Latency: Latency{Dist: LogNormal, Base: ms(40)}, Rand: rand.New(rand.NewPCG(1, 1))})
	for i := range 100 {
		if x, y := get(a, "k", sec(i)).Latency, get(b, "k", sec(i)).Latency; x != y {
			t.Fatalf("draw %d: %v != %v with the same seed", i, x, y)
		}
	}
	if m := (Latency{Dist: Uniform, Base: ms(10), Max: ms(30)}).Mean(); m != ms(20) {
		t.Errorf("uniform Mean() = %v, want 20ms", m)
	}
}

func TestScenarios(t *testing.T) {
	want := []string{"per-ip-token-bucket", "per-ip-fixed-window", "per-ip-sliding-log", "per-ip-sliding-window",
		"per-ip-gcra", "per-ip-headers-gcra", "per-ip-penalising", "per-ip-headers-xrl", "per-ip-headers-ietf", "per-ip-retry-after",
		"host-scoped", "per-credential", "rotating", "limit-change", "overload-503", "bans"}
	got := map[string]Scenario{}
	for _, sc := range Scenarios() {
		if _, dup := got[sc.Name]; dup {
			t.Errorf("scenario %q listed twice", sc.Name)
		}
		got[sc.Name] = sc
		if sc.Description == "" || strings.Contains(sc.Description, "\n") {
			t.Errorf("scenario %q: description %q, want one line", sc.Name, sc.Description)
		}
		switch sc.Kind {
		case PerIP, HostScoped, PerCredential, Rotating:
		default:
			t.Errorf("scenario %q: kind %q", sc.Name, sc.Kind)
		}
		s, err := New(sc.Config)
		if err != nil {
			t.Errorf("scenario %q: New error %v", sc.Name, err)
			continue
		}
		// About 1 r/s per key suits ~20 exits (3 r/s where a bucket must
		// refill faster than its capacity per second); the site-wide one
		// is a fraction of the pool.
		if r := s.AllowedRate(20); r < 5 || r > 60 {
			t.Errorf("scenario %q: AllowedRate(20) = %v, want a pool-sized rate", sc.Name, r)
		}
	}
	for _, n := range want {
		sc, ok := got[n]
		if !ok {
			t.Errorf("scenario %q missing", n)
			continue
		}
		if strings.HasPrefix(n, "per-ip-") && !strings.HasPrefix(n, "per-ip-headers") && n != "per-ip-retry-after" && sc.Config.Headers != HeadersNone {
			t.Errorf("scenario %q: headers %v, want none", n, sc.Config.Headers)
		}
	}
	for n, kind := range map[string]Kind{"host-scoped": HostScoped, "per-credential": PerCredential, "rotating": Rotating, "per-ip-gcra": PerIP} {
		if got[n].Kind != kind {
			t.Errorf("scenario %q kind = %q, want %q", n, got[n].Kind, kind)
		}
	}
	if _, ok := ScenarioByName("bans"); !ok {
		t.Errorf("ScenarioByName(bans) not found")
	}
	if _, ok := ScenarioByName("nope"); ok {
		t.Errorf("ScenarioByName(nope) found")
	}
}

// ServeHTTP sleeps the drawn latency before answering (fake clock).
func TestServeHTTPLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSite(t, Config{Latency: Latency{Base: ms(100)}, Headers: HeadersRetryAfter})
		r := httptest.NewRequest("GET", "http://site.test/", nil)
		r.RemoteAddr = "127.0.0.11:40000"
		start := time.Now()
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if el := time.Since(start); el != ms(100) {
			t.Errorf("ServeHTTP took %v, want 100ms", el)
		}
		if w.Code != 200 || w.Body.String() != BodyOK {
			t.Errorf("ServeHTTP = %d %q, want 200 ok", w.Code, w.Body.String())
		}
		w = httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != 429 || w.Header().Get("Retry-After") != "1" {
			t.Errorf("second ServeHTTP = %d Retry-After %q, want 429 with 1", w.Code, w.Header().Get("Retry-After"))
		}
		if st := s.Stats(); st.Keys["127.0.0.11"].Allowed != 1 || st.Keys["127.0.0.11"].Limited != 1 {
			t.Errorf("Stats().Keys = %+v, want 127.0.0.11 with 1 allowed, 1 limited", st.Keys)
		}

		// A client that goes away gets nothing written.
		ctx, cancel := context.WithCancel(context.Background())
		r = r.WithContext(ctx)
		w = httptest.NewRecorder()
		done := make(chan struct{})
		go func() { s.ServeHTTP(w, r); close(done) }()
		synctest.Wait() // ServeHTTP is asleep in its latency
		cancel()
		<-done
		if w.Body.Len() != 0 || w.Header().Get("Content-Type") != "" {
			t.Errorf("cancelled ServeHTTP wrote %q", w.Body.String())
		}
	})
}

func TestConcurrentHandle(t *testing.T) {
	s := newSite(t, Config{Policy: Policy{Quota: 10, Window: time.Second}})
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 250 {
				s.Handle(SimRequest{IP: strconv.Itoa(g), Now: t0.Add(time.Duration(i) * time.Millisecond)})
			}
		}()
	}
	for range 4 {
		<-done
	}
	if st := s.Stats(); st.Requests != 1000 || len(st.Keys) != 4 {
		t.Errorf("Stats() = %+v, want 1000 requests over 4 keys", st.Counts)
	}
}

// Shared header maps must never leak one response's values into another.
func TestHeaderCacheDistinct(t *testing.T) {
	s := newSite(t, Config{Algorithm: FixedWindow, Policy: Policy{Quota: 3, Window: 10 * time.Second}, Headers: HeadersXRateLimit, ResetFormat: ResetDelta})
	want := []struct{ status, rem, reset string }{
		{"200", "2", "10"}, {"200", "1", "9"}, {"200", "0", "8"}, {"429", "0", "7"}, {"429", "0", "7"},
		{"200", "2", "10"}, // next window: same values as the first, shared map
	}
	var hs []http.Header
	for i, at := range []time.Duration{0, sec(1), sec(2), sec(3), sec(3), sec(10)} {
		r := get(s, "a", at)
		hs = append(hs, r.Header)
		if got := strconv.Itoa(r.Status); got != want[i].status ||
			r.Header.Get("X-RateLimit-Remaining") != want[i].rem || r.Header.Get("X-RateLimit-Reset") != want[i].reset {
			t.Errorf("response %d: %s remaining %q reset %q, want %+v", i, got,
				r.Header.Get("X-RateLimit-Remaining"), r.Header.Get("X-RateLimit-Reset"), want[i])
		}
	}
	if hs[0].Get("Retry-After") != "" || hs[3].Get("Retry-After") != "7" {
		t.Errorf("Retry-After: 200 has %q, 429 has %q, want none and 7", hs[0].Get("Retry-After"), hs[3].Get("Retry-After"))
	}
}
