package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/pool"
	"github.com/exitgate/exitgate/rlheader"
	"github.com/exitgate/exitgate/verdict"
)

// Transport is an http.RoundTripper that sends each request through the exit
// the limiter chooses for the request's host, waiting (within the request's
// deadline) until some lane of that host may go, and feeding the response
// back to the limiter. Plug it into an http.Client, or into Colly with
// (*colly.Collector).WithTransport. NewTransport builds one from a proxy
// list.
//
// Per the RoundTripper contract it does not retry, follow redirects, read
// the body or change the response: classification uses the status and
// headers only, so a block page served with 200 is not recognised here (the
// crawl engine sniffs bodies). Retry in your own code: after a 429 the
// limiter has already cooled that lane and the next attempt goes through
// another exit; after a *WaitError nothing was sent.
//
// The wait for a lane keeps Reserve before the request's deadline for the
// request itself: when no lane frees up by then, RoundTrip returns a
// *WaitError at once instead of waiting into the deadline (an http.Client
// Timeout, Colly's 10 s by default, is such a deadline). A caller that
// retries on *WaitError loses no URL to the wait.
//
// The zero value is usable: one direct exit (no proxy) under a limiter with
// limit.Config's defaults, made on first use. Set Limiter and Exits both, or
// neither. Fields must not change after the first request. A Transport is
// safe for concurrent use.
type Transport struct {
	// Limiter decides. Typically the *limit.Limiter whose exit list Exits
	// keeps (NewExitSet with its SetExits). nil with Exits nil: the zero
	// value's defaults.
	Limiter Waiter
	// Exits routes each exit key the limiter hands out to the RoundTripper
	// that sends through that exit. nil with Limiter nil: one direct exit.
	Exits *ExitSet
	// HostKey maps a request URL to the limiter's host key. nil:
	// DefaultHostKey.
	HostKey func(*url.URL) string
	// Pin, if set, returns the sticky exit a request must use ("" for any).
	Pin func(*http.Request) string
	// Verdicts tunes classification per host. nil: the defaults.
	Verdicts func(host string) classify.Rules
	// Profile pins ambiguous headers per host. nil: guess.
	Profile func(host string) rlheader.Profile
	// Reserve is how much of a request's time to its deadline is kept for
	// sending it once a lane frees up. Zero: a quarter of the time left when
	// RoundTrip is called. Negative: none (the wait may use it all).
	Reserve time.Duration
	// OnSent, if set, is called after each request that was sent, with the
	// exit that carried it and what the answer meant, before RoundTrip
	// returns. nil: nothing is called.
	OnSent func(Sent)

	once  sync.Once
	lim   Waiter
	exits *ExitSet
	err   error
}

// Waiter is the blocking side of a limiter, as *limit.Limiter provides it.
type Waiter interface {
	Wait(ctx context.Context, host string, want limit.Want) (limit.Ticket, error)
	Done(t limit.Ticket, o limit.Outcome, now time.Time)
	Cancel(t limit.Ticket, now time.Time)
}

// acquirer is the non-blocking side, which *limit.Limiter also has: a
// WaitError says when the host may go next when the Waiter can tell.
type acquirer interface {
	Acquire(host string, want limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error)
}

// exitsDowner says how many exits are failing as proxies, as
// *limit.Limiter does: a wait for a lane when all are is refused at once.
type exitsDowner interface {
	ExitsDown(now time.Time) (down, total int)
}

// Sent describes one request Transport sent.
type Sent struct {
	Request *http.Request
	// Exit is the limiter's key of the exit that carried it (an exit ID
	// or its IP, never credentials); Member is the configured exit's ID.
	Exit, Member string
	// Status is the response's status; 0 when Err is set.
	Status int
	// Verdict is what the answer meant to the limiter.
	Verdict verdict.Verdict
	Err     error
}

// TransportConfig configures NewTransport. The zero value means the
// defaults of each part.
type TransportConfig struct {
	// Limit configures the limiter (lane first guess, host ceiling, ...).
	Limit limit.Config
	// Exit configures each exit's transport (timeouts, TLS).
	Exit pool.TransportConfig
	// Identity, if set, keys exits on the IP the server sees (exits behind
	// one IP share lanes); see pool.Identity and ExitSet.
	Identity *pool.Identity
}

// NewTransport returns a Transport over exits (from pool.Parse or
// pool.ParseFile; none means one direct exit) with a new limiter whose exit
// list is those exits, kept in step by the Transport's ExitSet. Its Limiter
// is the *limit.Limiter, for Snapshot and Learned. Set the hooks (HostKey,
// Pin, ...) before the first request.
func NewTransport(exits []pool.Exit, cfg TransportConfig) (*Transport, error) {
	lim, err := limit.New(cfg.Limit)
	if err != nil {
		return nil, err
	}
	if len(exits) == 0 {
		exits = []pool.Exit{pool.DirectExit()}
	}
	members := make([]Member, len(exits))
	for i, e := range exits {
		members[i] = Member{ID: e.ID(), Transport: e.Transport(cfg.Exit), ForwardProxy: e.ForwardsHTTP()}
	}
	return &Transport{Limiter: lim, Exits: NewExitSet(members, cfg.Identity, lim.SetExits)}, nil
}

// ErrTransportConfig reports a Transport with a Limiter and no Exits, or
// Exits and no Limiter.
var ErrTransportConfig = errors.New("fetch: Transport needs both Limiter and Exits, or neither (or use NewTransport)")

// ErrNoExit reports that the limiter chose an exit Transport has no
// RoundTripper for.
var ErrNoExit = errors.New("fetch: no transport for exit")

// WaitError is returned by Transport.RoundTrip when no lane of the
// request's host freed up in time to send it before its deadline (less
// Reserve), or at once, whatever the deadline, when every exit of the pool
// is held back for failing as a proxy (AllExitsDown: waiting would only
// wait for a quarantine to end). Nothing was sent and the limiter was
// charged nothing: retry the request, at Next or later when Next is known.
// It wraps context.DeadlineExceeded, or ErrExitsDown when every exit is
// down.
type WaitError struct {
	Host string
	// Next is when the host may go next, as the limiter said when the
	// wait gave up; zero when unknown.
	Next time.Time
	// ExitsDown of Exits were failing as proxies (quarantined, or their
	// recovery probe out) when the wait gave up, where the Waiter can
	// tell (a *limit.Limiter does); both 0 otherwise.
	ExitsDown, Exits int
	// Full is the host's concurrency cap when the wait gave up with
	// every one of its requests in flight (the Waiter's HostConcurrency:
	// an unread or unclosed body holds its request); 0 otherwise, or
	// when the Waiter cannot tell.
	Full int
}

// ErrExitsDown is what a WaitError wraps when every exit of the pool was
// failing as a proxy.
var ErrExitsDown = errors.New("fetch: every exit is failing as a proxy")

// AllExitsDown reports whether every exit of the pool was failing as a
// proxy: no deadline would have helped.
func (e *WaitError) AllExitsDown() bool { return e.Exits > 0 && e.ExitsDown == e.Exits }

func (e *WaitError) Error() string {
	if e.AllExitsDown() {
		return fmt.Sprintf("fetch: no working exit for %s: all %d exits are failing as proxies (refused, unreachable, wrong credentials; check them with \"exitgate proxies check\"): not sent", e.Host, e.Exits)
	}
	msg := fmt.Sprintf("fetch: no lane of %s frees up before the request's deadline: not sent", e.Host)
	if e.Full > 0 {
		// The limiter's next time is only a recheck then: "may go in
		// 0s" to a caller who left bodies open, again and again.
		msg += fmt.Sprintf("; all %d of the host's requests allowed at once are in flight (a response body not read to its end or closed holds its request)", e.Full)
	} else if !e.Next.IsZero() {
		// When it may go: a Retry-After of an hour read as a deadline
		// a moment too short.
		msg += fmt.Sprintf("; the host may go at %s, in %v", e.Next.Format(time.RFC3339), time.Until(e.Next).Round(time.Second))
	}
	if e.ExitsDown > 0 {
		msg += fmt.Sprintf(" (%d of %d exits failing as proxies)", e.ExitsDown, e.Exits)
	}
	return msg
}

// Unwrap returns ErrExitsDown when every exit was down, else
// context.DeadlineExceeded.
func (e *WaitError) Unwrap() error {
	if e.AllExitsDown() {
		return ErrExitsDown
	}
	return context.DeadlineExceeded
}

// Timeout reports whether the wait ran into the deadline, as net/http's
// deadline errors do (not when every exit was down).
func (e *WaitError) Timeout() bool { return !e.AllExitsDown() }

// parts returns the limiter and exits, making the zero value's on first use.
func (t *Transport) parts() (Waiter, *ExitSet, error) {
	t.once.Do(func() {
		switch {
		case t.Limiter != nil && t.Exits != nil:
			t.lim, t.exits = t.Limiter, t.Exits
		case t.Limiter == nil && t.Exits == nil:
			var d *Transport
			if d, t.err = NewTransport(nil, TransportConfig{}); t.err == nil {
				t.lim, t.exits = d.Limiter, d.Exits
			}
		default:
			t.err = ErrTransportConfig
		}
	})
	return t.lim, t.exits, t.err
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("fetch: Transport: request with no URL") // as net/http says, where it panicked
	}
	if err := checkRequest(req); err != nil {
		// Refused before a lane is taken: nothing is sent, nothing
		// learned (it waited for a lane, was charged as a retryable
		// failure and reported sent).
		closeBody(req)
		return nil, err
	}
	lim, exits, err := t.parts()
	if err != nil {
		closeBody(req)
		return nil, err
	}
	hostKey := t.HostKey
	if hostKey == nil {
		hostKey = DefaultHostKey
	}
	host := hostKey(req.URL)
	var want limit.Want
	if t.Pin != nil {
		want.Pin = t.Pin(req)
	}
	ticket, err := t.wait(req.Context(), lim, host, want)
	if err != nil {
		closeBody(req)
		if errors.Is(err, limit.ErrNoExits) && t.Exits != nil && len(t.Exits.Keys()) > 0 {
			// The set has exits the limiter was never told of.
			return nil, fmt.Errorf("%w: the Limiter was not given the Exits' (build them with fetch.NewExitSet(members, nil, lim.SetExits), or call lim.SetExits)", err)
		}
		return nil, err
	}
	m, ok := exits.Route(ticket.Exit)
	if !ok {
		lim.Cancel(ticket, time.Now())
		closeBody(req)
		return nil, fmt.Errorf("%w %q", ErrNoExit, ticket.Exit)
	}
	sent := time.Now()
	// Whether the request left: a caller that gives up after it did may
	// have had it counted by the server (abandoned), before it did not
	// (canceled).
	out, wrote := TraceWrote(req)
	resp, err := m.Transport.RoundTrip(out)
	now := time.Now()
	if err != nil {
		v := classify.Error(err)
		switch {
		case req.Context().Err() != nil && wrote():
			Abandon(lim, ticket, now) // the caller gave up on an answer the server owes
		case req.Context().Err() != nil:
			lim.Cancel(ticket, now) // the caller gave up before it left
		default:
			lim.Done(ticket, limit.Outcome{Verdict: v, SentAt: sent}, now)
		}
		t.sent(Sent{Request: req, Exit: ticket.Exit, Member: m.ID, Verdict: v, Err: err})
		return nil, err
	}
	resp.Request = req // the caller's, as net/http's own transport answers
	exits.Observe(m.ID, resp.Header)
	var prof rlheader.Profile
	if t.Profile != nil {
		prof = t.Profile(host)
	}
	var rules classify.Rules
	if t.Verdicts != nil {
		rules = t.Verdicts(host)
	}
	sig := rlheader.Parse(resp.Header, now, prof)
	v := interpret(Response{Status: resp.StatusCode, Header: resp.Header, ViaProxy: m.ViaProxy(req.URL.Scheme)}, sig, rules)
	o := outcomeOf(v, sig, sent, req.URL.String())
	o.AnsweredAt = now
	if v != verdict.OK || resp.Body == nil || resp.Body == http.NoBody || resp.ContentLength == 0 || req.Method == http.MethodHead {
		lim.Done(ticket, o, now) // a refusal is heard at once, not at its body's end
	} else {
		// A success is in flight until its body is read or closed, as
		// the crawl engine counts it: given back at the headers, a
		// HostConcurrency of 1 let six streaming bodies run at once.
		resp.Body = &doneBody{ReadCloser: resp.Body, done: func() { lim.Done(ticket, o, time.Now()) }}
	}
	t.sent(Sent{Request: req, Exit: ticket.Exit, Member: m.ID, Status: resp.StatusCode, Verdict: v})
	return resp, nil
}

// doneBody calls done once, when the body has been read to its end (or
// failed) or is closed, whichever comes first.
type doneBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *doneBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.done)
	}
	return n, err
}

func (b *doneBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

// wait waits for a lane of host, keeping Reserve of the time to ctx's
// deadline; a wait that cannot end in time is a *WaitError.
func (t *Transport) wait(ctx context.Context, lim Waiter, host string, want limit.Want) (limit.Ticket, error) {
	if a, ok := lim.(acquirer); ok {
		// Most requests find a lane free. A quarantine lasts seconds at
		// least: only a longer wait asks whether every exit is down (it
		// reads every exit), and then says so at once, where waiting held
		// the caller to its deadline, or for ever without one.
		now := time.Now()
		tk, ok, next, err := a.Acquire(host, want, now)
		switch {
		case err != nil:
			return limit.Ticket{}, err
		case ok:
			return tk, nil
		case next.Sub(now) > time.Second:
			if we := exitsDown(lim, host, next, now); we != nil && we.AllExitsDown() {
				return limit.Ticket{}, we
			}
		}
	}
	wctx := ctx
	if dl, ok := ctx.Deadline(); ok && t.Reserve >= 0 {
		reserve := t.Reserve
		if reserve == 0 {
			reserve = time.Until(dl) / 4
		}
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, dl.Add(-reserve))
		defer cancel()
	}
	ticket, err := lim.Wait(wctx, host, want)
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return ticket, err
	}
	// The wait gave up before the request's own deadline: say when the
	// host may go, if the limiter can tell; if a lane has just freed up,
	// take it.
	now := time.Now()
	var next time.Time
	if a, ok := lim.(acquirer); ok {
		tk, ok, n, err := a.Acquire(host, want, now)
		switch {
		case err == nil && ok:
			return tk, nil
		case err == nil:
			next = n
		}
	}
	we := exitsDown(lim, host, next, now)
	if we == nil {
		we = &WaitError{Host: host, Next: next}
	}
	if f, ok := lim.(hostFuller); ok {
		if full, cap := f.HostFull(host); full {
			we.Full = cap
		}
	}
	return limit.Ticket{}, we
}

// TraceWrote returns req with a client trace that records whether its
// headers were written (the request left for the server), and the function
// that tells: a caller that gives up after it did gives its ticket back with
// Abandon, before with Cancel.
func TraceWrote(req *http.Request) (*http.Request, func() bool) {
	var wrote atomic.Bool
	out := req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteHeaders: func() { wrote.Store(true) },
	}))
	return out, wrote.Load
}

// hostFuller says whether a host's requests in flight fill its cap, as
// *limit.Limiter does.
type hostFuller interface {
	HostFull(host string) (full bool, limit int)
}

// exitsDown is the WaitError for host with the count of exits failing as
// proxies at now, nil when lim cannot tell.
func exitsDown(lim Waiter, host string, next, now time.Time) *WaitError {
	d, ok := lim.(exitsDowner)
	if !ok {
		return nil
	}
	down, total := d.ExitsDown(now)
	return &WaitError{Host: host, Next: next, ExitsDown: down, Exits: total}
}

func (t *Transport) sent(s Sent) {
	if t.OnSent != nil {
		t.OnSent(s)
	}
}

// CloseIdleConnections closes the idle connections of every exit's
// transport that has the method (http.Client.CloseIdleConnections calls
// it).
func (t *Transport) CloseIdleConnections() {
	if _, exits, err := t.parts(); err == nil {
		exits.CloseIdleConnections()
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// checkRequest refuses what net/http would refuse to send: a scheme other
// than http(s), no host, a header name or value it cannot write.
func checkRequest(req *http.Request) error {
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("fetch: Transport: unsupported protocol scheme %q", req.URL.Scheme)
	}
	if req.URL.Host == "" {
		return errors.New("fetch: Transport: no host in the request's URL")
	}
	if req.Header == nil {
		return errors.New("fetch: Transport: request with a nil Header (http.NewRequest makes one)")
	}
	if m := req.Method; m != "" && (strings.IndexFunc(m, func(r rune) bool { return !httpguts.IsTokenRune(r) }) >= 0) {
		return fmt.Errorf("fetch: Transport: invalid method %q", m)
	}
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("fetch: Transport: invalid header field name %q", k)
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("fetch: Transport: invalid header field value for %q", k)
			}
		}
	}
	return nil
}
