package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/rlheader"
	"github.com/exitgate/exitgate/verdict"
)

// target is where a request goes: its scheme and authority (from the
// absolute URL, or from the tunnel it came through) and the sticky session
// it asked for.
type target struct {
	scheme, authority string
	session           string
}

// maxReplayBody is the largest request body kept in memory so that an
// idempotent request can be sent again through another exit; a longer one
// (or one of unknown length) is streamed, and sent once.
const maxReplayBody = 64 << 10

// errBudget: no lane of the host frees up within the wait budget.
var errBudget = errors.New("gateway: wait budget spent")

// errClosing: the gateway shuts down while the request waits for a lane.
var errClosing = errors.New("gateway: shutting down")

// errExitsComing: the limiter has no exits, but they are on their way (a
// fleet member that has just joined, or whose share is handed over), and
// the request's budget ended first. Its answer says so, not that the fleet
// has more members than exits.
var errExitsComing = errors.New("gateway: this gateway's exits are on their way")

// errExitsDown: every exit of the pool is held back for failing as a
// proxy. Waiting for one to recover held each client its whole budget (a
// minute) for a 502; it is said at once.
var errExitsDown = errors.New("gateway: every exit is failing as a proxy")

// errBanned is waitLane's error when every exit is banned from the host
// (block pages): no wait within a budget ends it.
var errBanned = errors.New("gateway: every exit is banned by the host")

// exitsDownText tells the client that no exit works, and what to do.
func (g *Gateway) exitsDownText() string {
	down, total := g.lim.ExitsDown(time.Now())
	return fmt.Sprintf("exitgate: no working exit: %d of %d exits are failing as proxies (refused, unreachable, wrong credentials); check them with \"exitgate proxies check\"", down, total)
}

// giveUpNoExit answers a request the limiter had no exit for (err:
// limit.ErrNoExits, or errExitsComing when they were on their way and the
// budget ended first): the gateway of a fleet whose other members hold
// every exit, or one that has just joined.
func (g *Gateway) giveUpNoExit(w http.ResponseWriter, host string, err error, next time.Time, budget time.Duration) {
	msg := "exitgate: this gateway owns no exit of the pool now (its fleet's other gateways and workers hold them all: more of them than exits); nothing was sent to " +
		host + ": retry after the time in Retry-After, or through another gateway"
	if errors.Is(err, errExitsComing) {
		msg = fmt.Sprintf("exitgate: this gateway's exits are on their way (it has just joined its fleet, or its share is being handed over), and the wait budget (%v) ended first; nothing was sent to %s: retry in a moment", budget, host)
	}
	g.giveUp(w, host, http.StatusServiceUnavailable, "no exit owned", next, msg)
}

// forward sends r to tgt through the limiter, retrying throttled, banned
// and proxy-failed attempts of idempotent requests through other exits
// within the wait budget, and streams the answer back to w.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, tgt target) {
	g.stats.inFlight.Add(1)
	defer g.stats.inFlight.Add(-1)
	start := time.Now()
	ctx := r.Context()
	budget, err := g.waitBudget(r.Header)
	if err != nil {
		g.refuse(w, r, tgt.authority, http.StatusBadRequest, "bad control header", err.Error())
		return
	}
	u := *r.URL
	u.Scheme, u.Host = tgt.scheme, tgt.authority
	host := g.hostKey(&u)
	if host == "" {
		g.refuse(w, r, "", http.StatusBadRequest, "no host", "the request names no host")
		return
	}
	// A client that waits for "100 Continue" has its body asked for once
	// a lane is taken: read for replay before, it was uploaded and then
	// refused when no lane freed up within the budget.
	later := strings.EqualFold(r.Header.Get("Expect"), "100-continue") && idempotent(r.Method) &&
		r.ContentLength > 0 && r.ContentLength <= maxReplayBody
	var body []byte
	replay := later
	if !later {
		var err error
		if body, replay, err = replayable(r); err != nil {
			g.refuse(w, r, host, http.StatusBadRequest, "bad request body", "reading the request body: "+err.Error())
			return
		}
	}
	upgrade := isUpgrade(r.Header)
	if upgrade {
		replay = false
	}
	var rules classify.Rules
	if g.cfg.Verdicts != nil {
		rules = g.cfg.Verdicts(host)
	}
	var prof rlheader.Profile
	if g.cfg.Profile != nil {
		prof = g.cfg.Profile(host)
	}
	deadline := start.Add(budget)
	var last verdict.Verdict
	throttled := false // the server pushed back on some attempt
	for attempt := 1; ; attempt++ {
		ticket, next, err := g.acquire(ctx, host, tgt.session, deadline)
		if err == nil && attempt > 1 && !time.Now().Before(deadline) {
			// The budget went on the attempts themselves (a server slow
			// to send its 429s): a free lane starts no retry past it.
			g.lim.Cancel(ticket, time.Now())
			err = errBudget
		}
		if err != nil {
			// What was sent before the gateway gave up, 0 for nothing
			// (the header the server's own answers carry; the gateway's
			// 429 and 503 had none).
			w.Header().Set(HeaderAttempts, strconv.Itoa(attempt-1))
			full, most := false, 0 // held by the gateway's own --per-host-concurrency
			if errors.Is(err, errBudget) && !throttled {
				full, most = g.lim.HostFull(host)
			}
			switch {
			case ctx.Err() != nil:
				// Counted: each client request is one "URL" of the
				// summary, and these were in no count at all.
				g.left(host, "", "client left before the answer")
			case errors.Is(err, errClosing):
				g.giveUp(w, host, http.StatusServiceUnavailable, "gateway shutting down", next,
					"exitgate: the gateway is shutting down; nothing was sent to "+host+": retry after the time in Retry-After")
			case errors.Is(err, errBanned):
				// A block on every exit is no pace: said as what it is, at
				// once (a 429 "wait budget spent" sent the client to slow
				// down, and every other path of the host waited its whole
				// budget for the same answer).
				g.giveUp(w, host, http.StatusForbidden, "banned on every exit", next,
					fmt.Sprintf("exitgate: %s answered every exit with a block page; no exit may send to it until the time in Retry-After", host))
			case errors.Is(err, errExitsDown) && !throttled:
				g.giveUp(w, host, http.StatusBadGateway, "no working exit", next, g.exitsDownText())
			case full:
				// The gateway's own cap held it, not the server: said so
				// ("its lanes are paced or cooling down" sent the client
				// to look for a pace the server never set).
				g.giveUp(w, host, http.StatusTooManyRequests, "host concurrency full", time.Now().Add(time.Second),
					fmt.Sprintf("exitgate: %s had %d requests in flight through this gateway, the most --per-host-concurrency allows, and none ended within the wait budget (%v)", host, most, budget))
			case errors.Is(err, errBudget), errors.Is(err, errExitsDown):
				// Paced or cooling down; the server's own 429 stands,
				// whatever the exits tried after it did. An attempt that
				// failed as a proxy last is said too, but not as "no
				// working exit" while others work (only all of them down
				// is, above: a black-holed exit's failure, then a paced
				// one, answered 502 "no working exit").
				why := "its lanes are paced or cooling down"
				if last == verdict.ProxyFailure {
					why = "its lanes are paced or cooling down, and the last exit tried failed as a proxy"
				}
				g.stats.throttled.Add(1)
				g.giveUp(w, host, http.StatusTooManyRequests, "wait budget spent", next,
					fmt.Sprintf("exitgate: no exit may send to %s within the wait budget (%v): %s; retry after the time in Retry-After, or send %s with a longer budget", host, budget, why, HeaderWait))
			case errors.Is(err, errExitsComing), errors.Is(err, limit.ErrNoExits):
				g.giveUpNoExit(w, host, err, next, budget)
			default:
				g.giveUp(w, host, http.StatusBadGateway, "limiter error", time.Time{}, "exitgate: "+err.Error())
			}
			return
		}
		member, ok := g.exits.Route(ticket.Exit)
		if !ok {
			g.lim.Cancel(ticket, time.Now())
			g.giveUp(w, host, http.StatusBadGateway, "no exit", time.Time{}, fmt.Sprintf("exitgate: no transport for exit %s", ticket.Exit))
			return
		}
		if later {
			later = false
			body = make([]byte, r.ContentLength)
			if _, err := io.ReadFull(r.Body, body); err != nil {
				g.lim.Cancel(ticket, time.Now())
				g.refuse(w, r, host, http.StatusBadRequest, "bad request body", "reading the request body: "+err.Error())
				return
			}
		}
		out, wrote := fetch.TraceWrote(outgoing(ctx, r, &u, body, upgrade))
		sent := time.Now()
		resp, err := member.Transport.RoundTrip(out)
		now := time.Now()
		if err == nil {
			// The exit's IP as its provider reports it (Identity's
			// header): a sticky exit whose IP changed moves to that IP's
			// lanes. serve took --exit-ip-header and did nothing with it.
			g.exits.Observe(member.ID, resp.Header)
		}
		canRetry := replay && attempt < g.cfg.MaxAttempts
		if err != nil {
			if ctx.Err() != nil {
				if wrote() {
					g.lim.Abandon(ticket, now) // sent: the server may have counted it
				} else {
					g.lim.Cancel(ticket, now) // the server said nothing
				}
				// Not done: counted, or a request cut at shutdown went
				// missing from the summary (1 request, 0 done, 0 not).
				g.left(host, ticket.Exit, "client left before the answer")
				return
			}
			if re, ok := errRefused(err); ok {
				g.lim.Cancel(ticket, now) // nothing was sent
				status := http.StatusForbidden
				if re.Reason == "loop" {
					status = http.StatusLoopDetected
				}
				g.refuse(w, r, host, status, re.Reason, re.Error())
				return
			}
			v, _, o := fetch.Judge(fetch.Response{Err: err, At: now}, rules, prof, sent, "")
			g.lim.Done(ticket, o, now)
			g.record(host, ticket.Exit, 0, v, rlheader.Signal{}, sent, now, 0)
			last = v
			if v == verdict.ProxyFailure && tgt.session != "" {
				g.sessions.unbind(tgt.session, ticket.Exit)
			}
			if v == verdict.ProxyFailure && canRetry {
				g.retried(host, ticket.Exit)
				continue
			}
			status, why := http.StatusBadGateway, "upstream "+fetch.ErrorClass(err)
			if why == "upstream timeout" {
				status = http.StatusGatewayTimeout
			}
			sentThrough(w, ticket.Exit, attempt)
			g.giveUp(w, host, status, why, time.Time{}, fmt.Sprintf("exitgate: %s through exit %s: %s", host, ticket.Exit, g.scrub(member.ID, err.Error())))
			return
		}
		var sniff []byte
		if rules.Sniffs(resp.StatusCode) {
			sniff, resp.Body = peek(resp.Body, classify.DefaultSniffBytes)
		}
		var id string // the URL tells one forbidden URL's answers from a wave
		if resp.StatusCode == http.StatusForbidden {
			id = u.String()
		}
		v, sig, o := fetch.Judge(fetch.Response{Status: resp.StatusCode, Header: resp.Header, Sniff: sniff, At: now, HeaderAt: now, ViaProxy: member.ViaProxy(out.URL.Scheme)},
			rules, prof, sent, id)
		if upgrade && resp.StatusCode == http.StatusSwitchingProtocols {
			// The upgrade the client asked for, done: classify reads a
			// 1xx as no answer yet (retryable), and the summary counted a
			// WebSocket that worked as abandoned, "status 101".
			v, o.Verdict = verdict.OK, verdict.OK
		}
		last = v
		throttled = throttled || v == verdict.Throttled
		if v == verdict.ProxyFailure && tgt.session != "" {
			g.sessions.unbind(tgt.session, ticket.Exit)
		}
		if canRetry && (v == verdict.Throttled || v == verdict.Banned || v == verdict.ProxyFailure) {
			g.lim.Done(ticket, o, now)
			discard(resp.Body)
			g.record(host, ticket.Exit, resp.StatusCode, v, sig, sent, now, 0)
			g.retried(host, ticket.Exit)
			continue
		}
		if v == verdict.ProxyFailure {
			// The exit's proxy refused (407): its answer is not the
			// server's, and a 407 would ask the client for credentials
			// the gateway does not want.
			g.lim.Done(ticket, o, now)
			discard(resp.Body)
			g.record(host, ticket.Exit, resp.StatusCode, v, sig, sent, now, 0)
			sentThrough(w, ticket.Exit, attempt)
			g.giveUp(w, host, http.StatusBadGateway, "exit proxy failure", time.Time{},
				fmt.Sprintf("exitgate: the proxy of exit %s answered %d", ticket.Exit, resp.StatusCode))
			return
		}
		// A success is in flight (the host's and the pool's concurrency)
		// until its answer is passed on, as the crawl engine and
		// fetch.Transport count it: given back at the headers, streaming
		// bodies ran past HostConcurrency. Not a switched protocol (a
		// WebSocket held for hours is no request in flight), and not a
		// refusal, which the limiter hears at once (a 503's pause counted
		// from the end of its trickling body held the next request).
		atHeaders := resp.StatusCode == http.StatusSwitchingProtocols || v != verdict.OK
		if atHeaders {
			g.lim.Done(ticket, o, now)
		}
		n, cerr := g.respond(w, r, resp, ticket.Exit, attempt)
		if !atHeaders {
			g.lim.Done(ticket, o, time.Now())
		}
		g.record(host, ticket.Exit, resp.StatusCode, v, sig, sent, now, n)
		switch {
		case v == verdict.OK && cerr == nil:
			g.stats.done.Add(1)
			g.tally.Done(host, ticket.Exit)
		case v == verdict.OK:
			// Whose end: the server's answer cut short while the client
			// still waited (it was counted as the client's leaving), or
			// the client gone (which cancels the read too).
			why := "client left mid-body"
			var ue *upstreamError
			if errors.As(cerr, &ue) && r.Context().Err() == nil {
				why = "upstream " + fetch.ErrorClass(ue.err)
			}
			g.left(host, ticket.Exit, why)
		default:
			why := "status " + strconv.Itoa(resp.StatusCode)
			g.stats.outcome(why)
			g.tally.Abandon(host, ticket.Exit, why)
		}
		if g.log.Enabled(ctx, slog.LevelDebug) {
			g.log.Debug("gateway: forwarded", "host", host, "method", r.Method, "status", resp.StatusCode,
				"verdict", v.String(), "exit", ticket.Exit, "attempts", attempt, "bytes", n, "ms", time.Since(start).Milliseconds())
		}
		if ue := (*upstreamError)(nil); errors.As(cerr, &ue) {
			// The server's answer was cut short: so is the client's,
			// its connection closed (or its stream reset) with no end
			// of body. Returning would end a chunked body properly, and
			// the client would take the cut answer for the whole one.
			// What the server did send goes out first: kept in the
			// response's buffer, the status and those bytes were lost,
			// and the client saw an empty reply.
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		}
		return
	}
}

// acquire waits, until deadline at most, for a lane of host: the session's
// exit when the request has a session that has one, else any. On errBudget
// next is when the host may go, when the limiter can tell.
func (g *Gateway) acquire(ctx context.Context, host, session string, deadline time.Time) (limit.Ticket, time.Time, error) {
	begin := time.Now()
	defer func() {
		if d := time.Since(begin); d > time.Millisecond {
			g.tally.HeldBack(host, d)
		}
	}()
	for {
		var want limit.Want
		if session != "" {
			want.Pin = g.sessions.get(session, time.Now())
		}
		t, next, err := g.wait(ctx, host, want, deadline)
		if errors.Is(err, limit.ErrNoExits) {
			again, retry, werr := g.awaitExits(ctx, deadline)
			if again {
				continue
			}
			if werr != nil {
				err = werr
			}
			return limit.Ticket{}, retry, err
		}
		if errors.Is(err, limit.ErrUnknownExit) && want.Pin != "" {
			g.sessions.drop(session) // its exit left the pool: the session moves
			continue
		}
		if err != nil || session == "" || want.Pin != "" {
			return t, next, err
		}
		if exit := g.sessions.bind(session, t.Exit, time.Now()); exit != t.Exit {
			// Another request of the session bound it first, elsewhere.
			g.lim.Cancel(t, time.Now())
			continue
		}
		return t, time.Time{}, nil
	}
}

// awaitExits holds a request while the limiter has no exits and
// Config.NoExits says they are coming, until the next look (again) or the
// deadline; otherwise it says when to come back (retry). A gateway that
// had joined its fleet a moment before, or whose share was handed over,
// answered 503 for a second or more with exits on their way.
func (g *Gateway) awaitExits(ctx context.Context, deadline time.Time) (again bool, retry time.Time, err error) {
	soon, ra := false, time.Second
	if g.cfg.NoExits != nil {
		soon, ra = g.cfg.NoExits()
		ra = max(ra, time.Second)
	}
	now := time.Now()
	if !soon {
		return false, now.Add(ra), nil
	}
	if !now.Before(deadline) {
		return false, now.Add(time.Second), errExitsComing
	}
	t := time.NewTimer(min(50*time.Millisecond, deadline.Sub(now)))
	defer t.Stop()
	select {
	case <-t.C:
		return true, time.Time{}, nil
	case <-ctx.Done():
		return false, time.Time{}, ctx.Err()
	case <-g.closed.Done():
		return false, now.Add(ra), errClosing
	}
}

// lineRecheck is how often a waiter that entered a line with no reading of
// its pace looks again.
const lineRecheck = 250 * time.Millisecond

// wait is limit.Wait bounded by deadline, in line with the host's other
// waiters (lines): a wait that cannot end in time, by the lane's next free
// time or by the line ahead, is errBudget at once, with when the host may
// go.
func (g *Gateway) wait(ctx context.Context, host string, want limit.Want, deadline time.Time) (limit.Ticket, time.Time, error) {
	if want.Pin != "" {
		// A session's request, for its own exit, waits apart: the line
		// is for any lane.
		return g.waitLane(ctx, host, want, deadline)
	}
	// Most requests find a lane free: no timer, no context, no line. One
	// that finds others waiting goes behind them.
	if !g.lines.busy(host) {
		t, ok, _, err := g.lim.Acquire(host, want, time.Now())
		switch {
		case err != nil:
			return limit.Ticket{}, time.Time{}, err
		case ok:
			return t, time.Time{}, nil
		}
	}
	turn, ahead, expect := g.lines.enter(host)
	served := false
	defer func() { g.lines.leave(host, turn, served, time.Now()) }()
	if now := time.Now(); ahead > 0 && expect > 0 && now.Add(expect).After(deadline) && !g.lim.Ramping(host) {
		// The line ahead takes longer than the budget, as it has been
		// served lately: said now, not at the budget's end (131 of 200
		// clients were held 38 s of their 40 for a 429). Not while the
		// host's lanes ramp up: served twice as fast each second, a line
		// read from the last second's gaps refused 31 of 100 requests at
		// 2.5 s of a 10-s budget that all the others met by 5 s, in a
		// helper's blind run.
		return limit.Ticket{}, now.Add(expect), errBudget
	}
	if ahead > 0 {
		tm := time.NewTimer(time.Until(deadline))
		defer tm.Stop()
		// With no reading of the line's pace on entering, look again as
		// the line is served: once it has one, a place it cannot reach
		// in time is said then, not at the budget's end.
		var recheck <-chan time.Time
		if expect == 0 {
			tk := time.NewTicker(lineRecheck)
			defer tk.Stop()
			recheck = tk.C
		}
	waiting:
		for {
			select {
			case <-turn.ready:
				break waiting
			case now := <-recheck:
				if e := g.lines.expect(host, turn); e > 0 && now.Add(e).After(deadline) && !g.lim.Ramping(host) {
					return limit.Ticket{}, now.Add(e), errBudget
				}
			case <-tm.C:
				return limit.Ticket{}, time.Now().Add(max(expect, time.Second)), errBudget
			case <-ctx.Done():
				return limit.Ticket{}, time.Time{}, ctx.Err()
			case <-g.closed.Done():
				return limit.Ticket{}, time.Time{}, errClosing
			}
		}
	}
	t, next, err := g.waitLane(ctx, host, want, deadline)
	served = err == nil
	return t, next, err
}

// waitLane is limit.Wait bounded by deadline, for the first in line (or a
// session's request): a wait that cannot end in time is errBudget at once,
// with when the host may go.
func (g *Gateway) waitLane(ctx context.Context, host string, want limit.Want, deadline time.Time) (limit.Ticket, time.Time, error) {
	now := time.Now()
	t, ok, next, err := g.lim.Acquire(host, want, now)
	switch {
	case err != nil:
		return limit.Ticket{}, time.Time{}, err
	case ok:
		return t, time.Time{}, nil
	}
	// A quarantine lasts seconds at least: only a long wait asks whether
	// every exit is down, not each paced request (it reads every exit).
	if next.Sub(now) > time.Second {
		if down, total := g.lim.ExitsDown(now); total > 0 && down == total {
			return limit.Ticket{}, next, errExitsDown
		}
		if until, all := g.lim.BannedEverywhere(host, now); all {
			return limit.Ticket{}, until, errBanned
		}
	}
	if next.After(deadline) {
		return limit.Ticket{}, next, errBudget
	}
	if g.closing.Load() {
		return limit.Ticket{}, next, errClosing
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	// Shutting down: the request is answered now, not cut when the drain ends.
	stop := context.AfterFunc(g.closed, cancel)
	t, err = g.lim.Wait(wctx, host, want)
	stop()
	cancel()
	if err != nil && ctx.Err() == nil && g.closing.Load() {
		return limit.Ticket{}, next, errClosing
	}
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return t, time.Time{}, err
	}
	// The budget is spent (or too short for the next free lane): take a
	// lane that has just freed up, else say when one will.
	t, ok, next, err = g.lim.Acquire(host, want, time.Now())
	switch {
	case err != nil:
		return limit.Ticket{}, time.Time{}, err
	case ok:
		return t, time.Time{}, nil
	}
	return limit.Ticket{}, next, errBudget
}

// sentThrough says on the gateway's own answer, after attempts requests were
// sent, through which exit the last went: its 502 and 504 said neither, the
// exit named only in the text.
func sentThrough(w http.ResponseWriter, exit string, attempts int) {
	h := w.Header()
	h[HeaderExit] = []string{exit}
	h[HeaderAttempts] = []string{strconv.Itoa(attempts)}
}

// giveUp answers the client for the gateway, when the request cannot be
// answered by the server, with Retry-After when next is known.
func (g *Gateway) giveUp(w http.ResponseWriter, host string, status int, why string, next time.Time, msg string) {
	g.stats.outcome(why)
	g.tally.Abandon(host, "", why)
	var ra time.Duration
	if !next.IsZero() {
		ra = max(time.Until(next), time.Second)
	} else if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		// Both say to come back: a 503 at shutdown with nothing sent
		// had no Retry-After, its text pointing at one.
		ra = time.Second
	}
	g.log.Info("gateway: gave up", "host", host, "why", why)
	g.answer(w, status, why, ra, msg)
}

// left counts a request that ended without its answer because the
// client left (why), or because the gateway cut it at shutdown: the
// connection Close cut looks the same from here.
func (g *Gateway) left(host, exit, why string) {
	if g.cut.Load() {
		why = "cut at shutdown"
	}
	g.stats.outcome(why)
	g.tally.Abandon(host, exit, why)
}

func (g *Gateway) retried(host, exit string) {
	g.stats.retries.Add(1)
	g.tally.Retry(host, exit)
}

// record counts one attempt in the tally, as the crawl engine does.
func (g *Gateway) record(host, exit string, status int, v verdict.Verdict, sig rlheader.Signal, sent, at time.Time, n int64) {
	g.tally.Record(metrics.Event{Host: host, Exit: exit, Status: status, Verdict: v,
		RetryAfter: sig.RetryAfter, HasRetryAfter: sig.HasRetryAfter, Latency: at.Sub(sent), Bytes: n, At: at})
}

// scrub removes the exit's credentials from text, such as an error.
func (g *Gateway) scrub(memberID, s string) string {
	if e, ok := g.byID[memberID]; ok {
		return e.Scrub(s)
	}
	return s
}

// replayable returns the body to send with each attempt and whether the
// request may be sent more than once: its method is idempotent and its body
// is empty or short enough to keep (it is then read here, once).
func replayable(r *http.Request) ([]byte, bool, error) {
	if !idempotent(r.Method) {
		return nil, false, nil
	}
	switch n := r.ContentLength; {
	case r.Body == nil || r.Body == http.NoBody || n == 0:
		return nil, true, nil
	case n < 0 || n > maxReplayBody:
		return nil, false, nil
	default:
		b := make([]byte, n)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, false, err
		}
		return b, true, nil
	}
}

// idempotent methods may be sent again (RFC 9110 §9.2.2).
func idempotent(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// hopHeaders are the hop-by-hop headers (RFC 9110 §7.6.1) a proxy must not
// forward, and the proxy's own.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHop deletes the hop-by-hop headers of h, those Connection names
// included.
func removeHop(h http.Header) {
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	for _, k := range hopHeaders {
		delete(h, k)
	}
}

// isUpgrade reports a protocol upgrade request (WebSocket).
func isUpgrade(h http.Header) bool {
	if h.Get("Upgrade") == "" {
		return false
	}
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if strings.EqualFold(textproto.TrimString(sf), "upgrade") {
				return true
			}
		}
	}
	return false
}

// outgoing is the request the server gets: r with the absolute URL, without
// hop-by-hop and control headers, and with body (when kept) or r's own.
func outgoing(ctx context.Context, r *http.Request, u *url.URL, body []byte, upgrade bool) *http.Request {
	out := r.Clone(ctx)
	out.RequestURI = ""
	out.URL = u
	out.Host = u.Host
	out.Close = false
	var up string
	if upgrade {
		up = r.Header.Get("Upgrade")
	}
	removeHop(out.Header)
	removeControl(out.Header)
	if up != "" {
		out.Header.Set("Connection", "Upgrade")
		out.Header.Set("Upgrade", up)
	}
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header["User-Agent"] = []string{""} // send none, as the client did, not Go's
	}
	switch {
	case body != nil:
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
	case r.ContentLength == 0 || r.Body == nil:
		out.Body = http.NoBody
		out.ContentLength = 0
	default:
		// Streamed: the client's trailers fill r.Trailer as its body
		// ends, after Clone copied the map with empty values (the
		// server saw X-Req-Sum: with nothing in it).
		out.Trailer = r.Trailer
	}
	return out
}

// removeControl deletes exitgate's X-Exitgate- headers from h.
func removeControl(h http.Header) {
	for k := range h {
		if isControl(k) {
			delete(h, k)
		}
	}
}

// isControl reports whether a header name is one of exitgate's X-Exitgate-.
func isControl(k string) bool {
	return len(k) > len(controlPrefix) && strings.EqualFold(k[:len(controlPrefix)], controlPrefix)
}

// peek reads up to n bytes of body, for a block page, while the server
// keeps sending: it stops at a pause of peekPause, or after peekMax in all,
// and returns what it read with a body that still yields all of it. A 503
// whose body trickled in held its headers until the body ended, and one
// that sent less than n and stayed open never answered the client.
func peek(body io.ReadCloser, n int) ([]byte, io.ReadCloser) {
	cr := &chunkReader{ch: make(chan chunk, 4), done: make(chan struct{}), body: body}
	go cr.pump()
	var buf []byte
	limit := time.NewTimer(peekMax)
	defer limit.Stop()
	pause := time.NewTimer(peekMax)
	defer pause.Stop()
read:
	for len(buf) < n {
		select {
		case c := <-cr.ch:
			if c.err != nil {
				cr.err = c.err
				break read
			}
			buf = append(buf, c.b...)
			pause.Reset(peekPause)
		case <-pause.C:
			if len(buf) > 0 {
				break read
			}
			pause.Reset(peekMax) // (nothing yet: wait for the first bytes, up to peekMax)
		case <-limit.C:
			break read
		}
	}
	return buf, readCloser{io.MultiReader(bytes.NewReader(buf), cr), cr}
}

// peekPause and peekMax bound how long peek holds an answer's headers.
const (
	peekPause = 50 * time.Millisecond
	peekMax   = time.Second
)

type readCloser struct {
	io.Reader
	io.Closer
}

// chunk is what one Read of a body gave.
type chunk struct {
	b   []byte
	err error
}

// chunkReader reads a body on its own goroutine (pump), so that peek can
// stop waiting for it; Read takes its chunks in order, Close ends it.
type chunkReader struct {
	ch   chan chunk
	done chan struct{}
	once sync.Once
	body io.ReadCloser
	cur  []byte
	err  error
}

func (c *chunkReader) pump() {
	for {
		buf := make([]byte, 32<<10)
		k, err := c.body.Read(buf)
		if k > 0 {
			select {
			case c.ch <- chunk{b: buf[:k]}:
			case <-c.done:
				return
			}
		}
		if err != nil {
			select {
			case c.ch <- chunk{err: err}:
			case <-c.done:
			}
			return
		}
	}
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.cur) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		ch := <-c.ch
		c.cur, c.err = ch.b, ch.err
	}
	k := copy(p, c.cur)
	c.cur = c.cur[k:]
	return k, nil
}

func (c *chunkReader) Close() error {
	var err error
	c.once.Do(func() {
		close(c.done)
		err = c.body.Close()
	})
	return err
}

// discard drains a little of a body we drop, so that its connection may be
// used again, and closes it.
func discard(body io.ReadCloser) {
	// Closing the body aborts a read that stalls: a server that sent a
	// 429's headers and part of its body held the retry, and the client,
	// until it dropped the connection, 120 s on.
	t := time.AfterFunc(discardWait, func() { body.Close() })
	io.CopyN(io.Discard, body, 64<<10)
	t.Stop()
	body.Close()
}

// discardWait bounds how long a body thrown away is drained, to keep its
// connection: past it, the connection goes with the body.
const discardWait = 250 * time.Millisecond

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// respond streams resp to the client and returns the body bytes copied.
func (g *Gateway) respond(w http.ResponseWriter, r *http.Request, resp *http.Response, exit string, attempts int) (int64, error) {
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return g.switchProtocols(w, resp, exit, attempts)
	}
	h := w.Header()
	for k, vv := range resp.Header {
		h[k] = vv
	}
	if _, ok := resp.Header["Content-Type"]; !ok {
		h["Content-Type"] = nil // as the server sent it: net/http would sniff one from the body
	}
	removeHop(h)
	// The X-Exitgate- headers of an answer are the gateway's own: a
	// server's would pass for the gateway's word (X-Exitgate-Reason says
	// the gateway made the answer).
	removeControl(h)
	// Trailers too: a server's X-Exitgate-Reason as a trailer passed for
	// the gateway's word as well.
	removeControl(resp.Trailer)
	if len(resp.Trailer) > 0 {
		keys := make([]string, 0, len(resp.Trailer))
		for k := range resp.Trailer {
			keys = append(keys, k)
		}
		h["Trailer"] = []string{strings.Join(keys, ", ")}
	}
	h[HeaderExit] = []string{exit}
	h[HeaderAttempts] = []string{strconv.Itoa(attempts)}
	w.WriteHeader(resp.StatusCode)
	if r.Method == http.MethodHead {
		return 0, nil
	}
	n, err := copyBody(w, resp.Body, resp.ContentLength < 0 || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"))
	removeControl(resp.Trailer) // filled in as the body was read
	for k, vv := range resp.Trailer {
		h[k] = vv
	}
	return n, err
}

// pauseFlush is how long a read of the server's answer may wait before
// what was written so far, the header included, is flushed to the client.
// A server that pauses (a slow body, a long poll, a header sent before a
// body that takes time) is seen by the client as it sends; a body arriving
// faster than it is copied costs no flush.
const pauseFlush = 5 * time.Millisecond

// copyBody copies body to w. Whatever was written (the header at first) is
// flushed whenever a read waits for the server longer than pauseFlush: a
// 10-byte answer sent slowly reached the client only with its end, net/http
// holding it in its 4 KiB buffer. A stream (no length, or server-sent
// events) is also flushed whenever a read returns less than the buffer
// holds, that is, whenever the server has sent nothing more yet, so that
// each event arrives with no delay at all.
func copyBody(w http.ResponseWriter, body io.Reader, stream bool) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	f := newPauseFlusher(w)
	defer f.stop()
	var n int64
	for {
		f.arm()
		k, rerr := body.Read(buf)
		if k > 0 {
			wk, werr := f.write(buf[:k], stream && k < len(buf))
			n += int64(wk)
			if werr != nil {
				return n, werr
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, &upstreamError{rerr}
		}
	}
}

// upstreamError is a failure reading the server's answer, as opposed to
// writing it to the client.
type upstreamError struct{ err error }

func (e *upstreamError) Error() string { return "reading the answer: " + e.err.Error() }
func (e *upstreamError) Unwrap() error { return e.err }

// pauseFlusher flushes a ResponseWriter from a timer while the copy waits
// for the server; the lock keeps the timer's flush and the copy's writes
// apart (a ResponseWriter is not safe for concurrent use).
type pauseFlusher struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	t       *time.Timer
	pending bool // written since the last flush (the header, at first)
	ended   bool // the handler may return: the timer must not touch w
}

func newPauseFlusher(w http.ResponseWriter) *pauseFlusher {
	f := &pauseFlusher{w: w, rc: http.NewResponseController(w), pending: true}
	f.t = time.AfterFunc(time.Hour, f.onPause)
	f.t.Stop()
	return f
}

// arm starts the pause timer before a read of the server's answer.
func (f *pauseFlusher) arm() { f.t.Reset(pauseFlush) }

func (f *pauseFlusher) onPause() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended || !f.pending {
		return
	}
	f.pending = false
	f.rc.Flush() // an error shows again on the next write
}

// write writes p, and flushes at once when flush is set.
func (f *pauseFlusher) write(p []byte, flush bool) (int, error) {
	f.t.Stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	k, err := f.w.Write(p)
	f.pending = true
	if err == nil && flush {
		f.pending = false
		err = f.rc.Flush()
	}
	return k, err
}

// stop ends the flushing: once it returns, the timer no longer touches w.
func (f *pauseFlusher) stop() {
	f.t.Stop()
	f.mu.Lock()
	f.ended = true
	f.mu.Unlock()
}

// switchProtocols completes an upgrade (WebSocket): the client's
// connection and the server's are joined until either side closes.
func (g *Gateway) switchProtocols(w http.ResponseWriter, resp *http.Response, exit string, attempts int) (int64, error) {
	up, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		// A 101 that switches to nothing (no Upgrade asked, or none
		// named in the answer): net/http gives no connection to splice,
		// and an error alone here let net/http answer an empty 200.
		const why = "the server answered 101 Switching Protocols with no upgrade to switch to"
		h := w.Header()
		h[HeaderReason] = []string{"bad upstream answer"}
		sentThrough(w, exit, attempts)
		http.Error(w, "exitgate: "+why, http.StatusBadGateway)
		return 0, nil // answered (an upstream error would cut the answer)
	}
	h := w.Header()
	for k, vv := range resp.Header {
		h[k] = vv
	}
	removeControl(h) // the server's X-Exitgate- headers are not the gateway's word
	h[HeaderExit] = []string{exit}
	h[HeaderAttempts] = []string{strconv.Itoa(attempts)}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var head bytes.Buffer
	fmt.Fprintf(&head, "HTTP/1.1 %s\r\n", resp.Status)
	h.Write(&head)
	head.WriteString("\r\n")
	if _, err := conn.Write(head.Bytes()); err != nil {
		return 0, err
	}
	if !g.trackTunnel(conn, true) {
		return 0, http.ErrServerClosed
	}
	defer g.trackTunnel(conn, false)
	return splice(conn, brw.Reader, up), nil
}
