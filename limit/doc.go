// Package limit is exitgate's limiter: it decides when, and through which
// exit, each request to a host may go, and learns each (host, exit) lane's
// capacity from what the server answers.
//
// # Levels
//
// A request goes only if every level allows it: the Limiter's total in-flight
// cap; the host's pause (busy verdicts, host-scoped Retry-After), politeness
// ceiling (Config.HostCeiling, paced evenly), AIMD rate (only while the host
// limits host-wide) and concurrency cap; the lane's GCRA pacing, cooldown,
// ban and declared quota; the exit's health, quarantine and provider limits.
// Acquire takes what it needs from each level in one store operation, and
// Done and Cancel give back exactly what Acquire took, once.
//
// # Exit selection
//
// Each host keeps a min-heap of its lanes keyed by the instant each may next
// go, plus a lazy cursor over pool exits it has no lane for yet. An unpinned
// request takes a never-used exit first (idle longest), else the heap's top:
// the lane that has been ready longest, so load spreads and no exit is
// starved or hot. Blocked exits (quarantine, provider limits) sink in the
// heap until they are ready; banned lanes sit there until their ban ends.
// A decision examines at most a few dozen entries: O(log n) in the pool size.
// A pinned request waits for its exit and never switches.
//
// # Learning (the Adaptive policy)
//
// The article's rules (halve on 429 with a floor, +25% after 100 successes,
// never above the first guess) saw-tooth below the real limit and never find
// a limit above the first guess: in this package's simulator they use 10-81%
// of a per-IP server's capacity. The adaptive rules differ in four ways:
//
//   - Pace evenly. A lane sends at an even spacing (GCRA, burst 1), not a
//     full bucket at once: pacing at exactly the limit draws 429s from
//     jitter, even spacing a few percent under does not.
//   - Bracket the limit. The rate that drew a 429 is an upper bound (hi). A
//     lower bound (lo) comes from counting: the server's bucket was empty at
//     one 429 and is empty again at the next, so it refilled at least the
//     successes in between, whatever its burst. This is the rate measured
//     over a window, immune to an initial burst that makes a single 429 or a
//     single run of successes misleading.
//   - Settle, don't saw-tooth. After a 429 the lane goes to
//     min(Settle*hi, max(Settle*lo, Decrease*rate)); after each saturated run
//     of successes it closes half the gap to Settle*hi (at least Creep). It
//     converges to ~97% of the lowest rate that drew a 429 and stays there;
//     after Reprobe without a 429 the ceiling may drift up by Creep.
//   - Probe up. While nothing has pushed back, each saturated run of
//     ProbeRun successes multiplies the rate by ProbeUp (slow start: x1.5 per
//     5), bounded by MaxLaneRate and the host ceiling. Only runs where the
//     lane actually sent at its pace count: an idle lane proves nothing.
//     One lane per host leads: the others go no higher than the pace some
//     lane has sustained, so a per-IP limit costs one overshoot per host,
//     not one per exit.
//   - Share. A server that limits per IP usually gives each IP the same
//     budget: the ceilings lanes find are averaged into a host prior, a new
//     lane starts at its settle point, and a lane still probing adopts it.
//     When two lanes draw 429s at a like pace within ScopeSpan (one alone
//     may be timing noise; one far under the prior is that IP's own), the
//     lanes as fast slow to the settle point under it at once instead of
//     each drawing its own.
//   - Re-probe. Limits are raised too. After ProbeEvery and 400 successes
//     without a 429 on the host, one lane slow-starts above its ceiling. A
//     429 within two steps ends it (one 429). Further up the lane holds
//     between its old ceiling and the rate that drew the 429 and counts: the
//     successes since that 429 bound the new limit from below whatever the
//     burst, and the host's other lanes follow that bound at once. Each
//     failed probe doubles the quiet the next waits for. Followers pushed
//     back at that pace before any 429 of their own show the limit is
//     shared (one lane's measure was its share): scope evidence.
//
// When the host is rated (a host-scoped limit, or 503 overload), its rate is
// AIMD with the same counting: between two pushback episodes the server
// refilled at least the successes in between, a cut restarts no lower than
// Settle times that floor, and above it the rate climbs at a fifth of the
// speed.
//
// 429s from requests sent before a lane's episode began count once. The lane
// stops at the first 429 and rests for Retry-After, else for full-jitter
// backoff but at least two intervals at its new rate (servers that charge
// rejected requests stay limited while a client keeps sending). Declared
// quotas (limit per window) set the rate exactly; remaining and reset pace
// the rest of the window and are never exceeded, counting requests still in
// flight.
//
// # Scope
//
// When lanes that were under their learned capacity draw 429s from
// ScopeLanes distinct exits within ScopeSpan, the server limits host-wide
// (site or credential): control moves to the host, whose AIMD rate starts at
// half the measured send rate, and lanes stop learning from those 429s.
// A Scope hint from headers decides at once. Snapshot shows the scope. A 503
// overload also puts the host under its AIMD rate. Its additive increase
// stops at Settle times the rate that drew the last pushback, so the host
// rate settles under a site-wide limit instead of saw-toothing.
//
// # State
//
// The math is in pure functions over HostState and ExitState (AcquireHost,
// ReleaseHost, TakeExit, ReleaseExit); a Store runs them atomically per host
// and per exit. memstore is the in-memory Store; limittest is the conformance
// suite every Store must pass.
package limit
