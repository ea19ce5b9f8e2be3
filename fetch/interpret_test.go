package fetch

import (
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
