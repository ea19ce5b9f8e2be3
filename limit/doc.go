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
// other lanes (the followers) pace at what it passed (explore.go):
//
//   - ramp: from Config.FirstGuess the explorer doubles its pace per run of
//     successes; the followers trail a step behind.
//   - refine: the first 429 came at x1. Its reading (what succeeded over the
//     time taken plus the time to recover: Retry-After, or a measured
//     retry) gives a careful estimate; the explorer starts again from what
//     the ramp passed in steps of a fifth, and a second 429 places the limit
//     within a step. A long recovery reads as a window or a penalty: the
//     search is careful from there.
//   - bisect: the explorer tries the middle of what it passed and where it
//     was pushed back until the two are within 4%; the followers take what
//     it passes, at Settle under it.
//   - settled: every lane paces at what was passed. After ProbeEvery and a
//     few hundred successes without a 429, another lane probes above it, in
//     case the limit was raised; a failed probe costs one 429 and doubles
//     the wait for the next.
//
// A pace passes when it is sustained without a 429 for a proof span: quick
// (a few intervals) until the server shows it lets bursts through, careful
// (twenty intervals, at least one recovery) after. Followers pushed back at
// the pace they hold, several at once, mean a pass was a burst or the limit
// moved down: they all fall back at once to the careful estimate (or to
// what the explorer counted between its 429s: a lower bound whatever the
// burst), and the search goes on carefully. One follower pushed back alone
// has a smaller budget of its own (a reputation tier): it searches its own
// while the others go on (follow.go). A lane whose pace drops is held back
// by what it sent ahead of the new pace since its last 429, so a slowdown
// never draws the 429 it is meant to avoid.
//
// Declared quotas (RateLimit-Policy, X-RateLimit-Limit with a window, or
// with the window inferred from how the resets move) set every lane's pace
// at Settle under the declared rate, less half a request per window on a
// sliding-window counter; what remains is a hard stop, never a pace
// (quota.go).
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
