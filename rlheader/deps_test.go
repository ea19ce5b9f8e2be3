package rlheader

import (
	"testing"

	"github.com/exitgate/exitgate/internal/deptest"
)

// Header parsing is pure: the standard library and a Structured Fields parser.
func TestDeps(t *testing.T) { deptest.Only(t, "github.com/dunglas/httpsfv") }
