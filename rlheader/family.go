package rlheader

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// fgroup gathers the headers of one family group: one tier and one suffix,
// such as X-RateLimit-Limit-Minute + X-RateLimit-Remaining-Minute.
type fgroup struct {
	tier   int
	suffix string
	qual   string // the qualifier written before the field (hapi's User), if any
	name   string // X-RateLimit-Resource, when given

	limit, remaining, used    int64
	hasLimit, hasRem, hasUsed bool
	srcLimit, srcRem, srcUsed string
	reset, resetAfter         time.Duration
	hasReset, hasResetAfter   bool
	srcReset, srcResetAfter   string
	window                    time.Duration
	srcWindow                 string
	rate                      float64 // a bucket's refill a second (restify); 0: none
	srcRate                   string
	cost                      int32  // the tokens each request takes (Spring Cloud Gateway); 0: one
	negRem                    bool   // remaining is below zero (hapi's -1), not yet taken
	negRaw                    string // its value, as sent
	riders                    []ipol // policies riding in the limit ("100, 100;w=10")
}

func (ps *parser) group(groups *[]fgroup, tier int, suffix, qual string) *fgroup {
	for i := range *groups {
		if g := &(*groups)[i]; g.tier == tier && g.suffix == suffix && g.qual == qual {
			return g
		}
	}
	if len(*groups) >= maxGroups {
		return nil // the caller lists the header as ignored
	}
	*groups = append(*groups, fgroup{tier: tier, suffix: suffix, qual: qual})
	return &(*groups)[len(*groups)-1]
}

// maxGroups bounds the policies one response may declare in the family's
// headers: a hostile answer of 32,000 groups (X-RateLimit-Limit-P1 ...)
// took 9 s of CPU to read, each header looked up among all before it.
const maxGroups = 64

const tooManyPolicies = "more rate-limit policies than one answer is read for"

// family parses the RateLimit-* / X-RateLimit-* family and Shopify's pair.
func (ps *parser) family() {
	groups := ps.groups
	defer func() { ps.groups = groups }() // (grown: handed back with the scratch)
	for i := range ps.ents {
		e := &ps.ents[i]
		switch e.kind {
		case kShopify:
			if g := ps.group(&groups, tierVendor, "api-call-limit", ""); g != nil {
				ps.shopify(e, g)
			} else {
				ps.ignore(e.name, strings.Join(e.vals, ", "), tooManyPolicies)
			}
		case kFamily:
			ps.familyField(e, &groups)
		}
	}
	for i := range groups {
		ps.groupPolicies(&groups[i])
	}
}

func (ps *parser) shopify(e *entry, g *fgroup) {
	v, err := single(e.vals)
	if err != nil {
		ps.ignore(e.name, v, err.Error())
		return
	}
	us, ss, ok := strings.Cut(v, "/")
	used, uerr := parseCount(trimOWS(us))
	size, serr := parseCount(trimOWS(ss))
	if !ok || uerr != nil || serr != nil {
		ps.ignore(e.name, v, "want used/size, such as 39/40")
		return
	}
	g.limit, g.hasLimit, g.srcLimit = size, true, e.name
	g.used, g.hasUsed, g.srcUsed = used, true, e.name
}

// familyField files one X-RateLimit-family header into its group.
func (ps *parser) familyField(e *entry, groups *[]fgroup) {
	rest := e.rest
	var field, suffix, qual string
	switch {
	case rest == "retry-after" || rest == "retry-after-ms" || rest == "retry-after-seconds" || rest == "after":
		// -Seconds: Bucket4j's Spring Boot starter (X-Rate-Limit-Retry-After-Seconds);
		// -After: Rust's tower_governor and actix-governor (X-RateLimit-After).
		ps.vendorWait(e, rest == "retry-after-ms")
		return
	case strings.HasPrefix(rest, "reset-after"):
		field, suffix = "reset-after", strings.TrimPrefix(rest[len("reset-after"):], "-")
	case rest == "replenish-rate" || rest == "burst-capacity" || rest == "requested-tokens":
		// Spring Cloud Gateway's token bucket: its refill a second, its
		// size, and the tokens each request takes (read as restify's
		// rate and size, the rate and Remaining counted in requests).
		switch rest {
		case "replenish-rate":
			field = "rate"
		case "burst-capacity":
			field = "limit"
		default:
			field = "cost"
		}
	default:
		field, suffix, _ = strings.Cut(rest, "-")
		switch field {
		case "limit", "remaining", "reset", "used":
			// The usual spelling: nothing more to look at (the rest are
			// looked for only here, off the common path).
		default:
			if suffix != "" && slices.Contains(qualifiedFields[:], suffix) && (field == "requests" || otherUnit(field)) {
				// The unit first (RapidAPI's X-RateLimit-Requests-Remaining):
				// the same policy as OpenAI's X-RateLimit-Remaining-Requests.
				field, suffix = suffix, field
			} else if q, f, ok := qualifiedField(field); ok {
				// hapi-rate-limit's X-RateLimit-UserRemaining: the qualifier
				// names a policy of requests, as a suffix does (-Minute).
				qual, field = q, f
			}
		}
	}
	millis := false
	if suffix == "ms" {
		millis, suffix = true, ""
	}
	raw := strings.Join(e.vals, ", ")
	switch field {
	case "limit", "remaining", "used", "reset", "reset-after", "window", "interval", "resource", "rate", "cost":
	case "bucket":
		v, err := single(e.vals)
		if err != nil {
			ps.ignore(e.name, raw, err.Error())
		} else if ps.sig.Bucket == "" {
			ps.sig.Bucket, ps.sig.Sources.Bucket = v, e.name
		}
		return
	case "scope", "global":
		ps.scope(e, field)
		return
	default:
		ps.ignore(e.name, raw, "unrecognised rate-limit header")
		return
	}
	g := ps.group(groups, e.tier, suffix, qual)
	if g == nil {
		ps.ignore(e.name, raw, tooManyPolicies)
		return
	}
	dup := func(have bool, src string) bool {
		if have {
			ps.ignore(e.name, raw, "duplicate of "+src)
		}
		return have
	}
	switch field {
	case "limit":
		if dup(g.hasLimit, g.srcLimit) {
			return
		}
		ps.limitField(e, g, raw)
	case "remaining", "used":
		v, err := single(e.vals)
		var n int64
		if err == nil {
			n, err = parseCount(v)
		}
		if err == ErrNegative && field == "remaining" && !g.hasRem && !g.negRem {
			// None left, if a limit is told (groupPolicies).
			g.negRem, g.srcRem, g.negRaw = true, e.name, raw
			return
		}
		if err != nil {
			ps.ignore(e.name, raw, field+": "+err.Error())
			return
		}
		if field == "remaining" {
			if g.negRem {
				ps.ignore(g.srcRem, g.negRaw, "duplicate of "+e.name)
				g.negRem = false
			}
			if !dup(g.hasRem, g.srcRem) {
				g.remaining, g.hasRem, g.srcRem = n, true, e.name
			}
		} else if !dup(g.hasUsed, g.srcUsed) {
			g.used, g.hasUsed, g.srcUsed = n, true, e.name
		}
	case "reset", "reset-after":
		mode := ps.prof.Reset
		if field == "reset-after" {
			// Reset-After is a delta by definition (Discord).
			mode = ResetDeltaSeconds
			if millis || ps.prof.Reset == ResetDeltaMillis {
				mode = ResetDeltaMillis
			}
		} else if millis && mode == ResetAuto {
			mode = resetAutoMillis
		}
		d, err := ParseReset(raw, ps.base, mode)
		if err != nil {
			v, serr := single(e.vals)
			if serr != nil {
				if serr == ErrConflict {
					err = serr
				}
				ps.ignore(e.name, raw, field+": "+err.Error())
				return
			}
			if d, err = ParseReset(v, ps.base, mode); err != nil {
				ps.ignore(e.name, raw, field+": "+err.Error())
				return
			}
		}
		if !ps.plausibleReset(e.name, d, func() string { return raw }) {
			return
		}
		if field == "reset" {
			if !dup(g.hasReset, g.srcReset) {
				g.reset, g.hasReset, g.srcReset = d, true, e.name
			}
		} else if !dup(g.hasResetAfter, g.srcResetAfter) {
			g.resetAfter, g.hasResetAfter, g.srcResetAfter = d, true, e.name
		}
	case "window", "interval":
		v, err := single(e.vals)
		var d time.Duration
		if err == nil {
			d, err = parseWindow(v)
		}
		if err != nil {
			ps.ignore(e.name, raw, field+": "+err.Error())
			return
		}
		if !dup(g.srcWindow != "", g.srcWindow) {
			g.window, g.srcWindow = d, e.name
		}
	case "resource":
		v, err := single(e.vals)
		if err != nil {
			ps.ignore(e.name, raw, err.Error())
			return
		}
		g.name = v
	case "rate":
		v, err := single(e.vals)
		f, ok := 0.0, false
		if err == nil {
			f, ok, err = parseDecimal(v)
		}
		if err != nil || !ok || f <= 0 {
			ps.ignore(e.name, raw, "rate: want a positive number of requests a second")
			return
		}
		if !dup(g.srcRate != "", g.srcRate) {
			g.rate, g.srcRate = f, e.name
		}
	case "cost":
		v, err := single(e.vals)
		var n int64
		if err == nil {
			n, err = parseCount(v)
		}
		if err != nil || n < 1 || n > math.MaxInt32 {
			ps.ignore(e.name, raw, "tokens a request takes: want a whole number of 1 or more")
			return
		}
		if g.cost != 0 {
			ps.ignore(e.name, raw, "duplicate")
			return
		}
		g.cost = int32(n)
	}
}

// qualifiedFields are the fields a family header may carry with a
// qualifier written before them in the same word, or after its unit
// (X-RateLimit-Requests-Limit).
var qualifiedFields = [...]string{"limit", "remaining", "reset", "used"}

// qualifiedField splits a field written with a qualifier before it in one
// word, as hapi-rate-limit names its headers (X-RateLimit-UserLimit,
// -UserRemaining, -UserReset; -PathLimit for its per-path policy), into the
// qualifier and the field: "userremaining" is ("user", "remaining"). The
// qualifier is letters only, so a field spelled plainly never splits.
func qualifiedField(word string) (qualifier, field string, ok bool) {
	for _, f := range qualifiedFields {
		q, found := strings.CutSuffix(word, f)
		if !found || q == "" {
			continue
		}
		for i := 0; i < len(q); i++ {
			if q[i] < 'a' || q[i] > 'z' {
				return "", "", false
			}
		}
		return q, f, true
	}
	return "", "", false
}

// rateWindows are the windows a bucket's rate is written over as a whole
// count per window (bucketQuota).
var rateWindows = [...]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 10 * time.Second, time.Minute, time.Hour}

// bucketQuota writes a bucket's refill of rate a second as a quota per
// window: the shortest of rateWindows that holds a whole count (0.5/s is 1
// per 2 s), else as many whole requests an hour as it refills.
func bucketQuota(rate float64) (int64, time.Duration) {
	for _, w := range rateWindows {
		n := rate * w.Seconds()
		if r := math.Round(n); r >= 1 && math.Abs(n-r) <= 1e-9*n {
			return int64(r), w
		}
	}
	return max(1, int64(rate*3600)), time.Hour
}

// limitField reads a limit, possibly with policies riding along
// ("100, 100;w=10", an older IETF draft's form).
func (ps *parser) limitField(e *entry, g *fgroup, raw string) {
	var (
		have  bool
		first int64
	)
	if v, err := single(e.vals); err == nil {
		if w, ok := periodValue(trimOWS(v)); ok {
			// AspNetCoreRateLimit writes its rule's period where the
			// limit goes (X-Rate-Limit-Limit: 1m): the window, no quota.
			if g.srcWindow == "" {
				g.window, g.srcWindow = w, e.name
			}
			return
		}
	}
	for _, line := range e.vals {
		for part := range strings.SplitSeq(line, ",") {
			part = trimOWS(part)
			if part == "" {
				continue
			}
			numStr, params, hasParams := strings.Cut(part, ";")
			n, err := parseCount(trimOWS(numStr))
			if err != nil {
				ps.ignore(e.name, raw, "limit: "+err.Error())
				return
			}
			var w time.Duration
			if hasParams {
				for kv := range strings.SplitSeq(params, ";") {
					k, val, _ := strings.Cut(trimOWS(kv), "=")
					if k != "w" {
						continue // comment= and friends carry nothing we use
					}
					f, ok, err := parseDecimal(trimOWS(val))
					if !ok || err != nil || f <= 0 {
						ps.ignore(e.name, raw, "limit: w must be a positive number of seconds")
						return
					}
					w = secondsToDuration(f)
				}
			}
			switch {
			case !have:
				have, first = true, n
				if w > 0 {
					g.window, g.srcWindow = w, e.name
				}
			case w > 0:
				if n == first && g.srcWindow == "" {
					g.window, g.srcWindow = w, e.name
					continue
				}
				if n == first && g.window == w {
					continue
				}
				p := ipol{tier: g.tier, rider: true, srcQuota: e.name, srcWindow: e.name}
				p.Quota, p.HasQuota, p.Window, p.Source = n, true, w, e.name
				g.riders = append(g.riders, p)
			case n != first:
				ps.ignore(e.name, raw, "limit: "+ErrConflict.Error())
				return
			}
		}
	}
	if !have {
		ps.ignore(e.name, raw, "limit: "+ErrEmpty.Error())
		return
	}
	g.limit, g.hasLimit, g.srcLimit = first, true, e.name
}

func (ps *parser) scope(e *entry, field string) {
	raw := strings.Join(e.vals, ", ")
	v, err := single(e.vals)
	if err != nil {
		ps.ignore(e.name, raw, err.Error())
		return
	}
	var sc Scope
	switch strings.ToLower(v) {
	case "user", "per-user", "client", "ip":
		sc = ScopeUser
	case "global":
		sc = ScopeGlobal
	case "shared":
		sc = ScopeShared
	case "true":
		if field == "global" {
			sc = ScopeGlobal
		}
	case "false":
		if field == "global" {
			return // says only that this is not the global limit
		}
	}
	if sc == ScopeUnknown {
		ps.ignore(e.name, raw, "unrecognised scope")
		return
	}
	// An explicit Scope header is more specific than Global: true.
	if ps.sig.Scope == ScopeUnknown || field == "scope" {
		ps.sig.Scope, ps.sig.Sources.Scope = sc, e.name
	}
}

// vendorWait handles X-RateLimit-Retry-After (seconds or a date) and
// -Retry-After-Ms, used only when there is no Retry-After.
func (ps *parser) vendorWait(e *entry, millis bool) {
	raw := strings.Join(e.vals, ", ")
	var d time.Duration
	var err error
	if millis {
		var v string
		v, err = single(e.vals)
		if err == nil {
			var f float64
			var ok bool
			f, ok, err = parseDecimal(v)
			if err == nil && !ok {
				err = ErrSyntax
			}
			d = millisToDuration(f)
		}
	} else {
		d, err = ParseRetryAfter(raw, ps.base)
	}
	switch {
	case err != nil:
		ps.ignore(e.name, raw, "wait: "+err.Error())
	case ps.sig.HasRetryAfter:
		ps.ignore(e.name, raw, "superseded by "+ps.sig.Sources.RetryAfter)
	default:
		ps.setRetryAfter(d, e.name)
	}
}

// groupPolicies turns a group into policies.
func (ps *parser) groupPolicies(g *fgroup) {
	if g.negRem {
		if g.hasLimit {
			// A count taken past zero of a limit told beside it
			// (hapi-rate-limit's -1 on its 429s): none left.
			g.remaining, g.hasRem = 0, true
		} else {
			ps.ignore(g.srcRem, g.negRaw, "remaining: "+ErrNegative.Error())
		}
	}
	if g.cost > 1 && g.rate > 0 {
		// Tokens counted in requests: Spring Cloud Gateway's one request
		// a minute is a refill of 1 token a second, 60 a request.
		g.rate /= float64(g.cost)
		g.remaining /= int64(g.cost)
	}
	if g.hasLimit || g.hasRem || g.hasReset || g.hasResetAfter || g.hasUsed || g.rate > 0 {
		p := ipol{tier: g.tier}
		p.Name = g.name
		if p.Name == "" {
			p.Name = g.suffix
			if g.qual != "" {
				p.Name = strings.TrimSuffix(g.qual+"-"+g.suffix, "-")
			}
		}
		if g.hasLimit {
			p.Quota, p.HasQuota, p.srcQuota = g.limit, true, g.srcLimit
		}
		if g.rate > 0 {
			// A token bucket that tells its refill (restify's throttle
			// plugin: X-RateLimit-Rate beside X-RateLimit-Limit, the
			// bucket's size, and -Remaining, its whole tokens): the rate
			// is the quota a steady pace meets, and the size says
			// nothing of a window. Read as a count per window, the size
			// and the run a full bucket let through (16 in 7.5 s from a
			// bucket of 10 refilled at 1/s) read as 16 per 10 s.
			p.Quota, p.Window = bucketQuota(g.rate)
			p.HasQuota, p.srcQuota, p.srcWindow = true, g.srcRate, g.srcRate
			if g.hasLimit {
				ps.ignore(g.srcLimit, strconv.FormatInt(g.limit, 10), "the bucket's size beside its rate ("+g.srcRate+"): not a quota per window")
			}
		}
		switch {
		case g.hasRem:
			p.Remaining, p.HasRemaining, p.srcRemain = g.remaining, true, g.srcRem
		case g.hasUsed && g.hasLimit:
			p.Remaining, p.HasRemaining, p.srcRemain = max(0, g.limit-g.used), true, g.srcUsed
		}
		switch {
		case g.hasResetAfter:
			// A delta is immune to clock skew: prefer it.
			p.Reset, p.HasReset, p.srcReset = g.resetAfter, true, g.srcResetAfter
		case g.hasReset:
			p.Reset, p.HasReset, p.srcReset = g.reset, true, g.srcReset
		}
		if g.rate == 0 {
			p.Window, p.srcWindow = g.window, g.srcWindow
		}
		if p.Window == 0 {
			if w := suffixWindow(g.suffix); w > 0 {
				p.Window, p.srcWindow = w, firstNonEmpty(g.srcLimit, g.srcRem, g.srcReset, g.srcResetAfter)
			}
		}
		switch {
		case g.suffix == "requests":
			p.Unit = g.suffix
		case otherUnit(g.suffix):
			p.Unit = g.suffix // tokens, bytes: not requests
		}
		// Any other suffix names a period (Kong's -Minute) or a policy of
		// requests (NestJS names its throttlers' headers after them:
		// X-RateLimit-Limit-short, -medium, -long).
		p.Source = firstNonEmpty(g.srcRate, g.srcLimit, g.srcRem, g.srcUsed, g.srcReset, g.srcResetAfter)
		ps.addPolicy(p)
	} else if g.srcWindow != "" {
		ps.ignore(g.srcWindow, g.window.String(), "a window without a limit, remaining or reset")
	}
	ps.pols = append(ps.pols, g.riders...)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// otherUnit reports whether a family name's suffix names a unit other
// than requests (OpenAI's -tokens, a count of bytes, points or credits).
func otherUnit(suffix string) bool {
	if suffix == "" {
		return false
	}
	last := suffix[strings.LastIndexByte(suffix, '-')+1:] // input-tokens: tokens
	switch last {
	case "tokens", "bytes", "points", "credits", "cost", "concurrency", "concurrent":
		return true
	}
	return false
}

// suffixWindow maps a name suffix such as "minute" to its window.
func suffixWindow(s string) time.Duration {
	switch s {
	case "second", "seconds", "sec", "s":
		return time.Second
	case "minute", "minutes", "min", "m":
		return time.Minute
	case "hour", "hours", "h":
		return time.Hour
	case "day", "days", "d":
		return 24 * time.Hour
	case "week", "weeks":
		return 7 * 24 * time.Hour
	}
	return 0
}

// parseWindow reads X-RateLimit-Window / -Interval: seconds, a Go duration
// ("1m"), or a unit word ("minute").
func parseWindow(v string) (time.Duration, error) {
	if f, ok, err := parseDecimal(v); ok {
		if err != nil {
			return 0, err
		}
		if f == 0 {
			return 0, ErrSyntax
		}
		return secondsToDuration(f), nil
	}
	if w := suffixWindow(strings.ToLower(v)); w > 0 {
		return w, nil
	}
	if d, err := parseGoDuration(v); err == nil && d > 0 {
		return d, nil
	}
	return 0, ErrSyntax
}

// periodValue reads a period written as a number and one unit letter, as
// AspNetCoreRateLimit writes its rules' (5s, 1m, 12h, 7d).
func periodValue(v string) (time.Duration, bool) {
	if len(v) < 2 {
		return 0, false
	}
	var unit time.Duration
	switch v[len(v)-1] {
	case 's':
		unit = time.Second
	case 'm':
		unit = time.Minute
	case 'h':
		unit = time.Hour
	case 'd':
		unit = 24 * time.Hour
	default:
		return 0, false
	}
	f, ok, err := parseDecimal(v[:len(v)-1])
	if !ok || err != nil || f <= 0 || f*float64(unit) > float64(maxDuration) {
		return 0, false
	}
	return time.Duration(f * float64(unit)), true
}

// parseCount reads a count: an integer or a decimal such as Reddit's
// "598.0" (floored), never negative.
func parseCount(v string) (int64, error) {
	f, ok, err := parseDecimal(v)
	switch {
	case v == "":
		return 0, ErrEmpty
	case !ok:
		return 0, ErrSyntax
	case err != nil:
		return 0, err
	}
	if f >= math.MaxInt64 {
		return math.MaxInt64, nil
	}
	return int64(f), nil
}

// resetAutoMillis is the auto mode for names ending in -ms: epoch
// milliseconds when huge, else delta milliseconds.
const resetAutoMillis ResetMode = 255

// ParseReset reads one reset value and returns the time from the response
// until the reset. serverNow is the server's clock at the response (its Date
// header when valid, else the receive time); absolute values are measured
// against it, and a reset in the past yields zero.
//
// Bare numbers (decimals allowed) are read as mode says, ResetAuto deciding
// by magnitude. Go duration strings ("6m0s", "250ms", "1h2m3.5s") are
// deltas; ISO 8601 times ("2026-03-26T16:00Z") and HTTP-dates are absolute.
// The error is ErrEmpty, ErrNegative or ErrSyntax.
func ParseReset(v string, serverNow time.Time, mode ResetMode) (time.Duration, error) {
	v = trimOWS(v)
	if v == "" {
		return 0, ErrEmpty
	}
	if f, ok, err := parseDecimal(v); ok {
		if err != nil {
			return 0, err
		}
		switch mode {
		case resetAutoMillis:
			if f >= 1e12 {
				return sinceEpoch(f/1000, serverNow), nil
			}
			return millisToDuration(f), nil
		case ResetEpochSeconds:
			return sinceEpoch(f, serverNow), nil
		case ResetEpochMillis:
			return sinceEpoch(f/1000, serverNow), nil
		case ResetDeltaSeconds:
			return secondsToDuration(f), nil
		case ResetDeltaMillis:
			return millisToDuration(f), nil
		default:
			switch {
			case f >= 1e12:
				return sinceEpoch(f/1000, serverNow), nil
			case f >= 1e9:
				return sinceEpoch(f, serverNow), nil
			default:
				return secondsToDuration(f), nil
			}
		}
	}
	if d, err := parseGoDuration(v); err == nil {
		if d < 0 {
			return 0, ErrNegative
		}
		return d, nil
	}
	if t, ok := parseISO8601(v); ok {
		return untilTime(t, serverNow), nil
	}
	if t, err := ParseHTTPDate(v, serverNow); err == nil {
		return untilTime(t, serverNow), nil
	}
	return 0, ErrSyntax
}

// sinceEpoch returns the time from serverNow until the Unix time sec,
// clamped at zero. Float arithmetic keeps absurd inputs from overflowing.
func sinceEpoch(sec float64, serverNow time.Time) time.Duration {
	now := float64(serverNow.Unix()) + float64(serverNow.Nanosecond())/1e9
	if d := sec - now; d > 0 {
		return secondsToDuration(d)
	}
	return 0
}

func untilTime(t, serverNow time.Time) time.Duration {
	if d := t.Sub(serverNow); d > 0 {
		return d
	}
	return 0
}

// parseGoDuration accepts time.ParseDuration's syntax but only with a unit
// letter, so bare numbers stay numbers.
func parseGoDuration(v string) (time.Duration, error) {
	if v == "" || v[len(v)-1] < 'a' || v[len(v)-1] > 'z' {
		return 0, ErrSyntax
	}
	return time.ParseDuration(v)
}

var isoLayouts = [...]string{
	time.RFC3339Nano,
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04Z0700",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999", // no zone: UTC, as servers mean it
	"2006-01-02T15:04",
}

// parseISO8601 reads the ISO 8601 / RFC 3339 shapes seen in reset headers.
func parseISO8601(v string) (time.Time, bool) {
	if len(v) < 16 || v[4] != '-' || v[7] != '-' {
		return time.Time{}, false
	}
	for _, l := range isoLayouts {
		if t, err := time.Parse(l, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
