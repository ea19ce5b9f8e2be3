package frontier

import (
	"testing"

	"github.com/exitgate/exitgate/internal/deptest"
)

// TestDeps: the standard library, and the IDNA rules Go's own HTTP client
// keys hosts by (internal/hostname: golang.org/x/net/idna and the x/text
// tables it reads).
func TestDeps(t *testing.T) {
	deptest.Only(t, "github.com/exitgate/exitgate/internal/hostname", "golang.org/x/net/idna",
		"golang.org/x/text/transform", "golang.org/x/text/unicode/bidi", "golang.org/x/text/secure/bidirule", "golang.org/x/text/unicode/norm")
}
