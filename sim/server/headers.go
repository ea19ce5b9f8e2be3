package server

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// HeaderMode says which rate-limit fields a site sends.
type HeaderMode uint8

const (
	// HeadersNone sends no rate-limit fields at all: a bare 429.
	HeadersNone HeaderMode = iota
	// HeadersRetryAfter sends Retry-After (delay-seconds) on 429 only.
	HeadersRetryAfter
	// HeadersXRateLimit sends X-RateLimit-Limit, -Remaining and -Reset on
	// every limited-path response, and Retry-After on 429 unless
	// Config.NoRetryAfter.
	HeadersXRateLimit
	// HeadersIETF sends RateLimit-Policy and RateLimit
	// (draft-ietf-httpapi-ratelimit-headers) on every limited-path response,
	// and Retry-After on 429 unless Config.NoRetryAfter.
	HeadersIETF
	// HeadersIETFDraft8 sends the draft-8 fields exactly as
	// express-rate-limit 8 writes them (setDraft8Headers in
	// source/headers.ts) on every response:
	//
	//	RateLimit: "<name>"; r=<remaining>; t=<seconds to reset>
	//	RateLimit-Policy: "<name>"; q=<limit>; w=<window s>; pk=:<key>:
	//
	// with a space after each semicolon, the policy named by
	// Config.PolicyName (express names it "<limit>-in-<window>", e.g.
	// "30-in-1min") and a partition key per client: the first 12 hex digits
	// of the SHA-256 of the limiter key, base64-encoded (getPartitionKey).
	// t is ceil(seconds to the reset), 0 at the least. Retry-After, on 429
	// only unless Config.NoRetryAfter, is the same t (setRetryAfterHeader).
	HeadersIETFDraft8
	// HeadersRemaining sends X-RateLimit-Remaining alone on every
	// limited-path response, as Varnish's vsthrottle.remaining is sent
	// in its README's example (no limit, no reset), and Retry-After on
	// 429 unless Config.NoRetryAfter.
	HeadersRemaining
	// HeadersLimitRemaining sends X-RateLimit-Limit and -Remaining with no
	// reset on every limited-path response, as a bucket's size and level
	// are told (Shopify's X-Shopify-Shop-Api-Call-Limit: used/size, parsed
	// to the same), and Retry-After on 429 unless Config.NoRetryAfter.
	HeadersLimitRemaining
)

var headerModeNames = [...]string{HeadersNone: "none", HeadersRetryAfter: "retry-after", HeadersXRateLimit: "x-ratelimit", HeadersIETF: "ietf", HeadersIETFDraft8: "ietf-draft8", HeadersRemaining: "remaining", HeadersLimitRemaining: "limit-remaining"}

// String returns the kebab-case name.
func (m HeaderMode) String() string {
	if int(m) < len(headerModeNames) {
		return headerModeNames[m]
	}
	return fmt.Sprintf("headermode(%d)", uint8(m))
}

// HeadersLabel names what a site's responses say, for reports: the header
// mode, "+retry-after=Ns" for a constant Retry-After and
// "+retry-after-always" for flask-limiter's Retry-After on every response.
func HeadersLabel(c Config) string {
	l := c.Headers.String()
	if c.RetryAfter > 0 {
		l += fmt.Sprintf("+retry-after=%ds", ceilSeconds(c.RetryAfter))
	}
	if c.RetryAfterAlways {
		l += "+retry-after-always"
	}
	return l
}

// ResetFormat says how X-RateLimit-Reset is written.
type ResetFormat uint8

const (
	// ResetEpoch writes the Unix time in seconds at which the window ends
	// (GitHub style), rounded up.
	ResetEpoch ResetFormat = iota
	// ResetDelta writes the seconds until the window ends (Reddit style),
	// rounded up.
	ResetDelta
)

// Canonical forms, set directly in the map to skip canonicalisation.
const (
	hRetryAfter  = "Retry-After"
	hXRLLimit    = "X-Ratelimit-Limit"
	hXRLRemain   = "X-Ratelimit-Remaining"
	hXRLReset    = "X-Ratelimit-Reset"
	hRateLimit   = "Ratelimit"
	hRLPolicy    = "Ratelimit-Policy"
	hContentType = "Content-Type"
	hDate        = "Date"
)

// Shared, immutable value slices (cap = len, so an append copies).
var (
	ctText = []string{"text/plain; charset=utf-8"}[:1:1]
	ctHTML = []string{"text/html; charset=UTF-8"}[:1:1]
)

// ceilSeconds rounds d up to whole seconds, so a client that waits the
// advertised time is never early.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// hdrKey is everything a rendered header depends on, in the units written.
type hdrKey struct {
	limit, remaining int
	reset, window    int64  // seconds as written (epoch or delta); 0 if unused
	retry            int64  // Retry-After seconds; 0 = absent unless retryZero
	retryZero        bool   // Retry-After: 0 is sent
	pk               string // draft-8 partition key (HeadersIETFDraft8)
	date             int64  // Unix seconds of the Date header; 0 = none
}

// maxHeaderCache bounds the shared-header cache; it is emptied when full.
const maxHeaderCache = 4096

// headerLocked returns the header for decision d at now (ns) for key, whose
// state is ks. The numbers a
// header carries repeat a lot (a few limits, remaining counts and whole
// seconds), so rendered headers are cached and shared read-only, which
// keeps Handle allocation-free in steady state.
func (s *Site) headerLocked(d Decision, now int64, key string, ks *keyState) http.Header {
	var k hdrKey
	switch {
	case d.Allowed:
	case s.cfg.RetryAfter > 0:
		k.retry = ceilSeconds(s.cfg.RetryAfter)
	case s.cfg.Headers == HeadersRetryAfter || s.cfg.Headers > HeadersRetryAfter && !s.cfg.NoRetryAfter:
		k.retry = max(ceilSeconds(d.RetryAfter), 1)
	}
	if s.cfg.Date {
		k.date = floorDiv(now, int64(time.Second))
	}
	switch s.cfg.Headers {
	case HeadersNone, HeadersRetryAfter:
		if k.retry == 0 && k.date == 0 {
			return s.hPlain
		}
	case HeadersXRateLimit:
		k.limit, k.remaining = d.Limit, d.Remaining
		if s.cfg.ResetFormat == ResetDelta {
			k.reset = ceilSeconds(d.Reset)
		} else {
			k.reset = ceilDivSigned(now+int64(d.Reset), int64(time.Second))
			if s.cfg.RetryAfterAlways {
				// int(reset_at - time.time()): truncated toward zero.
				k.retry = max((k.reset*int64(time.Second)-now)/int64(time.Second), 0)
				k.retryZero = k.retry == 0
			}
		}
	case HeadersIETF:
		k.limit, k.remaining = d.Limit, d.Remaining
		k.reset = ceilSeconds(d.Reset)
		k.window = max(ceilSeconds(d.Window), 1)
	case HeadersRemaining:
		k.remaining = d.Remaining
	case HeadersLimitRemaining:
		k.limit, k.remaining = d.Limit, d.Remaining
	case HeadersIETFDraft8:
		k.limit, k.remaining = d.Limit, d.Remaining
		k.reset = ceilSeconds(d.Reset)
		k.window = ceilSeconds(d.Window)
		if ks.pk == "" {
			ks.pk = partitionKey(key)
		}
		k.pk = ks.pk
	}
	if h := s.hCache[k]; h != nil {
		return h
	}
	h := s.renderHeader(k)
	if len(s.hCache) >= maxHeaderCache {
		clear(s.hCache)
	}
	s.hCache[k] = h
	return h
}

func (s *Site) renderHeader(k hdrKey) http.Header {
	h := http.Header{hContentType: ctText}
	itoa := func(v int64) []string { return []string{strconv.FormatInt(v, 10)} }
	if k.retry > 0 || k.retryZero {
		h[hRetryAfter] = itoa(k.retry)
	}
	if k.date != 0 {
		h[hDate] = []string{time.Unix(k.date, 0).UTC().Format(http.TimeFormat)}
	}
	switch s.cfg.Headers {
	case HeadersXRateLimit:
		h[hXRLLimit] = itoa(int64(k.limit))
		h[hXRLRemain] = itoa(int64(k.remaining))
		h[hXRLReset] = itoa(k.reset)
	case HeadersRemaining:
		h[hXRLRemain] = itoa(int64(k.remaining))
	case HeadersLimitRemaining:
		h[hXRLLimit] = itoa(int64(k.limit))
		h[hXRLRemain] = itoa(int64(k.remaining))
	case HeadersIETF:
		name := `"` + s.cfg.PolicyName + `"`
		h[hRLPolicy] = []string{name + ";q=" + strconv.Itoa(k.limit) + ";w=" + strconv.FormatInt(k.window, 10)}
		h[hRateLimit] = []string{name + ";r=" + strconv.Itoa(k.remaining) + ";t=" + strconv.FormatInt(k.reset, 10)}
	case HeadersIETFDraft8:
		name := `"` + s.cfg.PolicyName + `"`
		h[hRLPolicy] = []string{name + "; q=" + strconv.Itoa(k.limit) + "; w=" + strconv.FormatInt(k.window, 10) + "; pk=:" + k.pk + ":"}
		h[hRateLimit] = []string{name + "; r=" + strconv.Itoa(k.remaining) + "; t=" + strconv.FormatInt(k.reset, 10)}
	}
	return h
}

// partitionKey is express-rate-limit 8's getPartitionKey: the first 12
// hex digits of the key's SHA-256, base64-encoded as text.
func partitionKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(sum[:])[:12]))
}

// ceilDivSigned is ceil(a/b) for b > 0 and any a.
func ceilDivSigned(a, b int64) int64 { return -floorDiv(-a, b) }

// validPolicyName reports whether n can sit in a Structured Fields String
// without escaping (printable ASCII, no quote or backslash).
func validPolicyName(n string) bool {
	for i := 0; i < len(n); i++ {
		c := n[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
