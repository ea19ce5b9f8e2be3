package fetch

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"

	"github.com/exitgate/exitgate/classify"
)

// errorClass names a transport error in a few stable words, for abandon
// reasons and reports. It inspects typed errors, never message text.
func errorClass(err error) string {
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
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "transport error"
}
