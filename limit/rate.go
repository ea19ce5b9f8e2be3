package limit

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Rate is a number of requests per period, such as 30 per minute. The zero
// value means "no rate" (unset or unlimited, as the field using it documents).
// Rate is a plain value, safe to copy and to use from many goroutines.
type Rate struct {
	N   float64       // requests
	Per time.Duration // period; zero is read as one second when N is set
}

// PerMinute returns a rate of n requests per minute.
func PerMinute(n float64) Rate { return Rate{N: n, Per: time.Minute} }

// PerSecond returns a rate of n requests per second.
func PerSecond(n float64) Rate { return Rate{N: n, Per: time.Second} }

// rateFromPerSecond converts requests per second into a Rate printed per
// minute below 1/s and per second above, which reads best for scrapers.
func rateFromPerSecond(ps float64) Rate {
	if ps <= 0 || math.IsNaN(ps) {
		return Rate{}
	}
	if ps < 1 {
		return Rate{N: round3(ps * 60), Per: time.Minute}
	}
	return Rate{N: round3(ps), Per: time.Second}
}

func round3(x float64) float64 {
	if math.IsInf(x, 0) {
		return x
	}
	return math.Round(x*1000) / 1000
}

// IsZero reports whether r is no rate: the zero rate, or a count that is
// not a positive number (negative, NaN), as Hz and Interval read it too.
func (r Rate) IsZero() bool { return !(r.N > 0) }

// Hz returns r in requests per second; 0 for no rate (IsZero).
func (r Rate) Hz() float64 {
	if r.IsZero() {
		return 0
	}
	per := r.Per
	if per <= 0 {
		per = time.Second
	}
	return r.N / per.Seconds()
}

// Interval returns the even spacing between two requests at r; 0 for no
// rate (IsZero).
func (r Rate) Interval() time.Duration {
	hz := r.Hz()
	if hz <= 0 {
		return 0
	}
	if d := float64(time.Second) / hz; d < math.MaxInt64 {
		return time.Duration(d)
	}
	return time.Duration(math.MaxInt64) // 1e-12/s: past what a Duration holds, which went negative
}

// String prints r as "30/min", "5/s", "100/h" or "7/2s"; the zero rate prints "0".
func (r Rate) String() string {
	if r.N == 0 {
		return "0"
	}
	// (A negative rate is said as it is: "HostCeiling -3/s must be a
	// positive finite rate", where it read "HostCeiling 0".)
	n := strconv.FormatFloat(r.N, 'g', -1, 64)
	switch {
	case r.Per <= 0 || r.Per == time.Second:
		// (A period of zero or less is read per second, by Hz too.)
		return n + "/s"
	case r.Per == time.Minute:
		return n + "/min"
	case r.Per == time.Hour:
		return n + "/h"
	}
	return n + "/" + r.Per.String()
}

// MarshalText implements encoding.TextMarshaler with the String form.
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseRate.
func (r *Rate) UnmarshalText(b []byte) error {
	p, err := ParseRate(string(b))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// ErrBadRate reports a rate string ParseRate cannot read.
var ErrBadRate = errors.New("bad rate")

// ParseRate reads "30/min", "30/m", "5/s", "100/h", "7/2s", "7/1m30s" or "0".
// A bare number is per second. It never panics.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if s == "0" || s == "" {
		return Rate{}, nil
	}
	num, unit, ok := strings.Cut(s, "/")
	if !ok {
		unit = "s"
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if math.IsInf(n, 0) {
		return Rate{}, fmt.Errorf("%w %q: count %s is out of range", ErrBadRate, s, strings.TrimSpace(num))
	}
	if err != nil || n < 0 || math.IsNaN(n) {
		return Rate{}, fmt.Errorf("%w %q: count must be a non-negative number", ErrBadRate, s)
	}
	var per time.Duration
	switch u := strings.TrimSpace(unit); u {
	case "s", "sec", "second":
		per = time.Second
	case "m", "min", "minute":
		per = time.Minute
	case "h", "hour":
		per = time.Hour
	default:
		per, err = time.ParseDuration(u)
		if err != nil || per <= 0 {
			return Rate{}, fmt.Errorf("%w %q: unknown period %q", ErrBadRate, s, u)
		}
	}
	if n == 0 {
		return Rate{}, nil
	}
	return Rate{N: n, Per: per}, nil
}
