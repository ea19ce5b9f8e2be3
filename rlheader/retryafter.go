package rlheader

import (
	"errors"
	"math"
	"strings"
	"time"
)

// Errors returned by the value parsers; Signal.Ignored reasons are built from
// them.
var (
	// ErrEmpty reports an empty value.
	ErrEmpty = errors.New("empty value")
	// ErrNegative reports a negative number where only non-negative ones
	// make sense.
	ErrNegative = errors.New("negative value")
	// ErrSyntax reports a value in none of the accepted forms.
	ErrSyntax = errors.New("unrecognised value")
	// ErrConflict reports a field repeated (or joined by a proxy) with
	// values that disagree.
	ErrConflict = errors.New("conflicting repeated values")
)

// maxDuration is the largest wait a time.Duration holds; larger values
// saturate here (and are far above any sane cap, so they get flagged).
const maxDuration = time.Duration(math.MaxInt64)

// ParseRetryAfter parses one Retry-After value as RFC 9110 §10.2.3 defines
// it and returns the delay it asks for.
//
// It accepts delay-seconds, decimal seconds ("2.0", leniently) and the three
// HTTP-date forms (see ParseHTTPDate). A date is measured against serverNow,
// which should be the response's own Date header when it has a valid one and
// the receive time otherwise; a date in the past means a zero delay. Two or
// more values joined by a proxy ("120, 120") are accepted when they agree
// and rejected with ErrConflict when they do not.
//
// The error is ErrEmpty, ErrNegative, ErrSyntax or ErrConflict.
func ParseRetryAfter(v string, serverNow time.Time) (time.Duration, error) {
	v = trimOWS(v)
	if v == "" {
		return 0, ErrEmpty
	}
	d, err := parseOneRetryAfter(v, serverNow)
	if err == nil || !strings.Contains(v, ",") {
		return d, err
	}
	// Joined values. HTTP-dates contain a comma themselves, so glue
	// comma-separated pieces together until they parse.
	var (
		have  bool
		first time.Duration
		start int
	)
	for i := 0; i <= len(v); i++ {
		if i < len(v) && v[i] != ',' {
			continue
		}
		piece := trimOWS(v[start:i])
		if piece == "" {
			start = i + 1
			continue
		}
		pd, perr := parseOneRetryAfter(piece, serverNow)
		if perr != nil {
			if i == len(v) {
				return 0, perr
			}
			continue // maybe the first half of an HTTP-date; keep gluing
		}
		if have && pd != first {
			return 0, ErrConflict
		}
		have, first = true, pd
		start = i + 1
	}
	if !have {
		return 0, ErrSyntax
	}
	return first, nil
}

func parseOneRetryAfter(v string, serverNow time.Time) (time.Duration, error) {
	if f, ok, err := parseDecimal(v); ok {
		if err != nil {
			return 0, err
		}
		return secondsToDuration(f), nil
	}
	t, err := ParseHTTPDate(v, serverNow)
	if err != nil {
		return 0, ErrSyntax
	}
	if d := t.Sub(serverNow); d > 0 {
		return d, nil
	}
	return 0, nil
}

// parseDecimal parses an optionally signed decimal number made only of
// digits and at most one dot (no exponents, no hex, no Inf/NaN). ok reports
// whether v looked like a number at all; err is ErrNegative for negative
// values.
func parseDecimal(v string) (f float64, ok bool, err error) {
	if v == "" {
		return 0, false, nil
	}
	neg := false
	s := v
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false, nil
	}
	digits, dots := 0, 0
	var ip, frac float64
	scale := 1.0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
			if dots == 0 {
				ip = ip*10 + float64(c-'0')
			} else if scale > 1e-18 {
				scale /= 10
				frac += float64(c-'0') * scale
			}
		case c == '.':
			dots++
			if dots > 1 {
				return 0, false, nil
			}
		default:
			return 0, false, nil
		}
	}
	if digits == 0 {
		return 0, false, nil
	}
	f = ip + frac
	if neg && f != 0 {
		return 0, true, ErrNegative
	}
	return f, true, nil
}

// secondsToDuration converts non-negative seconds, saturating instead of
// overflowing.
func secondsToDuration(s float64) time.Duration {
	if s >= float64(maxDuration)/float64(time.Second) {
		return maxDuration
	}
	return time.Duration(math.Round(s * float64(time.Second)))
}

func millisToDuration(ms float64) time.Duration {
	if ms >= float64(maxDuration)/float64(time.Millisecond) {
		return maxDuration
	}
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}

// ParseHTTPDate parses the three HTTP-date forms of RFC 9110 §5.6.7:
// IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), rfc850
// ("Sunday, 06-Nov-94 08:49:37 GMT") and asctime ("Sun Nov  6 08:49:37 1994").
//
// Unlike http.ParseTime, which pivots two-digit years at 69/70, an rfc850
// year follows RFC 9110's rule: a date that appears to be more than 50 years
// after now means the most recent past year with those last two digits.
// Day and month names are matched without regard to case and the weekday is
// not checked against the date (both as time.Parse does). The zone of the
// first two forms is GMT; "UTC", which Go's time.RFC1123 writes for a UTC
// time (github.com/sethvargo/go-limiter sends its reset and Retry-After so),
// is read as GMT in both, and the first form with a numeric zone
// (time.RFC1123Z) as what it says: refusing them would drop a server's
// whole rate-limit signal.
func ParseHTTPDate(s string, now time.Time) (time.Time, error) {
	s = trimOWS(s)
	if t, ok := parseIMFFixdate(s); ok {
		return t, nil
	}
	if t, err := time.Parse(time.RFC1123Z, s); err == nil {
		return t.UTC(), nil
	}
	rest, ok := strings.CutSuffix(s, " GMT")
	if !ok {
		rest, ok = strings.CutSuffix(s, " UTC")
	}
	if ok {
		if t, err := time.Parse("Mon, 02 Jan 2006 15:04:05", rest); err == nil {
			return t, nil
		}
		if t, err := time.Parse("Monday, 02-Jan-06 15:04:05", rest); err == nil {
			return fixTwoDigitYear(t, now)
		}
		return time.Time{}, ErrSyntax
	}
	if t, err := time.Parse(time.ANSIC, s); err == nil {
		return t, nil
	}
	return time.Time{}, ErrSyntax
}

// fixTwoDigitYear applies RFC 9110's rule literally: the two digits are read
// in the current century, and a date more than 50 years after now moves back
// a century. (A date far in the past stays there: the rule only corrects
// apparent future dates.)
func fixTwoDigitYear(t, now time.Time) (time.Time, error) {
	now = now.UTC()
	yy := t.Year() % 100
	y := now.Year()/100*100 + yy
	mk := func(y int) (time.Time, bool) {
		c := time.Date(y, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
		// Feb 29 of a year that is not a leap year does not exist.
		return c, c.Day() == t.Day()
	}
	c, ok := mk(y)
	if c.After(now.AddDate(50, 0, 0)) {
		c, ok = mk(y - 100)
	}
	if !ok {
		return time.Time{}, ErrSyntax
	}
	return c, nil
}

// trimOWS trims HTTP optional whitespace (spaces and tabs).
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// parseIMFFixdate is a fast path for the one form nearly every server sends
// ("Sun, 06 Nov 1994 08:49:37 GMT"), read by position. Anything unusual
// (other case, out-of-range fields) falls through to time.Parse.
func parseIMFFixdate(s string) (time.Time, bool) {
	if len(s) != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
		s[19] != ':' || s[22] != ':' || s[25:] != " GMT" {
		return time.Time{}, false
	}
	num := func(a string) int {
		n := 0
		for i := 0; i < len(a); i++ {
			if a[i] < '0' || a[i] > '9' {
				return -1
			}
			n = n*10 + int(a[i]-'0')
		}
		return n
	}
	day, year, hh, mm, ss := num(s[5:7]), num(s[12:16]), num(s[17:19]), num(s[20:22]), num(s[23:25])
	month := 0
	for i, m := range [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"} {
		if s[8:11] == m {
			month = i + 1
			break
		}
	}
	switch s[:3] { // a day name must be there, though, like time.Parse, we do not check it
	case "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun":
	default:
		return time.Time{}, false
	}
	if month == 0 || day < 1 || year < 0 || hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hh, mm, ss, 0, time.UTC)
	if t.Day() != day { // 31 Feb and friends
		return time.Time{}, false
	}
	return t, true
}
