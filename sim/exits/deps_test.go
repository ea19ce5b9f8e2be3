package exits

import (
	"testing"

	"github.com/exitgate/exitgate/internal/deptest"
)

// The simulated pool must stay independent of the engine it judges.
func TestDeps(t *testing.T) { deptest.Only(t) }
