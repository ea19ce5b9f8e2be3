package server

import (
	"testing"

	"github.com/exitgate/exitgate/internal/deptest"
)

// The simulated site must stay independent of the engine it judges.
func TestDeps(t *testing.T) { deptest.Only(t) }
