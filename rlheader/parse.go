package rlheader

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// kind is what a relevant header is, by name.
type kind uint8

const (
	kRetryAfter kind = iota + 1 // Retry-After
	kWaitMillis                 // retry-after-ms, x-retry-after-ms, x-ms-retry-after-ms
	kIETF                       // RateLimit, Beta-RateLimit
	kIETFPolicy                 // RateLimit-Policy, Beta-RateLimit-Policy
	kFamily                     // RateLimit-*, X-RateLimit-*, X-Rate-Limit-*, Rate-Limit-*
	kShopify                    // X-Shopify-Shop-Api-Call-Limit
	kWaitNamed                  // Retry-After-<name>: a named policy's wait (NestJS's throttlers)
)

// Tiers of precedence for limit, remaining, window and reset.
const (
	tierIETF   = iota // RateLimit / RateLimit-Policy
	tierLegacy        // RateLimit-Limit / -Remaining / -Reset
	tierVendor        // X-RateLimit-* and friends
	numTiers
)

type entry struct {
	name  string   // as in the header map
	lower string   // lowercased name
	vals  []string // field lines
	kind  kind
	tier  int    // kFamily: tierLegacy or tierVendor
	rest  string // kIETF*: the vendor prefix ("" or "beta-"); kFamily: the name after the family prefix
}

// ipol is a policy with the header behind each of its numbers.
type ipol struct {
	Policy
	tier int
	// rider marks a policy that rode along in a limit field
	// ("100, 1000;w=3600"): listed, but the first value governs.
	rider                                    bool
	srcQuota, srcRemain, srcReset, srcWindow string
}

type parser struct {
	sig      Signal
	prof     Profile
	ents     []entry
	dateName string
	dateVals []string
	base     time.Time // the server's "now": Date header, else received
	pols     []ipol
	groups   []fgroup // the family's groups (family)
	// moreIgnored counts what was ignored past maxIgnored.
	moreIgnored int
	scr         *scratch // ents', pols' and groups' arrays, from scratchPool
}

// scratch is a parse's working arrays, kept between parses: a response
// with rate-limit headers took three arrays (1.5 KB of the 4 KB a typical
// 429 allocated); a plain one takes none, and no scratch.
type scratch struct {
	ents   []entry
	pols   []ipol
	groups []fgroup
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{ents: make([]entry, 0, 8), pols: make([]ipol, 0, 4), groups: make([]fgroup, 0, 4)}
}}

// take gives the parser its scratch arrays, emptied.
func (ps *parser) take() {
	ps.scr = scratchPool.Get().(*scratch)
	ps.ents, ps.pols, ps.groups = ps.scr.ents[:0], ps.scr.pols[:0], ps.scr.groups[:0]
}

// release hands the arrays back, as grown, their strings let go. A parse
// that grew one past a hostile answer's size leaves it to the collector.
func (ps *parser) release() {
	if ps.scr == nil {
		return
	}
	const keep = 64
	scr := ps.scr
	scr.ents, scr.pols, scr.groups = clearUpTo(ps.ents, keep), clearUpTo(ps.pols, keep), clearUpTo(ps.groups, keep)
	ps.scr, ps.ents, ps.pols, ps.groups = nil, nil, nil, nil
	scratchPool.Put(scr)
}

// clearUpTo empties s for reuse, or drops it when it grew past n.
func clearUpTo[T any](s []T, n int) []T {
	if cap(s) > n {
		return nil
	}
	clear(s)
	return s[:0]
}

// collect makes the single pass over the header map. Only names that
// maybeRelevant accepts are looked at more closely, so an ordinary response
// costs a byte or two and a suffix check per header, and no allocation.
func (ps *parser) collect(h map[string][]string) {
	for k, vs := range h {
		if len(k) == 4 && strings.EqualFold(k, "date") {
			if len(vs) > 0 && (ps.dateVals == nil || k < ps.dateName) { // deterministic if repeated in two spellings
				ps.dateName, ps.dateVals = k, vs
			}
			continue
		}
		if !maybeRelevant(k) {
			continue
		}
		lower := lowerName(k)
		e := entry{name: k, lower: lower, vals: vs}
		switch {
		case lower == "retry-after":
			e.kind = kRetryAfter
		case lower == "retry-after-ms" || lower == "x-retry-after-ms" || lower == "x-ms-retry-after-ms":
			e.kind = kWaitMillis
		case lower == "x-shopify-shop-api-call-limit":
			e.kind = kShopify
		case namedWait(lower):
			e.kind = kWaitNamed
		case strings.HasSuffix(lower, "ratelimit-policy") && (len(lower) == 16 || lower[len(lower)-17] == '-'):
			e.kind, e.rest = kIETFPolicy, lower[:len(lower)-16]
		case strings.HasSuffix(lower, "ratelimit") && (len(lower) == 9 || lower[len(lower)-10] == '-'):
			e.kind, e.rest = kIETF, lower[:len(lower)-9]
		default:
			tier, rest, ok := familyName(lower)
			if !ok {
				continue
			}
			e.kind, e.tier, e.rest = kFamily, tier, rest
		}
		if ps.scr == nil {
			ps.take()
		}
		ps.ents = append(ps.ents, e)
	}
}

// lowerName lowercases a header name. The common rate-limit names come back
// as constants so that parsing a typical head does not allocate for them.
func lowerName(k string) string {
	var buf [40]byte
	if len(k) > len(buf) {
		return strings.ToLower(k)
	}
	b := buf[:len(k)]
	for i := 0; i < len(k); i++ {
		c := k[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	for _, n := range commonNames {
		if string(b) == n {
			return n
		}
	}
	return string(b)
}

var commonNames = [...]string{
	"retry-after", "ratelimit", "ratelimit-policy",
	"ratelimit-limit", "ratelimit-remaining", "ratelimit-reset",
	"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset",
	"x-ratelimit-used", "x-ratelimit-resource", "x-ratelimit-reset-after",
	"x-ratelimit-bucket", "x-ratelimit-scope", "x-ratelimit-global", "x-ratelimit-rate",
	"x-rate-limit-limit", "x-rate-limit-remaining", "x-rate-limit-reset",
}

// maybeRelevant reports, ignoring ASCII case and without allocating,
// whether name may be a rate-limit header: it starts like one of the
// families (retry-after, ratelimit, rate-limit, x-...) or ends in
// "ratelimit" / "ratelimit-policy" (vendor-prefixed IETF fields). Ordinary
// headers fail on their first byte and a suffix check.
func maybeRelevant(name string) bool {
	if len(name) == 0 {
		return false
	}
	switch name[0] | 0x20 {
	case 'r':
		if hasFoldAt(name, 0, "retry-after") || hasFoldAt(name, 0, "ratelimit") || hasFoldAt(name, 0, "rate-limit") {
			return true
		}
	case 'x':
		if hasFoldAt(name, 0, "x-ratelimit") || hasFoldAt(name, 0, "x-rate-limit") || hasFoldAt(name, 0, "x-retry-after-ms") ||
			hasFoldAt(name, 0, "x-ms-retry-after-ms") || hasFoldAt(name, 0, "x-shopify-shop-api-call-limit") {
			return true
		}
	}
	return hasFoldSuffix(name, "ratelimit") || hasFoldSuffix(name, "ratelimit-policy")
}

func hasFoldSuffix(s, lower string) bool {
	return len(s) >= len(lower) && hasFoldAt(s, len(s)-len(lower), lower)
}

// hasFoldAt reports whether s[i:] starts with lower (lowercase ASCII),
// ignoring ASCII case in s.
func hasFoldAt(s string, i int, lower string) bool {
	if len(s)-i < len(lower) {
		return false
	}
	for j := 0; j < len(lower); j++ {
		c := s[i+j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[j] {
			return false
		}
	}
	return true
}

// familyName splits a lowercased X-RateLimit-family name into its tier and
// the part after the family prefix.
func familyName(lower string) (tier int, rest string, ok bool) {
	for _, p := range [...]struct {
		prefix string
		tier   int
	}{
		{"ratelimit-", tierLegacy},
		{"x-ratelimit-", tierVendor},
		{"x-rate-limit-", tierVendor},
		{"rate-limit-", tierVendor},
	} {
		if r, found := strings.CutPrefix(lower, p.prefix); found && r != "" {
			return p.tier, r, true
		}
	}
	return 0, "", false
}

func (ps *parser) ignore(header, value, reason string) {
	if len(ps.sig.Ignored) >= maxIgnored {
		ps.moreIgnored++ // (said once, at the end: ignoreTail)
		return
	}
	ps.sig.Ignored = append(ps.sig.Ignored, Ignored{Header: header, Value: value, Reason: reason})
}

// maxIgnored bounds the fields and items one answer lists as ignored: a
// hostile head of 20,000 bad items listed each.
const maxIgnored = 32

// ignoreTail says how many more were ignored than listed.
func (ps *parser) ignoreTail() {
	if ps.moreIgnored > 0 {
		ps.sig.Ignored = append(ps.sig.Ignored, Ignored{Reason: fmt.Sprintf("%d more fields or items ignored, not listed", ps.moreIgnored)})
	}
}

// maxReset is the farthest reset read as a quota's: a quota of a year
// resets within one, and a reset of 10^23 seconds, saturated, parked its
// host for the month the limiter bounds a wait by, a malformed header
// fatal to a host's crawl.
const maxReset = 366 * 24 * time.Hour

// plausibleReset reports whether reset d is within maxReset, and lists the
// field as ignored, with value's text, when it is not.
func (ps *parser) plausibleReset(header string, d time.Duration, value func() string) bool {
	if d <= maxReset {
		return true
	}
	ps.ignore(header, value(), "reset: more than a year away, no quota's")
	return false
}

// maxDateSkew is how far a Date may be from the receive time and still be
// the server's clock to measure its dates from: a clock hours off (a local
// time sent as GMT) is skew its dates share, one a day or more off is no
// clock.
const maxDateSkew = 24 * time.Hour

// serverNow is the server's "now" for a response with Date header date
// received at recv. A Date is whole seconds: when it agrees with the
// receive time to within that second, the clocks agree and the receive
// time is the finer measure (measuring from the truncated Date would move
// every reset up to a second later, and a window inferred from two resets
// by up to a second either way). Otherwise the clocks are skewed and the
// Date is the measure (its truncation errs towards waiting longer).
func serverNow(date, recv time.Time) time.Time {
	if d := recv.Sub(date); d >= 0 && d < time.Second+500*time.Millisecond {
		return recv
	}
	return date
}

// run interprets the collected headers. Entries are sorted by name first so
// that the outcome never depends on map order.
func (ps *parser) run() {
	if len(ps.ents) > 1 {
		slices.SortFunc(ps.ents, func(a, b entry) int {
			return cmp.Or(cmp.Compare(a.lower, b.lower), cmp.Compare(a.name, b.name))
		})
	}
	ps.base = ps.sig.Received
	if ps.dateVals != nil {
		v := ps.dateVals[0]
		if t, err := ParseHTTPDate(v, ps.sig.Received); err == nil && t.Sub(ps.sig.Received).Abs() > maxDateSkew && !ps.sig.Received.IsZero() {
			// A server whose clock is not set (1970) measured a
			// Retry-After date from then: 56 years, a day's wait.
			ps.ignore(ps.dateName, v, fmt.Sprintf("more than %v from the receive time: measuring from the receive time instead", maxDateSkew))
		} else if err == nil {
			ps.sig.ServerDate, ps.base = t, serverNow(t, ps.sig.Received)
		} else {
			ps.ignore(ps.dateName, v, "invalid HTTP-date; measuring from the receive time instead")
		}
	}
	ps.retryAfter()
	ps.ietf()
	ps.family()
	ps.combine()
	ps.ignoreTail()
}

// retryAfter applies Retry-After, then vendor waits when it is absent.
func (ps *parser) retryAfter() {
	var name string
	var vals []string
	for i := range ps.ents {
		e := &ps.ents[i]
		if e.kind == kRetryAfter {
			if name == "" {
				name = e.name
			}
			vals = appendLines(vals, e.vals)
		}
	}
	if name != "" {
		v := strings.Join(vals, ", ")
		if d, err := ParseRetryAfter(v, ps.base); err != nil {
			ps.ignore(name, v, err.Error())
		} else {
			ps.setRetryAfter(d, "Retry-After")
		}
	}
	for i := range ps.ents {
		e := &ps.ents[i]
		if e.kind != kWaitMillis {
			continue
		}
		v, err := single(e.vals)
		var f float64
		if err == nil {
			var ok bool
			f, ok, err = parseDecimal(v)
			if err == nil && !ok {
				err = ErrSyntax
			}
		}
		switch {
		case err != nil:
			ps.ignore(e.name, v, "millisecond wait: "+err.Error())
		case ps.sig.HasRetryAfter:
			ps.ignore(e.name, v, "superseded by "+ps.sig.Sources.RetryAfter)
		default:
			ps.setRetryAfter(millisToDuration(f), e.name)
		}
	}
	ps.namedWaits()
}

// namedWait reports whether a lowercased header name is Retry-After-<name>:
// NestJS's throttler names each of its throttlers' headers after it
// (Retry-After-short beside X-RateLimit-Limit-short), and a plain
// Retry-After only for the one named "default".
func namedWait(lower string) bool {
	name, ok := strings.CutPrefix(lower, "retry-after-")
	if !ok || name == "" || name == "ms" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// namedWaits takes the longest of the named policies' waits when no plain
// one was given: every policy that refused must have let go before a
// request passes.
func (ps *parser) namedWaits() {
	var (
		best    time.Duration
		bestSrc string
	)
	for i := range ps.ents {
		e := &ps.ents[i]
		if e.kind != kWaitNamed {
			continue
		}
		v := strings.Join(e.vals, ", ")
		d, err := ParseRetryAfter(v, ps.base)
		switch {
		case err != nil:
			ps.ignore(e.name, v, err.Error())
		case ps.sig.HasRetryAfter:
			ps.ignore(e.name, v, "superseded by "+ps.sig.Sources.RetryAfter)
		case bestSrc == "" || d > best || d == best && e.name < bestSrc:
			best, bestSrc = d, e.name
		}
	}
	if bestSrc != "" {
		ps.setRetryAfter(best, bestSrc)
	}
}

func (ps *parser) setRetryAfter(d time.Duration, src string) {
	s := &ps.sig
	s.RetryAfter, s.HasRetryAfter, s.Sources.RetryAfter = d, true, src
	s.RetryAfterAt = s.Received.Add(d)
	max := ps.prof.MaxRetryAfter
	if max == 0 {
		max = DefaultMaxRetryAfter
	}
	s.RetryAfterExcessive = max > 0 && d > max
}

// combine picks the governing policy of each tier and fills the top-level
// numbers tier by tier, so a higher tier always wins.
func (ps *parser) combine() {
	s := &ps.sig
	for tier := range numTiers {
		g := governing(ps.pols, tier)
		if g == nil {
			continue
		}
		if !s.HasLimit && g.HasQuota {
			s.Limit, s.HasLimit, s.Sources.Limit = g.Quota, true, g.srcQuota
		}
		if !s.HasRemaining && g.HasRemaining {
			s.Remaining, s.HasRemaining, s.Sources.Remaining = g.Remaining, true, g.srcRemain
		}
		if !s.HasWindow && g.Window > 0 {
			s.Window, s.HasWindow, s.Sources.Window = g.Window, true, g.srcWindow
		}
		if !s.HasReset && g.HasReset {
			s.Reset, s.HasReset, s.Sources.Reset = g.Reset, true, g.srcReset
			s.ResetAt = s.Received.Add(g.Reset)
		}
	}
	if len(ps.pols) > 0 {
		s.Policies = make([]Policy, len(ps.pols))
		for i := range ps.pols {
			s.Policies[i] = ps.pols[i].Policy
		}
	}
}

// governing returns the most restrictive request-counting policy of a tier,
// or nil.
func governing(pols []ipol, tier int) *ipol {
	var g *ipol
	for i := range pols {
		p := &pols[i]
		if p.tier != tier || p.rider || !p.CountsRequests() || !(p.HasQuota || p.HasRemaining || p.HasReset) {
			continue
		}
		if g == nil || moreRestrictive(p, g) {
			g = p
		}
	}
	return g
}

// moreRestrictive reports whether a constrains the client more than b:
// fewer remaining, else the later reset, else the lower rate.
func moreRestrictive(a, b *ipol) bool {
	if a.HasRemaining != b.HasRemaining {
		return a.HasRemaining
	}
	if a.HasRemaining && a.Remaining != b.Remaining {
		return a.Remaining < b.Remaining
	}
	if a.HasReset != b.HasReset {
		return a.HasReset
	}
	if a.HasReset && a.Reset != b.Reset {
		return a.Reset > b.Reset
	}
	if a.HasQuota && b.HasQuota && a.Window > 0 && b.Window > 0 {
		return float64(a.Quota)*float64(b.Window) < float64(b.Quota)*float64(a.Window)
	}
	return false
}

// single returns the one value of a field that may have been repeated or
// joined with commas by a proxy: all parts must agree. An HTTP-date's own
// comma ("Tue, 01 Dec 2026 19:47:46 GMT", a reset some servers send) does
// not split it: a weekday name is glued to the part after it when the two
// make a date.
func single(vals []string) (string, error) {
	out, have := "", false
	agree := func(v string) bool {
		if have && v != out {
			return false
		}
		out, have = v, true
		return true
	}
	for _, line := range vals {
		var day string // a weekday name waiting for the rest of its date
		for part := range strings.SplitSeq(line, ",") {
			part = trimOWS(part)
			switch {
			case day != "" && isDate(day+", "+part):
				part, day = day+", "+part, ""
			case day != "":
				// Not a date after all: the weekday was a value of its own.
				if !agree(day) {
					return strings.Join(vals, ", "), ErrConflict
				}
				day = ""
			case isWeekday(part):
				day = part
				continue
			}
			if part != "" && !agree(part) {
				return strings.Join(vals, ", "), ErrConflict
			}
		}
		if day != "" && !agree(day) { // a weekday alone at the end: a value like any other
			return strings.Join(vals, ", "), ErrConflict
		}
	}
	if !have {
		return "", ErrEmpty
	}
	return out, nil
}

// isDate reports whether s is an HTTP-date (the reference time only picks
// the century of a two-digit year, which validity does not depend on).
func isDate(s string) bool {
	_, err := ParseHTTPDate(s, time.Unix(0, 0))
	return err == nil
}

// isWeekday reports whether s is a day name as HTTP-dates begin with one
// ("Tue", "Tuesday"), in any case.
func isWeekday(s string) bool {
	for _, d := range [...]string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"} {
		if strings.EqualFold(s, d) || strings.EqualFold(s, d[:3]) {
			return true
		}
	}
	return false
}

// appendLines gathers the lines of a field met under several names. The
// common case, one name, reuses the header's own slice; later names force a
// copy so the header map is never written to.
func appendLines(dst, lines []string) []string {
	if dst == nil {
		return lines
	}
	return append(dst[:len(dst):len(dst)], lines...)
}

// addPolicy appends a policy, allocating room for a few at once.
func (ps *parser) addPolicy(p ipol) {
	ps.pols = append(ps.pols, p)
}
