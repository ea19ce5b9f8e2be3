// Package frontier holds the durable set of URL jobs a crawl works through:
// queued, leased to a worker, parked until a due time, done, or abandoned
// with a reason.
//
// The package defines the job model, the [Frontier] interface that every
// store satisfies (frontier/sqlite today, Redis later) and [Normalize], the
// URL canonicalisation used for deduplication. frontier/frontiertest holds
// the conformance suite every store must pass.
//
// # Time
//
// Every operation that depends on the clock takes the instant explicitly
// (now, at, until), so stores are tested at fixed instants without a fake
// clock. A zero time.Time as a due time means "due immediately".
//
// # Leases
//
// Claiming a job leases it until now plus the store's visibility timeout.
// A lease that is not settled by then (the worker died or hung) makes the
// job claimable again. Each claim gets a new [Lease]; settling a job
// ([Frontier.Complete], [Frontier.Retry], [Frontier.Park],
// [Frontier.Abandon], [Frontier.Release], [Frontier.Extend]) requires the
// current lease, so a worker whose lease expired and was taken over cannot
// overwrite the fate decided by the worker that holds it now: it gets
// [ErrLeaseLost]. A lease that expired but was not yet claimed again can
// still be settled by its holder.
//
// The value types (NewJob, Job, Lease, Result, Counts, Ready) are plain
// data, safe to copy and share once built; stores are safe for concurrent
// use.
package frontier

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// State is where a job is in its life.
type State uint8

// Job states. The numeric values are stored durably; do not renumber.
const (
	// Queued: waiting to be claimed, due at Job.Due (zero: immediately).
	// Retried jobs are queued with a due time.
	Queued State = 1
	// Leased: claimed by a worker until Job.LeaseUntil.
	Leased State = 2
	// Parked: held durably until Job.Due, typically because the server
	// asked for a wait longer than a worker should hold a slot for.
	Parked State = 3
	// Done: fetched; Job.Result holds the outcome. Final.
	Done State = 4
	// Abandoned: given up on; Job.Reason says why. Final.
	Abandoned State = 5
)

// String returns the lowercase name of the state.
func (s State) String() string {
	switch s {
	case Queued:
		return "queued"
	case Leased:
		return "leased"
	case Parked:
		return "parked"
	case Done:
		return "done"
	case Abandoned:
		return "abandoned"
	}
	return "invalid"
}

// Final reports whether no further work will happen on a job in state s.
func (s State) Final() bool { return s == Done || s == Abandoned }

// NewJob is a job to push.
type NewJob struct {
	// URL is the absolute http or https URL to fetch, exactly as it will be
	// requested. Deduplication uses Normalize(URL), not URL itself.
	URL string
	// Host is the limiter's host key for this URL. Empty means the
	// normalised URL's host (lowercase, with the port when it is not the
	// scheme's default).
	Host string
	// Method is the request method. Empty means GET. A job is a duplicate
	// of another when both method and normalised URL are equal.
	Method string
	// Exit optionally pins the job to one exit (a sticky flow). Empty: any.
	Exit string
	// Due is when the job may first be claimed. Zero: immediately.
	Due time.Time
	// Header holds request headers of this job's own (a cookie, a
	// referer), sent over the fetcher's defaults. nil: none. Names must be
	// HTTP tokens and values may not hold CR, LF or NUL. It is not part of
	// the deduplication key.
	Header http.Header
	// Meta is the caller's data about the job (a depth, a parent URL, a
	// label), stored with it and handed back with it; stores do not read
	// it. nil: none.
	Meta map[string]string
}

// Job is one URL job as stored.
type Job struct {
	ID  int64
	URL string // as pushed
	Key string // normalised URL: the deduplication key together with Method
	// Host is the limiter host key given at push time (or its default).
	Host   string
	Method string
	Exit   string // sticky exit pin; empty means any exit
	State  State
	// Attempts counts charged attempts: Complete, Abandon and Retry with
	// charge each add one; Retry without charge (a proxy failure), Park,
	// Release and an expired lease do not.
	Attempts int
	// Seq counts the claims of this job; it identifies the current lease.
	Seq int64
	// Due is when a queued or parked job becomes claimable (zero:
	// immediately). It is zero for leased and finished jobs.
	Due time.Time
	// LeaseUntil is when the current lease expires; zero unless Leased.
	LeaseUntil time.Time
	// Status is the last HTTP status recorded for the job (0: none).
	Status int
	// Reason is why the job was last retried or parked, or why it was
	// abandoned.
	Reason string
	// Result is the outcome of a done job; zero otherwise.
	Result Result
	// Header and Meta are as pushed (see NewJob); nil when empty. They
	// are shared, not copied, between copies of a Job: do not modify them.
	Header http.Header
	Meta   map[string]string
}

// Lease returns the lease under which a worker holding j settles it.
func (j Job) Lease() Lease { return Lease{ID: j.ID, Seq: j.Seq} }

// Lease identifies one claim of one job.
type Lease struct {
	ID  int64 // job ID
	Seq int64 // claim number of the job, from Job.Seq
}

// Result is what a completed fetch produced.
type Result struct {
	Status  int           // HTTP status of the final response
	Bytes   int64         // body bytes received
	Exit    string        // exit that served the response
	Elapsed time.Duration // time spent on the successful attempt
	Body    string        // where the body was stored (a path); empty if not stored
	// Truncated: the body was longer than the fetcher's size cap and only
	// its first Bytes were kept.
	Truncated bool
}

// Counts are the number of jobs in each state.
type Counts struct {
	Queued    int `json:"queued"`
	Leased    int `json:"leased"`
	Parked    int `json:"parked"`
	Done      int `json:"done"`
	Abandoned int `json:"abandoned"`
	// AbandonedByReason splits Abandoned by Job.Reason. Callers should use
	// a small set of reasons ("http 404", "retries exhausted"), not
	// free-form text, so that this map stays small.
	AbandonedByReason map[string]int `json:"abandoned_by_reason,omitempty"`
}

// Total returns the number of jobs in the frontier.
func (c Counts) Total() int { return c.Queued + c.Leased + c.Parked + c.Done + c.Abandoned }

// Unfinished returns the number of jobs that are neither done nor abandoned.
func (c Counts) Unfinished() int { return c.Queued + c.Leased + c.Parked }

// Ready says which hosts have work to do.
type Ready struct {
	// Hosts have at least one claimable job at the instant asked about,
	// least recently served first.
	Hosts []string
	// Next is the earliest instant after now at which a host without
	// claimable work now gets some (a retry or parked job falls due, or a
	// lease expires). It is exact when Hosts is empty; zero when no
	// unfinished job waits for a later instant.
	Next time.Time
}

// Frontier is a durable job set. Implementations are safe for concurrent
// use by multiple goroutines (and, for shared stores, by many processes).
type Frontier interface {
	// Push adds jobs whose (method, normalised URL) is not yet in the
	// frontier in any state, and returns how many were added. A job with
	// an invalid URL or method fails the whole call and adds nothing; the
	// error wraps ErrInvalidURL or ErrInvalidJob.
	Push(ctx context.Context, jobs []NewJob) (added int, err error)

	// Claim leases up to max jobs that are claimable at now: queued or
	// parked with Due <= now, or leased with an expired lease. It serves
	// hosts round-robin, least recently served first, so one big host
	// cannot starve the others; within a host, earliest due first. hostOK,
	// if not nil, is asked once per candidate host; hosts for which it
	// returns false are skipped (they lose their turn). hostOK must not
	// call the Frontier.
	Claim(ctx context.Context, now time.Time, max int, hostOK func(host string) bool) ([]Job, error)
	// ClaimHost leases up to max claimable jobs of one host.
	ClaimHost(ctx context.Context, host string, now time.Time, max int) ([]Job, error)
	// Ready reports up to max hosts (all when max <= 0) with claimable
	// work at now, and when more work falls due. It leases nothing.
	Ready(ctx context.Context, now time.Time, max int) (Ready, error)

	// Extend moves the expiry of a held lease to until.
	Extend(ctx context.Context, l Lease, until time.Time) error
	// Complete marks the job done with its result and charges the attempt.
	Complete(ctx context.Context, l Lease, r Result) error
	// Retry queues the job again, due at at. charge says whether the
	// attempt counts against the job (false for proxy failures, which are
	// not the URL's fault).
	Retry(ctx context.Context, l Lease, at time.Time, charge bool, status int, reason string) error
	// Park holds the job durably until until, without charging the attempt.
	Park(ctx context.Context, l Lease, until time.Time, status int, reason string) error
	// Abandon gives up on the job with a reason and charges the attempt.
	Abandon(ctx context.Context, l Lease, status int, reason string) error
	// Release returns a leased job to the queue unchanged and immediately
	// due, without charging an attempt (for shutdown).
	Release(ctx context.Context, l Lease) error

	// Get returns one job; ErrNotFound if there is none with that ID.
	Get(ctx context.Context, id int64) (Job, error)
	// Counts returns the number of jobs in each state.
	Counts(ctx context.Context) (Counts, error)
	// Finished returns up to limit done or abandoned jobs with ID > after,
	// in ID order: page through them for a report.
	Finished(ctx context.Context, after int64, limit int) ([]Job, error)
	// Recover returns every leased job to the queue, due at now, without
	// charging an attempt, and returns how many it returned. Call it when
	// opening a store that no live worker uses, after a crash: jobs leased
	// by the dead process come back, finished jobs stay finished.
	Recover(ctx context.Context, now time.Time) (int, error)
}

// LeaseWatcher is a Frontier shared by many workers that can tell when a
// lease it handed out was lost: not kept alive in time (Redis out of reach
// for longer than the lease, or the worker stalled that long), so another
// worker may have claimed the job. A worker that buffered the job and has
// not fetched it yet drops it instead: both would fetch it otherwise.
type LeaseWatcher interface {
	// LeaseLost reports whether l was found lost. It reports a lost lease
	// once.
	LeaseLost(l Lease) bool
}

// Wrapper is a Frontier built around another (a filter, a counter):
// Unwrap returns the one it wraps, so that optional interfaces such as
// LeaseWatcher are found through it.
type Wrapper interface {
	Unwrap() Frontier
}

// AsLeaseWatcher returns fr, or the first Frontier it wraps (Wrapper) that
// is a LeaseWatcher; nil if none is.
func AsLeaseWatcher(fr Frontier) LeaseWatcher {
	var w LeaseWatcher
	Walk(fr, func(f Frontier) bool {
		w, _ = f.(LeaseWatcher)
		return w != nil
	})
	return w
}

// Walk calls f with fr, then with each Frontier it wraps (Wrapper) in turn,
// until f returns true: how optional interfaces are found through wrappers.
func Walk(fr Frontier, f func(Frontier) bool) {
	for fr != nil && !f(fr) {
		u, ok := fr.(Wrapper)
		if !ok {
			return
		}
		fr = u.Unwrap()
	}
}

// Errors stores return; test with errors.Is.
var (
	// ErrInvalidURL: the URL is not an absolute http or https URL.
	ErrInvalidURL = errors.New("frontier: invalid url")
	// ErrInvalidJob: a job field other than the URL is invalid.
	ErrInvalidJob = errors.New("frontier: invalid job")
	// ErrNotFound: no job has the ID.
	ErrNotFound = errors.New("frontier: job not found")
	// ErrLeaseLost: the lease is not the job's current lease (it expired
	// and the job was claimed again, or the job was already settled).
	ErrLeaseLost = errors.New("frontier: lease lost")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("frontier: closed")
)
