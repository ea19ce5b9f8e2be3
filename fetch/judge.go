package fetch

import (
	"time"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/rlheader"
	"github.com/exitgate/exitgate/verdict"
)

// Judge says what one answer means, exactly as the crawl engine and
// Transport read it, for callers that drive the limiter themselves (the
// gateway): the answer's verdict (a transport error by its type, a response
// by its status, headers and r.Sniff, the body's first bytes), its parsed
// rate-limit signal, and the Outcome to hand to (*limit.Limiter).Done. r.At
// is when the answer came (zero: now); r.HeaderAt, if set, when its headers
// came. sentAt is when the request went out; url identifies it (a wave of
// forbidden answers is told from one URL's answers repeated). It is pure and
// safe for concurrent use.
func Judge(r Response, rules classify.Rules, prof rlheader.Profile, sentAt time.Time, url string) (verdict.Verdict, rlheader.Signal, limit.Outcome) {
	at := r.At
	if at.IsZero() {
		at = time.Now()
	}
	var sig rlheader.Signal
	if r.Err == nil {
		sig = rlheader.Parse(r.Header, at, prof)
	}
	v := interpret(r, sig, rules)
	o := outcomeOf(v, sig, sentAt, url)
	o.AnsweredAt = r.HeaderAt
	return v, sig, o
}

// IsPrivateHost reports whether host, a name or an address as written in a
// URL (no port, IPv6 without brackets), is this machine or a private
// network: localhost, loopback, private (RFC 1918, fc00::/7), shared
// (100.64.0.0/10), link-local (cloud metadata at 169.254.169.254) or
// unspecified. Names other than localhost are not resolved. It is the test
// the crawl applies to redirects.
func IsPrivateHost(host string) bool { return isPrivateHost(host) }
