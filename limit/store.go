package limit

import (
	"context"
	"time"

	"github.com/exitgate/exitgate/verdict"
)

// Store holds limiter state. Every method is one atomic operation on one
// key's state, so a Redis store can run each as one Lua script in one round
// trip:
//
//   - Acquire and Release touch only one host's state (lanes, gates,
//     learning, tickets). A Redis store keeps it under keys hash-tagged
//     {host} and ports AcquireHost and ReleaseHost to Lua; the pure Go
//     functions and the limittest suite are the reference it is checked
//     against.
//   - TakeExit, ReleaseExit and SetExits touch cross-host exit state (health,
//     quarantine, provider limits). The Limiter calls them only for exits that
//     are gated (provider limits, recovery probe) or on a proxy failure, so
//     the common request costs one host operation to acquire and one to
//     release.
//   - While deciding, Acquire needs each candidate exit's readiness; an
//     in-memory store reads its exit table, a remote one passes the set of
//     currently blocked exits (small: only quarantined or saturated exits) in
//     the script's arguments.
//
// Implementations must be safe for concurrent use.
type Store interface {
	// Acquire runs AcquireHost on req.Host's state.
	Acquire(ctx context.Context, req *AcquireRequest) (AcquireResult, error)
	// Release runs ReleaseHost on req.Ticket.Host's state and reports
	// whether the ticket was outstanding.
	Release(ctx context.Context, req *ReleaseRequest) (bool, error)
	// SetExits installs the pool's provider limits, keeping health state of
	// exits that stay and dropping exits that left.
	SetExits(ctx context.Context, pool *Pool, now time.Time) error
	// TakeExit charges a gated exit (provider rate and concurrency, or the
	// recovery probe) with one request, if it can go at req.Now.
	TakeExit(ctx context.Context, req *ExitRequest) (ExitGrant, error)
	// ReleaseExit settles one request on an exit: gives back what TakeExit
	// charged and applies health feedback.
	ReleaseExit(ctx context.Context, req *ExitRelease) error
	// Snapshot copies the state of every host and exit.
	Snapshot(ctx context.Context, rules *Rules, now time.Time) (Snapshot, error)
}

// AcquireRequest is the input of one host-level admission decision.
type AcquireRequest struct {
	Rules *Rules
	Pool  *Pool
	Host  string
	Want  Want
	Now   time.Time
}

// AcquireResult is its output: a ticket, or when something could go next.
type AcquireResult struct {
	OK     bool
	Ticket Ticket
	// ExitGated: the chosen exit needs TakeExit before the request goes.
	ExitGated bool
	Next      time.Time
}

// ReleaseRequest settles one ticket on its host: Done with Outcome, or Cancel.
type ReleaseRequest struct {
	Rules   *Rules
	Ticket  Ticket
	Cancel  bool
	Outcome Outcome
	Now     time.Time
	// Jitter is a uniform number in [0,1) for full-jitter backoff, drawn by
	// the Limiter so stores stay deterministic.
	Jitter float64
}

// ExitRequest asks to charge one gated exit.
type ExitRequest struct {
	Rules *Rules
	Exit  string
	Now   time.Time
}

// ExitGrant answers an ExitRequest.
type ExitGrant struct {
	OK    bool
	Probe bool      // the request is the exit's recovery probe
	Next  time.Time // when not OK: when to try again
}

// ExitRelease settles one request on an exit.
type ExitRelease struct {
	Rules   *Rules
	Exit    string
	Held    bool // TakeExit charged it
	Probe   bool
	Cancel  bool
	Verdict verdict.Verdict
	Now     time.Time
	Jitter  float64
}
