// Package classify says what one request's outcome means: a response (status,
// parsed rate-limit signal, the first bytes of the body) or a transport error
// becomes a verdict.Verdict, per the table in DESIGN.md.
package classify

import (
	"compress/flate"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/exitgate/exitgate/verdict"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"syscall"

	"github.com/exitgate/exitgate/rlheader"
)

// DefaultSniffBytes is how much of a body Response looks at for block-page
// markers when Rules.SniffBytes is zero.
const DefaultSniffBytes = 4096

// DefaultBlockMarkers are lowercase fragments of well-known challenge and
// block pages (Cloudflare, Akamai, PerimeterX, DataDome, Imperva, generic
// captchas). Matching ignores ASCII case.
func DefaultBlockMarkers() []string {
	return []string{
		"attention required! | cloudflare",
		"cf-chl",
		"cf_chl",
		"just a moment...",
		"access denied",
		"px-captcha",
		"perimeterx",
		"datadome",
		"captcha-delivery.com",
		"incapsula incident",
		"_incapsula_resource",
		"captcha",
	}
}

// Rules adjusts classification for one host. The zero value applies the
// table in DESIGN.md: sniff 403 and 503 bodies for block pages with the
// default markers; a 403 without one is forbidden unless the response
// carries a rate-limit signal.
// Rules is a plain value; share it freely but do not mutate it while
// Response may read it.
type Rules struct {
	// Status maps a status code to a fixed verdict, overriding everything
	// else: {403: verdict.Throttled} for a site that signals rate limits with 403,
	// {503: verdict.Banned} for one that serves block pages as 503.
	Status map[int]verdict.Verdict
	// SniffStatuses lists the statuses whose bodies are checked for block
	// markers (a match means verdict.Banned). Nil means 403 and 503; add 200 for
	// sites that serve challenges with 200.
	SniffStatuses []int
	// Markers replaces DefaultBlockMarkers when non-nil. Lowercase ASCII;
	// matching ignores case.
	Markers []string
	// SniffBytes bounds how much of the body is examined; zero means
	// DefaultSniffBytes.
	SniffBytes int
}

// Response says what one response means. status is the HTTP status; sig is
// the parsed signal (the zero Signal when not parsed); body is a prefix of the body
// (only the first Rules.SniffBytes are read; nil is fine).
//
//	2xx, 3xx                       ok
//	429                            throttled
//	403 with Retry-After or
//	    remaining 0 (GitHub)       throttled
//	403                            forbidden
//	503 with Retry-After, 503      busy (RFC 9110: overload or maintenance)
//	500 502 504 408 522 524,
//	    other 5xx                  retryable
//	407                            proxy_failure
//	401 404 410, other 4xx         fatal
//	block page in a sniffed body   banned
//	1xx or out of range            retryable (not a final answer)
//
// Rules.Status overrides all of it. A bare 403 reads as forbidden, that
// URL's answer: telling a wave of them (a real ban of the lane) from one
// forbidden URL takes history, which is the limiter's job, not this
// function's. A 403 block page is banned at once.
// Response never panics and is safe for concurrent use.
func Response(status int, sig rlheader.Signal, body []byte, rules Rules) verdict.Verdict {
	if v, ok := rules.Status[status]; ok {
		return v
	}
	if rules.sniffs(status) && hasBlockMarker(body, rules) {
		return verdict.Banned
	}
	switch {
	case status >= 200 && status < 400:
		return verdict.OK
	case status == http.StatusTooManyRequests:
		return verdict.Throttled
	case status == http.StatusForbidden:
		if sig.HasRetryAfter || sig.HasRemaining && sig.Remaining == 0 {
			return verdict.Throttled
		}
		return verdict.Forbidden
	case status == http.StatusProxyAuthRequired:
		return verdict.ProxyFailure
	case status == http.StatusServiceUnavailable:
		return verdict.Busy
	case status == http.StatusRequestTimeout:
		return verdict.Retryable
	case status >= 400 && status < 500:
		return verdict.Fatal
	default: // 5xx (500, 502, 504, 522, 524, ...), 1xx, nonsense
		return verdict.Retryable
	}
}

func (r *Rules) sniffs(status int) bool {
	if r.SniffStatuses == nil {
		return status == http.StatusForbidden || status == http.StatusServiceUnavailable
	}
	for _, s := range r.SniffStatuses {
		if s == status {
			return true
		}
	}
	return false
}

// hasBlockMarker looks for a marker in the first SniffBytes of body,
// ignoring ASCII case, without allocating.
func hasBlockMarker(body []byte, r Rules) bool {
	n := r.SniffBytes
	if n <= 0 {
		n = DefaultSniffBytes
	}
	if len(body) > n {
		body = body[:n]
	}
	if len(body) == 0 {
		return false
	}
	markers := r.Markers
	if markers == nil {
		markers = DefaultBlockMarkers()
	}
	for _, m := range markers {
		if m != "" && containsFold(body, m) {
			return true
		}
	}
	return false
}

func containsFold(s []byte, lower string) bool {
	for i := 0; i+len(lower) <= len(s); i++ {
		j := 0
		for ; j < len(lower); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lower[j] {
				break
			}
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

// ProxyConnectError reports that a proxy refused a CONNECT. net/http returns
// only an untyped error with the proxy's reason phrase; set
// http.Transport.OnProxyConnectResponse to ProxyConnectHook to get this
// typed error instead. It is immutable once made, safe for concurrent use.
type ProxyConnectError struct {
	Proxy      string // the proxy URL, without credentials
	StatusCode int
	Status     string
}

// Error describes the refusal.
func (e *ProxyConnectError) Error() string {
	if unreachableTarget(e.StatusCode) {
		return fmt.Sprintf("proxy %s could not reach the target: %s", e.Proxy, e.Status)
	}
	return fmt.Sprintf("proxy %s refused CONNECT: %s", e.Proxy, e.Status)
}

// TargetDeniedError reports that a working proxy refused to CONNECT to
// this one target (403: a port or a site its rules do not allow, as
// tinyproxy's ConnectPort or squid's ACLs): the URL's answer through that
// exit, read as verdict.Forbidden (other exits may be let in), not the
// exit failing. Package pool tells it from a proxy refusing its client
// altogether by a check of the proxy. Immutable once made.
type TargetDeniedError struct {
	Proxy      string // the exit's id, never credentials
	StatusCode int
}

func (e *TargetDeniedError) Error() string {
	return fmt.Sprintf("proxy %s refused CONNECT to this target (%d)", e.Proxy, e.StatusCode)
}

// ProxyConnectHook has the signature of http.Transport.OnProxyConnectResponse
// and turns a non-200 answer to CONNECT into a *ProxyConnectError, which
// Error recognises. It is safe for concurrent use.
func ProxyConnectHook(_ context.Context, proxyURL *url.URL, _ *http.Request, resp *http.Response) error {
	if resp == nil || resp.StatusCode == http.StatusOK {
		return nil
	}
	p := ""
	if proxyURL != nil {
		p = proxyURL.Redacted()
	}
	return &ProxyConnectError{Proxy: p, StatusCode: resp.StatusCode, Status: resp.Status}
}

// ProxyError reports that a request through a proxy failed because of the
// proxy itself: checked after the failure, the proxy did not answer, answered
// something that is not its protocol, or refused the handshake or the
// credentials (package pool finds this out for its exits). The URL is not to
// blame. It is immutable once made, safe for concurrent use.
type ProxyError struct {
	Proxy string // the exit's id, never credentials
	Why   string // what the check of the proxy found, e.g. "no answer within 5s"
	Err   error  // the request's own error
}

// Error describes the failure.
func (e *ProxyError) Error() string {
	return fmt.Sprintf("proxy %s: %s (request: %v)", e.Proxy, e.Why, e.Err)
}

// Unwrap returns the request's error.
func (e *ProxyError) Unwrap() error { return e.Err }

// Error says what a transport error means:
//
//   - nil: ok;
//   - *ProxyError, *ProxyConnectError, a *net.OpError with Op "proxyconnect"
//     (net/http's typed error for failing to reach or dial through the
//     proxy), and the untyped CONNECT refusal net/http returns (see below):
//     proxy_failure; but a CONNECT answered 500, 502, 503 or 504 (the
//     proxy could not reach the target) is retryable, as the target's;
//   - a local address that cannot be assigned (EADDRNOTAVAIL): proxy_failure,
//     the exit's;
//   - timeouts (net.Error.Timeout, context.DeadlineExceeded,
//     os.ErrDeadlineExceeded), connection resets, refusals, broken pipes,
//     unexpected EOFs: retryable;
//   - a DNS name that does not exist: fatal;
//   - anything else: retryable, bounded by the caller's retry budget.
//
// It branches on typed errors with errors.As and errors.Is. The one
// exception is net/http's CONNECT refusal, which it only reports as
// errors.New(reason phrase): an error whose whole text is the standard
// reason phrase of a 4xx or 5xx status is taken to be one. Use
// ProxyConnectHook to avoid relying on that. A canceled context is
// retryable too: callers check their own context before classifying.
// Error is safe for concurrent use.
func Error(err error) verdict.Verdict {
	if err == nil {
		return verdict.OK
	}
	var pce *ProxyConnectError
	var pe *ProxyError
	var denied *TargetDeniedError
	if errors.As(err, &pe) {
		return verdict.ProxyFailure // a check of the proxy found it at fault
	}
	if errors.As(err, &denied) {
		return verdict.Forbidden
	}
	if errors.As(err, &pce) {
		return connectAnswer(pce.StatusCode)
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "proxyconnect" {
		return verdict.ProxyFailure
	}
	if code := connectRefusal(err); code != 0 {
		return connectAnswer(code)
	}
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		// The exit's own source address cannot be used (a bind: address
		// not, or no longer, on this machine; its ports all taken): the
		// exit's failure, not the URL's.
		return verdict.ProxyFailure
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return verdict.Fatal
		}
		return verdict.Retryable
	}
	if CertificateProblem(err) != "" || CorruptBody(err) {
		// The server's certificate, or its compressed body, is what it
		// is: asked again it is the same (a self-signed certificate was
		// tried six times over 12 s and called a transport error).
		return verdict.Fatal
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return verdict.Retryable
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return verdict.Retryable
	}
	return verdict.Retryable
}

// MalformedResponse reports whether err is net/http refusing the server's
// response head (textproto.ProtocolError).
func MalformedResponse(err error) bool { return errors.As(err, new(textproto.ProtocolError)) }

// RefusedHead names, in a few stable words, a response head net/http
// refuses with an untyped error (read by its stable leading words: a reply
// that is not HTTP, a Content-Length given twice or not a number, a head
// over the size limit), or "" when err is none. Each was "transport error"
// in an abandon reason.
func RefusedHead(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		msg := e.Error()
		for _, r := range untypedHeads {
			if strings.HasPrefix(msg, r.prefix) {
				return r.says
			}
		}
	}
	return ""
}

// untypedHeads are how net/http's untyped refusals of a response head
// begin (net/http/response.go, transfer.go, transport.go), and what each
// says.
var untypedHeads = []struct{ prefix, says string }{
	{"malformed HTTP ", "malformed response head (not HTTP)"},
	{"http: message cannot contain multiple Content-Length headers", "malformed response head (Content-Length given twice)"},
	{"bad Content-Length", "malformed response head (a Content-Length that is not a number)"},
	{"net/http: server response headers exceeded", "response head too large"},
}

// CertificateProblem names, in a few stable words, why the server's TLS
// certificate was refused, or "" when err is no such refusal.
func CertificateProblem(err error) string {
	var unknown x509.UnknownAuthorityError
	var name x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknown):
		return "tls certificate of an unknown authority"
	case errors.As(err, &name):
		return "tls certificate for another name"
	case errors.As(err, &invalid):
		if invalid.Reason == x509.Expired {
			return "tls certificate expired or not yet valid"
		}
		return "tls certificate invalid"
	case errors.As(err, &verify):
		return "tls certificate refused"
	}
	return ""
}

// CorruptBody reports whether err is a compressed body that does not
// decompress (Content-Encoding: gzip over a plain body, a bad checksum).
func CorruptBody(err error) bool {
	var flateErr flate.CorruptInputError
	return errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.As(err, &flateErr)
}

// unreachableTarget reports whether a proxy's answer to CONNECT says that
// the proxy could not reach the target (tinyproxy's 500 "Unable to
// connect", a 502 or a 504; a 503 from squid) rather than that the proxy
// refused the client (403, 407): the proxy works, and the target is the
// URL's problem, retried like any connection the target refused. Read as
// the exit failing, one HTTPS link to a dead site quarantined every exit
// of the pool, for every host, for half a minute.
func unreachableTarget(code int) bool {
	switch code {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// connectAnswer is the verdict on a proxy's non-200 answer to CONNECT.
func connectAnswer(code int) verdict.Verdict {
	if unreachableTarget(code) {
		return verdict.Retryable
	}
	return verdict.ProxyFailure
}

// connectRefusal recognises net/http's untyped CONNECT refusal: the
// innermost error's text is exactly a standard 4xx/5xx reason phrase. It
// returns that status, or 0.
func connectRefusal(err error) int {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	msg := err.Error()
	for code := 400; code < 600; code++ {
		if t := http.StatusText(code); t != "" && t == msg {
			return code
		}
	}
	return 0
}
