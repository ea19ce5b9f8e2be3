package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
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
	// BodyDir/<job id>. Empty: bodies are read and discarded.
	BodyDir string
	// MaxBodyBytes caps how much of a body is read and stored. A longer
	// body is cut there and its job is done with Result.Truncated set.
	// Default 10 MiB.
	MaxBodyBytes int64
	// Header is added to every request (User-Agent defaults to
	// Core.UserAgent). Authorization and Cookie are not sent on a redirect
	// hop to another host than the job's (as curl and net/http do).
	Header http.Header
	// HorizonWait: when only parked jobs remain, Run waits for those due
	// within this span and returns if the rest are due later. Default: the
	// retry policy's MaxWait.
	HorizonWait time.Duration
}

// Engine fetches the frontier's jobs through the exits, as the Core decides.
// Run it once; its goroutines end when Run returns.
type Engine struct {
	cfg  EngineConfig
	core *Core
	stop chan struct{}
	once sync.Once
}

// NewEngine checks cfg and returns an engine over core.
func NewEngine(cfg EngineConfig, core *Core) (*Engine, error) {
	if cfg.Exits == nil || len(cfg.Exits.Keys()) == 0 {
		return nil, errors.New("fetch: no exits configured")
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
	if core.cfg.Exits == nil {
		core.cfg.Exits = cfg.Exits.Keys
	}
	if cfg.BodyDir != "" {
		if err := os.MkdirAll(cfg.BodyDir, 0o755); err != nil {
			return nil, fmt.Errorf("fetch: body dir: %w", err)
		}
	}
	return &Engine{cfg: cfg, core: core, stop: make(chan struct{})}, nil
}

// Stop asks Run to stop taking work: requests in flight finish and are
// recorded, buffered jobs go back to the frontier, then Run returns. It is
// safe to call more than once and from any goroutine.
func (e *Engine) Stop() { e.once.Do(func() { close(e.stop) }) }

// Run fetches until the frontier has no work left that is due within the
// horizon, Stop is called, or ctx ends. Cancelling ctx aborts requests in
// flight; their jobs go back to the frontier uncharged, so nothing is lost.
func (e *Engine) Run(ctx context.Context) error {
	var (
		wg      sync.WaitGroup
		errs    firstError
		wakeup  = make(chan struct{}, 1)
		timer   = time.NewTimer(time.Hour)
		stopped = false
	)
	defer timer.Stop()
	defer wg.Wait()
	poke := func() {
		select {
		case wakeup <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	for {
		if !stopped {
			atts, wake, err := e.core.Dispatch(ctx, time.Now())
			if err != nil {
				errs.set(err)
				e.Stop()
			}
			for _, a := range atts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := e.do(ctx, a)
					if err := e.core.Complete(context.WithoutCancel(ctx), a, r); err != nil {
						// A fate that could not be recorded, or a body that
						// could not be stored: going on would lose work.
						errs.set(err)
						e.Stop()
					}
					poke()
				}()
			}
			if len(atts) == 0 {
				finished, err := e.finished(ctx, wake)
				errs.set(err)
				if finished || err != nil {
					return errs.get()
				}
			}
			d := time.Hour
			if !wake.IsZero() {
				d = max(time.Until(wake), time.Millisecond)
			}
			timer.Reset(d)
		}
		select {
		case <-wakeup:
		case <-timer.C:
		case <-e.stop:
		case <-ctx.Done():
		}
		if !stopped && (isClosed(e.stop) || ctx.Err() != nil) {
			stopped = true
			errs.set(e.core.HandBack(context.WithoutCancel(ctx)))
		}
		if stopped && e.core.Inflight() == 0 {
			return errs.get()
		}
	}
}

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
	crossHost := a.Hops > 0 && !sameHost(a.URL, a.Job.URL)
	for k, v := range e.cfg.Header {
		if crossHost && credentialHeader[k] {
			continue // a redirect led to another host: keep credentials home
		}
		req.Header[k] = v
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", e.core.cfg.UserAgent)
	}
	resp, err := m.Transport.RoundTrip(req)
	if err != nil {
		return Response{Err: err, At: time.Now(), Aborted: ctx.Err() != nil}
	}
	defer resp.Body.Close()
	e.cfg.Exits.Observe(m.ID, resp.Header)
	r := Response{Status: resp.StatusCode, Header: resp.Header, HeaderAt: time.Now()}
	keep := SniffBytes
	if a.Robots {
		keep = 512 << 10
	}
	var sink io.Writer = io.Discard
	var body *bodyFile
	if e.cfg.BodyDir != "" && !a.Robots && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		path := filepath.Join(e.cfg.BodyDir, strconv.FormatInt(a.Job.ID, 10))
		f, err := os.Create(path)
		if err != nil {
			// The server answered; this machine could not keep the answer.
			r.StoreErr, r.At = &StoreError{Path: path, Err: err}, time.Now()
			return r
		}
		body = &bodyFile{f: f, path: path}
		sink, r.BodyPath = body, path
	}
	sniff := &prefixWriter{max: keep}
	buf := copyBufs.Get().(*[]byte)
	n, err := io.CopyBuffer(io.MultiWriter(sink, sniff), io.LimitReader(resp.Body, e.cfg.MaxBodyBytes), *buf)
	copyBufs.Put(buf)
	r.Bytes, r.Sniff = n, sniff.buf
	if err == nil && n == e.cfg.MaxBodyBytes {
		// At the cap: one more byte says whether the body went on.
		var one [1]byte
		m, _ := io.ReadFull(resp.Body, one[:])
		r.Truncated = m > 0
	}
	if body != nil {
		if cerr := body.close(); err == nil {
			err = cerr
		}
	}
	r.At = time.Now()
	var se *StoreError
	switch {
	case errors.As(err, &se):
		r.StoreErr, r.BodyPath = se, ""
		os.Remove(se.Path) // a partial body must not pass for the page
	case err != nil:
		// A body cut short is a transport failure of the whole attempt.
		r.Status, r.Err, r.BodyPath = 0, err, ""
		r.Aborted = ctx.Err() != nil
		if body != nil {
			os.Remove(body.path)
		}
	}
	return r
}

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

// bodyFile is a body being written; its errors are StoreErrors, so that a
// write that fails is told apart from a read that fails.
type bodyFile struct {
	f    *os.File
	path string
}

func (b *bodyFile) Write(p []byte) (int, error) {
	n, err := b.f.Write(p)
	if err != nil {
		err = &StoreError{Path: b.path, Err: err}
	}
	return n, err
}

func (b *bodyFile) close() error {
	if err := b.f.Close(); err != nil {
		return &StoreError{Path: b.path, Err: err}
	}
	return nil
}

// copyBufs recycles body copy buffers: one per request would be the
// engine's largest allocation.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// prefixWriter keeps the first max bytes written to it.
type prefixWriter struct {
	buf []byte
	max int
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	if room := w.max - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
