// Package rendezvous splits a set of items (a proxy pool's exits) among
// members (the workers of a crawl) by rendezvous hashing with bounded
// loads. Every member computes the same split from the same two lists,
// with no coordination.
package rendezvous

import (
	"hash/fnv"
	"slices"
	"strings"
)

// Share returns the exits that worker me owns among members: rendezvous
// hashing with bounded loads. Each exit goes to the member with the highest
// hash of the pair that still has room, a member holding at most
// its fair share (exits/members, rounded up for as many members as the
// remainder, down for the others); exits are placed in an order of their
// own hashes, which the members do not change. Plain rendezvous hashing
// leaves shares uneven on a small pool (6 exits over 3 workers: one worker
// in four runs owned none, another four); bounded, shares differ by one
// exit at most. A join still moves mostly the exits the newcomer takes:
// an exit moves between the others only where a share's bound shrank.
//
// The first of members (the caller lists the longest present first: the
// fleet's leader, who searches every host's limit for all) holds a share
// rounded up. With fewer than two exits a worker (8 workers on 10 exits),
// the leader then has a second lane to pass its search to while the first
// waits out a long Retry-After; with one lane its search stalled there,
// and every other worker's lanes held the cautious pace meanwhile
// (simulated nginx 30r/m with Retry-After: 60, 8 workers on 10 exits:
// 43.8% of the limit over two minutes, one limiter 87.8%). And with more
// workers than exits, the leader is never the one left without.
func Share(exits, members []string, me string) []string {
	if len(members) == 0 {
		return nil
	}
	floor, over := len(exits)/len(members), len(exits)%len(members) // over members may hold floor+1
	order := slices.Clone(exits)
	slices.SortFunc(order, func(a, b string) int {
		if c := cmpU64(pairHash(a, ""), pairHash(b, "")); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	load := make([]int, len(members))
	var out []string
	for _, e := range order {
		best, bestH := -1, uint64(0)
		for i, m := range members {
			if load[i] > floor || (load[i] == floor && over == 0) {
				continue
			}
			if i > 0 && load[i] == floor && over == 1 && load[0] <= floor {
				continue // the last exit over the floor is the first member's
			}
			if v := pairHash(e, m); best < 0 || v > bestH || (v == bestH && m < members[best]) {
				best, bestH = i, v
			}
		}
		if load[best]++; load[best] > floor {
			over--
		}
		if members[best] == me {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

// pairHash is the rendezvous score of exit e on member m.
func pairHash(e, m string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(e))
	h.Write([]byte{0})
	h.Write([]byte(m))
	return mix(h.Sum64())
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// mix is splitmix64's finalizer: FNV alone spreads names that differ in
// their last byte badly over the high bits.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
