package limit

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// A server that limits per IP gives every IP the same budget, as a rule. So
// one lane per host, the explorer, searches for how much one lane may send,
// and the others (the followers) pace at what it passed: learning costs the
// host a few 429s, not a few per exit, and the pool is never stampeded over
// a limit all at once. The search:
//
//   - ramp: nothing has pushed back yet; the explorer's pace doubles per run
//     of successes, the followers trail one step behind.
//   - refine: the first 429 came at x1. The explorer starts again from half
//     of x1 in steps of a fifth, so that a second 429 places the limit
//     within a step; the followers take each step it passes. When the first
//     429's Retry-After was long against the pace (a window, or a penalty),
//     its window reading (what succeeded over the time taken plus the wait)
//     is already close: refine starts there.
//   - bisect: the explorer tries the middle of [passed, pushed back] until
//     the two are within 4%; the followers take what it passes.
//   - settled: every lane paces at Settle under what was passed. After a
//     long quiet the explorer climbs above it again, in case the limit was
//     raised.
//
// A pace passes when the explorer sustains it for a proof span without a
// 429. The span starts quick (a run of successes over a second): a server
// that allows no burst pushes back within a request or two of a pace too
// high. A server with a burst lets a quick run through at any pace, and then
// the followers, who took the pace, are pushed back several at once: they
// all fall back to the careful reading of the first 429 (or to what the
// explorer counted between its 429s), and from then on a pace passes only
// over a careful span, long enough for a burst to run out.

// capacity is what a host's lanes know about one lane's budget, in req/s.
type capacity struct {
	// pass is the highest pace the explorer sustained for a proof span
	// since its last pushback (a careful run counts one request less than
	// it sent); sent is the pace it was sent at. The followers pace at
	// Settle under pass.
	pass, sent float64
	// hi is the lowest pace at which the explorer was pushed back, at
	// hiAt. A ceiling older than ProbeEvery is tried again before the
	// search settles under it: the limit may have been raised since.
	hi   float64
	hiAt int64
	// safe is the careful reading of the first 429: the successes before it
	// over the time they took plus the time to recover (for a window, at
	// most its quota over its length; for a bucket, its refill plus the
	// burst spread over a recovery); lo is what the explorer counted between
	// two 429s of its own, less one, over the time between (a lower bound
	// whatever the burst). The followers fall back to the larger when a
	// pace they took is pushed back.
	safe, lo float64
	// careful: a pace passes only over a careful span (the server counts
	// windows, or followers were pushed back at what the explorer passed).
	careful bool
	// refuses: the host refused a lane in a wave of Forbidden answers
	// (rule wave): it counts per second of the clock, where a pace a
	// hundredth over the limit passes a careful run by its phase, and is
	// refused only once it drifts (mod_evasive's 5 a second passed 5.32/s
	// for 3.8 s, and the followers, at 5.06/s, were refused one by one for
	// the rest of the run). The followers keep Settle's margin under what
	// passed, not a careful run's one request.
	refuses bool
	// costly: a 429 on this host makes its lane wait many intervals
	// (Retry-After of a minute at 0.5/s): each failed step of the search
	// idles a lane that long, so the search stops within costlyDone.
	costly bool
	// pair: a pace limit with no burst (the first pace was pushed back at
	// its second request, and a retry spaced wider passed): two requests
	// at a pace prove it, and each failed step costs a 429 of few (pair).
	pair   bool
	pairHi float64 // the ceiling the pair's search began under
	// refill: the first recovery read as a bucket's refill from
	// X-RateLimit-Remaining alone (refillTold): a run's Remaining at its
	// start and end proves it (remPassed).
	refill bool
	// block is how long the server refuses a lane everything once it ran
	// out, read without a Retry-After (a penalty's test refuted the
	// window the recovery fitted; 0: none read): a lane pushed back waits
	// it out at once, and no wall is read from lanes stuck in one.
	// blockAt is when it was last doubled (0: never): lanes that waited
	// the shorter one out before it are pushed back again by it, and
	// double nothing more.
	block, blockAt int64
	// windowed: the first 429's recovery was long against the pace, as a
	// window's is: even pacing sustained over one window (span) proves its
	// pace, whatever the window let through at first.
	windowed bool
	// quotaN per quotaW is the window's quota the host settled on
	// without a header (quotaKnown; 0: none); edgeAt is when a lane was
	// pushed back at its pace, from when the sliding counter's headroom
	// is kept (quotaEdge; 0: not yet), edges how many requests of it a
	// window, in slidingRoom steps (at most maxEdges, more while longEdgeRoom allows).
	quotaN float64
	quotaW int64
	edgeAt int64
	edges  uint8
	// extra is how many requests beyond its rate the server let a lane
	// send in a burst, as far as the explorer's pushbacks showed (0: none
	// seen). A run of n successes evenly paced at p then proves only
	// p*(1-extra/(n-1)): a bucket with that burst lets any pace above its
	// rate run about that long.
	extra float64
	// clock is the quota read as a window of the clock (clockwindow.go).
	clock clockRead
	// declared is what the server declared (quota per window, the window
	// inferred from all lanes' resets when not declared); it overrides the
	// rest.
	declared float64
	win      quota
	// others are the other limits the server holds a client to at once
	// (policies.go); win is the one whose rate is lowest.
	others []quota
	// roll is the lane chosen to go at the first roll's reset (rollProbe),
	// rollAt that reset; "" = none yet.
	roll   string
	rollAt int64
	// early is what a request sent on a moving window's reading before
	// the reset its lane was told, with nothing remaining, met (earlyProbe):
	// 0 not yet seen, 1 let through (a moving window frees a slot as its
	// oldest hit ages out), -1 refused (the reset holds: nothing comes
	// back before it); earlyLane is the lane chosen to send it first.
	early     int8
	earlyLane string
	// exact: the declared quota is a fixed window, paced at its rate
	// without Settle's margin (declared.go); inexact: a 429 came while it
	// was, and the margin is back for good. bucket: the declared limit
	// turned out a bucket's capacity (bucketQuota): never a ceiling again.
	exact, inexact, bucket bool
	// exactSlack is the time a window paced exactly leaves for its
	// requests' arrivals to vary (exactPace), set with exact.
	exactSlack int64
	// room is the check of a declared quota's headroom (headroom.go).
	room roomCheck
	// span is the careful proof span: twice the time the first 429 took to
	// recover from when that reads as a window, within [minSpan, maxSpan].
	span int64
	// follow is the pace of the lanes that follow the explorer, set at
	// followAt.
	follow   float64
	followAt int64
	// at is when pass or hi last changed: the age of the knowledge.
	at int64
}

// done is how close what passed and where the explorer was pushed back
// must be for the search to settle.
func (c *capacity) done() float64 {
	if c.costly || c.pair {
		return costlyDone
	}
	return bisectDone
}

// pairDone reports whether the search of a pace limit with no burst is over:
// a step above what passed was pushed back (pairLimit: each costs a 429 of
// few, so it ends at the first).
func (c *capacity) pairDone() bool {
	return c.pair && c.hi > 0 && c.hi < c.pairHi*(1-tolerance) && max(c.pass, c.lo) >= c.safe
}

// ceil records a pushback at x, now, as the ceiling.
func (c *capacity) ceil(x float64, now int64) { c.hi, c.hiAt, c.at = x, now, now }

// setQuota settles on a window's quota of n per w ns read without a header
// (0, 0: none), with no sliding edge met on it yet (quotaEdge): the edges
// belong to the quota they were met on.
func (c *capacity) setQuota(n float64, w int64) {
	c.quotaN, c.quotaW, c.edgeAt, c.edges = n, w, 0, 0
}

// Explorer phases.
const (
	expRamp uint8 = iota
	expRefine
	expBisect
	expSettled
)

var phaseNames = [...]string{expRamp: "ramp", expRefine: "refine", expBisect: "bisect", expSettled: "settled"}

// explorer is the host's one exploring lane.
type explorer struct {
	exit  string // "" = none yet: the next lane taken becomes the explorer
	phase uint8
	pace  float64
	// slow is when lane slowExit, exploring, last slowed, and fslow when
	// the followers did: a 429 within a counted window of it may answer
	// what a lane sent faster (slowedFrom).
	slow, fslow slowing
	slowExit    string
	// runRem is the X-RateLimit-Remaining alone the run's first answer
	// told (runRemOK: it told one): a run's proof (remaining.go).
	runRem   float64
	runRemOK bool
	// awaitAt is the time of a 429 without Retry-After that ended the ramp:
	// until the lane is seen to recover, the recovery time is unknown.
	// recLo is how long after it a retry was last pushed back (0: none).
	awaitAt, recLo int64
	// recLast is how long after it any retry was last pushed back (recLo
	// leaves the second's window's try out): a bucket's refill read at
	// the recovery may have counted from no sooner (refillTold).
	recLast int64
	// awaitBroke: a follower was pushed back since awaitAt (awaitPushed).
	awaitBroke bool
	// over is the follower that sends past the first run's count while
	// the first 429's recovery is unknown, the others held at it
	// (awaitCount, armed by overOn); overAt is when that request went (0:
	// not yet), overRead that it passed: the followers' windows end
	// within what they sent.
	over             string
	overAt           int64
	overOn, overRead bool
	// secAt is when a retry a second's window after the 429 passed
	// (secTry: that retry is out): a recovery to confirm over
	// secondConfirm at the lane's pace, as a sliding counter of a longer
	// window lets a retry through as its count decays, then pushes the
	// pace back.
	secAt  int64
	secTry bool
	// thirdTry: the retry a third of a minute from the first run's start
	// is out (awaitRetry).
	thirdTry bool
	// blockTry is the usual length from awaitAt at which a block would
	// end where the retry under way comes (blockEnd; 0: none): passed
	// there, the recovery fits a block that long from the 429 as well as
	// a window from the run's start, and a penalty's test tells them
	// apart.
	blockTry time.Duration
	tries    uint8 // tries since awaitAt
	// okAt is when the explorer's latest success was sent (pairRun).
	okAt   int64
	pushed uint8 // 429s the lane drew since awaitAt, the first included
	n1     int32 // successes before the first 429
	t1     int64 // and the time they took, ns
	// headN and headD are the ramp's slow first steps left out of n1 and
	// t1 (rampHead): a window opened by the run's first request, or one
	// as long as the whole run, counted them too.
	headN int32
	headD int64
	// sent1At and sent1Sec are when the request the first 429 answered
	// went and what its lane sent before it in that second of the clock
	// (clockCut; 0: its send ring did not count it).
	sent1At  int64
	sent1Sec uint8
	k1       int32   // of them at the pace that drew it (-1: a follower drew it)
	x1       float64 // that pace
	// wtest is how many successes in a row at the ramp's pace refute a
	// window reading of the first 429 (0: no such test running).
	wtest int32
	// ptest: the window test is a penalty's (penaltyTest), twice the run
	// and two more: its pass proves only what a burst as large as the run
	// could not have let through.
	ptest bool
	// ptestW is the usual window the first recovery fitted, read if the
	// penalty's test is pushed back (0: none fitted), and ptestU the
	// usual window its careful reading is over, stepped above then.
	ptestW time.Duration
	ptestU int64
	// ptestEnd is when the told recovery ended: a window that ends
	// there (a window of the clock) lets a test that outlasts it through;
	// ptestPre of the test's successes were sent before it.
	ptestEnd int64
	ptestPre int32
	ramped   float64 // the last pace the ramp passed
	// quotaW is the window a first 429 after a single success fit: the
	// search refines from that quota, and settles once a step above it
	// is pushed back within a request a window more.
	quotaW time.Duration
	// rec1 is the first 429's recovery (Retry-After, or the measured
	// retry), ns.
	rec1 int64
	// readW is the usual window as long as the first run and its told
	// recovery, the window the host reads n1 per (0: none read so;
	// seriesWindow).
	readW int64
	// longW is the window read before a shorter one's try (tryShorter):
	// the try pushed back, it is the window (0: no such try).
	longW time.Duration
	// shortLo is when, after the first 429, a retry of its recovery was
	// last pushed back: a window shorter than the first run and that had
	// not ended then, and tryShorter tries none.
	shortLo int64
	// qtry: the explorer tries quotaW's quota, read from a window test
	// pushed back within the first run's count: passed, it is the limit.
	qtry bool
	// proof is how many more successes the settled explorer must pass at
	// a window's quota read between two retries before the followers take
	// it (proveQuota; 0: none to pass); proofN passed since the 429 at
	// proofFrom, the last sent at proofOK; proofFollow is the pace the
	// followers hold meanwhile.
	proof              int8
	proofN             int32
	proofFrom, proofOK int64
	proofFollow        float64
	// suspect: the proof was pushed back once; the explorer's next
	// request tells a bucket from a window whose count frees the first
	// run's requests as they age (proofPushed).
	suspect bool
	// settledAt is when the search last settled; jittered is the pace the
	// followers held when they were pushed back a moment after, at
	// jitterAt, and took one more margin for the path's jitter (0: not
	// since the host settled).
	settledAt, jitterAt int64
	jittered            float64
	// tight: the first run lasted about a window (it recovered within a
	// quarter more than it took), so what it fitted into it is close.
	tight bool
	run   run // the explorer's current run of successes at its pace
	// chain: careful runs in a row at one pace add up. A careful run
	// proves a request less than it sent, so the search would otherwise
	// try the same middle again and again without proving more.
	chain chain
	// okN successes of lane okExit since its last 429, the first sent at
	// okFirst; lastN in lastT (from its first success on) is the run the
	// 429 at endAt ended, on lane lastExit (rereadWindow). A run counts
	// one lane's successes only: the search moves between lanes.
	okN, lastN            int32
	okFirst, lastT, endAt int64
	okExit, lastExit      string
	// histN successes are the runs of lane lastExit before lastN's, back
	// to one that began at histAt, each pushed back and the next begun
	// within maxRecovery: a window longer than the last run holds them
	// too (rereadWindow reads them as its head). A minute's quota under a
	// second's limit, bare, is spent over runs the second's 429s cut.
	histN  int32
	histAt int64
	// Since cAt (the explorer's last 429) cN successes, the latest sent at
	// cLast; the interval before it had prevN successes in prevT.
	cAt, cLast, prevT int64
	cN, prevN         int32
	// fall: the intervals between 429s since the count last raised the
	// lower bound, none of them raising it (countFell).
	fall fallCount
	// exactAt: the 429 at which the count closed over exactN >=
	// preciseCount successes and raised the lower bound (count).
	exactAt int64
	exactN  int32
	// cSteps are the explorer's paces since cAt, the first the idle
	// until its first success after it (pace 0): a count is the rate only
	// if the budget never filled meanwhile (countSlack). cLost: more
	// steps than fit.
	cSteps [maxCountSteps]paceStep
	cK     uint8
	cLost  bool
	// fresh: no run has passed since cAt; the first one is held to what
	// the explorer passed since (sinceEmpty).
	fresh bool
	// steps are the ramp's runs of the explorer that passed, and rampExit
	// the lane that ran them (rampBurst).
	steps    []rampRunRec
	rampExit string
	// The host's last 429 and the successes since: a re-probe waits for a
	// quiet host.
	quietAt int64
	okSince int32
	// A burst is 429s each within burstGap of the last: it began at
	// burstAt after the host had been quiet for quietFor, with okBefore
	// successes in that quiet; repeat: a lane was pushed back twice in it.
	burstAt, quietFor int64
	okBefore          int32
	repeat            bool
	fails             uint8 // failed re-probes in a row
	// A re-probe climbs from the settled pace base and keeps the settled
	// knowledge to give back if its first step is pushed back.
	reprobe                             bool
	base, savedHi, savedPass, savedSent float64
	// retest: the explorer is trying a stale ceiling again.
	retest bool
	// held: the explorer holds a pace Settle under a round limit until
	// the host can afford the 429 a step above it would likely cost;
	// roundHeld: the search settled at such a pace where a 429 is costly,
	// and only a re-probe goes above it; roundSoon: the search's first
	// such hold, whose first re-probe comes sooner (reprobeDue);
	// shortFits: the quota was read from a told recovery that fits a
	// shorter usual window as well, which the run outlasted (two windows
	// of 5 s read as one of 10), and the first re-probe comes as soon.
	held, roundHeld, roundSoon, shortFits bool
	// stepW and stepHi: shorterStep's window and the step it tries above
	// that window's quota; pushed back there, the quota is confirmed.
	stepW  time.Duration
	stepHi float64
}

// startPace is the explorer's pace when a host starts: Settle under the
// first guess, so that the ramp's doublings sit just under the round
// numbers limits are written in (30/min, 1/s, 2/s): even pacing at exactly
// a limit with no burst is pushed back by the network's jitter alone.
func (r *rules) startPace() float64 { return min(r.maxLane, r.settle*r.first) }

// exploring reports whether the host's lanes learn by exploring: not when
// the server declared a quota or limits site-wide (the host's rate governs).
func (h *host) exploring() bool { return h.cap.declared == 0 && !h.scope.shared() }

// adoptExplorer makes l the explorer if the host has none.
func (r *rules) adoptExplorer(h *host, l *lane, now int64) {
	e := &h.exp
	if e.exit != "" || !h.exploring() || h.led {
		return
	}
	if e.pace == 0 {
		e.pace = r.startPace()
	}
	e.exit, e.run = l.exit, run{}
	if e.phase == expSettled {
		e.pace = h.followPace(r)
	}
	h.note(r, now, "explore", l.exit, "pace", l.pace, e.pace, "this lane explores for the host")
	r.setPace(h, l, e.pace)
}

// chain is careful runs in a row at one pace (within sameRun of the first
// run's): n successes in all, the last run's included.
type chain struct {
	pace float64
	n    int32
}

// at reports whether a run at pace continues the chain (within sameRun of
// the pace it began at).
func (ch chain) at(pace float64) bool {
	return ch.pace > 0 && math.Abs(pace/ch.pace-1) <= sameRun
}

// burstCovered reports whether a careful run's own margin (a request less
// than it sent) covers what the server lets through beyond its rate: no
// bucket's burst was seen, or the server counts over a window (a careful
// span covers its first allowance).
func (c *capacity) burstCovered() bool { return c.extra <= 1 || c.windowed }

// setExplorerPace changes the explorer's pace, recording why.
func (r *rules) setExplorerPace(h *host, l *lane, m float64, now int64, rule, why string) {
	m = max(r.minLane, min(r.maxLane, m))
	h.note(r, now, rule, l.exit, "pace", l.pace, m, why)
	if e := &h.exp; l.pace > m*(1+tolerance) {
		if e.slowExit != l.exit {
			e.slow = slowing{}
		}
		e.slow.record(l.pace, now, h.countedWindow())
		e.slowExit = l.exit
	}
	h.exp.pace = m
	r.setPace(h, l, m)
	if e := &h.exp; e.cAt != 0 && e.cN > 0 && l.exit == e.exit {
		e.countStep(m, now)
	}
}

func (r *rules) setPhase(h *host, l *lane, p uint8, now int64, why string) {
	h.note(r, now, "explore", l.exit, "phase", float64(h.exp.phase), float64(p), why)
	h.exp.phase = p
	if p != expSettled {
		// A quota's proof is a settled host's: a search that starts again
		// (a fall, a re-probe) ends it, and the followers' hold with it.
		h.exp.proof, h.exp.suspect = 0, false
		h.exp.shortFits = false // the reading it doubted is searched again
	}
}

// proofSpan is how long the explorer must sustain a pace for it to pass.
func (h *host) proofSpan(pace float64) int64 {
	span := h.paceSpan(pace)
	if e := &h.exp; e.stepW > 0 && !e.reprobe && e.rec1 > int64(e.stepW) && atLeast(pace, e.stepHi) {
		// shorterStep's step above a window's quota, where the told
		// recovery outlasts the window (a block: a lane pushed back
		// waits longer than a window): the window the step began in had
		// counted the slower requests before it, and the next, opened by
		// a request of the step, may end past a span of fewer
		// (rate-limiter-flexible's 30 per 10 s blocking 20 s: 3.6/s
		// held 12.5 s across two windows, 28 and 29 of it, was read as
		// a bucket's rate, and every lane was pushed back above the
		// limit, 20 s each). A window opened within the window's length
		// holds the quota and one more at the step's pace, all of the
		// step's. (nginx's 5r/s with a burst of 10 told 10 s, a bucket
		// whose told wait is the window read, proves the step as
		// before: two points of its run went with the longer proof.)
		// Not a re-probe's climb: stepW stays set once the host settles
		// (quotaConfirmed), and its steps are proven as any other.
		span = max(span, min(maxSpan, int64(e.stepW)+int64(e.quotaN(e.stepW)+1)*interval(pace)))
	}
	return span
}

// paceSpan is proofSpan before a shorter window's step.
func (h *host) paceSpan(pace float64) int64 {
	if e := &h.exp; e.qtry {
		// A quota's try: a longer window of the same quota pushes back
		// within the quota's next request but one, and a rate estimated
		// over two windows (haproxy's) within three of them.
		return min(maxSpan, max(3*int64(e.quotaW), int64(2*e.n1+2)*interval(pace)))
	}
	if h.cap.pair && h.exp.phase != expSettled {
		return interval(pace) // no burst: the second request at a pace tells
	}
	if h.cap.careful || h.exp.phase == expSettled {
		span := max(h.cap.span, min(carefulIntervals*interval(pace), maxSpan))
		if c, ex := &h.cap, h.lanes[h.exp.exit]; c.windowed && c.quotaN > 0 && ex != nil && ex.q == nil && !ex.remRead() {
			// A window of quotaN read bare: a pace passes once quotaN+1
			// requests at it have, the first quotaN apart, whatever the
			// window's length: one opened by the first of them would
			// hold them all. (Read as 40 per 10 s, flask-limiter's bare
			// 40 per 15 s passed 3.1/s over the careful span, 39 of
			// them, and every lane was pushed back a minute on.) A
			// quota told by headers is read on its own.
			span = max(span, min(int64(c.quotaN)*interval(pace), maxSpan))
		}
		return span
	}
	if h.exp.reprobe {
		// A re-probe's first step: the lanes went just under the rate
		// for a minute, and a bucket refilled its burst meanwhile, which
		// carries a quick run a quarter above the rate (x/time/rate's
		// 10/s with a burst of 10 passed 12.4/s for 2 s, and the search
		// doubled from there). The step runs until such a burst is spent.
		return max(reprobeSpan, quickIntervals*interval(pace))
	}
	return max(rampSpan, quickIntervals*interval(pace))
}

// exploreOK applies a success of the explorer lane l, sent at sent.
func (r *rules) exploreOK(h *host, l *lane, sent, now int64) {
	e, c := &h.exp, &h.cap
	if e.proof > 0 && sent > e.proofOK {
		e.proofN, e.proofOK = min(e.proofN+1, math.MaxInt32), sent
		switch e.proof--; {
		case e.proof > 0:
		case e.suspect:
			r.windowRead(h, l, now)
		default:
			r.updateFollow(h, now, "settled", fmt.Sprintf("%d passed at the quota's pace since the recovery: a window's quota, not a bucket's refill", e.proofN))
			r.stagger(h)
		}
	}
	e.okAt = max(e.okAt, sent)
	if e.okN == 0 || e.okExit != l.exit {
		e.okN, e.okFirst, e.okExit = 0, sent, l.exit
	}
	if e.okN < math.MaxInt32 {
		e.okN++
	}
	if e.awaitAt != 0 && sent > e.awaitAt {
		// The lane recovered: the time it took bounds the recovery, and so
		// the estimate, much better than maxRecovery did.
		rec := sent - e.awaitAt
		if e.secTry {
			// After a second's window: held at the lane's pace for
			// secondConfirm, it was a window of a second (or a pace
			// limit); pushed back meanwhile, a longer window's count
			// decaying (cooldown).
			if e.secAt == 0 {
				e.secAt = sent
			}
			if sent-e.secAt < secondConfirm {
				return
			}
			rec = e.secAt - e.awaitAt
		}
		second := e.secTry
		e.awaitAt, e.tries, e.secAt, e.secTry, e.pushed = 0, 0, 0, false, 0 // (thirdTry stays for firstEstimate)
		r.firstEstimate(h, l, rec, false, now, fmt.Sprintf("recovered %.1fs after its 429", secs(rec)))
		e.recLo, e.recLast = 0, 0
		if second && !c.windowed {
			// A window of a second: nothing carries a pace above the
			// limit past a second, so a step held over secondConfirm
			// proves itself, as on a window, whatever burst the ramp
			// seemed to show. (No bucket passes both retries: one whose
			// refill did not let the first through, at two intervals
			// of what the ramp passed, refills less than a third of the
			// pace over the test.) The steps' proofs took spans a
			// burst of 10 needs, and lanes came to 10 per second at
			// 73 s, not 30 s.
			c.careful, c.span = true, max(c.span, secondConfirm)
		}
	}
	if e.run.n == 1 && e.run.at == sent {
		return // the success a step of a pace limit starts from (pairRun)
	}
	last := e.run.last
	el, saturated, idle := e.run.add(sent, now, l.pace)
	if e.run.n == 1 {
		e.runRem, e.runRemOK = l.remNow(now)
	}
	if idle {
		// The lane went idle: a burst refilled meanwhile, so the runs in a
		// row before it do not add up with this one, and the count under
		// way records the idle spell as a pace of 0 (its budget gathered).
		e.chain = chain{}
		if e.cAt != 0 && e.cN > 0 {
			e.countStep(0, max(last, e.lastCountStep()))
			e.countStep(l.pace, max(sent, e.lastCountStep()))
		}
	}
	if e.cAt != 0 && e.cN < math.MaxInt32 {
		if e.cN == 0 {
			e.countStep(l.pace, now) // the idle after the 429 ends
		}
		e.cN++
		e.cLast = sent
	}
	if e.wtest > 0 {
		if e.ptest && sent <= e.ptestEnd {
			e.ptestPre++
		}
		switch {
		case e.run.n < e.wtest || !saturated:
		case e.ptest && !e.ptestRefutes(l.serOK, e.run.n):
			r.penaltyLate(h, l, now)
		default:
			r.noWindow(h, l, now)
		}
		return
	}
	if e.qtry && (e.run.n == e.n1+1 || e.run.n == 2*e.n1+1) && saturated {
		r.updateFollow(h, now, "bisect", fmt.Sprintf("the quota's try passed %d at %.3g/s", e.run.n, l.pace))
	}
	span := h.proofSpan(l.pace)
	if e.phase == expRamp {
		span = rampSpan
	}
	if e.run.n < rampRun || !saturated || el < span || e.phase == expSettled {
		return
	}
	if e.qtry {
		e.qtry, e.run = false, run{}
		w, shorter := e.quotaW, e.longW > 0
		e.longW = 0
		r.quotaKnown(h, w, now, fmt.Sprintf("%d per %v sustained for %.0fs: the window's quota", e.quotaN(w), w, secs(el)))
		if shorter {
			r.tryShorter(h, l, w, now)
		}
		return
	}
	passed := l.pace
	switch {
	case e.phase == expRamp, atLeast(c.pass, l.pace):
		// The ramp's quick runs; or a pace already proven.
	case c.refill && e.runRemOK && l.remTold(now):
		passed = e.remPassed(l, el, now)
	case c.careful && (c.burstCovered() || !e.reprobe):
		// A window, or a pace passed and then pushed back (a memory the
		// server keeps longer than a burst): what a careful run proves is
		// one request less than it sent over its span (or over the runs in
		// a row at this pace, unless a bucket's burst was seen: it lets a
		// pace above the rate run a span, and runs in a row would not
		// tell).
		n := e.run.n
		if e.chain.at(l.pace) && c.burstCovered() {
			n += e.chain.n // the chain keeps the pace it began at: no drift by steps under sameRun
		} else {
			e.chain.pace = l.pace
		}
		e.chain.n = min(n, 1<<20)
		passed *= float64(n-1) / float64(n)
	case c.extra > 0:
		// A burst of extra requests lets a pace above the rate run for a
		// while: the run proves the rate it implies, and goes on until
		// that is half way from what passed before to its pace, or for a
		// minute at most.
		// Runs in a row at one pace add up: the burst runs out once, so
		// a pace held for minutes proves itself ever closer, where runs
		// proven afresh would each give up the burst again.
		n := e.run.n
		if e.chain.at(l.pace) {
			n += e.chain.n
		}
		passed = l.pace * max(0, 1-c.extra/float64(n-1))
		// What passed since the last 429 is a bound of its own, whatever
		// the burst, and the quicker one where the cooldown refilled less
		// than the burst holds (x/time/rate's 10/s with a burst of 10,
		// read as 10.5 from the ramp: a step's proof took 27 s).
		passed = max(passed, min(l.pace, e.emptySince(c, now)))
		if goal := (l.pace + c.pass) / 2; passed < goal && el < maxSpan {
			return
		}
		if !e.chain.at(l.pace) {
			e.chain.pace = l.pace
		}
		e.chain.n = min(n, 1<<20)
		if passed <= c.pass {
			// A minute did not prove more than what passed: with this
			// burst the step cannot be told from the rate. It counts as
			// the ceiling of the search.
			h.note(r, now, phaseNames[e.phase], l.exit, "ceiling", c.hi, l.pace, fmt.Sprintf("a minute at %.3g/s proves no more than %.3g/s with a burst of %.1f", l.pace, passed, c.extra))
			c.ceil(l.pace, now)
			e.run = run{}
			r.nextBisect(h, l, now)
			return
		}
	}
	if b := e.sinceEmpty(c, now); b > 0 && b < passed {
		// Whatever a bucket's burst, the lane's budget was empty at its
		// last 429, and since then the server let through no more than
		// its rate over that time and one request: a careful run after
		// a cooldown that refilled part of a burst proves no more (nginx
		// 5r/s with a burst of 5: 6.05/s ran 3.3 s on what a 0.9-s
		// cooldown refilled, the followers took 5.6/s and seven of them
		// were pushed back within 12 ms).
		passed = b
	}
	e.fresh = false
	if passed > c.pass {
		h.note(r, now, phaseNames[e.phase], l.exit, "floor", c.pass, passed, fmt.Sprintf("sustained for %.1fs without a 429", secs(el)))
		c.pass, c.sent, c.at = passed, l.pace, now
	}
	if e.stepW > 0 && atLeast(l.pace, e.stepHi) {
		// shorterStep's step above the shorter window's quota passed: no
		// window of that quota, a bucket whose burst the counts held
		// (nginx's 5r/s with a burst of 10 told 10 s). Its search goes on
		// with a bucket's proofs: a careful span lets a pace a few
		// percent over its rate through on the burst (settled at 5.25/s,
		// every lane pushed back again and again).
		e.stepW, e.stepHi = 0, 0
		h.note(r, now, phaseNames[e.phase], l.exit, "estimate", c.safe, c.pass, "a step above the shorter window's quota passed: a bucket, not a window")
		r.asBucket(h, now)
	}
	if atLeast(l.pace, c.safe) {
		c.safe = min(c.safe, passed) // the estimate is proven (less its careful request)
	}
	if e.phase == expRamp && len(e.steps) < maxRampSteps {
		if e.rampExit != l.exit {
			e.steps, e.rampExit = e.steps[:0], l.exit
			if n := l.serOK - e.run.n; n > 0 && e.run.at > l.serAt {
				// The lane followed before it came to explore, in the
				// series its first run counts from (a worker joining
				// a fleet took the first explorer's exit: one request
				// at 0.25/s, 4 s before the ramp, stretched haproxy's
				// 20 per 10 s to 22 per 12.2 s, read as 22 per 20 s).
				e.steps = append(e.steps, rampRunRec{n: n, d: e.run.at - l.serAt, follower: true})
			}
		}
		e.steps = append(e.steps, rampRunRec{pace: l.pace, n: e.run.n, d: el})
	}
	e.run = run{} // the next proof starts afresh
	if e.reprobe && c.hi == 0 {
		e.reprobe, e.fails, e.roundHeld = false, 0, false // a re-probe not pushed back: the limit was raised
	}
	if c.hi > 0 && atLeast(l.pace, c.hi) {
		// Sustained where it was pushed back before: the limit was raised.
		// The search climbs again.
		h.note(r, now, phaseNames[e.phase], l.exit, "ceiling", c.hi, 0, "passed an old ceiling: the limit was raised")
		c.hi, c.at, e.retest, e.fails = 0, now, false, 0
	}
	switch {
	case c.hi == 0 && c.costly && e.phase != expRamp && l.pace > c.follow*(1+tolerance) && r.roundUnder(l.pace) != "":
		// Above what the host settled on, the climb passed a pace Settle
		// under a round limit: as the search does (holdRound), it
		// settles there rather than spend a blocked lane on a step above
		// it (vsthrottle's 5/s blocking a minute: its re-probe passed
		// 4.85/s, stepped to 5.06/s and idled a lane for a minute).
		r.settleRound(h, l, r.roundUnder(l.pace), false, now)
	case c.hi == 0 && c.costly && e.phase != expRamp:
		// A 429 idles a lane long here (a block of a minute told by
		// Retry-After): past its first step, a search above what the
		// host settled on climbs in steps it stops within, so that its
		// first 429 ends it. Doubling, vsthrottle's 5/s blocking a
		// minute, settled at 3.88/s, re-probed 4.85/s, then 9.2, 6.5
		// and 5.5/s, each pushed back and its lane blocked a minute.
		// (Its steps are not stopped at every round limit on the way:
		// counted per hour as well, one lies within nearly every step.)
		r.setExplorerPace(h, l, passed*costlyDone, now, phaseNames[e.phase], "nothing pushed back, and a 429 is costly here: a step the search stops within")
	case e.phase == expRamp || c.hi == 0:
		r.setExplorerPace(h, l, passed*rampStep, now, phaseNames[e.phase], "nothing pushed back over a run: double")
	case r.holdRound(h, l, now):
	case e.phase == expRefine:
		if c.block > 0 && passed*refineStep < l.pace {
			// A bare block's bucket (noWindow): its burst may be as large
			// as the first run, so a step's run proves little of its pace
			// (vsthrottle's 15 per 10 s blocking 30 s: 1.44/s held 7.6 s
			// proved 0.71/s), and a step up from that went back under
			// the pace held, each step 30-40 s. The explorer holds the
			// pace, whose runs in a row add up, and its proof nears it.
			r.setExplorerPace(h, l, l.pace, now, "refine", "passed, short of the pace held: held on")
			break
		}
		r.setExplorerPace(h, l, passed*refineStep, now, "refine", "passed: a step up")
	default:
		r.nextBisect(h, l, now)
	}
	r.updateFollow(h, now, phaseNames[e.phase], fmt.Sprintf("the explorer passed %.3g/s", passed))
}

// explorerOutlier handles the explorer l pushed back at x, under the pace
// the followers hold, while they hold it: on a host whose IPs have budgets
// of their own (reputation tiers), the lane that explores may be one of the
// smallest, and what it reads would drag every lane down to its budget. It
// takes its own ceiling, as a follower pushed back alone does, its readings
// above the followers' pace go, and the search goes on on a follower.
//
// A settled explorer paces with the followers: pushed back at their pace
// while they hold it, its IP's budget is the smaller one too (every fourth
// IP at a quarter of the budget, the explorer among them, dragged the host
// to a quarter); the host's knowledge stands and another lane paces for it.
func (r *rules) explorerOutlier(h *host, l *lane, x float64, now int64) bool {
	e, c := &h.exp, &h.cap
	settled := e.phase == expSettled && atLeast(c.follow, x)
	if e.phase == expRamp || !h.exploring() || (atLeast(x, c.follow) && !settled) || h.manyAtFollow(now) {
		return false
	}
	hot := h.othersHolding(now)
	for _, o := range h.lanes {
		if o != l && o.hot && o.own() == 0 && atLeast(o.pace, c.follow) {
			hot++
		}
	}
	ch := h.challenger(l, now)
	if hot < h.manyLanes() || ch == nil || !ch.hot {
		return false
	}
	x2 := l.extra()
	h.note(r, now, "tier", l.exit, "ceiling", x2.own, x, fmt.Sprintf("the explorer pushed back at %.3g/s, at or under the %.3g/s that %d followers hold: its own budget", x, c.follow, hot))
	x2.setOwn(x, now)
	x2.tpass = 0
	e.exit, e.run, e.chain, e.retest, e.wtest, e.ptest, e.qtry, e.proof, e.suspect = ch.exit, run{}, chain{}, false, 0, false, false, 0, false
	e.cAt, e.cN, e.prevN, e.prevT = 0, 0, 0, 0
	e.fall = fallCount{}
	r.tierNext(h, l)
	if settled {
		r.setExplorerPace(h, ch, c.follow, now, "settled", "the explorer's own budget is smaller: this lane paces for the host now")
		return true
	}
	c.hi = 0 // the outlier's reading, or older: the new explorer finds its own
	if e.phase == expBisect {
		r.setPhase(h, ch, expRefine, now, "the followers' pace holds")
	}
	r.setExplorerPace(h, ch, c.follow*refineStep, now, phaseNames[e.phase], "the search goes on on a follower, a step above the followers' pace")
	return true
}

// explore429 applies a 429 on the explorer lane l (past its ramp), sent at
// pace x, at now.
func (r *rules) explore429(h *host, l *lane, x float64, k int32, now int64) {
	r.explore429Series(h, l, x, series{ok: k, run: k}, now)
}

// explore429Series is explore429 with the lane's whole series: ser.ok
// successes since its last 429 (or its first request), ser.run of them in
// the explorer's run at x.
func (r *rules) explore429Series(h *host, l *lane, x float64, ser series, now int64) {
	k := ser.run
	e, c := &h.exp, &h.cap
	if e.awaitAt != 0 {
		return // still waiting to see the lane recover: its cooldown says when to try again
	}
	if e.reprobe && c.hi == 0 && x <= e.base*reprobeStep*(1+tolerance) {
		// A re-probe's first step above the settled pace was pushed back:
		// the limit was not raised. Give the settled knowledge back.
		e.reprobe = false
		e.fails = min(e.fails+1, maxProbeBackoff)
		h.note(r, now, "reprobe", l.exit, "ceiling", x, e.savedHi, "a re-probe was pushed back at its first step: the limit stands")
		c.ceil(e.savedHi, now)
		c.pass, c.sent = e.savedPass, e.savedSent
		r.setPhase(h, l, expSettled, now, "the limit stands")
		r.setExplorerPace(h, l, h.followPace(r), now, "reprobe", "back to the settled pace")
		return
	}
	if r.explorerOutlier(h, l, x, now) {
		return
	}
	wtest, ptest := e.wtest > 0, e.ptest
	e.reprobe, e.wtest, e.ptest = false, 0, false
	r.count(h, l, now)
	if e.qtry && e.longW > 0 {
		// A shorter window's try pushed back: the window is the one read
		// before it, and the lane, its window run out, waits it.
		w := e.longW
		e.qtry, e.longW = false, 0
		r.quotaKnown(h, w, now, fmt.Sprintf("%d per %v: the try of a shorter window was pushed back", e.quotaN(w), w))
		r.coolUntil(h, l, now+int64(w), now, "a shorter window's try pushed back: wait the window")
		return
	}
	if e.qtry {
		// The quota's try was pushed back: the window is longer than the
		// shortest it could be. The search bisects under it.
		e.qtry, e.quotaW = false, 0
	}
	if wtest && ptest {
		r.penaltyPushed(h, l, x, k, max(k, ser.ok), ser.at, now)
		return
	}
	// Within the first run's count, or one more after a run of a few: a
	// rolling estimate over two periods (haproxy's) lets one more through
	// when the period before was idle, and a pace limit twice exceeded
	// passes no more than one.
	if wtest && (k <= e.n1 || e.n1 >= 2 && k == e.n1+1) && r.tryQuota(h, l, x, now) {
		return
	}
	if atLeast(x, c.pass) && !wtest {
		r.burstSeen(h, l, x, k, max(c.pass, c.lo), now)
	}
	if e.retest && atLeast(x, c.hi) {
		// The stale ceiling holds: it is fresh again, and the next retest
		// waits longer.
		e.retest = false
		e.fails = min(e.fails+1, maxProbeBackoff)
		h.note(r, now, phaseNames[e.phase], l.exit, "ceiling", c.hi, x, "pushed back again at an old ceiling: it stands")
		c.ceil(min(c.hi, x), now)
		r.nextBisect(h, l, now)
		r.updateFollow(h, now, phaseNames[e.phase], "the old ceiling stands")
		return
	}
	e.retest = false
	if c.hi == 0 || x < c.hi {
		h.note(r, now, phaseNames[e.phase], l.exit, "ceiling", c.hi, x, "the explorer was pushed back")
		c.ceil(x, now)
	}
	if c.pass > 0 && atLeast(c.pass, x) {
		// Pushed back at what it had passed: the pass was a burst, or the
		// limit moved. Fall back and search carefully from there.
		r.fallBack(h, l, x, now, "the explorer was pushed back at a pace it had passed")
		return
	}
	if c.pass < c.safe && atLeast(c.safe, x) {
		// Pushed back at the estimate it was verifying: the estimate was
		// too much.
		safe := max(r.minLane, c.lo, followCut*x)
		h.note(r, now, phaseNames[e.phase], l.exit, "estimate", c.safe, safe, "the explorer was pushed back at the estimate")
		c.safe = safe
	}
	if e.phase == expRefine {
		r.setPhase(h, l, expBisect, now, "a second 429: the limit is within a step")
	}
	r.nextBisect(h, l, now)
	r.updateFollow(h, now, phaseNames[e.phase], "the explorer was pushed back")
}

// penaltyPushed applies a 429 on the explorer l during a penalty's test,
// at pace x after k successes in the test and ok in the lane's series
// since serAt (a follower that took the test counts what it sent before).
func (r *rules) penaltyPushed(h *host, l *lane, x float64, k, ok int32, serAt, now int64) {
	e, c := &h.exp, &h.cap
	short := time.Duration(0) // a shorter window the counts fit (shorterHolds)
	if ok > e.n1 {
		short = time.Duration(e.shorterHolds(ok, serAt, now))
	}
	switch {
	case l.cool <= serAt && e.refutedShort(ok, serAt, now):
		// Under the run's count over a series longer than the run and
		// shorter than the window read: a window that long, opened by
		// the series' first request or sliding, would have let the
		// run's count through here as it did on the explorer. (Not a
		// series that began at a 429: mostly the wait after it, while
		// a sliding or rolling count still held the run: haproxy's 10
		// per 20 s without a header, its explorer's test after the
		// retries that measured its recovery, 4 in 16.2 s, read so,
		// 96.0 -> 77.1% and 6.22% of 429s in a helper's review.) The
		// window is shorter than the run, the told wait a block
		// (rate-limiter-flexible's 10 per 5 s blocking 30 s: 15 in 7.5 s
		// read as 15 per minute, a follower's 12 in 9.5 s pushed back,
		// and the lanes held at a minute's window a step, 13.5% of the
		// limit over the run). The window read is dropped (asBucket), and
		// the search bisects under the test's pace with careful proofs as
		// long as the run: a window shorter than it holds its quota there.
		r.asBucket(h, now)
		c.careful, c.span = true, max(minSpan, min(maxSpan, e.t1+e.headD))
		h.note(r, now, phaseNames[e.phase], l.exit, "ceiling", c.hi, x, fmt.Sprintf("%d in a series of %.1fs, fewer than the run's %d in %.1fs: the window is shorter than the run, the told wait a block", ok, secs(now-serAt), e.n1, secs(e.t1)))
		c.ceil(x, now)
		if p := float64(e.n1) / secs(2*(e.t1+e.headD)); p > c.pass && p < x {
			// The run spanned two such windows at most: their rate is
			// at least half its own.
			h.note(r, now, phaseNames[e.phase], l.exit, "floor", c.pass, p, fmt.Sprintf("%d in %.1fs fit in two windows shorter than the run: at least half its rate", e.n1, secs(e.t1+e.headD)))
			c.pass, c.sent, c.safe = p, p, max(c.safe, p)
		}
		r.nextBisect(h, l, now)
		r.updateFollow(h, now, phaseNames[e.phase], "the penalty's test was pushed back under the run's count")
	case e.ptestW > 0 && short > 0 && l.cool <= serAt && now-serAt < int64(e.ptestW) && ok > e.quotaN(e.ptestW)+1:
		// More than the fitted window's quota and one, over a series
		// from the lane's first request shorter than that window: no
		// such window let them through, and the shorter one the counts
		// fit is read, as below (rate-limiter-flexible's 50 per 10 s
		// blocking a minute: 48 in 9.7 s and the block fit a minute, and
		// a follower's 69 in 13.3 s were read as 50 per minute, 16.1%).
		r.shorterStep(h, l, short, x, now, fmt.Sprintf("%d per %v: the penalty's test passed %d in a series of %.1fs, more than a window of %v holds and no more than windows of %v", e.quotaN(short), short, ok, secs(now-serAt), e.ptestW, short))
	case e.ptestW > 0:
		// Where the first recovery fitted a usual window, the window is
		// read as it would have been (a bucket of 100 refilled at 100 a
		// minute is read as well as 103 per minute, and a bisection from
		// the test's ceiling, with a minute's block on every lane pushed
		// back, read 46% of it).
		w := e.ptestW
		r.quotaKnown(h, w, now, fmt.Sprintf("%d per %v: the first run's quota over the window its recovery fits, the penalty's test pushed back", e.quotaN(w), w))
	case ok > e.n1+1 && !e.ptestRefutes(ok, k):
		r.penaltyLate(h, l, now)
	case short > 0:
		// Past the run's count, over a series longer than the shortest
		// usual window the first run fits in, and no more than windows
		// of the run's quota that long let through: the Retry-After told
		// a fixed wait, not the window's end, and the window is that one
		// (haproxy's 30 per 10 s told 10 s: 30 in 8.8 s and the wait read
		// as 30 per 20 s; a follower's series of 12 s, 37 passed, read as
		// a bucket's, settled at 3.26/s, and every lane was pushed back;
		// 75.5% over 120 s). One past the count is enough there: a window
		// of the reading opened by the series' first request holds the
		// count, and one more comes through a rolling rate's period
		// ended inside the series (haproxy's 10 per 10 s told 10 s: 11
		// in 10.8 s, taken for the one more and read as 10 per 20 s,
		// and the careful search climbed from 11 per 20 s: 65.6%,
		// simulated). A bucket whose burst the follower's slow start
		// refilled passes the same counts (nginx's 5r/s with a burst of
		// 10 told 10 s: 29 in 8.7 s, then 34 in a series of 12 s, as
		// haproxy's 30 per 10 s), so the quota read is a floor, and a step
		// above it tells the two apart (shorterStep).
		r.shorterStep(h, l, short, x, now, fmt.Sprintf("%d per %v: the penalty's test passed %d in a series of %.1fs, more than a window of %v holds and no more than windows of %v", e.quotaN(short), short, ok, secs(now-serAt), time.Duration(e.ptestU), short))
	case ok > e.n1+1:
		// Past the run's count, the lane's successes before the test
		// counted (a follower that took the test spent part of its
		// budget: vsthrottle's 15 per 10 s with a 30-s block, 22% of its
		// rate read as a window): no window of that quota let them
		// through, a bucket ran out at x. What the test passed, less a
		// burst as large as the run, proves a rate; the search bisects
		// between that and x.
		r.asBucket(h, now)
		if p := max(r.minLane, x*float64(k-e.n1)/float64(k)); p > c.pass {
			h.note(r, now, phaseNames[e.phase], l.exit, "floor", c.pass, p, fmt.Sprintf("%d passed at %.3g/s, the run's %d more than a window of it holds: a bucket's rate, at least %.3g/s", k, x, k-e.n1, p))
			c.pass, c.sent = p, x
		}
		h.note(r, now, phaseNames[e.phase], l.exit, "ceiling", c.hi, x, "a penalty's test pushed back past the run's count: not a window")
		c.ceil(x, now)
		r.nextBisect(h, l, now)
		r.updateFollow(h, now, phaseNames[e.phase], "the penalty's test was pushed back past the run's count")
	case e.ptestU > 0 && k >= e.n1:
		// Within the run's count, a window of the run's quota, as read.
		// Pushed back at that count in the test itself, the test was the
		// step above it (windowStep) too: settled at it.
		u := time.Duration(e.ptestU)
		r.quotaKnown(h, u, now, fmt.Sprintf("%d per %v: the penalty's test pushed back at the run's count", e.quotaN(u), u))
	default:
		// Sooner (the follower that took it had spent part of its
		// window), the step is taken: read as the window at its count
		// with the lane's earlier successes, a usual window shorter than
		// the server's (haproxy's 10 per 30 s told 10 s, read 10 per
		// 20 s) pushed every lane back, again and again (10.8% of 429s,
		// 4.5% before the test).
		r.windowStep(h, l, e.ptestU, true, now)
		r.updateFollow(h, now, phaseNames[e.phase], "the penalty's test was pushed back")
	}
}

// shorterStep takes the first run's quota over the window w, shorter than
// the one read, as what the host lets through at least: the followers go
// there at once, and the lanes held on the longer reading are held again
// on it. The explorer l, pushed back at x in the penalty's test, tries a
// step shortStep above the quota: pushed back there, the quota is the
// limit (quotaConfirmed; haproxy's rolling rate); passed, the search
// bisects on up to x with a bucket's proofs (exploreOK; nginx's 5r/s with
// a burst of 10 told 10 s, held at the quota read, 29 per 10 s, used 58%
// of its rate simulated, 61.5% real; 83% and 86% so). The ceiling is x,
// not the first run's count over its time: that bounds a window's rate,
// not a bucket's. stepW stays set once the host settles: quotaConfirmed
// reads it whenever it is asked, and a re-probe that passes the step later
// finds a bucket (or a limit raised) there too.
func (r *rules) shorterStep(h *host, l *lane, w time.Duration, x float64, now int64, why string) {
	e, c := &h.exp, &h.cap
	r.readWindow(h, float64(e.quotaN(w)), w, now, phaseNames[e.phase], l.exit, why)
	q := c.pass
	h.note(r, now, phaseNames[e.phase], l.exit, "ceiling", c.hi, x, "the penalty's test was pushed back")
	c.ceil(x, now)
	e.quotaW = w
	if e.readW > int64(w) {
		// The lanes pushed back from now wait out a series at this
		// window's pace, not the longer one's (seriesWindow: a lane of
		// rate-limiter-flexible's 20 per 10 s blocking 30 s, pushed back
		// at the step, was held 60 s, twice its block, at 20 per minute).
		e.readW = int64(w)
	}
	step := q * shortStep
	e.stepW, e.stepHi = w, step
	if step >= c.hi {
		r.nextBisect(h, l, now)
	} else {
		r.setExplorerPace(h, l, step, now, "bisect", fmt.Sprintf("%d per %v read: try a step above it, a bucket's rate or the window's", e.quotaN(w), w))
	}
	r.updateFollow(h, now, phaseNames[e.phase], "a shorter window's quota")
}

// refutedShort reports whether a penalty's test pushed back after ok
// successes in the lane's series since serAt refutes the window read from
// the run and its told recovery (ptestU): refuteMargin fewer than the run's
// count or more, over a series longer than the run took and shorter than
// that window.
func (e *explorer) refutedShort(ok int32, serAt, now int64) bool {
	d := now - serAt
	return serAt > 0 && e.ptestU > 0 && e.n1 >= fewRun && ok+refuteMargin <= e.n1 && d > e.t1+e.headD && d < e.ptestU
}

// shorterHolds returns the shortest usual window the first run fits in, if
// it is shorter than the window read from the run and its told recovery
// (ptestU) and a series of ok successes since serAt is what windows of the
// run's quota that long let through: longer than one of them, and no more
// than the quota in each it spans; else 0.
func (e *explorer) shorterHolds(ok int32, serAt, now int64) int64 {
	u := usualWindow(e.t1 + e.headD)
	if u <= 0 || e.ptestU <= u || serAt <= 0 || e.n1 < fewRun {
		return 0
	}
	d := now - serAt
	if d <= u || int64(ok) > int64(e.quotaN(time.Duration(u)))*(d/u+1) {
		return 0
	}
	return u
}

// headOf returns the successes of lane exit's runs before its current one
// that a window longer than them would still hold, and when the first began
// (as runEnded would count them at the current run's 429; 0: none).
func (e *explorer) headOf(exit string) (int32, int64) {
	if e.lastExit != exit || e.lastN == 0 || e.okFirst-e.endAt > maxRecovery {
		return 0, 0
	}
	if e.histN == 0 {
		return e.lastN, e.endAt - e.lastT
	}
	return e.histN + e.lastN, e.histAt
}

// runEnded records the explorer's run of successes that its 429 at now
// ended, if it had one (rereadWindow).
func (e *explorer) runEnded(exit string, now int64) {
	if e.okN > 0 && e.okExit == exit {
		if e.lastExit == exit && e.lastN > 0 && e.okFirst-e.endAt <= maxRecovery {
			if e.histN == 0 {
				e.histAt = e.endAt - e.lastT
			}
			e.histN = min(e.histN+e.lastN, math.MaxInt32/2)
		} else {
			e.histN, e.histAt = 0, 0
		}
		e.lastN, e.lastT, e.endAt, e.lastExit = e.okN, now-e.okFirst, now, exit
	}
	e.okN = 0
}

// bareRetry reads a 429 without Retry-After on the searching explorer's
// first request since its last 429 (no success between), on a host read as
// a bucket: pushed back later than a bucket of the rate the explorer
// counted refills a request (three of them, and a second), it is a window
// that its last run ran out, and the host is read again as one
// (rereadWindow): flask-limiter's fixed 50 per 10 s, read as a bucket
// after a quick recovery, bisected from 12/s to 4.8/s in four seconds on
// retries inside the window it had run out. Sooner, the retry reads as any
// other 429 (a bucket's refill is slower than its pace). It reports
// whether it applied.
func (r *rules) bareRetry(h *host, l *lane, o *Outcome, first bool, now int64) bool {
	e, c := &h.exp, &h.cap
	if o.RetryAfter > 0 || !first || e.awaitAt != 0 || c.windowed || c.pair || c.lo <= 0 ||
		(e.phase != expRefine && e.phase != expBisect && !(e.phase == expSettled && e.settledOnCount())) ||
		e.lastExit != l.exit || e.lastN < minQuota {
		return false
	}
	since := now - e.endAt
	if since < max(int64(time.Second), int64(bareRefills*1e9/c.lo)) {
		// Settled on a count, a retry says nothing of the lane's own
		// budget (explorerOutlier) until it tells a window.
		return e.phase == expSettled
	}
	r.rereadWindow(h, l, since, now)
	return true
}

// rereadWindow reads the explorer's last run, which its last 429 (since
// ago) ended, as the first run a window held: a bucket of the rate the
// explorer counted would have let its retry through by now, so the quick
// recovery that read the host as a bucket was a window's end (a fixed one
// opened by the ramp's first request, which the ramp ran out just before
// it ended). Its recovery is measured as the first 429's was, and read
// as that was (firstEstimate): flask-limiter's fixed 50 per 10 s without
// headers sat at 36% of its limit, 25 429s while learning.
func (r *rules) rereadWindow(h *host, l *lane, since, now int64) {
	e, c := &h.exp, &h.cap
	h.note(r, now, "explore", l.exit, "count", c.lo, 0, fmt.Sprintf(
		"pushed back %.1fs after its last 429 without a success between: a bucket of the %.3g/s counted would have refilled; %d in %.1fs before that 429 read as a window's", secs(since), c.lo, e.lastN, secs(e.lastT)))
	e.awaitAt, e.recLo, e.recLast, e.tries, e.pushed, e.secTry, e.secAt, e.thirdTry = e.endAt, since, since, 1, 2, false, 0, false
	e.awaitBroke, e.overOn = false, false
	e.n1, e.t1, e.headN, e.headD, e.k1, e.x1, e.ramped = e.lastN, e.lastT, 0, 0, -1, 0, 0
	if e.histN > 0 {
		// The runs before it, cut by 429s it recovered from quickly: a
		// window as long as all of them holds them too (quotaN).
		e.headN, e.headD = e.histN, e.endAt-e.lastT-e.histAt
	}
	e.quotaW, e.tight, e.wtest, e.qtry, e.chain = 0, false, 0, false, chain{}
	c.careful, c.extra, c.lo, c.pass, c.sent, c.hi = false, 0, 0, 0, 0, 0
	r.setPhase(h, l, expRefine, now, "a window: its recovery is measured again")
	r.firstEstimate(h, l, maxRecovery, false, now, fmt.Sprintf("recovery %v", time.Duration(maxRecovery)))
}

// quotaConfirmed reports whether the first run's quota over the window its
// recovery fit (quotaW) passed, and a step above it was pushed back within
// a request a window more: nothing under the next request a window sends
// more, so the search is over short of the ceiling.
func (r *rules) quotaConfirmed(h *host) bool {
	c, e := &h.cap, &h.exp
	w := e.quotaW
	top := e.quota(w) + 1/w.Seconds()
	if e.stepW == w {
		top = max(top, e.stepHi) // shorterStep's step above the quota
	}
	return w > 0 && c.hi > 0 && c.hi <= top &&
		atLeast(max(c.pass, c.lo, c.sent), r.settle*e.quota(w))
}

// nextBisect tries the middle of [pass, hi] in log space, or settles when
// the two are within bisectDone (settlesAt).
func (r *rules) nextBisect(h *host, l *lane, now int64) {
	if why := r.settlesAt(h, now); why != "" {
		r.settleHere(h, l, now, why)
		return
	}
	c := &h.cap
	base := max(c.pass, c.lo)
	if base < c.safe {
		// Nothing proven at the estimate: try the middle above it (the
		// followers hold the estimate meanwhile); pushed back there and
		// again closer, the tries close in on the estimate itself, which
		// falls when it is pushed back in turn.
		if h.exp.phase == expRefine {
			h.exp.phase = expBisect
		}
		m := c.safe
		if c.hi > c.safe*refineStep && !c.careful {
			m = min(math.Sqrt(c.safe*c.hi), c.safe*refineStep*refineStep)
		}
		r.setExplorerPace(h, l, m, now, "bisect", "at or above the estimate, which is not proven yet")
		return
	}
	m := base * probeStep
	if c.pair && c.hi > 0 {
		m = r.pairRung(base, c.hi) // a rung is left: settlesAt
	} else if c.hi > 0 {
		m = math.Sqrt(base * c.hi)
		if h.exp.tight {
			m = math.Pow(base, 0.25) * math.Pow(c.hi, 0.75)
		}
	}
	why := "the middle of what was passed and pushed back"
	if c.pair && c.hi > 0 {
		why = fmt.Sprintf("a pace limit: just under %s, the next round limit", r.roundUnder(m))
	} else if c.hi > 0 && c.hi <= base*refineStep*refineStep && now-c.hiAt >= max(r.probeEvery<<h.exp.fails, 2*h.proofSpan(c.hi)) {
		// The ceiling is near and old (against ProbeEvery, and against the
		// span a step takes, or a slow window would retest at every step):
		// the limit may have been raised since. Try it again before
		// settling under it.
		h.exp.retest = true
		m, why = c.hi, fmt.Sprintf("the ceiling is %.0fs old: try it again", secs(now-c.hiAt))
	}
	if h.exp.phase == expRefine {
		h.exp.phase = expBisect
	}
	r.setExplorerPace(h, l, m, now, "bisect", why)
}

// settlesAt is why the search settles where it is at now, with no step
// left to take between what passed and what was pushed back, or "" when a
// step is left (nextBisect takes it). reprobeDue asks it too: a settled
// search taken up again where nextBisect settles at once only settled
// again, two change records a success and the re-probe's quiet started
// over each time (nginx 2r/s with a burst of 4, delayed: 192 times in 120 s,
// the base's lower bound above the 4% mark reprobeDue read from what passed
// alone; nginx 6 per minute with no round limit left between its bounds, 11).
func (r *rules) settlesAt(h *host, now int64) string {
	c := &h.cap
	base := max(c.pass, c.lo)
	switch {
	case c.hi > 0 && base >= c.safe && max(base, c.sent)*c.done() >= c.hi:
		return "passed and pushed back within 4%: settled"
	case c.hi > 0 && h.exp.exactAt == now && base >= c.safe && !c.windowed:
		// The count this 429 closed is the rate within 5% (preciseCount):
		// a bisection between it and the ceiling would only find the
		// rate's last few percent, at a 429 a step. (Not on a window,
		// whose count is its quota's, not a pace's.)
		return fmt.Sprintf("%.3g/s counted over %d successes between two 429s: the rate within 5%%: settled", c.lo, h.exp.exactN)
	case r.quotaConfirmed(h):
		return fmt.Sprintf("%d per %v passed, pushed back within a request a window above it: settled", h.exp.n1, h.exp.quotaW)
	}
	if lim := r.atRoundLimit(h); lim != "" && base >= c.safe {
		return fmt.Sprintf("%.3g/s passed, just under %s, and was pushed back within a step above: settled", c.sent, lim)
	}
	switch {
	case base < c.safe:
		return "" // the estimate is tried first
	case c.pairDone():
		return "a step of a pace limit pushed back: each costs a 429 of few; settled under what passed"
	case c.pair && c.hi > 0 && r.pairRung(base, c.hi) == 0:
		return fmt.Sprintf("no round limit between %.3g/s passed and %.3g/s pushed back: settled", base, c.hi)
	}
	return ""
}

// settleHere ends the search: every lane paces at Settle under what passed.
func (r *rules) settleHere(h *host, l *lane, now int64, why string) {
	r.setPhase(h, l, expSettled, now, why)
	h.exp.quietAt, h.exp.okSince, h.exp.settledAt, h.exp.jittered = now, 0, now, 0
	h.exp.quietFor, h.exp.okBefore = 0, 0 // a burst after settling is the jitter rule's, not a hiccup
	r.updateFollow(h, now, "bisect", "settled")
	if h.exp.proof > 0 {
		p := max(r.minLane, min(r.maxLane, r.settledPace(h)))
		r.setExplorerPace(h, l, p, now, "bisect", "settled: the explorer proves the pace before the others take it")
	} else {
		r.setExplorerPace(h, l, h.cap.follow, now, "bisect", "settled: the explorer paces with the others")
	}
	r.stagger(h)
}

// stagger spreads the lanes of a settled host over one interval at their
// pace, in the order of their exits: lanes that changed pace together send
// together for good, and a window that rolls on the server's clock
// (go-chi/httprate's) then pushes them all back at once at the phase its
// estimate rejects (ten 429s within 30 ms), where spread out the first one
// alone tells the host (quotaEdge). It is for hosts settled on a window's
// quota read without a header, where that edge is what is left to find
// (elsewhere the spread only moved which lanes a tier's 429s fell on). A
// lane is only ever held back, by less than one interval, once per
// settling, and only where an interval is short (staggerMax): on a slow
// limit the hold costs a lane seconds of work (six per minute: 7 points of
// the minute after settling).
func (r *rules) stagger(h *host) {
	if len(h.lanes) < 2 || h.cap.quotaN <= 0 || interval(h.cap.follow) > staggerMax {
		return
	}
	ls := make([]*lane, 0, len(h.lanes))
	base := int64(math.MaxInt64)
	for _, l := range h.lanes {
		if l.tat == 0 || l.pace <= 0 {
			continue // not sent yet: it starts when work comes
		}
		ls = append(ls, l)
		base = min(base, l.tat)
	}
	slices.SortFunc(ls, func(a, b *lane) int { return strings.Compare(a.exit, b.exit) })
	for i, l := range ls {
		if at := base + int64(i)*interval(l.pace)/int64(len(ls)); l.tat < at {
			l.tat = at
			r.rekey(h, l)
		}
	}
}

// fallBack handles a pace that lanes had passed being pushed back, by the
// explorer or by followers several at once: the pass was a burst, or the
// limit went down. Everything above the careful reading of the first 429
// (or what the explorer counted) is dropped, and the search goes on
// carefully from there.
func (r *rules) fallBack(h *host, l *lane, x float64, now int64, why string) {
	e, c := &h.exp, &h.cap
	if e.jittered > 0 && now-e.jitterAt <= sympathySpan && atLeast(x, e.jittered) {
		// A request sent at the pace the jitter fall left: the same fall,
		// seen on one more lane.
		h.sameFall(r, x, now)
		return
	}
	if h.hiccup(now) {
		h.note(r, now, "follow", l.exit, "quiet", 0, secs(e.quietFor), fmt.Sprintf(
			"%s after %.0fs and %d successes without a 429, each once: a hiccup of the server or the path, not the limit; the pace holds", why, secs(e.quietFor), e.okBefore))
		h.sameFall(r, x, now)
		return
	}
	if e.phase == expSettled && e.jittered == 0 && !c.careful && c.extra < 1 && now-e.settledAt <= sympathySpan &&
		!e.roundHeld && r.atRoundLimit(h) == "" {
		// Pushed back at the pace the host settled at a moment ago, where
		// no burst was ever seen: a pace limit paced too close for the
		// path's jitter (x/time/rate's 20/s with a burst of one, settled
		// at 19.3/s, 51.9 ms apart: three lanes pushed back within a
		// second, and the careful search from 70% that followed held the
		// host at 81% over two minutes). One more Settle's margin under
		// it, once a settling; pushed back again, the limit moved. (Not
		// at a round limit: the followers hold the pace sent there.)
		e.jittered, e.jitterAt = c.follow, now
		h.note(r, now, "follow", l.exit, "ceiling", c.hi, min(x, c.hi), why+", a moment after settling: the path's jitter, not the limit")
		c.ceil(min(x, c.hi), now)
		h.sameFall(r, x, now)
		r.updateFollow(h, now, "follow", "one more margin for the path's jitter")
		if ex := h.lanes[e.exit]; ex != nil {
			r.setExplorerPace(h, ex, c.follow, now, "settled", "the explorer paces with the others")
		}
		return
	}
	e.chain = chain{}
	h.note(r, now, "follow", l.exit, "floor", c.pass, 0, why)
	if c.hi == 0 || x < c.hi {
		c.ceil(x, now)
	}
	c.pass, c.sent, c.careful, c.at = 0, 0, true, now
	e.retest = false
	if c.extra < 1 {
		// What passed was a burst the server had not shown: at least a
		// request's worth is assumed from now on.
		h.note(r, now, "follow", l.exit, "burst", c.extra, 1, "what passed was a burst")
		c.extra = 1
	}
	if c.safe == 0 || atLeast(c.safe, x) || e.phase == expSettled && c.safe < followCut*x {
		// The estimate the search starts from: a cut under the pace that
		// fell, unless one between is known. On a settled host one
		// further under it is older than the pace every lane held since
		// (the first 429's reading of 4/s, after 18/s was held: the
		// search started from 4/s and took a minute back).
		c.safe = followCut * x
	}
	if c.lo > 0 && atLeast(c.lo, x) {
		c.lo = 0
	}
	e.reprobe = false
	h.sameFall(r, x, now)
	if e.phase != expBisect {
		r.setPhase(h, l, expBisect, now, "search again, carefully")
	}
	if ex := h.lanes[e.exit]; ex != nil {
		r.nextBisect(h, ex, now)
	}
	r.updateFollow(h, now, "follow", "the followers fall back")
}

// sameFall returns to the host the lanes that took a budget of their own a
// moment ago, pushed back at pace x or above: the same fall, seen one lane
// at a time before enough of them were (manyLanes).
func (h *host) sameFall(r *rules, x float64, now int64) {
	for _, o := range h.lanes {
		if xo := o.x; xo != nil && xo.own > 0 && now-xo.ownAt <= sympathySpan && atLeast(xo.own, x) {
			h.note(r, now, "follow", o.exit, "ceiling", xo.own, 0, "pushed back with the others: the host's limit, not its own budget")
			xo.own, xo.tpass = 0, 0
			if o.exit != h.exp.exit || !h.exploring() {
				// Back to the host's pace: the own budget had cut it, and a
				// follow that does not change sets no pace (a hiccup's
				// lanes stayed at 70% of it for good).
				r.setPace(h, o, h.followPace(r))
			}
		}
	}
}

// hostPushedBack counts a 429 on any lane of the host for the re-probe's
// quiet.
func (h *host) hostPushedBack(now int64) {
	if e := &h.exp; now-e.quietAt > burstGap {
		e.burstAt, e.quietFor, e.okBefore, e.repeat = now, now-e.quietAt, e.okSince, false
	}
	h.exp.quietAt, h.exp.okSince = now, 0
}

// quotaEdge applies a 429 on lane l, sent at x, to a host settled on a
// window's quota read without a header (quotaN per quotaW): the first one
// at the quota's pace is the edge of a sliding-window counter, which
// rejects once its estimate, rounded, reaches the quota (go-chi/httprate:
// evenly paced, at most quotaN-0.5 a window pass for good). Its lanes keep
// that half request of headroom from then on (1-0.6/N of the quota, as a
// declared sliding counter's, declaredRate), once; pushed back under it,
// the limit moved and the host falls back. Read as a hiccup, httprate's 5
// per 10 s without headers drew ten 429s at once every minute (its lanes,
// at 97% of the quota, drift through the phase its estimate rejects), and
// read as a fall, the host searched again from 66% of it. It reports
// whether it applied.
func (r *rules) quotaEdge(h *host, l *lane, x float64, now int64) bool {
	c := &h.cap
	if c.edgeAt != 0 && now-c.edgeAt <= max(sympathySpan, 2*c.quotaW) && atLeast(x, c.follow) {
		if xl := l.extra(); xl.edgeAt != c.edgeAt {
			// Another lane at the same edge: the lanes that went in step
			// reach it together. Each once: a lane pushed back again is
			// under the headroom, a 429 as any other (read as the same
			// edge for the whole span, nginx's 10r/m with a burst of 10,
			// read as 12 per 10 s, drew 60 429s in 10 s).
			xl.edgeAt = c.edgeAt
			h.sameFall(r, x, now)
			return true
		}
	}
	if !r.newEdge(h, l, x, now) {
		return false
	}
	l.extra().edgeAt = now
	return true
}

// newEdge reads a new edge of a sliding-window counter (quotaEdge) at pace
// x, met by lane l or, nil, by other workers' lanes (othersPushedBack): the
// quota's headroom for every lane. It reports whether it applied.
func (r *rules) newEdge(h *host, l *lane, x float64, now int64) bool {
	e, c := &h.exp, &h.cap
	if e.phase != expSettled || c.quotaN <= 0 || c.quotaW <= 0 || c.declared > 0 || !atLeast(x, c.follow) {
		return false
	}
	if c.edgeAt != 0 && now-c.edgeAt <= 2*c.quotaW {
		// Pushed back within two windows of the last edge (a sliding
		// counter weighs the last window too): what the lane sent at
		// the faster pace still counts. A fall, if the pushbacks go on.
		return false
	}
	room := 1 - float64(c.edges+1)*slidingRoom/c.quotaN
	if room >= r.settle {
		return false // a large quota: Settle's margin covers the half request
	}
	if c.edges >= maxEdges && room < longEdgeRoom {
		return false // pushed back past every edge the quota allows: a fall
	}
	c.edgeAt, c.edges = now, c.edges+1
	q := c.quotaN / secs(c.quotaW)
	p := room * q / r.settle // held at Settle under it (heldPace)
	exit := ""
	if l != nil {
		exit = l.exit
	}
	h.note(r, now, "follow", exit, "ceiling", c.hi, x, fmt.Sprintf("pushed back at the pace of %.0f per %v: a sliding-window counter's edge; keep %.0f%% of the quota", c.quotaN, time.Duration(c.quotaW), 100*room))
	c.ceil(x, now)
	c.safe, c.pass, c.sent = min(c.safe, p), min(c.pass, p), min(c.sent, p)
	h.sameFall(r, x, now)
	r.updateFollow(h, now, "follow", "a sliding-window counter's headroom")
	if ex := h.lanes[e.exit]; ex != nil {
		r.setExplorerPace(h, ex, c.follow, now, "settled", "the explorer paces with the others")
	}
	r.skipOne(h, l)
	return true
}

// skipOne makes every lane of h but l skip one request at a sliding-window
// counter's edge: its counter still holds what it sent at the pace just
// pushed back, for up to two windows, as the pushed-back lane's 429 spent
// one of its own. Sent on at the headroom, the lanes in step met the same
// edge one after another (six 429s in 10 s on gofiber's bare sliding 10
// per 10 s). The lanes of a worker led by another skip one too when the
// leader reads an edge (HostView.Edge).
func (r *rules) skipOne(h *host, l *lane) {
	for _, o := range h.lanes {
		if o != l && o.tat != 0 {
			o.tat += interval(o.pace)
			r.rekey(h, o)
		}
	}
}

// hiccup reports whether a fall on the settled host h is a hiccup: the
// first 429s after a long quiet, one per lane, are a server or a path
// stalling a moment (a pause of the server's runtime, a proxy slow to
// forward) and then passing on requests back to back, not the limit
// moving: x/time/rate's 20/s with a burst of one, paced at 15.5/s (65 ms
// apart), drew five 429s within 25 ms after minutes without one, on
// requests that reached it 6 to 44 ms after the last; read as the limit
// falling, the host fell to 4/s. A limit that did move pushes a lane back
// again as soon as it goes on at the same pace: a fall then. So does a
// quiet with few successes in it: a lane resting a long Retry-After
// between 429s is no quiet (without hiccupOK successes per lane in it, a
// limit that fell under a pace held with Retry-After: 25 read as a hiccup
// every half minute). The burst must be this host's own and going on now
// (another worker's evidence is no burst here).
func (h *host) hiccup(now int64) bool {
	e := &h.exp
	return e.phase == expSettled && e.quietFor >= hiccupQuiet && !e.repeat &&
		now-e.quietAt <= burstGap && int(e.okBefore) >= hiccupOK*len(h.lanes)
}

// pairRun is the run a step of a pace limit with no burst starts with: the
// explorer's latest success. Such a limit counts each request from the one
// before, and the lane's next request goes an interval of the new pace
// after that success, so that request alone tells the step (its proof is
// one interval, proofSpan). A run started afresh at the new pace took two
// intervals a step: nginx's 24r/m climbed from 9.7/min for 44 s.
func (e *explorer) pairRun(c *capacity) run {
	if !c.pair || e.phase == expSettled || e.okAt == 0 {
		return run{}
	}
	return run{at: e.okAt, last: e.okAt, n: 1}
}

// pairRung is the next step of the search of a pace limit with no burst
// (pairLimit), from base passed to under hi pushed back: Settle under a
// round limit (roundLimit's, per second, 10 s or minute: such a limit is
// written so, nginx's in r/s or r/m), the next above base, or where hi is
// more than pairFar times base, the last at or under their middle (one
// request a minute passed after a Retry-After of 60, 9.7 a minute pushed
// back: 3 a minute, then 4, 5 and 6, not eight steps of a minute or more).
// The search settles Settle under a round limit, the margin jitter needs,
// where steps of 15% stopped anywhere in the last one (nginx's 20r/m at
// 95%). 0: no round limit in between, and the search is over.
func (r *rules) pairRung(base, hi float64) float64 {
	lo := base * (1 + pairNear) // a rung this close to what passed is no step
	top := hi * (1 - tolerance)
	mid := math.Sqrt(base * hi)
	var next, under float64            // the first rung above lo; the last at or under mid
	for _, per := range roundPer[:3] { // not per hour: no pace limit is written so
		for mag := 1.0; mag <= 1e4; mag *= 10 {
			for _, m := range roundMantissas {
				n := m * mag
				if !whole(n) {
					continue
				}
				q := r.settle * n / per
				if q <= lo || q >= top {
					continue
				}
				if next == 0 || q < next {
					next = q
				}
				if q <= mid && q > under {
					under = q
				}
			}
		}
	}
	if hi > pairFar*base && under > 0 {
		return under
	}
	return next
}
