package limit

import "time"

// The learning rules' constants, each with the reason for its value. What a
// user may reasonably want to change is in Config instead.

// tolerance is the relative slack of every comparison between two rates
// (float rounding makes a pace computed two ways differ in the last bits):
// a is "at least" b when a >= b*(1-tolerance).
const tolerance = 1e-3

func atLeast(a, b float64) bool { return a >= b*(1-tolerance) }

// Before anything is proven, the lanes that follow the explorer pace at this
// share of the first guess: if the guess is above the server's limit, they
// are not the ones that find out, and they have budget left when they must
// slow down.
const startShare = 0.5

// The explorer's slow start: its pace doubles after a run of rampRun
// successes spanning at least rampSpan at its pace. Doubling reaches 20/s
// from 30/min in about 15 s; a run must last rampSpan so that a burst a
// server allows is not mistaken, within milliseconds, for a rate.
const (
	rampStep = 2.0
	rampRun  = 2
	rampSpan = int64(time.Second)
)

// maxRecovery is how long a limiter is assumed to take to forgive a client
// that stopped, when it does not say (no Retry-After): common windows are a
// second, ten seconds and a minute. It bounds the safe estimate after the
// first 429 until the lane is seen to recover sooner.
const maxRecovery = int64(time.Minute)

// A pace is proven when a lane sustained it for a proof span without a 429:
// at least minSpan, at most maxSpan, otherwise the time the first 429 took
// to come plus the time the lane needed to recover (a window's length, or
// the time to drain a burst). A shorter span lets a burst pass for a rate.
const (
	minSpan = int64(2 * time.Second)
	maxSpan = int64(time.Minute)
)

// After the first 429 the explorer starts again from half its pace in
// refineStep steps, so that a second 429 places the limit within a step;
// then it bisects until what it passed and where it was pushed back are
// within bisectDone (then every lane settles at Settle under what it
// passed: at least 95% of the limit). A first 429 whose recovery took longer than
// windowRecovery intervals at the pace reads as a window (or a penalty),
// and the search is careful from the start.
const (
	refineStep     = 1.2
	bisectDone     = 1.025
	windowRecovery = 4
	minWindow      = int64(2 * time.Second)
	probeStep      = 1.1
)

// preciseCount is how many successes between two 429s of the explorer
// make their count the rate itself: both 429s met an empty budget, so n
// successes in t are at least (n-1)/t and at most (n+1)/t of a bucket's
// rate, within 5% from 40 on (the floor is 95% of the limit), if
// the budget did not overflow meanwhile (count checks the lane's slack
// against the burst known: a small burst, refilled while the lane waited
// or went slower, makes the count lower than the rate).
// nginx 10r/s with a burst of 5 counted 65 in 6.5 s (9.79/s) and the
// bisection went on to 10.9/s, one more 429 for 1% of the limit.
const preciseCount = 40

// A pace passes after quickIntervals intervals without a 429 (at least
// rampSpan), or carefulIntervals (at least the careful span) once the server
// is known to let bursts through: twenty requests over a refill make a pace
// a tenth too high show.
const (
	quickIntervals   = 4
	carefulIntervals = 20
)

// runSaturation is the share of its pace a lane must actually have been sent
// at for a run of successes to prove anything: an idle lane is never pushed
// back and must not climb.
const runSaturation = 0.8

// tierCut multiplies a lane's pace when it alone is pushed back at a pace the
// host's other lanes hold: its IP has a smaller budget (a reputation tier).
// It then climbs back, halving the gap to the settle point under the pace
// that drew the 429 per run.
const tierCut = 0.7

// ownRetry is how long a lane keeps an own ceiling under the host's pace
// before it tries the host's pace again (doubled per retry pushed back, up
// to maxProbeBackoff times): an IP's budget cut for a spell comes back, and
// a lane held under the others for good would lose it; a budget smaller
// for good costs a 429 at 5, 15, 35 minutes and so on.
const ownRetry = int64(5 * time.Minute)

// followCut multiplies the followers' pace when several of them are pushed
// back at the pace the host proved: the limit moved down.
const followCut = 0.7

// burstGap: 429s each within it of the last are one burst (a hiccup's
// came over 2.3 s, up to 1.2 s apart).
const burstGap = int64(3 * time.Second)

// hiccupQuiet is how long a settled host must have gone without a 429 for
// a burst of them, one per lane, to be read as a hiccup, not the limit
// moving: the span in which two lanes pushed back are the limit moving.
const hiccupQuiet = sympathySpan

// hiccupOK is how many successes per lane that quiet must hold.
const hiccupOK = 20

// reprobeSpan is how long a re-probe's first step runs before it passes: a
// burst of 10 at 10/s refilled, spent at a quarter above the rate, lasts 4 s.
const reprobeSpan = int64(8 * time.Second)

// sympathySpan: two lanes pushed back at the followers' pace within it are
// the host's limit moving, not one IP's noise. It equals the scope span by
// default but is its own constant: it answers a different question.
const sympathySpan = int64(10 * time.Second)

// Learning spends 429s: a host starts with learnAllowance of them, earns
// one per earnEvery successes and pays one per 429 drawn. A step that may
// be pushed back is tried only while one is left, so a slow limit (6 per
// minute: 120 requests in two minutes over 10 exits) is not probed into a
// 429 ratio of several percent, and a fast one is not held back.
const (
	learnAllowance = 3
	earnEvery      = 100
)

// minQuota is the fewest successes a first run must have had for its 429
// to be read as a window's quota (quotaKnown): one success and a 429 at the
// second request is as often a pace limit the network's jitter fooled.
const minQuota = 2

// windowTestMax is the most successes a first run may have had for a 429
// at the first request of a faster pace to be tested as a pace limit
// rather than read as a window: with more, the quota running out right
// there is the likelier reading, and the test would cost a window.
const windowTestMax = 4

// burstMin is the smallest burst (requests beyond the rate, as the first
// run's pushback showed it) that makes the ramp's quick runs no proof of
// the rate: under it (nginx 1r/s lets half a request through on timing)
// what the ramp passed holds.
const burstMin = 2

// hotSlack is how late after becoming ready a lane may be taken and still
// count as sent at its pace: a busy client's timers and scheduler wake
// tens of milliseconds late, and a fast lane (20/s: 50 ms) taken that late
// is not under its pace.
const hotSlack = int64(50 * time.Millisecond)

// A 429 whose Retry-After holds its lane costlyIntervals intervals or more
// (nginx's fixed Retry-After: 60 on a 30/min limit) makes a failed step of
// the search cost more than the last few percent it would win: such a
// search settles once what passed is within costlyDone of where it was
// pushed back.
// A failed re-probe on such a host idles its lane for that Retry-After as
// well (a minute of a 30/min lane: 30 requests), so it waits costlyQuiet
// times as many quiet successes.
const (
	costlyIntervals = 20
	costlyDone      = 1.1
	costlyQuiet     = 4
	sameRun         = 0.01 // careful runs within 1% of one pace add up
)

// quickTold is the longest Retry-After at a first 429 after a burst that
// reads as a bucket's refill: measured by the retry that passes (endRamp),
// as a whole-second Retry-After of 1 or 2 is (handOffWait).
const quickTold = int64(2 * time.Second)

// handOffWait: an explorer told to wait longer than this (and than two
// intervals at its pace) hands the search to another lane. A whole-second
// Retry-After of 1 or 2 is a bucket's refill, waited out in place.
const handOffWait = int64(3 * time.Second)

// reprobeQuiet is how many successes a host must have had since its last 429
// before a lane probes above the settled pace: a failed probe costs a 429,
// so at most 0.25%. Each failed probe doubles it, up to maxProbeBackoff
// doublings (400<<5: one probe per 12,800 successes).
const (
	reprobeQuiet    = 400
	maxProbeBackoff = 5
	reprobeStep     = 1.25 // a re-probe's first step above the settled pace
)

// The host's own rate (AIMD), used when the server limits site-wide or sheds
// load with 503s: additive increase per success (the 429 article's
// 0.05/s), multiplicative decrease per pushback episode, a floor.
const (
	hostStep = 0.05
	hostCut  = 0.5
	hostMin  = 0.1
	// Above what is proven the next pushback is near: a fifth of the step,
	// so that episodes are rare and each costs little (measured on the
	// bench's host-scoped, per-credential and overload scenarios).
	hostSlowStep = 0.2
)

// maxSeries bounds a lane's series (what it sent since its last 429): a
// limiter remembers a window, usually a minute at most, so older sends do
// not count against a slower pace.
const maxSeries = 2 * maxRecovery

// sendWindow is the span over which a host's send rate is measured.
const sendWindow = int64(10 * time.Second)

// maxScan bounds the lanes one Acquire examines, so a decision stays O(log n)
// in the pool size even when many exits are blocked.
const maxScan = 32

// slop is how early a lane may let a request go. A caller wakes a little
// after the instant it was given (timer and scheduling latency), and GCRA
// with no tolerance would add each such lateness to the next interval,
// losing rate for good (measured: a 500/s ceiling delivered 407/s). But a
// request sent late and the next sent early by the slop are an interval
// less the slop apart, and a limiter that allows no burst rejects what
// comes sooner than its rate allows: the slop stays within half the margin
// Settle leaves under the pace (margin: 1-Settle), at most 2ms (a quarter
// of the interval) and at least slopMin. At 20/s with no burst, a 2ms slop
// was 3.9% of the interval, more than Settle's 3%.
func slop(iv int64, margin float64) int64 {
	return min(iv/4, int64(2*time.Millisecond), max(int64(float64(iv)*margin/2), slopMin))
}

// rttUnit is the unit of a lane's usual answer time (lane.rttMid).
const rttUnit = int64(100 * time.Microsecond)

// exactMargin is the least time a fixed window paced at its rate leaves
// for its requests' arrivals to vary (exactPace): on loopback they vary by
// a few milliseconds, on a busy machine by tens now and then. A second's
// window keeps 97.6% of its rate, a minute's all but 0.04%.
const exactMargin = 25 * time.Millisecond

// slopMin is the least slop: a wake-up's usual lateness on a busy machine.
const slopMin = int64(100 * time.Microsecond)

// hostSlop is slop for the host ceiling and AIMD pacers, which no server
// enforces at exactly that rate: up to a whole interval, at most 2ms.
func hostSlop(iv int64) int64 { return min(iv, int64(2*time.Millisecond)) }

// maxRetryAfter bounds a Retry-After a lane honours: a parser saturates
// absurd values, and a day is longer than any limit a crawl waits out.
const maxRetryAfter = 24 * time.Hour

// maxBlock is the longest a bare block read grows to when a lane that waited
// it out is pushed back at its first request: a block longer than that is
// read no further (its lanes retry each maxBlock).
const maxBlock = 16 * time.Minute

// ledRecheck bounds how long a worker that follows another's search waits
// before asking again about a host: the leader's pace may change meanwhile,
// and nothing here wakes the caller when it does (redisstate refreshes the
// shared view every 500 ms). A quarter second was tried: the real fleet of
// 8 on 20 exits read the same, and the simulated fleet on tiers (exits with
// budgets of their own) drew 1.25% of 429s instead of 0.94%, as its led
// lanes took each of the leader's faster paces sooner.
const ledRecheck = int64(time.Second)

// movedFor is how long after a fleet's handover (Exit.Since) a new lane on
// the exit is read with care: the server may still count what the exit's
// former owner sent, for a window of up to a minute (maxRecovery).
const movedFor = maxRecovery

// sameEpisode is how close two workers' cuts of a host rate must come to be
// one overload episode seen twice: the answers to requests in flight when
// the site began shedding reach every worker within a request's time.
const sameEpisode = int64(2 * time.Second)

// slidingRoom is the headroom, in requests a window, that even pacing keeps
// under a sliding-window counter's limit of N: go-chi/httprate rejects once
// its estimate, rounded, reaches N, so at most N-0.5 a window pass for good,
// and a tenth more covers the path's jitter. Lanes pace at 1-slidingRoom/N
// of such a limit (0.94 for 10 per minute, 0.88 for 5 per 10 s).
const slidingRoom = 0.6

// maxEdges is how many times a host settled on a window's quota read
// without a header keeps slidingRoom more of it, pushed back at its pace
// (quotaEdge): httprate rounds its estimate and lets an even pace through
// to half a request under the quota, a counter that counts the request
// itself in full to one request under it (the simulator's sliding window:
// 10 per 10 s passes 9 for good, and its lanes, pushed back at 94%, fell to
// a careful search from 64%).
const maxEdges = 2

// longEdgeRoom is how far past maxEdges a larger quota goes on keeping
// slidingRoom more at each edge: while what its lanes keep is at least this
// much of it. A window read without a header is the shortest usual one that
// fits between two retries, and a server's may be a second longer: mod_qos
// counts from the whole second of a client's first event and resets once S
// whole seconds have passed after it, so a steady client passes 19 per 11 s
// where the first run and its recovery read 19 per 10 s. Its lanes, at 97%
// and 94% of that, met the edges nine at once, then fell to a careful search
// from 66% of it (apache-qos-20-per-10s: 78.5 / 83.0% over the run and after
// 30 s); at 91% and 88% they pass (90.6 / 99.1% simulated; the real server,
// run the same way, 88.3 / 93.2%, 90.6 / 96.7% and 89.7 / 94.8% in three
// runs). A quota of 10 or fewer keeps two edges as before (a third would
// keep under 82% of it).
const longEdgeRoom = 0.85

// loneBusySpan is how long after one 503 without Retry-After the next reads
// as an overload with it (loneBusy).
const loneBusySpan = int64(5 * time.Second)

// busyPeerSpan is how recently another lane must have succeeded for a 503
// without Retry-After to read as a per-IP limit's (laneBusy).
const busyPeerSpan = int64(2 * time.Second)

// A declared quota the server enforces more strictly than it declares
// (declared429) loses strictStep of its limit, at least a request, a window
// at each push-back at its pace, never more than to strictFloor of it.
const (
	strictStep  = 0.05
	strictFloor = 0.5
)

// restartSpend is how many times its rate a declared quota is spent at on a
// window that begins again at each request let through (declaredRate): in
// a twentieth of the window (30 per minute in 3 s), the lane waits the
// window out and sends the quota again, 95% of the quota's rate where an
// even pace keeps 50%.
const restartSpend = 20

// staggerMax is the longest interval over which a settled host's lanes are
// spread (stagger): the hold costs each lane up to one interval of work.
const staggerMax = int64(2500 * time.Millisecond)

// fewRun: a first run of fewer successes is short enough that the retries
// measuring its recovery weigh in a server's count of rejected requests
// (two are a fifth of such a quota), and the second waits at least the
// shortest common window.
const fewRun = 10

// refuteMargin is how many fewer than the first run's count a penalty's
// test pushed back on a follower must have passed to refute the window
// read (refutedShort): one fewer is a bucket's refill missed by a moment
// (a block bucket of 20 per 10 s told 10 s: 25 against the run's 26, read
// so, and the search stepped to 5.2/s of 2, each step a lane blocked a
// minute, 52.8 -> 28.3% in a helper's review).
const refuteMargin = 2

// penaltyRun is the shortest first run after which a told recovery is
// tested as a penalty (penaltyTest): under it, a quota of a few a window
// (haproxy's 6 per minute told a minute) pays the test's 429 out of 120
// requests in two minutes. Not fewRun: Varnish's bucket of 3/s blocking 20
// s passed 9 before its first 429, was read as 9 per 30 s, and held the
// lanes at a tenth of the rate for the run (12.5%; tested, 64.3%); 8 before
// 2026-12-07's forty-seventh session: rate-limiter-flexible's 4 per 2 s
// blocking 10 s passed 7, and untested the run's own rate held the search
// to 1.18/s of 2 (39.7%; tested, 87.9%).
const penaltyRun = 7

// secondWindow is when a window of a second, the shortest usual one, has
// surely ended after the 429 it drew: a second and a twentieth (the
// server's clock and the way back).
const secondWindow = int64(time.Second + time.Second/20)

// secondConfirm is how long a lane that recovered a second's window after
// its 429 must hold its pace for that to read as a window of a second: two
// of them. A sliding counter of 30 per 10 s let such a retry through as its
// count decayed, and pushed the ramp's 7.76/s back within a second.
const secondConfirm = int64(2 * time.Second)

// probeHold is how long the explorer's retry holds its lane at most while
// it measures a recovery: its answer ends it sooner.
const probeHold = int64(time.Second)

// A window guessed from its first reset alone, shorter than
// guessReserveSpan, keeps guessReserve requests of each lane's remainder
// back (under a limit above twice that) until it is seen to roll, for no
// longer than its longest time to a reset and two seconds from the lane's
// first answer (quota.reserve): one for the first request past a reset
// told early, one for the first after the real roll.
const (
	guessReserve     = 2
	guessReserveSpan = 10 * time.Second
)

// The search of a pace limit with no burst (pairLimit) steps from one round
// limit to the next (pairRung): a failed step costs a 429 where the whole
// pool sends a few hundred requests in two minutes, so it settles at the
// first, and round limits are where nginx's are written. Steps of 15%
// (79-99% over two minutes on nginx's 8 to 28 per minute without
// Retry-After, twins) stopped anywhere within the last one (24r/m's twin:
// 92.1% after 30 s; on round steps 96.2%).
const (
	// pairNear: a round limit within this fraction above what passed is
	// no step of its own (a retry's 6.2 s passed 9.68 a minute: 10 a
	// minute, Settle under it, is 9.75).
	pairNear = 0.02
	// pairFar: where what was pushed back is this many times what passed,
	// the step is the round limit at or under their middle.
	pairFar = 4
)

// bareRefills is how many requests of the rate the explorer counted a bucket
// would have refilled by the time a retry that finds the lane still pushed
// back reads the host as a window (bareRetry): the count is a lower bound
// on a bucket's rate, and a retry one refill on is jitter's to lose.
const bareRefills = 3

// windowEndSlack is how long after a window opened by the run's first
// request should have ended its retry goes (awaitRetry): the server's clock
// and the path put the end a little later than the client reckons it.
const windowEndSlack = int64(time.Second / 4)

// proofRun is how many successes the settled explorer passes at a window's
// quota read between two retries of its first recovery before the
// followers take it (proveQuota): a bucket of under half that pace,
// refilled one request at the recovery, pushes it back within them (three
// cost the small 10-s windows 5 to 15 points on the twins).
const proofRun = 2

// blockPutOff is how far from where a block of a usual length from the 429
// would end a window's retry may come and test the block too: put off to
// its end from up to this much before it (a second a window's reading can
// spare), or up to this much after it (awaitRetry).
const blockPutOff = int64(time.Second)

// shortStep is how far above a shorter window's quota shorterStep tries:
// far enough that HAProxy's rolling rate pushes it back within a careful
// span of the window (one request more a window, 3% over 30 per 10 s,
// passed for a while and the search went on above the quota), near
// enough that a bucket of about that rate lets it through.
const shortStep = 1.2

// longRunLen: a first run this long took most of the shortest common
// window (rampHead leaves its head out), and the window that held it is at
// least as long; of the usual ones most often a minute's, whose quota the
// ramp spent in its first seconds. Until the explorer's recovery says
// otherwise the followers spread what is left of it over the minute
// (longRun).
const longRunLen = int64(shortestCommon) * 9 / 10
