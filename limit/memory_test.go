package limit_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
)

// TestIdleLaneBytes measures what one idle lane costs (lane, map entry, heap
// slot) and holds it to the 192-byte budget.
func TestIdleLaneBytes(t *testing.T) {
	const n = 20_000
	exits := make([]limit.Exit, n)
	for i := range exits {
		exits[i].ID = fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255)
	}
	l, err := limit.New(limit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	l.SetExits(exits)
	now := time.Unix(1_800_000_000, 0)
	// Warm one host so the per-host fixed cost is not counted.
	tk, _, _, _ := l.Acquire("warm", limit.Want{}, now)
	l.Done(tk, limit.Outcome{}, now)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		tk, ok, _, err := l.Acquire("h", limit.Want{}, now)
		if err != nil || !ok {
			t.Fatalf("Acquire: ok=%v err=%v", ok, err)
		}
		l.Done(tk, limit.Outcome{}, now)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%.0f bytes per idle lane", per)
	if per > 192 {
		t.Errorf("%.0f bytes per idle lane, want <= 192", per)
	}
	runtime.KeepAlive(l)
}
