package rendezvous

import (
	"fmt"
	"slices"
	"testing"
)

func exits(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("exit-%02d", i))
	}
	return out
}

// owners returns each exit's owner by Share.
func owners(all, members []string) map[string]string {
	o := map[string]string{}
	for _, m := range members {
		for _, e := range Share(all, members, m) {
			if w, ok := o[e]; ok {
				panic(fmt.Sprintf("exit %s shared by %s and %s", e, w, m))
			}
			o[e] = m
		}
	}
	return o
}

func workers(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// TestShare: every exit goes to exactly one worker, the first member's (the
// leader's) share is the fair one rounded up, or three exits while every
// other member can still hold one, the others' the fair share of the rest or
// one less, and a join moves few exits: over many pools and fleets, on
// average at most 1.5 times the newcomer's share (plain rendezvous hashing
// moves exactly that share, but leaves workers idle: 6 exits over 3 workers
// left one with none in a quarter of the runs).
func TestShare(t *testing.T) {
	moved, taken := 0, 0
	for _, ne := range []int{2, 6, 10, 20, 50} {
		for _, nw := range []int{1, 2, 3, 5, 8, 12} {
			for seed := range 8 {
				all := exits(ne)
				members := workers(fmt.Sprintf("w%d-", seed), nw)
				o := owners(all, members)
				if len(o) != ne {
					t.Fatalf("%d exits, %d workers: %d owned", ne, nw, len(o))
				}
				lead := max((ne+nw-1)/nw, min(3, ne-(nw-1)))
				if n := len(Share(all, members, members[0])); n != lead {
					t.Fatalf("%d exits, %d workers: the first, the leader, owns %d, want the share rounded up or 3 while the others can hold one each, %d", ne, nw, n, lead)
				}
				if nw > 1 {
					rest := ne - lead
					for _, m := range members[1:] {
						n := len(Share(all, members, m))
						if n != rest/(nw-1) && n != rest/(nw-1)+1 {
							t.Fatalf("%d exits, %d workers: %s owns %d, want %d or %d (the leader's %d taken)", ne, nw, m, n, rest/(nw-1), rest/(nw-1)+1, lead)
						}
					}
				}
				more := append(slices.Clone(members), fmt.Sprintf("w%d-new", seed))
				after := owners(all, more)
				for e, w := range after {
					if w != o[e] {
						moved++
						if w == more[nw] {
							taken++
						}
					}
				}
			}
		}
	}
	t.Logf("a join moved %d exits, %d of them to the newcomer", moved, taken)
	if float64(moved) > 1.5*float64(taken) {
		t.Fatalf("a join moved %d exits, %d of them to the newcomer: want at most 1.5 times", moved, taken)
	}
}

// TestShareEven: without a leader every exit goes to exactly one member
// and the shares differ by one exit at most, the first member's included
// (Share gave it three of four exits beside a second member).
func TestShareEven(t *testing.T) {
	for n := 1; n <= 24; n++ {
		for k := 1; k <= 10; k++ {
			all, members := exits(n), workers(fmt.Sprintf("g%d-%d-", n, k), k)
			seen := map[string]int{}
			lo, hi := n, 0
			for _, m := range members {
				own := ShareEven(all, members, m)
				lo, hi = min(lo, len(own)), max(hi, len(own))
				for _, e := range own {
					seen[e]++
				}
			}
			if len(seen) != n {
				t.Fatalf("%d exits, %d members: %d exits owned, want all", n, k, len(seen))
			}
			for e, c := range seen {
				if c != 1 {
					t.Fatalf("%d exits, %d members: %s owned %d times", n, k, e, c)
				}
			}
			if hi-lo > 1 {
				t.Errorf("%d exits, %d members: shares from %d to %d, want within one", n, k, lo, hi)
			}
		}
	}
	if a, b := len(ShareEven(exits(4), []string{"gA", "gB"}, "gA")), len(Share(exits(4), []string{"gA", "gB"}, "gA")); a != 2 || b != 3 {
		t.Errorf("4 exits, 2 members: the first holds %d even, %d with a leader; want 2 and 3", a, b)
	}
}
