package gateway

import (
	"os/exec"
	"strings"
	"testing"
)

// The gateway is a library over the public packages: it must not pull in
// the commands, the simulator, the test peers or a frontier store (a
// gateway keeps no frontier).
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/exitgate/exitgate/internal/hostname" {
			continue // how a host goes on the wire (fetch's host keys), no peer
		}
		for _, bad := range []string{
			"github.com/exitgate/exitgate/cmd/", "github.com/exitgate/exitgate/sim/",
			"github.com/exitgate/exitgate/internal/", "github.com/exitgate/exitgate/frontier/",
			"github.com/exitgate/exitgate/report", "modernc.org/", "github.com/redis/",
		} {
			if strings.HasPrefix(p, bad) {
				t.Errorf("gateway depends on %s", p)
			}
		}
	}
}
