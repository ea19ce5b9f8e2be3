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
// remainder, down for the others; the first member's is below); exits are
// placed in an order of their own hashes, which the members do not change.
// Plain rendezvous hashing leaves shares uneven on a small pool (6 exits
// over 3 workers: one worker in four runs owned none, another four);
// bounded, the other members' shares differ by one exit at most. A join still moves mostly the exits the newcomer takes:
// an exit moves between the others only where a share's bound shrank.
//
// The first of members (the caller lists the longest present first: the
// fleet's leader, who searches every host's limit for all) holds a share
// rounded up, and at least leadLanes exits while every other member can
// still hold one. The leader's search passes from a lane that must wait out
// a long Retry-After to another of its own: with one lane (8 workers on 10
// exits) its search stalled there while every other worker's lanes held
// the cautious pace (simulated nginx 30r/m with Retry-After: 60: 43.8% of
// the limit over two minutes, one limiter 87.8%); with two, it stalled
// when both waited (haproxy's 2 per 10 s with Retry-After: 30, its
// explorer and the lane the search passed to each pushed back once: 64.2%,
// one limiter 86.7%, which passes it to a third). The others share the
// rest as above. And with more workers than exits, the leader is never the
// one left without.
func Share(exits, members []string, me string) []string {
	return share(exits, members, me, leadLanes)
}

// ShareEven is Share without a leader: the first member's share is rounded
// up and no more, so every share differs by one exit at most. For members
// that each search their own hosts' limits (gateways, whose clients are
// their own: a leader may send nothing to a host another member's clients
// want).
func ShareEven(exits, members []string, me string) []string {
	return share(exits, members, me, 0)
}

func share(exits, members []string, me string, leadMin int) []string {
	if len(members) == 0 {
		return nil
	}
	n, k := len(exits), len(members)
	lead := max((n+k-1)/k, min(leadMin, n-(k-1)))
	floor, over := 0, 0 // the others: over of them may hold floor+1
	if k > 1 {
		floor, over = (n-lead)/(k-1), (n-lead)%(k-1)
	}
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
			if i == 0 && load[0] >= lead || i > 0 && (load[i] > floor || load[i] == floor && over == 0) {
				continue
			}
			if v := pairHash(e, m); best < 0 || v > bestH || (v == bestH && m < members[best]) {
				best, bestH = i, v
			}
		}
		if load[best]++; best > 0 && load[best] > floor {
			over--
		}
		if members[best] == me {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

// leadLanes is the fewest exits the leader holds where the pool allows
// (Share): its search's lane and two to pass it to.
const leadLanes = 3

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
