package run

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/exitgate/exitgate/sim/server"
	"github.com/exitgate/exitgate/sim/strategy"
)

// exitgate through 4 loopback exits (127.0.0.11-14, real sockets) against
// a per-IP token bucket site: it gets more than one exit's worth of
// successes (so it really spreads over distinct source addresses) and stays
// polite. Bounded: 8 seconds at most.
func TestRealSocketsExitgate(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("binding 127.0.0.x source addresses without setup needs Linux")
	}
	sc, _ := server.ScenarioByName("per-ip-token-bucket")
	spec, _ := strategy.ByName(strategy.Exitgate)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := Real(ctx, RealConfig{Scenario: sc, Strategy: spec, Exits: 4, URLs: 60, Duration: 8 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d requests, %d ok, %d 429, %.1f s, done %d", r.Requests, r.Successes, r.Limited, r.SecondsToFinish, r.Done)
	// One exit allows 1 r/s after a burst of 2: over 8 s at most ~10.
	if r.Successes <= 12 {
		t.Errorf("successes = %d, want more than one exit can give (12)", r.Successes)
	}
	if r.Ratio429 > 0.10 {
		t.Errorf("429 ratio = %.3f, want <= 0.10", r.Ratio429)
	}
	if r.Requests == 0 || r.Done+r.Abandoned > r.URLs {
		t.Errorf("requests %d, done %d, abandoned %d of %d URLs: inconsistent", r.Requests, r.Done, r.Abandoned, r.URLs)
	}
}
