// Package limit is exitgate's limiter: it decides when, and through which
// exit, each request to a host may go, and learns each (host, exit) lane's
// budget from what the server answers.
//
// # API
//
// New(Config) returns a Limiter; SetExits installs the pool. Acquire asks,
// at an explicit instant, whether a request to a host may go now and on
// which exit (a Ticket), or when to ask again; Wait blocks for one. Done
// reports what the request's answer said (an Outcome: a verdict and the
// numbers of its rate-limit headers); Cancel gives back a ticket whose
// request was never sent. Snapshot shows every host, lane and exit, with
// each host's latest learning decisions (Change); Learned and Restore carry
// what was learned across a restart.
//
// # Levels
//
// A request goes only if every level allows it: the Limiter's total
// in-flight cap; the host's pause (busy verdicts, host-scoped Retry-After),
// politeness ceiling (Config.HostCeiling, paced evenly), own rate (only while
// the host limits site-wide or sheds load) and concurrency cap; the lane's
// even pacing, cooldown, ban and declared quota; the exit's health,
// quarantine and provider limits. Acquire takes what it needs from each
// level at once, and Done and Cancel give back exactly what it took, once.
//
// # Exit selection
//
// Each host keeps a min-heap of its lanes keyed by the instant each may
// next go, plus a lazy cursor over pool exits it has no lane for yet. An
// unpinned request takes a never-used exit first (idle longest), else the
// heap's top: the lane that has been ready longest. Blocked exits sink in
// the heap until they are ready. A decision examines at most a few dozen
// entries: O(log n) in the pool size. A pinned request waits for its exit.
//
// # Learning
//
// Servers limit what they can see: behind a pool, the exit's IP, and a
// server that limits per IP gives every IP the same budget, as a rule. So
// one lane per host, the explorer, searches for one lane's budget, and the
// other lanes (the followers) pace at what it passed (explore.go; the first
// 429's reading in firstread.go, the followers' pace in followers.go, its
// counts between 429s in count.go, re-probes and hand-offs in reprobe.go):
//
//   - ramp: from Settle under Config.FirstGuess (so that its doublings sit
//     just under the round numbers limits are written in) the explorer
//     doubles its pace per run of successes; the followers trail two steps
//     behind, one behind what it passed.
//   - refine: the first 429 came at x1. Its reading (what succeeded over the
//     time taken plus the time to recover: Retry-After, or a measured
//     retry) gives a careful estimate; the explorer starts again from what
//     the ramp passed in steps of a fifth, and a second 429 places the limit
//     within a step. A long recovery reads as a window or a penalty: the
//     search is careful from there, unless the 429 came at the first
//     request of a faster pace after a handful of successes: then the
//     ramp's pace, held for two requests more than the first run fitted in,
//     tells a pace limit with a fixed Retry-After from a tiny window.
//     A Retry-After beyond a minute is a penalty or a URL's own wait and
//     says nothing of the window. When the time the first run took plus
//     the recovery adds up to a usual window (10 s, a minute, an hour), or
//     a quarter over (a fixed Retry-After counts from the 429), or to half
//     a minute within a second, the first run ran that window's quota
//     out: the host settles at once at that
//     quota over the window (6 in 7 s, then Retry-After: 60, is 6 per
//     minute), with no careful span per step and no 429 per failed one.
//     A recovery measured by a retry that passed after one pushed back
//     lies between the two: the shortest common window in there is read
//     the same way (a third of a minute only where the retries tried it:
//     after a first run of ten or more, one goes a third of a minute from
//     the run's start, before the half minute's; past the longest usual
//     window they go a minute apart, and the usual window between two of
//     them, 2 or 5 minutes, is read). Where a shorter usual window was not
//     ruled out, the explorer then tries its quota over the span a quota's
//     try takes: passed, that window is read and the next shorter tried;
//     pushed back, the host settles on the longer one again. A quota read
//     between two retries is proven first: the followers go half way
//     until the explorer passes two more at it (a bucket's refill reads
//     the same, nginx's burst and its rate of 10 a minute as 12 per 10
//     s). Pushed back in the proof, the explorer tries the ramp's first
//     pace, which a moving window or sliding log frees the first run's
//     requests at least as fast as: passed, a window longer than read,
//     searched from there; pushed back again, a bucket, searched between
//     the bounds its refills since the 429 set, its burst taken off the
//     followers' series. While the
//     explorer waits to retry its first 429, a follower pushed back
//     without a Retry-After waits for it, and goes once it recovers. Pushed back at the first pace's second request, a
//     pace limit with no burst: its Retry-After, if any, is only the
//     least each retry waits (a retry it would hold past the schedule goes
//     on another lane, at the same spacing from that lane's last
//     request), and from the spacing that passed the search steps from
//     one round limit to the next, settling at its first failed step.
//     After a burst, a first retry that passed quickly bounds a bucket's
//     rate from below: one request per the recovery. A follower pushed
//     back while the recovery is measured reads nothing, and every
//     follower takes the cautious reading (the run's count is no window
//     it may spend). Searching a bucket, a retry pushed back later than a
//     bucket of the counted rate refills three requests reads the last
//     run as a window's first run, measured and read again.
//   - bisect: the explorer tries the middle of what it passed and where it
//     was pushed back until the two are within 4%; the followers take what
//     it passes, at Settle under it. A pace Settle under a round limit (30
//     per minute, 1 per 10 s) that passed, with a pushback within a refine
//     step above, settles the search at once (round.go); a step above such
//     a pace waits until the host has a hundred successes per 429.
//   - settled: every lane paces at Settle under what was passed (at what
//     was passed, if Settle under the pushback, where no burst or window
//     was seen: a quick run's pass is then exact). After ProbeEvery and a
//     few hundred successes without a 429, another lane probes above it, in
//     case the limit was raised; a failed probe costs one 429 and doubles
//     the wait for the next, and a probe is tried only while the host has
//     a 429 to spend (it starts with a few, earns one per hundred
//     successes, pays one per 429). A ceiling older than ProbeEvery near
//     what passed is tried again before the search settles under it.
//
// An explorer told to wait longer than a few seconds (a Retry-After of 30 s
// or a minute, often a fixed value unrelated to the limit) hands the search
// to another lane at the pace it had reached, instead of stalling it: one
// sent at its pace and not waiting out a cooldown of its own. A lane pushed
// back at more than twice the pace it is slowed to waits past a long
// Retry-After by an interval at its new pace (a quarter more at most): the
// server's window still counts its burst, and a request at the very end of
// a fixed Retry-After is pushed back again.
//
// A pace passes when it is sustained without a 429 for a proof span: quick
// (a few intervals) until the server shows it lets bursts through, careful
// (twenty intervals, at least one recovery) after a window or a burst
// that fooled the followers. A burst the explorer measured (how many
// successes a pace above the limit had before its 429) discounts what a
// run proves: n successes evenly paced at p prove p*(1-extra/(n-1)), and the
// run goes on until that is half way from what passed to p. Followers pushed back at
// the pace they hold, several at once, mean a pass was a burst or the limit
// moved down: they all fall back at once to the careful estimate (or to
// what the explorer counted between its 429s: a lower bound whatever the
// burst), and the search goes on carefully; except the first such fall a
// moment after the host settled, with no burst ever seen, which is the
// path's jitter: one more Settle margin, still settled; a lane pushed back
// again at its first request since its last 429, sent slower than that
// one, before a counted window could end, whose window still holds what it
// sent before: nothing is read, and it waits the rest of the window; and the first 429s
// after 10 s or more without one (20 successes per lane in it), one per
// lane, which are a hiccup (a
// server or proxy stalling a moment, then passing requests on back to
// back): the pace holds. Lanes pushed back together after long runs on a
// host that read no window, and pushed back again a second or more on with
// nothing between, have spent a window's quota (a minute's limit under a
// second's, bare): the pace is not cut; they wait while the lane with the
// longest run retries alone, ever more sparsely, and its recovery reads the
// quota over the common window it fits (wall.go); through one lane, once it
// is pushed back so twice. A settled host that falls starts its search a
// cut under the pace it held. One follower pushed back alone
// has a smaller budget of its own (a reputation tier): it searches its own
// while the others go on (follow.go). A lane whose pace drops is held back
// by what it sent ahead of the new pace since its last 429, so a slowdown
// never draws the 429 it is meant to avoid; and a lane whose answer came
// later than its usual (a running median) by more than its pace's slop goes
// no sooner than one interval after the request may have reached the server
// (a limiter that times arrivals with no burst rejects the next one sent on
// schedule).
//
// Declared quotas (RateLimit-Policy, X-RateLimit-Limit with a window, or
// with the window inferred from how the resets move) set every lane's pace
// at Settle under the declared rate, less half a request per window on a
// sliding-window counter (not on a window whose resets move with each hit:
// a moving one), or exactly at it on a window seen to be fixed;
// what remains is a hard stop, never a pace (quota.go); on a sliding counter
// or a moving window that stop ends one interval at the declared rate after
// the answer, not at a reset that frees nothing at once. Before any lane of
// the host saw its window roll (fixed, or a sliding counter's, which
// pushes back a lane that spent it at its reset), one lane goes at its
// reset and the others a second or an interval later, or when its answer
// tells the kind. An inferred window is the first usual one (10 s, a minute...)
// at least as long as the longest reset seen, and at most the smallest move
// of a reset. Where the sliding counter's headroom is large (a limit of 4 or
// fewer), one lane goes without it for ten windows first: pushed back, it
// stays; not, it goes (headroom.go).
//
// A Remaining told with no window and no reset (Varnish's vsthrottle sends
// X-RateLimit-Remaining alone; Shopify a bucket's size and level) sets no
// pace, but its fall to 0 is read as the 429 the next request would draw,
// never sent; the first recovery's count brackets a bucket's refill unless
// a window explains it; a run's Remaining at its start and end proves it;
// and a lane told its budget holds more owes no debt (remaining.go).
//
// When lanes that were under their pace are pushed back from ScopeLanes
// distinct exits within ScopeSpan, the server limits site-wide (or per
// credential): control moves to the host's own AIMD rate, which settles
// under the rate that drew the pushback (hostrate.go). A header's scope hint
// decides at once. 503 overload puts the host under its rate too.
//
// The rules a response runs through, and their order, are listed in
// outcome.go; each records what it changed as a Change, logged at debug
// level and kept, the last Config.Changes per host, in Snapshot.
//
// # State
//
// State lives in memory, bounded: lanes and hosts idle for IdleTTL are
// dropped, and an idle lane costs under 192 bytes. Hosts are spread over
// shards with a mutex each; one host's decisions are serialised.
package limit
