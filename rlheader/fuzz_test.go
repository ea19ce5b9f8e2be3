package rlheader

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// checkSignal asserts the invariants every Signal must hold.
func checkSignal(t *testing.T, s *Signal, in any) {
	t.Helper()
	if s.RetryAfter < 0 || s.Reset < 0 || s.Window < 0 || s.Limit < 0 || s.Remaining < 0 {
		t.Fatalf("Parse(%q) gave a negative number: %+v", in, s)
	}
	if !s.HasRetryAfter && (s.RetryAfter != 0 || s.Sources.RetryAfter != "") ||
		!s.HasLimit && (s.Limit != 0 || s.Sources.Limit != "") ||
		!s.HasRemaining && (s.Remaining != 0 || s.Sources.Remaining != "") ||
		!s.HasReset && (s.Reset != 0 || s.Sources.Reset != "") {
		t.Fatalf("Parse(%q) set a number it does not know: %+v", in, s)
	}
	if s.HasRetryAfter && s.Sources.RetryAfter == "" || s.HasLimit && s.Sources.Limit == "" ||
		s.HasRemaining && s.Sources.Remaining == "" || s.HasReset && s.Sources.Reset == "" ||
		s.HasWindow && s.Sources.Window == "" {
		t.Fatalf("Parse(%q) knows a number without its source: %+v", in, s)
	}
	for _, p := range s.Policies {
		if p.Quota < 0 || p.Remaining < 0 || p.Reset < 0 || p.Window < 0 || p.Source == "" {
			t.Fatalf("Parse(%q) gave a bad policy %+v", in, p)
		}
	}
	for _, i := range s.Ignored {
		if i.Reason == "" || i.Header == "" {
			t.Fatalf("Parse(%q) ignored %+v without saying why", in, i)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "2.0", "-1", "", "soon", "120, 120", "120, 60",
		"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
		"Thu, 26 Mar 2026 16:01:00 GMT, 60", "99999999999999999999999", ",,", "Tuesday, 29-Feb-00 00:00:00 GMT"} {
		f.Add(s, int64(nowUnix))
	}
	f.Fuzz(func(t *testing.T, v string, unix int64) {
		d, err := ParseRetryAfter(v, time.Unix(unix%(1<<40), 0))
		if err == nil && d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, negative", v, d)
		}
		if err != nil && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, %v: a value with an error", v, d, err)
		}
		if _, err := ParseHTTPDate(v, time.Unix(unix%(1<<40), 0)); err != nil && err != ErrSyntax {
			t.Fatalf("ParseHTTPDate(%q) error %v, want ErrSyntax", v, err)
		}
		// The positional fast path must agree with time.Parse.
		if fast, ok := parseIMFFixdate(v); ok {
			slow, err := time.Parse(http.TimeFormat, v)
			if err != nil || !slow.Equal(fast) {
				t.Fatalf("parseIMFFixdate(%q) = %v, time.Parse = %v, %v", v, fast, slow, err)
			}
		}
	})
}

func FuzzParseReset(f *testing.F) {
	for _, s := range []string{"30", "30.5", "1774540810", "1774540810.123", "1774540810000", "600000",
		"6m0s", "250ms", "1h2m3.5s", "2026-03-26T16:00Z", "2026-03-26T17:00:30.5+01:00",
		"Thu, 26 Mar 2026 16:00:10 GMT", "-5", "", "9999999999999999999999999999"} {
		for m := range ResetDeltaMillis + 1 {
			f.Add(s, uint8(m))
		}
	}
	f.Fuzz(func(t *testing.T, v string, mode uint8) {
		d, err := ParseReset(v, now, ResetMode(mode%5))
		if d < 0 || (err != nil && d != 0) {
			t.Fatalf("ParseReset(%q) = %v, %v", v, d, err)
		}
	})
}

func FuzzParseIETF(f *testing.F) {
	for _, c := range [][2]string{
		{`"burst";q=100;w=60,"daily";q=1000;w=86400`, `"burst";r=50;t=30, "daily";r=2;t=3000`},
		{`"default";q=100;w=10`, `"default";r=50;t=30`},
		{`burst;q=100;w=60`, `burst;r=7;t=3`},
		{"100;w=10, 1000;w=3600", "limit=100, remaining=50, reset=5"},
		{`"peruser";q=100;w=60;qu="concurrent-requests";pk=:Zm9v:`, `"peruser";r=3;t=4;pk=:Zm9v:`},
		{`"a";w=60, "b";q=5;w=0, ("x" "y");q=1, 1.5`, `"burst";r=-1`},
		{"", ""},
	} {
		f.Add(c[0], c[1], "")
		f.Add(c[0], c[1], "beta-")
	}
	f.Fuzz(func(t *testing.T, policy, rl, prefix string) {
		h := http.Header{}
		h[prefix+"RateLimit-Policy"] = strings.Split(policy, "\n")
		h[prefix+"RateLimit"] = strings.Split(rl, "\n")
		s := Parse(h, now, Profile{})
		checkSignal(t, &s, h)
	})
}

func FuzzParseXRateLimit(f *testing.F) {
	for _, c := range parseCases {
		var names, vals []string
		for k, vs := range c.h {
			for _, v := range vs {
				names = append(names, k)
				vals = append(vals, v)
			}
		}
		f.Add(strings.Join(names, "\n"), strings.Join(vals, "\n"), uint8(c.prof.Reset))
	}
	f.Add("X-RateLimit-Limit\nX-RateLimit-Remaining\nX-RateLimit-Reset", "100, 100;w=10\n598.0\n1774540810.5", uint8(0))
	f.Add("Date\nRetry-After\nX-RateLimit-Reset", "<none>\n<none>\n<none>", uint8(0))
	f.Fuzz(func(t *testing.T, names, vals string, mode uint8) {
		h := http.Header{}
		ns, vs := strings.Split(names, "\n"), strings.Split(vals, "\n")
		for i := range min(len(ns), len(vs)) {
			if vs[i] == "<none>" {
				h[ns[i]] = []string{} // present with no lines
				continue
			}
			h[ns[i]] = append(h[ns[i]], vs[i])
		}
		s := Parse(h, now, Profile{Reset: ResetMode(mode % 5)})
		checkSignal(t, &s, h)
	})
}
