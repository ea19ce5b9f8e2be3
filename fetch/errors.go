package fetch

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/verdict"
)

// ErrorClass names a transport error in a few stable words, for abandon
// reasons, the gateway's answers and reports. It inspects typed errors,
// never message text.
func ErrorClass(err error) string {
	var dnsErr *net.DNSError
	var pe *classify.ProxyError
	switch {
	case errors.As(err, &pe):
		return "proxy " + pe.Why
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.As(err, &dnsErr):
		return "dns failure"
	case classify.MalformedResponse(err):
		return "malformed response head (a control character in a header, a line without a colon, or a head cut short)"
	case classify.RefusedHead(err) != "":
		return classify.RefusedHead(err)
	case classify.CertificateProblem(err) != "":
		return classify.CertificateProblem(err)
	case classify.CorruptBody(err):
		return "corrupt compressed body"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated response" // the connection closed inside a response (its header or body)
	case errors.Is(err, io.EOF):
		return "closed without a response" // the connection closed before a response began
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case classify.Error(err) == verdict.ProxyFailure:
		return "proxy failure" // the gateway's answer says whose failure; the crawl's verdict does
	}
	return "transport error"
}
