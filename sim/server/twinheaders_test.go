package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/rlheader"
	"github.com/exitgate/exitgate/sim/server"
)

// The twins' header modes send what the real servers send, and rlheader
// reads them as it reads the real ones.
func TestTwinHeaderShapes(t *testing.T) {
	t0 := time.Unix(1_000_000_000, 0)
	for _, tc := range []struct {
		name string
		cfg  server.Config
		// Requests at these offsets; the header of the last is checked.
		at []time.Duration
		// want holds the exact fields of the last response ("" = absent).
		status int
		want   map[string]string
		sig    func(rlheader.Signal) bool
	}{
		{"httprate 200", server.Config{Algorithm: server.HTTPRate, Policy: server.Policy{Quota: 30, Window: 10 * time.Second}, Headers: server.HeadersXRateLimit, Uptime: 500 * time.Millisecond},
			// The limiter started 0.5 s before this first request: its window
			// ends at 11.5 s, and Reset rounds that down.
			[]time.Duration{2 * time.Second}, 200,
			map[string]string{"X-Ratelimit-Limit": "30", "X-Ratelimit-Remaining": "29", "X-Ratelimit-Reset": "1000000011", "Retry-After": ""},
			func(s rlheader.Signal) bool {
				return s.HasLimit && s.Limit == 30 && s.Remaining == 29 && s.Reset == 9*time.Second
			}},
		{"httprate with Date: the reset (rounded down) is read against the receive time the Date agrees with", server.Config{Algorithm: server.HTTPRate, Policy: server.Policy{Quota: 30, Window: 10 * time.Second}, Headers: server.HeadersXRateLimit, Uptime: 500 * time.Millisecond, Date: true},
			// Window [2.2 s, 12.2 s): Reset 12 (rounded down from 12.2);
			// Date 2 s, received at 2.7 s: 9.3 s, the header's 0.2 s early.
			[]time.Duration{2700 * time.Millisecond}, 200,
			map[string]string{"X-Ratelimit-Reset": "1000000012", "Date": "Sun, 09 Sep 2001 01:46:42 GMT"},
			func(s rlheader.Signal) bool { return (s.Reset - 9300*time.Millisecond).Abs() < time.Millisecond }},
		{"haproxy sends no Date", server.Config{Algorithm: server.HAProxy, Policy: server.Policy{Quota: 1, Window: 10 * time.Second}},
			[]time.Duration{0}, 200, map[string]string{"Date": ""},
			func(s rlheader.Signal) bool { return true }},
		{"httprate 429", server.Config{Algorithm: server.HTTPRate, Policy: server.Policy{Quota: 1, Window: 10 * time.Second}, Headers: server.HeadersXRateLimit, Uptime: 500 * time.Millisecond},
			[]time.Duration{0, 3 * time.Second}, 429,
			map[string]string{"X-Ratelimit-Limit": "1", "X-Ratelimit-Remaining": "0", "X-Ratelimit-Reset": "1000000009", "Retry-After": "10"},
			func(s rlheader.Signal) bool { return s.HasRetryAfter && s.RetryAfter == 10*time.Second }},
		{"flask moving window 200: Retry-After on a success", server.Config{Algorithm: server.LimitsMoving, Policy: server.Policy{Quota: 20, Window: time.Minute}, Headers: server.HeadersXRateLimit, RetryAfterAlways: true},
			[]time.Duration{1500 * time.Millisecond}, 200,
			// reset_at = int(1000000001.5) + 60 + 1; Retry-After = int(reset_at - now) = 60.
			map[string]string{"X-Ratelimit-Limit": "20", "X-Ratelimit-Remaining": "19", "X-Ratelimit-Reset": "1000000062", "Retry-After": "60"},
			func(s rlheader.Signal) bool { return s.Remaining == 19 && s.HasRetryAfter }},
		{"flask moving window 429: Reset from the newest hit", server.Config{Algorithm: server.LimitsMoving, Policy: server.Policy{Quota: 2, Window: time.Minute}, Headers: server.HeadersXRateLimit, RetryAfterAlways: true},
			[]time.Duration{0, 30 * time.Second, 40 * time.Second}, 429,
			// The oldest hit (0 s) frees a slot at 60 s; the header says 91 s.
			map[string]string{"X-Ratelimit-Remaining": "0", "X-Ratelimit-Reset": "1000000091", "Retry-After": "51"},
			func(s rlheader.Signal) bool { return s.RetryAfter == 51*time.Second }},
		{"haproxy with hdr Retry-After 30", server.Config{Algorithm: server.HAProxy, Policy: server.Policy{Quota: 1, Window: 10 * time.Second}, RetryAfter: 30 * time.Second},
			[]time.Duration{0, time.Second}, 429,
			map[string]string{"Retry-After": "30", "X-Ratelimit-Limit": ""},
			func(s rlheader.Signal) bool { return s.RetryAfter == 30*time.Second && !s.HasLimit }},
		{"haproxy bare", server.Config{Algorithm: server.HAProxy, Policy: server.Policy{Quota: 1, Window: 10 * time.Second}},
			[]time.Duration{0, time.Second}, 429,
			map[string]string{"Retry-After": ""},
			func(s rlheader.Signal) bool { return !s.HasRetryAfter }},
		{"express-rate-limit draft-8 200", server.Config{Algorithm: server.ExpressMemory, Policy: server.Policy{Quota: 30, Window: time.Minute}, Headers: server.HeadersIETFDraft8, PolicyName: "30-in-1min"},
			[]time.Duration{0, 20*time.Second + 500*time.Millisecond}, 200,
			// pk: what express-rate-limit's getPartitionKey gives for 10.0.0.1
			// (base64 of the first 12 hex digits of its SHA-256, computed with node).
			map[string]string{"Ratelimit": `"30-in-1min"; r=28; t=40`, "Ratelimit-Policy": `"30-in-1min"; q=30; w=60; pk=:ZjUwNDczNDQxMjJm:`, "Retry-After": ""},
			func(s rlheader.Signal) bool {
				return s.HasLimit && s.Limit == 30 && s.Window == time.Minute && s.Remaining == 28 && s.Reset == 40*time.Second && !s.HasRetryAfter
			}},
		{"express-rate-limit draft-8 429", server.Config{Algorithm: server.ExpressMemory, Policy: server.Policy{Quota: 1, Window: time.Minute}, Headers: server.HeadersIETFDraft8, PolicyName: "1-in-1min"},
			[]time.Duration{0, 30*time.Second + 200*time.Millisecond}, 429,
			map[string]string{"Ratelimit": `"1-in-1min"; r=0; t=30`, "Retry-After": "30"},
			func(s rlheader.Signal) bool { return s.Remaining == 0 && s.RetryAfter == 30*time.Second }},
		{"nginx with add_header Retry-After 1 always", server.Config{Algorithm: server.Nginx, Policy: server.Policy{Quota: 1, Window: time.Second, Burst: 1}, RetryAfter: time.Second},
			[]time.Duration{0, 999 * time.Millisecond}, 429,
			map[string]string{"Retry-After": "1"},
			func(s rlheader.Signal) bool { return s.RetryAfter == time.Second }},
	} {
		site, err := server.New(tc.cfg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var resp server.SimResponse
		for _, off := range tc.at {
			resp = site.Handle(server.SimRequest{IP: "10.0.0.1", Now: t0.Add(off)})
		}
		if resp.Status != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, resp.Status, tc.status)
		}
		for k, v := range tc.want {
			if got := strings.Join(resp.Header[http.CanonicalHeaderKey(k)], ","); got != v {
				t.Errorf("%s: %s = %q, want %q", tc.name, k, got, v)
			}
		}
		now := t0.Add(tc.at[len(tc.at)-1])
		if s := rlheader.Parse(resp.Header, now, rlheader.Profile{}); !tc.sig(s) {
			t.Errorf("%s: rlheader.Parse = %+v, not what the real server's header says", tc.name, s)
		}
	}
}
