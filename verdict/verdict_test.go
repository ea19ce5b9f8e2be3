package verdict

import (
	"testing"

	"github.com/exitgate/exitgate/internal/deptest"
)

func TestParseRoundTrip(t *testing.T) {
	for _, v := range All() {
		got, err := Parse(v.String())
		if err != nil || got != v {
			t.Errorf("Parse(%q) = %v, %v, want %v", v.String(), got, err, v)
		}
	}
	if _, err := Parse("nope"); err == nil {
		t.Errorf("Parse(%q) = nil error, want one", "nope")
	}
}

// The verdict enum is what the limiter speaks; it must stay free of
// dependencies so that the limiter does not pull in net/http.
func TestImports(t *testing.T) {
	deptest.Only(t)
	deptest.NoStd(t, "net", "net/http")
}
