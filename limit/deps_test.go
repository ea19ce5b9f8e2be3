package limit

import (
	"testing"

	"github.com/exitgate/exitgate/internal/deptest"
)

// The limiter hears plain numbers: it must not parse headers, know about
// proxies, frontiers or HTTP engines, nor pull in net/http.
func TestDeps(t *testing.T) {
	deptest.Only(t, "github.com/exitgate/exitgate/verdict", "github.com/exitgate/exitgate/backoff")
	deptest.NoStd(t, "net", "net/http")
}
