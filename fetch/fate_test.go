package fetch

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exitgate/exitgate/backoff"
	"github.com/exitgate/exitgate/verdict"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p := RetryPolicy{MaxRetries: 2, MaxThrottled: 3, MaxProxyFailures: 2, MaxWait: time.Minute}.withDefaults()
	tests := []struct {
		name   string
		tries  Tries
		r      attemptResult
		kind   FateKind
		charge bool
		reason string // substring
		atMin  time.Duration
		atMax  time.Duration
	}{
		{"ok", Tries{}, attemptResult{Status: 200, Verdict: verdict.OK}, FateDone, false, "", 0, 0},
		{"404 abandons at once", Tries{}, attemptResult{Status: 404, Verdict: verdict.Fatal}, FateAbandon, false, "status 404", 0, 0},
		{"429 retries at once elsewhere, uncharged", Tries{}, attemptResult{Status: 429, Verdict: verdict.Throttled, RetryAfter: 30 * time.Second, HasRetryAfter: true}, FateRetry, false, "status 429", 0, 0},
		{"429 over max wait parks", Tries{}, attemptResult{Status: 429, Verdict: verdict.Throttled, RetryAfter: time.Hour, HasRetryAfter: true}, FatePark, false, "Retry-After 1h0m0s over max wait 1m0s", time.Hour, time.Hour},
		// A Retry-After date in 9999 parked URLs until 2262, saying 2063104h; a huge number saturates the parser.
		{"429 with a Retry-After of centuries parks a day", Tries{}, attemptResult{Status: 429, Verdict: verdict.Throttled, RetryAfter: math.MaxInt64, HasRetryAfter: true}, FatePark, false, "Retry-After over a century, honoured as 24h0m0s over max wait", 24 * time.Hour, 24 * time.Hour},
		{"429 with a Retry-After of days parks a day", Tries{}, attemptResult{Status: 429, Verdict: verdict.Throttled, RetryAfter: 30 * 24 * time.Hour, HasRetryAfter: true}, FatePark, false, "Retry-After 30 days, honoured as 24h0m0s", 24 * time.Hour, 24 * time.Hour},
		{"429 budget", Tries{Throttled: 3}, attemptResult{Status: 429, Verdict: verdict.Throttled}, FateAbandon, false, "throttled too often", 0, 0},
		{"503 busy retries, uncharged", Tries{}, attemptResult{Status: 503, Verdict: verdict.Busy}, FateRetry, false, "status 503", 0, 0},
		{"502 backs off", Tries{}, attemptResult{Status: 502, Verdict: verdict.Retryable}, FateRetry, true, "status 502", 0, 500 * time.Millisecond},
		{"502 second retry", Tries{Charged: 1}, attemptResult{Status: 502, Verdict: verdict.Retryable}, FateRetry, true, "", 0, time.Second},
		{"502 exhausted", Tries{Charged: 2}, attemptResult{Status: 502, Verdict: verdict.Retryable}, FateAbandon, false, "retries exhausted: status 502", 0, 0},
		{"reset is retryable", Tries{}, attemptResult{Verdict: verdict.Retryable, Err: syscall.ECONNRESET}, FateRetry, true, "connection reset", 0, 500 * time.Millisecond},
		{"ban retries at once", Tries{}, attemptResult{Status: 403, Verdict: verdict.Banned}, FateRetry, true, "status 403", 0, 0},
		{"bare 403 tries another exit, charged", Tries{}, attemptResult{Status: 403, Verdict: verdict.Forbidden, Untried: 2}, FateRetry, true, "status 403", 0, 0},
		{"bare 403 with no other exit", Tries{}, attemptResult{Status: 403, Verdict: verdict.Forbidden, Untried: 0}, FateAbandon, false, "forbidden", 0, 0},
		{"bare 403 from enough exits", Tries{Forbidden: 2, Charged: 2}, attemptResult{Status: 403, Verdict: verdict.Forbidden, Untried: 5}, FateAbandon, false, "forbidden", 0, 0},
		{"proxy failure not charged", Tries{}, attemptResult{Status: 407, Verdict: verdict.ProxyFailure}, FateRetry, false, "status 407", 0, 0},
		{"proxy failures bounded", Tries{ProxyFailures: 2}, attemptResult{Verdict: verdict.ProxyFailure, Err: errors.New("x")}, FateAbandon, false, "no working exit", 0, 0},
		{"POST not retried", Tries{}, attemptResult{Method: "POST", Status: 502, Verdict: verdict.Retryable}, FateAbandon, false, "method POST is not retried", 0, 0},
	}
	for _, tt := range tests {
		r := rand.New(rand.NewPCG(1, 1))
		f := decide(p, tt.tries, tt.r, r, now)
		if f.Kind != tt.kind || (f.Kind == FateRetry && f.Charge != tt.charge) || !strings.Contains(f.Reason, tt.reason) {
			t.Errorf("%s: decide = %v charge=%v reason=%q, want %v charge=%v reason containing %q", tt.name, f.Kind, f.Charge, f.Reason, tt.kind, tt.charge, tt.reason)
		}
		if f.Kind == FateRetry || f.Kind == FatePark {
			if d := f.At.Sub(now); d < tt.atMin || d > tt.atMax {
				t.Errorf("%s: due in %v, want within [%v, %v]", tt.name, d, tt.atMin, tt.atMax)
			}
		}
	}
}

func TestRetryPolicyDefaults(t *testing.T) {
	p := RetryPolicy{}.withDefaults()
	if p.MaxRetries != 5 || p.MaxWait != 5*time.Minute || !p.retries("GET") || !p.retries("") || p.retries("POST") {
		t.Errorf("defaults = %+v, want 5 retries, 5m max wait, GET/HEAD only", p)
	}
	if got := (RetryPolicy{MaxRetries: -1}).withDefaults().MaxRetries; got != 0 {
		t.Errorf("MaxRetries -1 gives %d, want 0 (no retries)", got)
	}
}

var backoffFast = backoff.Policy{Base: 10 * time.Millisecond, Cap: 50 * time.Millisecond}
