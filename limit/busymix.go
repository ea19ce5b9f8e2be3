package limit

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"
)

// A site that sheds load answers more 503s the faster it is sent, and to
// any URL alike; a site with flaky pages answers a steady share of them
// whatever the pace, and to the same URLs again. Two readings tell them
// apart once a 503 without Retry-After was read as load: the share of 503s
// at the slowest and the fastest pace since (busyTest), and the 503s to
// URLs that had one before against those to others (busyURLs). Either
// finding the pages' own errors lets go of what the 503s taught, and from
// then on a 503 without Retry-After is its URL's transient error while
// their share stays near what it was (every tenth URL of a direct crawl
// answering 503 half the time held a host at 2/s of the 40 it was allowed,
// each pair of 503s read as an overload and the rate cut again; through
// ten exits each was a lane's 429, 2.6/s of 36).

// busyMix is a host's last answers: which were 503s without Retry-After,
// and how fast they came lately.
type busyMix struct {
	bits uint64 // 1: a 503 without Retry-After; the newest at bit 0
	n    uint8  // answers in bits, up to 64
	// ans is the answers a second, decayed over busyRateTau, at ansAt.
	ans   float64
	ansAt int64
}

// busyRateTau is how fast the mix's answer rate forgets: a few seconds,
// where the host's send rate averages ten and reads a ramp's doubling
// late (15.5/s sent, 2/s read).
const busyRateTau = 2 * time.Second

func (m *busyMix) add(busy bool, now int64) {
	m.bits <<= 1
	if busy {
		m.bits |= 1
	}
	if m.n < 64 {
		m.n++
	}
	m.ans = m.rate(now) + 1/busyRateTau.Seconds()
	m.ansAt = now
}

// rate is the answers a second lately.
func (m *busyMix) rate(now int64) float64 {
	if m.ansAt == 0 {
		return 0
	}
	return m.ans * math.Exp(-secs(max(now-m.ansAt, 0))/busyRateTau.Seconds())
}

// share is the part of the last answers that were 503s without Retry-After.
func (m *busyMix) share() float64 {
	if m.n == 0 {
		return 0
	}
	b := m.bits
	if m.n < 64 {
		b &= 1<<m.n - 1
	}
	return float64(bits.OnesCount64(b)) / float64(m.n)
}

// busyTest compares the 503s at the slowest and the fastest the host was
// sent since its first 503 read as load (a host's overload, or a lane's 429
// from a per-IP limit that answers 503): samples of at least busySample
// answers over at least busySampleSpan each, their rate and share of 503s.
type busyTest struct {
	on     bool
	last   int64
	n, b   int32 // answers and 503s without Retry-After since last
	lo, hi busyPoint
}

// busyPoint is a sample: the host's answers a second and their share of
// 503s.
type busyPoint struct{ rate, share float64 }

const (
	busySample     = 32
	busySampleSpan = int64(4 * time.Second)
	// busyTestSlower is how far under the fastest sample the slowest must
	// be for the test to read them.
	busyTestSlower = 0.6
	// busyTestKept is the part of the share at the fastest that the share
	// at the slowest keeps where the 503s are not load: an overload's
	// share falls to nothing once the host is sent under its capacity.
	busyTestKept = 0.4
	// busyTestOK is how much more of the answers at the slowest may pass
	// than at the fastest where the 503s are not load: an overload passes
	// its capacity at any pace over it, the slowest pace's share as much
	// more as the fastest is faster (40/s on a capacity of 10 refuse 75%,
	// 20/s 50%: twice as much passes), where a flaky page's share stays.
	busyTestOK = 1.3
	// busyTestRise is how much more of the answers at the slowest may be
	// 503s than at the fastest, and half busyNoiseRise more: a share that
	// rose as the pace fell is load that grew (a site's capacity falling
	// from 45/s to 10/s: 2% at 40/s before, 56% at 6.7/s after).
	busyTestRise = 1.5
	// busyNoiseMax is the most 503s read as the pages' own: a site that
	// fails more of them is in trouble, whatever the pace.
	busyNoiseMax = 0.25
	// busyNoiseRise is how far over the share read as the pages' own the
	// 503s may rise before they are load again: twice it and this.
	busyNoiseRise = 0.1
	// busyNoiseOff is how long a host whose 503s were read as its pages'
	// own, then as load again, waits before they are read so again: a
	// capacity that comes and goes reset the lanes' learning at each turn.
	busyNoiseOff = int64(5 * time.Minute)
)

// mixAnswer records an answer of host h (busy: a 503 without Retry-After)
// and samples the share test when one is due.
func (r *rules) mixAnswer(h *host, busy bool, now int64) {
	h.mix.add(busy, now)
	t := &h.busyTest
	if !t.on || h.busyNoise > 0 {
		return
	}
	t.n++
	if busy {
		t.b++
	}
	if t.n < busySample || now-t.last < busySampleSpan {
		return
	}
	p := busyPoint{float64(t.n) / secs(now-t.last), float64(t.b) / float64(t.n)}
	t.n, t.b, t.last = 0, 0, now
	if t.lo.rate == 0 || p.rate < t.lo.rate {
		t.lo = p
	}
	if p.rate > t.hi.rate {
		t.hi = p
	}
	if t.lo.rate > busyTestSlower*t.hi.rate || t.hi.share == 0 {
		r.busyProbe(h, p, now)
		return
	}
	if now < h.busyQuiet || t.lo.share < busyTestKept*t.hi.share || 1-t.lo.share > busyTestOK*(1-t.hi.share) ||
		t.lo.share > busyTestRise*t.hi.share+busyNoiseRise/2 || t.lo.share > busyNoiseMax {
		// Load (or no reading yet since one was dropped, busyQuiet).
		// Read again from here: a share read from a few answers may
		// have moved by chance.
		t.lo, t.hi = p, p
		return
	}
	r.busyNoiseRead(h, max(t.lo.share, t.hi.share), now, fmt.Sprintf("503s at %.0f%% of the answers at %.3g/s and %.0f%% at %.3g/s", 100*t.lo.share, t.lo.rate, 100*t.hi.share, t.hi.rate))
}

// busyProbe lets the host's rate for 503s climb past the pace that drew
// them when a sample at its rate still holds some, no more than
// busyProbeShare, and no cut came over it (an overload's share is nothing
// under its capacity): the share test needs paces apart, and the rate
// held under the pace of the first cut gives none (a flaky tenth of a
// direct crawl, its first pair at 2.5/s, held the host at 1.2/s with a
// steady 5% for minutes). A flaky page's share stays as it climbs; load's
// rises, and the next cut reads it.
func (r *rules) busyProbe(h *host, p busyPoint, now int64) {
	hr := &h.rate
	if !hr.overloaded || h.scope.shared() || hr.hi == 0 || p.share == 0 || p.share > busyProbeShare || now-hr.epAt < busySampleSpan {
		return
	}
	hi := hr.hi * busyProbeStep
	h.note(r, now, "busy", "", "ceiling", hr.hi, hi, fmt.Sprintf("503s at a steady %.0f%% at %.3g/s: the host is tried faster (a flaky page's share stays, load's rises)", 100*p.share, p.rate))
	hr.hi = hi
}

const (
	// busyProbeShare is the most 503s a sample may hold for the probe.
	busyProbeShare = 0.2
	// busyProbeStep is how far above the pace that drew the 503s the
	// host's rate may climb for a probe.
	busyProbeStep = 1.5
)

// busyURLs counts the answers to URLs recently answered 503 without
// Retry-After (again) and to the others (fresh), and the 503s of each;
// expect sums the share of 503s among the host's last answers at each
// answer again: what load then would have refused of them (a retry comes
// soon after its 503, in the same spell of load, and the host's 503s since
// the test began, spells and calm alike, read a capacity that fell from
// 45/s to 10/s as flaky pages: 26% of the answers again, 6% of the others).
type busyURLs struct {
	ring             [16]uint64 // the URLs of the last 503s; 0: none
	next             uint8
	againN, again503 int32
	freshN, fresh503 int32
	expect           float64
}

const (
	// busyAgainMin and busyFreshMin are the answers the URL reading needs
	// of each kind, and busyAgainBusy the 503s among those again.
	busyAgainMin, busyFreshMin, busyAgainBusy = 6, 30, 3
	// busyAgainOdds is how much likelier a 503 is to a URL that had one
	// than to another where the 503s are the pages' own: a flaky tenth
	// answering 503 half the time is ten times likelier; load sheds any
	// URL alike, and a retry that waited out its backoff less.
	busyAgainOdds = 4
)

// urlAnswer records an answer to URL u (0: unknown) of host h and reads the
// URLs' odds once there are enough answers and a 503 was read as load.
func (r *rules) urlAnswer(h *host, u uint64, busy bool, now int64) {
	if u == 0 || h.busyNoise > 0 {
		return
	}
	b := &h.busyURLs
	if slices.Contains(b.ring[:], u) {
		b.againN++
		b.expect += h.mix.share()
		if busy {
			b.again503++
		}
	} else {
		b.freshN++
		if busy {
			b.fresh503++
			b.ring[b.next%uint8(len(b.ring))] = u
			b.next++
		}
	}
	if !h.busyTest.on || b.againN < busyAgainMin || b.freshN < busyFreshMin || b.again503 < busyAgainBusy {
		return
	}
	again := float64(b.again503) / float64(b.againN)
	fresh := float64(b.fresh503+1) / float64(b.freshN+1)
	local := b.expect / float64(b.againN) // the host's share of 503s when they were asked again
	if again < busyAgainOdds*max(fresh, local) || fresh > busyNoiseMax || now < h.busyQuiet {
		return
	}
	r.busyNoiseRead(h, max(fresh, h.mix.share()), now, fmt.Sprintf("%d of %d answers to URLs that had a 503 were 503s, %d of %d to others", b.again503, b.againN, b.fresh503, b.freshN))
}

// busyNoiseRead takes the 503s of host h for its pages' own errors: the
// host's rate for them is let go, and what its lanes learned, if 503s
// were all they learned from, is forgotten (each was read as a lane's 429:
// ten exits on a site whose tenth pages answer 503 held at 2.6/s of 36).
func (r *rules) busyNoiseRead(h *host, share float64, now int64, why string) {
	h.busyNoise = max(share, 1.0/busySample)
	h.note(r, now, "busy", "", "noise", 0, h.busyNoise, why+": the site's pages' own errors, not load; what they taught is let go")
	h.busyTest = busyTest{}
	if h.rate.overloaded && !h.scope.shared() {
		h.rate, h.pause = hostRate{}, 0
	} else if h.rate.overloaded {
		// A host that limits site-wide keeps its rate, less the 503s'
		// ceiling.
		h.rate.hi, h.rate.overloaded = 0, false
	}
	if h.busy429 == 0 || h.c.Throttled > h.busy429 || !h.exploring() || h.busyQuiet != 0 {
		// None read as a lane's 429: the lanes learned nothing of them
		// (a direct crawl's ramp goes on where the host's rate held it).
		// A 429 taught them too: a re-probe finds what the 503s cut.
		// (Read so once before: not again.)
		return
	}
	h.cap = capacity{}
	h.exp = explorer{quietAt: now}
	for _, l := range h.lanes {
		if l.x != nil {
			l.x.own = 0
		}
		l.cool, l.eps = min(l.cool, now), 0
		l.serAt, l.serSent, l.serOK = now, 0, 0
		r.setPace(h, l, h.paceFor(r, l.exit))
	}
}

// busyTestStart starts the share test at host h's first 503 read as load,
// its first sample the answers before (their share of 503s is the one or
// two that made it load, a share of a mix no larger than the true one).
func (h *host) busyTestStart(now int64) {
	if t := &h.busyTest; !t.on && h.busyNoise == 0 {
		*t = busyTest{on: true, last: now}
		// The URLs' counts from here: the host's healthy answers before
		// would make any 503 after read as a page's own.
		u := &h.busyURLs
		u.againN, u.again503, u.freshN, u.fresh503, u.expect = 0, 0, 0, 0, 0
		if h.mix.n >= busySample/2 {
			t.hi = busyPoint{h.mix.rate(now), h.mix.share()}
			t.lo = t.hi
		}
	}
}

// busyNoiseStands reports whether a 503 without Retry-After on host h is
// its URL's own error by the share read before (busyNoise): the last
// answers hold no more of them than twice that share and busyNoiseRise.
// Past that they are load again, and the reading is dropped.
func (h *host) busyNoiseStands(now int64) bool {
	if h.busyNoise == 0 {
		return false
	}
	if h.mix.share() <= 2*h.busyNoise+busyNoiseRise {
		return true
	}
	// Load, or more of the pages' errors than read: read afresh, not
	// before busyNoiseOff.
	h.busyNoise, h.busyQuiet = 0, now+busyNoiseOff
	return false
}
