package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// EngineConfig configures the live engine. The zero value of each field is
// its documented default.
type EngineConfig struct {
	// Exits routes each exit key the limiter hands out to a transport, and
	// re-keys exits whose IP changes. Required; ExitMap builds the simple
	// form from a map.
	Exits *ExitSet
	// Timeout bounds one request, body included. Default 30s.
	Timeout time.Duration
	// BodyDir, when set, receives the body of each successful response as
	// BodyDir/<job id>. Empty: bodies are read and discarded. A body is
	// written under BodyDir/.partial and renamed into place once whole,
	// so BodyDir/<job id> is never a page cut short (a kill -9 left one
	// there, and a later attempt that ended otherwise left it beside an
	// abandoned job); .partial is emptied when the engine is made.
	BodyDir string
	// SyncBodies fsyncs each body, and the directory entry its rename
	// made, before its job is recorded done: with a frontier that fsyncs
	// its commits (--durable), a power loss leaves no job done without its
	// body. Off, the page cache writes them when it will.
	SyncBodies bool
	// MaxBodyBytes caps how much of a body is read and stored. A longer
	// body is cut there and its job is done with Result.Truncated set.
	// Default 10 MiB.
	MaxBodyBytes int64
	// Header is added to every request (User-Agent defaults to
	// Core.UserAgent). A job's own headers (frontier.NewJob.Header) go
	// over these. Authorization and Cookie are not sent on a redirect hop
	// to another host than the job's (as curl and net/http do).
	Header http.Header
	// KeepBody keeps the body of each successful response in memory (up to
	// MaxBodyBytes) and hands it to the Core's OnFinish in Finished.Body,
	// for a caller that handles pages as they come rather than from
	// BodyDir. It costs a body's memory per request in flight.
	KeepBody bool
	// HorizonWait: when only parked jobs remain, Run waits for those due
	// within this span and returns if the rest are due later. Default: the
	// retry policy's MaxWait.
	HorizonWait time.Duration
	// Recheck is the longest Run sleeps while the frontier holds
	// unfinished work, whenever it says its next job falls due: a frontier
	// shared with other workers (Redis) can have work come due that it
	// did not announce (a schedule repaired after an outage, a lease given
	// back), and an engine told nothing was due slept an hour. Default 5 s.
	Recheck time.Duration
	// StallAfter: when nothing has been sent for this long with URLs left,
	// the log says what holds them (a warning when nothing known does,
	// stall.go), then again after twice as long each time. Default 30 s;
	// negative: never.
	StallAfter time.Duration
}

// Engine fetches the frontier's jobs through the exits, as the Core decides.
// Run it once; its goroutines end when Run returns.
type Engine struct {
	cfg    EngineConfig
	header http.Header // cfg.Header with the User-Agent: read-only
	core   *Core
	stop   chan struct{}
	once   sync.Once
}

// NewEngine checks cfg and returns an engine over core.
func NewEngine(cfg EngineConfig, core *Core) (*Engine, error) {
	if cfg.Exits == nil || len(cfg.Exits.Keys()) == 0 {
		return nil, errors.New("fetch: no exits configured")
	}
	switch {
	case core == nil || core.fr == nil || core.lim == nil:
		// Run panicked on them.
		return nil, errors.New("fetch: NewEngine needs a Core made by NewCore with a frontier and a limiter")
	case cfg.Timeout < 0 || cfg.MaxBodyBytes < 0 || cfg.HorizonWait < 0 || cfg.Recheck < 0:
		// Taken as the defaults, unsaid.
		return nil, fmt.Errorf("fetch: EngineConfig Timeout %v, MaxBodyBytes %d, HorizonWait %v, Recheck %v: want none negative (0: the default)",
			cfg.Timeout, cfg.MaxBodyBytes, cfg.HorizonWait, cfg.Recheck)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 10 << 20
	}
	if cfg.HorizonWait <= 0 {
		cfg.HorizonWait = core.cfg.Retry.MaxWait
	}
	if cfg.Recheck <= 0 {
		cfg.Recheck = 5 * time.Second
	}
	if cfg.StallAfter == 0 {
		cfg.StallAfter = 30 * time.Second
	}
	if core.cfg.Exits == nil {
		core.cfg.Exits = cfg.Exits.Keys
	}
	if cfg.BodyDir != "" {
		// What a killed run was writing is no page: gone.
		if err := os.RemoveAll(filepath.Join(cfg.BodyDir, partialDir)); err != nil {
			return nil, fmt.Errorf("fetch: body dir: %w", err)
		}
		if err := os.MkdirAll(filepath.Join(cfg.BodyDir, partialDir), 0o755); err != nil {
			return nil, fmt.Errorf("fetch: body dir: %w", err)
		}
	}
	header := cfg.Header.Clone()
	if header == nil {
		header = http.Header{}
	}
	if header.Get("User-Agent") == "" {
		header.Set("User-Agent", core.cfg.UserAgent)
	}
	return &Engine{cfg: cfg, header: header, core: core, stop: make(chan struct{})}, nil
}

// Stop asks Run to stop taking work: requests in flight finish and are
// recorded, buffered jobs go back to the frontier, then Run returns. It is
// safe to call more than once and from any goroutine.
func (e *Engine) Stop() { e.once.Do(func() { close(e.stop) }) }

// Run fetches until the frontier has no work left that is due within the
// horizon, Stop is called, or ctx ends. Cancelling ctx aborts requests in
// flight; their jobs go back to the frontier uncharged, so nothing is lost.
//
// A goroutine that completes an attempt asks the Core for the next ones and
// goes on with the first itself, so a busy crawl neither starts a goroutine
// nor wakes the dispatching loop per request; that loop wakes when a worker
// runs out of work, when a host's wait ends, or to stop.
func (e *Engine) Run(ctx context.Context) error {
	var (
		wg       sync.WaitGroup
		errs     firstError
		wakeup   = make(chan struct{}, 1)
		timer    = time.NewTimer(time.Hour)
		stopped  = false
		bg       = context.WithoutCancel(ctx)
		mainWake atomic.Int64 // unix nanoseconds the loop's timer is set for
		// active: unix nanoseconds a request last started or ended.
		active atomic.Int64
		stall  = stallWatch{after: e.cfg.StallAfter}
	)
	active.Store(time.Now().UnixNano())
	defer timer.Stop()
	defer wg.Wait()
	poke := func() {
		select {
		case wakeup <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	var work func(a Attempt)
	start := func(atts []Attempt) {
		for _, a := range atts {
			wg.Add(1)
			go work(a)
		}
	}
	work = func(a Attempt) {
		defer wg.Done()
		defer poke()
		var atts []Attempt
		for {
			r := e.do(ctx, a)
			// Before Complete lowers the count in flight: the main loop
			// must not see none in flight and the time this request
			// started (a stall said after a long request). r.At is when
			// it ended.
			active.Store(r.At.UnixNano())
			if err := e.core.Complete(bg, a, r); err != nil {
				// A fate that could not be recorded, or a body that
				// could not be stored: going on would lose work.
				errs.set(err)
				e.Stop()
			}
			recycle(&r)
			if isClosed(e.stop) || ctx.Err() != nil {
				return
			}
			var wake time.Time
			var err error
			clear(atts) // let the last attempts' jobs go
			atts, wake, err = e.core.dispatch(ctx, time.Now(), atts[:0])
			if err != nil {
				errs.set(err)
				e.Stop()
				return
			}
			if !wake.IsZero() && wake.UnixNano() < mainWake.Load() {
				poke() // the loop sleeps past a wait that ends sooner
			}
			if len(atts) == 0 {
				return
			}
			start(atts[1:])
			a = atts[0]
		}
	}
	for {
		if !stopped {
			now := time.Now()
			atts, wake, err := e.core.Dispatch(ctx, now)
			if err != nil {
				errs.set(err)
				e.Stop()
			}
			start(atts)
			if len(atts) > 0 {
				active.Store(now.UnixNano())
				stall.active(e.core, now)
			} else {
				finished, err := e.finished(ctx, wake)
				errs.set(err)
				if finished || err != nil {
					return errs.get()
				}
				stall.check(ctx, e.core, now, time.Unix(0, active.Load()))
			}
			d := e.cfg.Recheck
			if !wake.IsZero() {
				d = min(d, max(time.Until(wake), time.Millisecond))
			}
			mainWake.Store(time.Now().Add(d).UnixNano())
			timer.Reset(d)
		}
		if stopped {
			// Only the requests in flight are waited for: each one's end
			// pokes. (Selecting on the closed stop and ctx as well spun
			// a core at 100% until the last one ended, up to --timeout.)
			timer.Reset(stoppedRecheck)
			select {
			case <-wakeup:
			case <-timer.C:
			}
		} else {
			select {
			case <-wakeup:
			case <-timer.C:
			case <-e.stop:
			case <-ctx.Done():
			}
		}
		if !stopped && (isClosed(e.stop) || ctx.Err() != nil) {
			stopped = true
			errs.set(e.core.HandBack(bg))
		}
		if stopped && e.core.Inflight() == 0 {
			return errs.get()
		}
	}
}

// stoppedRecheck is how often a stopped run looks at what is still in
// flight besides the pokes of the requests that end.
const stoppedRecheck = 100 * time.Millisecond

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// firstError keeps the first error set; safe for concurrent use.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// finished reports whether the run has nothing left to do now: nothing in
// flight or buffered, and no job due within the horizon.
func (e *Engine) finished(ctx context.Context, wake time.Time) (bool, error) {
	if e.core.Busy() {
		return false, nil
	}
	c, err := e.core.fr.Counts(ctx)
	if err != nil {
		return false, err
	}
	if c.Queued+c.Leased > 0 {
		return false, nil
	}
	if c.Parked == 0 {
		return true, nil
	}
	return wake.IsZero() || time.Until(wake) > e.cfg.HorizonWait, nil
}

// do sends one attempt and reads its response. It never returns an error:
// failures are part of the Response.
func (e *Engine) do(ctx context.Context, a Attempt) Response {
	m, ok := e.cfg.Exits.Route(a.Ticket.Exit)
	if !ok {
		return Response{Err: fmt.Errorf("%w %q", ErrNoExit, a.Ticket.Exit), At: time.Now()}
	}
	// A context per request: its error says DeadlineExceeded when it
	// runs out, which a proxy-checking transport (pool.Transport) tells
	// from a cancellation.
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	method := a.Job.Method
	if method == "" || a.Robots {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(rctx, method, a.URL, nil)
	if err != nil {
		return Response{Err: err, At: time.Now()}
	}
	// The engine's headers are one map shared by every request (a
	// RoundTripper does not modify its request); a job with headers of its
	// own, or a redirect hop to another host than the job's, gets a copy:
	// the job's headers over the engine's, credentials kept home.
	req.Header = e.header
	jobHeader := len(a.Job.Header) > 0 && !a.Robots
	crossHost := a.Hops > 0 && !sameHost(a.URL, a.Job.URL)
	if jobHeader || crossHost {
		req.Header = e.header.Clone()
		if jobHeader {
			maps.Copy(req.Header, a.Job.Header)
		}
		if crossHost {
			for k := range credentialHeader {
				delete(req.Header, k)
			}
		}
	}
	if u := req.URL.User; u != nil && req.Header.Get("Authorization") == "" {
		// The URL's user and password are sent as Basic auth, as curl
		// and http.Client send them (a RoundTripper alone drops them: the
		// page was fetched without them and recorded done).
		if !jobHeader && !crossHost {
			req.Header = e.header.Clone()
		}
		pw, _ := u.Password()
		req.SetBasicAuth(u.Username(), pw)
	}
	resp, err := m.Transport.RoundTrip(req)
	if err != nil {
		if ctx.Err() == nil {
			e.dropBody(a) // no answer, no page
		}
		return Response{Err: err, At: time.Now(), Aborted: ctx.Err() != nil}
	}
	defer resp.Body.Close()
	e.cfg.Exits.Observe(m.ID, resp.Header)
	r := Response{Status: resp.StatusCode, Header: resp.Header, HeaderAt: time.Now(), ViaProxy: m.ViaProxy(req.URL.Scheme),
		Unconditional: req.Header.Get("If-None-Match") == "" && req.Header.Get("If-Modified-Since") == ""}
	keep := SniffBytes
	if a.Robots {
		keep = 512 << 10
	}
	// A final answer keeps its body: 2xx, and the 3xx that are not
	// followed (300, 304, 305: classify reads them as done; a 300's body
	// is its list of choices).
	final := !a.Robots && resp.StatusCode >= 200 && resp.StatusCode < 400 && !isRedirect(resp.StatusCode)
	var body *bodyFile
	if !final {
		e.dropBody(a)
	} else if e.cfg.BodyDir != "" {
		name := strconv.FormatInt(a.Job.ID, 10)
		path, part := filepath.Join(e.cfg.BodyDir, name), filepath.Join(e.cfg.BodyDir, partialDir, name)
		f, err := os.Create(part)
		if err != nil {
			// The server answered; this machine could not keep the answer.
			r.StoreErr, r.At = &StoreError{Path: path, Err: err}, time.Now()
			return r
		}
		body = &bodyFile{f: f, path: path, part: part, sync: e.cfg.SyncBodies}
		r.BodyPath = path
	}
	var kept []byte // the whole body, for OnFinish
	if e.cfg.KeepBody && final {
		kept = make([]byte, 0, min(max(resp.ContentLength, 512), e.cfg.MaxBodyBytes))
	}
	sniff := (*sniffBufs.Get().(*[]byte))[:0]
	if keep > cap(sniff) {
		sniff = make([]byte, 0, keep)
	}
	buf := copyBufs.Get().(*[]byte)
	var n int64
	for n < e.cfg.MaxBodyBytes {
		b := (*buf)[:min(int64(len(*buf)), e.cfg.MaxBodyBytes-n)]
		k, rerr := resp.Body.Read(b)
		if k > 0 {
			chunk := b[:k]
			n += int64(k)
			if room := keep - len(sniff); room > 0 {
				sniff = append(sniff, chunk[:min(room, k)]...)
			}
			if kept != nil {
				kept = append(kept, chunk...)
			}
			if body != nil {
				if _, werr := body.Write(chunk); werr != nil {
					err = werr
					break
				}
			}
		}
		if rerr != nil {
			if rerr != io.EOF {
				err = rerr
			}
			break
		}
	}
	copyBufs.Put(buf)
	r.Bytes, r.Sniff, r.Body = n, sniff, kept
	if err == nil && n == e.cfg.MaxBodyBytes {
		// At the cap: one more byte says whether the body went on.
		// A length declared past the cap says so without reading (a
		// server that stalls there held the request to its timeout);
		// otherwise anything but a clean end is a body that went on (one
		// cut off right at the cap read as whole).
		if resp.ContentLength > e.cfg.MaxBodyBytes {
			r.Truncated = true
		} else {
			var one [1]byte
			m, rerr := io.ReadFull(resp.Body, one[:])
			r.Truncated = m > 0 || (rerr != nil && rerr != io.EOF)
		}
	}
	if body != nil {
		if err == nil {
			err = body.commit()
		} else {
			body.discard()
		}
	}
	r.At = time.Now()
	var se *StoreError
	switch {
	case errors.As(err, &se):
		r.StoreErr, r.BodyPath, r.Body = se, "", nil
	case err != nil:
		// A body cut short is a transport failure of the whole attempt.
		r.Status, r.Err, r.BodyPath, r.Body = 0, err, "", nil
		r.Aborted = ctx.Err() != nil
	}
	return r
}

// recycle returns a completed response's sniff buffer to the pool: the Core
// reads it only while it completes the attempt.
func recycle(r *Response) {
	if cap(r.Sniff) == SniffBytes {
		b := r.Sniff[:0]
		sniffBufs.Put(&b)
	}
	r.Sniff = nil
}

// sniffBufs recycles the SniffBytes buffers each body's first bytes are
// kept in.
var sniffBufs = sync.Pool{New: func() any { b := make([]byte, 0, SniffBytes); return &b }}

// StoreError is a body that could not be stored (disk full, out of inodes,
// no permission): a failure of this machine, not of the server or the exit.
// The job goes back to the queue uncharged and the engine stops, since every
// further body would fail the same way. Errors wrap it with %w.
type StoreError struct {
	Path string
	Err  error
}

func (e *StoreError) Error() string { return "store body " + e.Path + ": " + e.Err.Error() }

// Unwrap returns the file system's error.
func (e *StoreError) Unwrap() error { return e.Err }

// dropBody removes the body an earlier run stored for a's job before it was
// killed, its job not yet recorded done, when this attempt brings none: it
// is no page of a job that may end otherwise now. A robots.txt is no job's
// (final is false for it, and it was once kept as bodies/0).
func (e *Engine) dropBody(a Attempt) {
	if e.cfg.BodyDir != "" && !a.Robots {
		os.Remove(filepath.Join(e.cfg.BodyDir, strconv.FormatInt(a.Job.ID, 10)))
	}
}

// partialDir is where bodies are written until whole, under BodyDir.
const partialDir = ".partial"

// bodyFile is a body being written at part, to go to path once whole; its
// errors are StoreErrors, so that a write that fails is told apart from a
// read that fails.
type bodyFile struct {
	f          *os.File
	path, part string
	sync       bool // fsync the file and the rename (EngineConfig.SyncBodies)
}

func (b *bodyFile) Write(p []byte) (int, error) {
	n, err := b.f.Write(p)
	if err != nil {
		err = &StoreError{Path: b.path, Err: err}
	}
	return n, err
}

// commit closes the whole body and renames it into place. On an error
// nothing is left at either name.
func (b *bodyFile) commit() error {
	var err error
	if b.sync {
		err = b.f.Sync()
	}
	if cerr := b.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(b.part, b.path)
	}
	if err == nil && b.sync {
		err = syncDir(filepath.Dir(b.path))
	}
	if err != nil {
		os.Remove(b.part)
		os.Remove(b.path)
		return &StoreError{Path: b.path, Err: err}
	}
	return nil
}

// discard drops a body that is not whole: a partial body must not pass for
// the page.
func (b *bodyFile) discard() {
	b.f.Close()
	os.Remove(b.part)
}

// syncDir fsyncs a directory: the names created or renamed in it last.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyBufs recycles body copy buffers: one per request would be the
// engine's largest allocation.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
