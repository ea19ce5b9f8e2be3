package calibrate

import (
	"os/exec"
	"strings"
	"testing"
)

// The simulator is held to the real limiters, not built on them: the real
// side (internal/peers, internal/peerbench) imports calibrate, never the
// other way round.
func TestDepsPointOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, "/internal/peer") {
			t.Errorf("sim/calibrate depends on %s", p)
		}
	}
}
