package backoff

import (
	"testing"

	"github.com/exitgate/exitgate/internal/deptest"
)

func TestDeps(t *testing.T) { deptest.Only(t) }
