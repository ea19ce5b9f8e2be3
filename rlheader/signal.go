package rlheader

import (
	"fmt"
	"net/http"
	"time"
)

// DefaultMaxRetryAfter is the Retry-After above which a Signal is flagged
// RetryAfterExcessive when Profile.MaxRetryAfter is zero.
const DefaultMaxRetryAfter = 24 * time.Hour

// ResetMode pins how a bare number in a reset header is read. The zero value,
// ResetAuto, decides by magnitude (see the package documentation). It is a
// plain value, safe for concurrent use.
type ResetMode uint8

const (
	// ResetAuto: >= 1e12 epoch milliseconds, >= 1e9 epoch seconds, else
	// delta seconds.
	ResetAuto ResetMode = iota
	// ResetEpochSeconds: Unix time in seconds, decimals allowed (GitHub,
	// Discord's X-RateLimit-Reset).
	ResetEpochSeconds
	// ResetEpochMillis: Unix time in milliseconds.
	ResetEpochMillis
	// ResetDeltaSeconds: seconds until the reset, decimals allowed (Reddit,
	// the IETF drafts).
	ResetDeltaSeconds
	// ResetDeltaMillis: milliseconds until the reset.
	ResetDeltaMillis
)

var resetModeNames = [...]string{
	ResetAuto:         "auto",
	ResetEpochSeconds: "epoch-seconds",
	ResetEpochMillis:  "epoch-millis",
	ResetDeltaSeconds: "delta-seconds",
	ResetDeltaMillis:  "delta-millis",
}

// String returns the name ParseResetMode accepts.
func (m ResetMode) String() string {
	if int(m) < len(resetModeNames) {
		return resetModeNames[m]
	}
	return fmt.Sprintf("resetmode(%d)", uint8(m))
}

// ParseResetMode returns the mode named s: auto, epoch-seconds,
// epoch-millis, delta-seconds or delta-millis.
func ParseResetMode(s string) (ResetMode, error) {
	for i, n := range resetModeNames {
		if n == s {
			return ResetMode(i), nil
		}
	}
	return 0, fmt.Errorf("unknown reset mode %q (want auto, epoch-seconds, epoch-millis, delta-seconds or delta-millis)", s)
}

// Profile adjusts parsing for one host. The zero value is the default:
// reset numbers read by magnitude, Retry-After over DefaultMaxRetryAfter
// flagged. A Profile is a plain value, safe to share between goroutines.
type Profile struct {
	// Reset pins how bare numbers in reset headers are read. It applies to
	// RateLimit-Reset and the X-RateLimit family, not to the IETF t
	// parameter, which is always delta seconds.
	Reset ResetMode
	// MaxRetryAfter flags longer Retry-After waits as excessive (the value
	// is kept; the caller caps it or parks the URL). Zero means
	// DefaultMaxRetryAfter; negative disables the flag.
	MaxRetryAfter time.Duration
}

// Scope is the key the server says its limit is enforced on. It is a plain
// value, safe for concurrent use.
type Scope uint8

const (
	// ScopeUnknown: the response does not say.
	ScopeUnknown Scope = iota
	// ScopeUser: per user, credential or client (X-RateLimit-Scope: user).
	ScopeUser
	// ScopeGlobal: one limit for the whole site or application
	// (X-RateLimit-Scope: global, X-RateLimit-Global: true).
	ScopeGlobal
	// ScopeShared: a limit shared by a resource across users
	// (X-RateLimit-Scope: shared).
	ScopeShared
)

var scopeNames = [...]string{
	ScopeUnknown: "unknown",
	ScopeUser:    "per-user",
	ScopeGlobal:  "global",
	ScopeShared:  "shared",
}

// String returns "unknown", "per-user", "global" or "shared".
func (s Scope) String() string {
	if int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return fmt.Sprintf("scope(%d)", uint8(s))
}

// MarshalText implements encoding.TextMarshaler.
func (s Scope) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Quota units of the IETF drafts; vendor groups may carry others ("tokens").
const (
	UnitRequests           = "requests"
	UnitContentBytes       = "content-bytes"
	UnitConcurrentRequests = "concurrent-requests"
)

// Policy is one declared quota: an IETF RateLimit-Policy item (with what the
// RateLimit field says remains of it), or one group of vendor headers such
// as X-RateLimit-Limit-Minute / X-RateLimit-Remaining-Minute. It is a plain
// value: safe to read concurrently, not to mutate concurrently.
type Policy struct {
	// Name is the IETF policy name, the vendor suffix ("minute",
	// "requests") or resource name, or "" when unnamed.
	Name string
	// Quota is the number of units allowed per window; valid if HasQuota.
	Quota    int64
	HasQuota bool
	// Window is the quota's window; zero when unknown.
	Window time.Duration
	// Unit is the quota unit; "" means not declared (requests).
	Unit string
	// Partition is the IETF pk parameter, the server's opaque partition
	// key; nil when absent.
	Partition []byte
	// Remaining units in the current window; valid if HasRemaining.
	Remaining    int64
	HasRemaining bool
	// Reset is the time from the response until the window resets; valid
	// if HasReset.
	Reset    time.Duration
	HasReset bool
	// Source is the header that declared the policy.
	Source string
}

// CountsRequests reports whether the policy's unit is requests (declared or
// by default).
func (p *Policy) CountsRequests() bool { return p.Unit == "" || p.Unit == UnitRequests }

// Ignored is one header value (or part of one) that was skipped, and why.
// It is a plain value, safe for concurrent use.
type Ignored struct {
	Header string
	Value  string
	Reason string
}

// Sources names the header each number of a Signal came from ("" when the
// number is unknown), spelled as in the header map. It is a plain value,
// safe for concurrent use.
type Sources struct {
	RetryAfter string
	Limit      string
	Remaining  string
	Window     string
	Reset      string
	Scope      string
	Bucket     string
}

// Signal is what one response says about rate limits, normalised. Every
// number has a Has flag; false means unknown, never zero or unlimited.
// Durations count from the response's time (see the package documentation);
// the matching *At fields are those durations added to Received.
//
// A Signal is a plain value: safe to read from several goroutines, not to
// mutate concurrently.
type Signal struct {
	// Received is the receive time Parse was given.
	Received time.Time
	// ServerDate is the response's Date header, when a rate-limit header
	// was present and Date was valid; zero otherwise.
	ServerDate time.Time

	// RetryAfter is the wait Retry-After (or, without it, a vendor
	// millisecond wait) asks for; valid if HasRetryAfter.
	RetryAfter    time.Duration
	RetryAfterAt  time.Time
	HasRetryAfter bool
	// RetryAfterExcessive is set when RetryAfter exceeds the profile's
	// MaxRetryAfter: the value is kept so the caller can cap it or park.
	RetryAfterExcessive bool

	// Limit is the governing quota; valid if HasLimit.
	Limit    int64
	HasLimit bool
	// Remaining is what is left of the governing quota; valid if
	// HasRemaining.
	Remaining    int64
	HasRemaining bool
	// Window is the governing quota's window; valid if HasWindow.
	Window    time.Duration
	HasWindow bool
	// Reset is the time until the governing window resets; valid if
	// HasReset.
	Reset    time.Duration
	ResetAt  time.Time
	HasReset bool

	// Policies lists every declared policy, IETF ones first.
	Policies []Policy
	// Scope is the server's hint about what the limit is keyed on.
	Scope Scope
	// Bucket is an opaque bucket id (Discord's X-RateLimit-Bucket).
	Bucket string

	// Sources names the header behind each number.
	Sources Sources
	// Ignored lists what was skipped and why.
	Ignored []Ignored
}

// Known reports whether the response said anything about rate limits.
func (s *Signal) Known() bool {
	return s.HasRetryAfter || s.HasLimit || s.HasRemaining || s.HasWindow ||
		s.HasReset || len(s.Policies) > 0 || s.Scope != ScopeUnknown || s.Bucket != ""
}

// Wait returns the least time to wait before the next request on this lane,
// when the response implies one: Retry-After if present; otherwise the
// longest reset among exhausted quotas (remaining 0). ok is false when the
// response does not ask for a wait.
func (s *Signal) Wait() (d time.Duration, ok bool) {
	if s.HasRetryAfter {
		return s.RetryAfter, true
	}
	if s.HasRemaining && s.Remaining == 0 && s.HasReset {
		d, ok = s.Reset, true
	}
	for i := range s.Policies {
		p := &s.Policies[i]
		if p.HasRemaining && p.Remaining == 0 && p.HasReset && (!ok || p.Reset > d) {
			d, ok = p.Reset, true
		}
	}
	return d, ok
}

// Parse reads the rate-limit headers of one response. received is when the
// response arrived (the local clock); p adjusts the interpretation (the zero
// Profile is the default). Header names are matched case-insensitively, so
// h need not be canonicalised. Parse never panics and is safe for concurrent
// use; it does not modify h.
func Parse(h http.Header, received time.Time, p Profile) Signal {
	var ps parser
	ps.sig.Received = received
	ps.prof = p
	ps.collect(h)
	if len(ps.ents) == 0 {
		return ps.sig
	}
	ps.run()
	ps.release()
	return ps.sig
}
