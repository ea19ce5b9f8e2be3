// Package verdict names what the outcome of one request means for the limiter
// and the frontier: ok, throttled, busy, retryable, banned, proxy failure,
// fatal or forbidden. The table in DESIGN.md is the contract; package classify applies it.
// This package is only the enum, with no dependencies, so that the limiter
// can speak of verdicts without pulling in net/http.
package verdict

import "fmt"

// Verdict is the meaning of one request's outcome. The zero value is OK.
type Verdict uint8

const (
	// OK: 2xx or 3xx. Lane and host nudge their rates up.
	OK Verdict = iota
	// Throttled: 429 (or a configured equivalent). The lane cools down and
	// learns a lower capacity; the URL goes to another exit.
	Throttled
	// Busy: 503 with Retry-After or an overload page. The whole host pauses;
	// it says nothing about one lane.
	Busy
	// Retryable: 5xx, 408, timeouts and resets. Only this request backs off.
	Retryable
	// Banned: block pages. This lane is quarantined. (A wave of Forbidden
	// answers from several URLs of one lane quarantines it too; the limiter
	// decides that, from history.)
	Banned
	// ProxyFailure: 407 and proxy connect errors. The exit is unhealthy and
	// the URL is not charged an attempt.
	ProxyFailure
	// Fatal: 401, 404, 410 and other 4xx. No retry; the URL is abandoned.
	Fatal
	// Forbidden: a bare 403, with no block page and no rate-limit signal.
	// One is that URL's fate, not a ban: it is tried on other exits a few
	// times, then abandoned as forbidden. It comes last so that the values
	// before it keep their numbers.
	Forbidden
)

var names = [...]string{
	OK:           "ok",
	Throttled:    "throttled",
	Busy:         "busy",
	Retryable:    "retryable",
	Banned:       "banned",
	ProxyFailure: "proxy_failure",
	Fatal:        "fatal",
	Forbidden:    "forbidden",
}

// String returns the snake_case name used in JSON, metrics and reports.
func (v Verdict) String() string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// MarshalText implements encoding.TextMarshaler.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler; it accepts the names
// String returns.
func (v *Verdict) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}

// Parse returns the verdict named s, as String spells it.
func Parse(s string) (Verdict, error) {
	for i, n := range names {
		if n == s {
			return Verdict(i), nil
		}
	}
	return 0, fmt.Errorf("unknown verdict %q (want one of ok, throttled, busy, retryable, banned, proxy_failure, fatal, forbidden)", s)
}

// All lists every verdict in order, for reports and metrics.
func All() []Verdict {
	return []Verdict{OK, Throttled, Busy, Retryable, Banned, ProxyFailure, Fatal, Forbidden}
}

// NotFoundReason reports whether a URL's abandon reason says the server
// has no such page (404, 410): such a URL is not found, not abandoned, in
// every figure a user sees (summary, progress, dashboard, status, metrics).
func NotFoundReason(reason string) bool { return reason == "status 404" || reason == "status 410" }
