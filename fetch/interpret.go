package fetch

import (
	"hash/fnv"
	"net/http"
	"time"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/rlheader"
	"github.com/exitgate/exitgate/verdict"
)

// interpret turns what came back into a verdict: a transport error by its
// type, a response by status, headers and the body's first bytes.
func interpret(r Response, sig rlheader.Signal, rules classify.Rules) verdict.Verdict {
	if r.Err != nil {
		return classify.Error(r.Err)
	}
	v := classify.Response(r.Status, sig, r.Sniff, rules)
	if r.Status == http.StatusProxyAuthRequired && v == verdict.ProxyFailure && !r.ViaProxy && !ruled(rules, r.Status) {
		// No proxy stood between: the server asked for proxy
		// credentials, and its answer is the URL's fate.
		v = verdict.Fatal
	}
	return v
}

// ruled reports whether rules give status a verdict of their own.
func ruled(rules classify.Rules, status int) bool {
	_, ok := rules.Status[status]
	return ok
}

// MaxLimiterWait caps the Retry-After the limiter hears: a longer one is
// heard as 30 days (the URL itself is parked until the time the server
// said).
const MaxLimiterWait = 30 * 24 * time.Hour

// outcomeOf is what the limiter hears about one response to url.
func outcomeOf(v verdict.Verdict, sig rlheader.Signal, sentAt time.Time, url string) limit.Outcome {
	o := limit.Outcome{Verdict: v, SentAt: sentAt}
	if v == verdict.Forbidden {
		h := fnv.New64a()
		h.Write([]byte(url))
		o.URLHash = h.Sum64()
	}
	if sig.HasRetryAfter {
		// Retry-After may say centuries (rlheader saturates at 292 years):
		// the limiter adds it to now, which must not overflow.
		o.RetryAfter = min(sig.RetryAfter, MaxLimiterWait)
	}
	// The governing request quota sets the lane's capacity exactly once its
	// window is known (declared, or learned by the limiter from the resets).
	if sig.HasLimit && sig.Limit > 0 {
		o.Quota = float64(sig.Limit)
		if sig.HasWindow && sig.Window > 0 {
			o.Window = sig.Window
		}
	}
	if sig.HasRemaining {
		o.Remaining, o.HasRemaining = float64(sig.Remaining), true
		if sig.HasReset {
			// Capped as Retry-After is: a reset in 2033 with nothing
			// left held the lane for 6 years.
			o.ResetIn, o.HasReset = min(sig.Reset, MaxLimiterWait), true
		}
	}
	switch sig.Scope {
	case rlheader.ScopeGlobal, rlheader.ScopeShared:
		o.Scope = limit.ScopeHost
	case rlheader.ScopeUser:
		o.Scope = limit.ScopeCredential
	}
	return o
}
