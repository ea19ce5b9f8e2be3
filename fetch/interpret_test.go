package fetch

import (
	"net/http"
	"testing"
	"time"

	"github.com/exitgate/exitgate/rlheader"
	"github.com/exitgate/exitgate/verdict"
)

// TestOutcomeCapsFarWaits: a reset years away with nothing left holds the
// lane no longer than a Retry-After would (MaxLimiterWait): a reset in 2033
// held it for 6 years.
func TestOutcomeCapsFarWaits(t *testing.T) {
	far := 6 * 365 * 24 * time.Hour
	sig := rlheader.Signal{HasRetryAfter: true, RetryAfter: far, HasRemaining: true, Remaining: 0, HasReset: true, Reset: far}
	o := outcomeOf(verdict.Throttled, sig, time.Now(), "http://a.example/")
	if o.RetryAfter != MaxLimiterWait || o.ResetIn != MaxLimiterWait {
		t.Errorf("Retry-After %v, reset in %v; want both %v", o.RetryAfter, o.ResetIn, MaxLimiterWait)
	}
}

// TestPushbackOf: why a host waits, as its last answer says it: a
// Retry-After already past is said so (it read "Retry-After 0s" beside a
// park of minutes), and a 429 that tells nothing remaining until a reset,
// with no Retry-After, says the reset.
func TestPushbackOf(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		h    http.Header
		want string
	}{
		{http.Header{"Retry-After": {now.Add(-time.Hour).UTC().Format(http.TimeFormat)}}, "last answer: status 429, a Retry-After already past"},
		{http.Header{"Retry-After": {"30"}}, "last answer: status 429, Retry-After 30s"},
		{http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"57"}}, "last answer: status 429, rate-limit remaining 0, reset in 57s"},
		{http.Header{}, "last answer: status 429"},
	} {
		sig := rlheader.Parse(tc.h, now, rlheader.Profile{})
		if got := pushbackOf(Response{Status: 429}, verdict.Throttled, sig); got != tc.want {
			t.Errorf("pushbackOf(%v) = %q, want %q", tc.h, got, tc.want)
		}
	}
}
