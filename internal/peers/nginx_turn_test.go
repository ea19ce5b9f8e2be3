package peers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/internal/peers"
	"github.com/exitgate/exitgate/internal/peertest"
)

// TestNginxTurns turns a running nginx against its clients and back,
// through two exits: a ban wave for one address, a worse reputation for
// one, a lowered limit and a lockout for all.
func TestNginxTurns(t *testing.T) {
	n := peertest.StartNginx(t, peertest.NginxConfig{Rate: "1000r/s", Burst: 100,
		Block: []string{"127.0.0.11"}, SlowAddrs: []string{"127.0.0.11"}, SlowRate: "1r/m", HalfRate: "1r/m"})
	bad, good := viaProxy(t, "127.0.0.11"), viaProxy(t, "127.0.0.12")
	codes := func(c *http.Client, k int) string {
		var out []string
		for range k {
			code, _, body := get(t, c, n.URL()+"/ip")
			if code == 403 && !strings.Contains(body, "Attention Required! | Cloudflare") {
				t.Errorf("403 without the block page: %q", body)
			}
			out = append(out, fmt.Sprint(code))
		}
		return strings.Join(out, " ")
	}
	turn := func(name string, on bool) {
		if err := n.Turn(name, on); err != nil {
			t.Fatal(err)
		}
	}
	// The burst of the turned zones (1 per minute, burst 100) lets 101
	// requests of an address through at once, then one a minute.
	for _, c := range []struct {
		turn      string
		bad, good string
	}{
		{peers.TurnBan, "403 403", "200 200"},
		{peers.TurnLockout, "429 429", "429 429"},
	} {
		if got := codes(bad, 2) + " / " + codes(good, 2); got != "200 200 / 200 200" {
			t.Fatalf("before %s: %s, want all 200", c.turn, got)
		}
		turn(c.turn, true)
		if got, want := codes(bad, 2)+" / "+codes(good, 2), c.bad+" / "+c.good; got != want {
			t.Errorf("%s on: bad / good exit = %s, want %s", c.turn, got, want)
		}
		turn(c.turn, false)
	}
	start := time.Now()
	turn(peers.TurnSlow, true)
	if got := codes(bad, 102); !strings.HasSuffix(got, "200 429") || strings.Count(got, "429") != 1 {
		t.Errorf("slow on: the slow exit got %s, want 101 passed and then 429", got[max(0, len(got)-40):])
	}
	if got := codes(good, 3); got != "200 200 200" {
		t.Errorf("slow on: the other exit got %s, want 200s", got)
	}
	turn(peers.TurnSlow, false)
	turn(peers.TurnHalf, true)
	if got := codes(good, 102); !strings.HasSuffix(got, "200 429") {
		t.Errorf("half on: %s, want the lower limit", got[max(0, len(got)-40):])
	}
	turn(peers.TurnHalf, false)
	if got := codes(good, 2); got != "200 200" {
		t.Errorf("every turn off: %s, want 200s", got)
	}
	if err := n.Turn("nonsense", true); err == nil {
		t.Errorf("an unknown turn was accepted")
	}
	t.Logf("turns checked in %v", time.Since(start))
}
