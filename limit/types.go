package limit

import (
	"errors"
	"fmt"
	"time"

	"github.com/exitgate/exitgate/verdict"
)

// Errors returned by the Limiter; callers branch on them with errors.Is.
var (
	// ErrNoExits: Acquire was called before SetExits gave a non-empty pool.
	ErrNoExits = errors.New("limit: no exits in the pool")
	// ErrUnknownExit: Want.Pin names an exit that is not in the pool.
	ErrUnknownExit = errors.New("limit: pinned exit not in the pool")
	// ErrNoHost: the host key is empty.
	ErrNoHost = errors.New("limit: empty host")
)

// Exit is one identity a server sees (a proxy, a sticky session, a source
// address) with optional provider limits that apply across all hosts.
type Exit struct {
	ID          string // unique key; the resolved exit IP when known
	Rate        Rate   // provider rate limit across hosts; zero = none
	Concurrency int    // provider in-flight cap across hosts; 0 = none
	// Since is, for an exit this Limiter got from another that was using
	// it (a fleet's handover), when the other last sent through it at the
	// latest; zero: its own from the start. Servers still count what the
	// other sent: for a while (movedFor) a lane on it goes first one
	// interval at its pace after Since, and its first 429 is no evidence
	// that the server limits site-wide.
	Since time.Time
}

// Want says which exits an Acquire may use.
type Want struct {
	// Pin is a sticky exit: wait for it, never switch. Empty = any exit.
	Pin string
	// Avoid lists exits not to use for this request (e.g. just throttled).
	Avoid []string
}

// Ticket is permission for one request: to Host, through Exit. It is a small
// value; pass it back to Done or Cancel exactly once (extra calls are ignored).
type Ticket struct {
	Host string    `json:"host"`
	Exit string    `json:"exit"`
	At   time.Time `json:"at"`  // when Acquire granted it
	Seq  uint64    `json:"seq"` // unique within the host; releases are matched on it
	// ExitHeld is set when the exit's provider limits or a recovery probe
	// were charged, so release must also reach the exit state.
	ExitHeld bool `json:"exit_held,omitempty"`
	Probe    bool `json:"probe,omitempty"` // this request is an exit recovery probe
	// issuer is the Limiter that granted it (0: unknown, as after a trip
	// through JSON): another Limiter's ticket is ignored by Done and
	// Cancel. Seq starts at 1 per host in every Limiter, and a ticket of
	// another released one of this one's and taught its lane a cooldown.
	issuer uint64
}

// Scope is where a server enforces a limit.
type Scope uint8

const (
	ScopeUnknown    Scope = iota // no evidence yet
	ScopeExit                    // per client IP: each lane has its own budget
	ScopeHost                    // site-wide: all exits share one budget
	ScopeCredential              // per credential or session: shared across exits like ScopeHost
)

var scopeNames = [...]string{"unknown", "exit", "host", "credential"}

// String returns the JSON name of s.
func (s Scope) String() string {
	if int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return fmt.Sprintf("scope(%d)", uint8(s))
}

// MarshalText implements encoding.TextMarshaler.
func (s Scope) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Scope) UnmarshalText(b []byte) error {
	for i, n := range scopeNames {
		if n == string(b) {
			*s = Scope(i)
			return nil
		}
	}
	return fmt.Errorf("unknown scope %q", b)
}

func (s Scope) shared() bool { return s == ScopeHost || s == ScopeCredential }

// Outcome is what one response said, already classified and normalised
// (header parsing lives elsewhere; only plain numbers arrive here).
type Outcome struct {
	Verdict    verdict.Verdict
	RetryAfter time.Duration // 0 = unknown
	// Quota requests per Window, as declared by the server; 0 = unknown.
	// A Quota without a Window (X-RateLimit-Limit alone) is kept, and the
	// window is learned from how far the reset moves when a window rolls.
	Quota  float64
	Window time.Duration
	// Remaining requests before ResetIn elapses, when HasRemaining.
	Remaining    float64
	HasRemaining bool
	ResetIn      time.Duration
	// HasReset says a reset was told, ResetIn 0 included (a reset told as
	// now, or passed). A Remaining with no reset and no Window says
	// nothing of when it refills (remaining.go). A ResetIn other than 0
	// counts as told without it.
	HasReset bool
	// Scope is the headers' hint about where the limit is enforced.
	Scope Scope
	// SentAt is when the request went out; zero = the ticket's At.
	SentAt time.Time
	// AnsweredAt is when the response's status line and headers came
	// (before its body); zero = the time passed to Done. The time from
	// SentAt to it tells how late a request may have reached the server.
	AnsweredAt time.Time
	// URLHash identifies the request's URL (any hash; 0 = unknown), so that
	// a wave of Forbidden answers is told from one URL's answers repeated.
	URLHash uint64
}
