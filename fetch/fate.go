package fetch

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/exitgate/exitgate/backoff"
	"github.com/exitgate/exitgate/rlheader"
	"github.com/exitgate/exitgate/verdict"
)

// RetryPolicy says how a URL is retried. The zero value is the documented
// default of each field.
type RetryPolicy struct {
	// MaxRetries is the per-URL budget of charged retries (retryable errors,
	// bans). Default 5. A negative value means no retries.
	MaxRetries int
	// MaxThrottled is the per-URL budget of 429 and 503-busy answers. A 429
	// calibrates one lane and says nothing bad about the URL, so this budget
	// is larger. Default DefaultMaxThrottled.
	MaxThrottled int
	// MaxForbidden is how many other exits a URL answered with a bare 403
	// (verdict.Forbidden) is tried through before it is abandoned as
	// "forbidden". Default 2. A negative value means none. Those attempts
	// are charged (MaxRetries bounds them too).
	MaxForbidden int
	// MaxProxyFailures bounds how often one URL may meet a failing exit
	// before it is abandoned as "no working exit". Proxy failures are not
	// charged to MaxRetries. Default 10.
	MaxProxyFailures int
	// MaxWait is the park threshold: a Retry-After longer than this parks the
	// URL durably until its due time instead of holding anything. Default 5m.
	MaxWait time.Duration
	// Backoff spaces retries of retryable errors. Default full jitter, 500ms
	// base, 60s cap.
	Backoff backoff.Policy
	// RetryMethods lists the methods that are retried. Default GET and HEAD:
	// others may not be idempotent.
	RetryMethods []string
}

// DefaultMaxThrottled is RetryPolicy.MaxThrottled's default.
const DefaultMaxThrottled = 20

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxRetries == 0 {
		p.MaxRetries = 5
	}
	if p.MaxRetries < 0 {
		p.MaxRetries = 0
	}
	if p.MaxForbidden == 0 {
		p.MaxForbidden = 2
	}
	if p.MaxForbidden < 0 {
		p.MaxForbidden = 0
	}
	if p.MaxThrottled <= 0 {
		p.MaxThrottled = DefaultMaxThrottled
	}
	if p.MaxProxyFailures <= 0 {
		p.MaxProxyFailures = 10
	}
	if p.MaxWait <= 0 {
		p.MaxWait = 5 * time.Minute
	}
	if len(p.RetryMethods) == 0 {
		p.RetryMethods = []string{http.MethodGet, http.MethodHead}
	}
	return p
}

func (p RetryPolicy) retries(method string) bool {
	if method == "" {
		method = http.MethodGet
	}
	for _, m := range p.RetryMethods {
		if m == method {
			return true
		}
	}
	return false
}

// Tries counts a URL's attempts so far by kind. It is stored with the job.
type Tries struct {
	Charged       int // retryable errors and bans
	Throttled     int // 429 and busy
	ProxyFailures int // not charged
	Forbidden     int // bare 403s, each from another exit
}

// Outcome of one attempt as the fate rules need it.
type attemptResult struct {
	Method        string
	Status        int // 0: no response
	Verdict       verdict.Verdict
	RetryAfter    time.Duration
	HasRetryAfter bool
	Err           error
	// Untried is how many exits could still be asked for this URL: for a
	// Forbidden answer, the pool's exits that have not answered it 403.
	Untried int
}

// FateKind is what happens to a job after an attempt.
type FateKind uint8

const (
	FateDone    FateKind = iota // finished with a response worth keeping
	FateRetry                   // back in the queue, due at Fate.At
	FatePark                    // parked durably until Fate.At
	FateAbandon                 // given up; Fate.Reason says why
)

func (k FateKind) String() string {
	return [...]string{"done", "retry", "park", "abandon"}[k]
}

// Fate is the decision for a job after one attempt.
type Fate struct {
	Kind   FateKind
	At     time.Time // for FateRetry and FatePark
	Charge bool      // whether the retry counts against the budget
	Reason string    // for FateAbandon, FatePark and (informative) FateRetry
	Tries  Tries     // the job's counts after this attempt
}

// decide applies DESIGN.md's verdict table to one attempt. It is pure: the
// same inputs at the same now give the same fate.
func decide(p RetryPolicy, tries Tries, r attemptResult, rnd *rand.Rand, now time.Time) Fate {
	f := Fate{Tries: tries}
	if r.Verdict == verdict.OK {
		f.Kind = FateDone
		return f
	}
	what := describe(r)
	if r.Verdict == verdict.Fatal {
		return abandon(f, what)
	}
	if !p.retries(r.Method) {
		return abandon(f, what+" (method "+r.Method+" is not retried)")
	}
	switch r.Verdict {
	case verdict.ProxyFailure:
		f.Tries.ProxyFailures++
		if f.Tries.ProxyFailures > p.MaxProxyFailures {
			return abandon(f, "no working exit: "+what)
		}
		return retry(f, now, false, what)
	case verdict.Forbidden:
		// That URL's answer, not a ban: another exit may be let in (geo
		// rules, a banned IP), so try a few, then give up on the URL.
		f.Tries.Forbidden++
		f.Tries.Charged++
		if f.Tries.Forbidden > p.MaxForbidden || f.Tries.Charged > p.MaxRetries || r.Untried <= 0 {
			return abandon(f, "forbidden")
		}
		return retry(f, now, true, what)
	case verdict.Throttled, verdict.Busy:
		f.Tries.Throttled++
		if f.Tries.Throttled > p.MaxThrottled {
			return abandon(f, "throttled too often: "+what)
		}
		if r.HasRetryAfter && r.RetryAfter > p.MaxWait {
			// Parked no longer than the limiter honours a Retry-After
			// (a day): a date in 9999 parked URLs until 2262.
			f.Kind, f.At = FatePark, now.Add(min(r.RetryAfter, rlheader.DefaultMaxRetryAfter))
			f.Reason = fmt.Sprintf("%s: %s over max wait %s", what, sayRetryAfter(r.RetryAfter), p.MaxWait)
			return f
		}
		// A 429 cools one lane: the URL may go at once through another
		// exit; the limiter decides when. A busy host pauses as a whole,
		// which the limiter also enforces. Neither is the URL's fault, so
		// neither is charged to MaxRetries (MaxThrottled bounds them).
		return retry(f, now, false, what)
	default: // Retryable, Banned
		f.Tries.Charged++
		if f.Tries.Charged > p.MaxRetries {
			return abandon(f, "retries exhausted: "+what)
		}
		at := now
		if r.Verdict == verdict.Retryable {
			at = now.Add(p.Backoff.Delay(rnd, f.Tries.Charged-1, 0))
		}
		return retry(f, at, true, what)
	}
}

func retry(f Fate, at time.Time, charge bool, why string) Fate {
	f.Kind, f.At, f.Charge, f.Reason = FateRetry, at, charge, why
	return f
}

func abandon(f Fate, why string) Fate {
	f.Kind, f.Reason = FateAbandon, why
	return f
}

// describe names an attempt's result in a few stable words, used as the
// abandon reason and in reports (so they group well).
func describe(r attemptResult) string {
	if r.Status == 0 {
		if r.Err != nil {
			return r.Verdict.String() + ": " + ErrorClass(r.Err)
		}
		return r.Verdict.String()
	}
	return fmt.Sprintf("status %d", r.Status)
}

// sayRetryAfter words a Retry-After for a reason: rounded to the second,
// beyond a day with what is honoured (rlheader.DefaultMaxRetryAfter, as a
// lane honours it).
func sayRetryAfter(ra time.Duration) string {
	return backoff.SayRetryAfter(ra.Round(time.Second), rlheader.DefaultMaxRetryAfter)
}
