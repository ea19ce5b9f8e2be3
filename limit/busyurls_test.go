package limit

import "testing"

// TestBusyURLs: once a 503 was read as load, a URL answered 503 before
// answering it again four times as often as the others is a flaky page,
// not load (busyURLs); load sheds URLs alike, and reads nothing. Unknown
// URLs (hash 0) count for neither.
func TestBusyURLs(t *testing.T) {
	r := testRules(t, Config{})
	for _, tc := range []struct {
		name      string
		freshBusy int // 503s among the 40 first answers
		again     []bool
		noise     bool
	}{
		{"a flaky page", 2, []bool{true, true, true, false, false, true}, true},
		{"load", 10, []bool{true, false, true, false, false, false}, false},
		{"too few again", 2, []bool{true, true, true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hostWith(r, "e")
			h.busyTestStart(sec(0))
			busy := map[uint64]bool{}
			for i := range 40 {
				u := uint64(i + 1)
				b := i%(40/max(tc.freshBusy, 1)) == 0 && len(busy) < tc.freshBusy
				if b {
					busy[u] = true
				}
				r.urlAnswer(h, u, b, sec(float64(i)/10))
				r.urlAnswer(h, 0, true, sec(float64(i)/10)) // unknown: counts for nothing
			}
			var again []uint64
			for u := range busy {
				again = append(again, u)
			}
			for i, b := range tc.again {
				r.urlAnswer(h, again[i%len(again)], b, sec(5+float64(i)))
			}
			if got := h.busyNoise > 0; got != tc.noise {
				t.Errorf("read as the pages' own: %v (again %d of %d, fresh %d of %d), want %v", got, h.busyURLs.again503, h.busyURLs.againN, h.busyURLs.fresh503, h.busyURLs.freshN, tc.noise)
			}
		})
	}
}
