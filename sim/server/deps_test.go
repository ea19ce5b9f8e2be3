package server

import (
	"testing"

	"github.com/exitgate/exitgate/internal/deptest"
)

// The simulated site must stay independent of the engine it judges.
// The one exception is golang.org/x/time/rate: the XRate twin is that
// limiter itself, not a copy.
func TestDeps(t *testing.T) { deptest.Only(t, "golang.org/x/time/rate") }
