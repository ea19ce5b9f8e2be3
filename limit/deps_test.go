package limit

import (
	"testing"

	"github.com/exitgate/exitgate/internal/deptest"
)

// The limiter hears plain numbers: it must not parse headers, know about
// proxies, frontiers or HTTP engines.
func TestDeps(t *testing.T) {
	deptest.Only(t, "github.com/exitgate/exitgate/verdict", "github.com/exitgate/exitgate/backoff",
		"github.com/exitgate/exitgate/rlheader", "github.com/dunglas/httpsfv")
}
