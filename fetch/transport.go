package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/rlheader"
)

// Transport is an http.RoundTripper that sends each request through the exit
// the limiter chooses for the request's host, waiting (for at most the
// request context) until some lane of that host may go, and feeding the
// response back to the limiter. Plug it into an http.Client, or into Colly
// with (*colly.Collector).WithTransport.
//
// Per the RoundTripper contract it does not retry, follow redirects, or read
// the body: classification uses the status and headers only, so a block page
// served with 200 is not recognised here (the crawl engine sniffs bodies).
// Retry a 429 in your own code: the limiter has already cooled that lane, and
// the next attempt goes through another exit.
//
// A Transport is safe for concurrent use once its fields are set.
type Transport struct {
	// Limiter decides. Required; typically a *limit.Limiter whose exits are
	// the keys of Exits.
	Limiter Waiter
	// Exits maps each exit ID to the RoundTripper that sends through it
	// (from pool.Exit.Transport). Required.
	Exits map[string]http.RoundTripper
	// HostKey maps a request URL to the limiter's host key. nil:
	// DefaultHostKey.
	HostKey func(*url.URL) string
	// Pin, if set, returns the sticky exit a request must use ("" for any).
	Pin func(*http.Request) string
	// Verdicts tunes classification per host. nil: the defaults.
	Verdicts func(host string) classify.Rules
	// Profile pins ambiguous headers per host. nil: guess.
	Profile func(host string) rlheader.Profile
}

// Waiter is the blocking side of a limiter, as *limit.Limiter provides it.
type Waiter interface {
	Wait(ctx context.Context, host string, want limit.Want) (limit.Ticket, error)
	Done(t limit.Ticket, o limit.Outcome, now time.Time)
	Cancel(t limit.Ticket, now time.Time)
}

// ExitHeader names the response header in which Transport reports the exit
// that carried the request, so callers can see it without credentials.
const ExitHeader = "X-Exitgate-Exit"

// ErrNoExit reports that the limiter chose an exit Transport has no
// RoundTripper for.
var ErrNoExit = errors.New("fetch: no transport for exit")

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	hostKey := t.HostKey
	if hostKey == nil {
		hostKey = DefaultHostKey
	}
	host := hostKey(req.URL)
	var want limit.Want
	if t.Pin != nil {
		want.Pin = t.Pin(req)
	}
	ticket, err := t.Limiter.Wait(req.Context(), host, want)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	rt := t.Exits[ticket.Exit]
	if rt == nil {
		t.Limiter.Cancel(ticket, time.Now())
		closeBody(req)
		return nil, fmt.Errorf("%w %q", ErrNoExit, ticket.Exit)
	}
	sent := time.Now()
	resp, err := rt.RoundTrip(req)
	now := time.Now()
	if err != nil {
		if req.Context().Err() != nil {
			t.Limiter.Cancel(ticket, now) // the caller gave up; the server said nothing
		} else {
			t.Limiter.Done(ticket, limit.Outcome{Verdict: classify.Error(err), SentAt: sent}, now)
		}
		return nil, err
	}
	var prof rlheader.Profile
	if t.Profile != nil {
		prof = t.Profile(host)
	}
	var rules classify.Rules
	if t.Verdicts != nil {
		rules = t.Verdicts(host)
	}
	sig := rlheader.Parse(resp.Header, now, prof)
	v := interpret(Response{Status: resp.StatusCode, Header: resp.Header}, sig, rules)
	t.Limiter.Done(ticket, outcomeOf(v, sig, sent, req.URL.String()), now)
	resp.Header.Set(ExitHeader, ticket.Exit)
	return resp, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
