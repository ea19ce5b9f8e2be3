package rlheader

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

// now is the instant most tables are pinned at.
var now = time.Date(2026, 3, 26, 16, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr error
	}{
		{"120", 120 * time.Second, nil},
		{"0", 0, nil},
		{"  30\t", 30 * time.Second, nil},
		{"2.0", 2 * time.Second, nil}, // Shopify
		{"1.5", 1500 * time.Millisecond, nil},
		{"+5", 5 * time.Second, nil},
		{"-1", 0, ErrNegative},
		{"-0.5", 0, ErrNegative},
		{"", 0, ErrEmpty},
		{"   ", 0, ErrEmpty},
		{"soon", 0, ErrSyntax},
		{"1e3", 0, ErrSyntax},
		{"0x10", 0, ErrSyntax},
		{"NaN", 0, ErrSyntax},
		{"1.2.3", 0, ErrSyntax},
		// IMF-fixdate, rfc850 and asctime, measured against now.
		{"Thu, 26 Mar 2026 16:01:00 GMT", time.Minute, nil},
		{"Thursday, 26-Mar-26 16:01:00 GMT", time.Minute, nil},
		{"Thu Mar 26 16:01:00 2026", time.Minute, nil},
		{"Thu Mar  6 16:00:00 2026", 0, nil}, // in the past: retry now
		// Go's time.RFC1123 writes UTC (github.com/sethvargo/go-limiter
		// sends it so); RFC1123Z a numeric zone.
		{"Thu, 26 Mar 2026 16:01:00 UTC", time.Minute, nil},
		{"Thu, 26 Mar 2026 16:01:00 +0000", time.Minute, nil},
		{"Thu, 26 Mar 2026 17:01:00 +0100", time.Minute, nil},
		{"Thu, 26 Mar 2026 16:01:00 UTC, Thu, 26 Mar 2026 16:01:00 UTC", time.Minute, nil},
		{"Thu, 26 Mar 2026 16:01:00", 0, ErrSyntax},
		// Joined by a proxy.
		{"120, 120", 120 * time.Second, nil},
		{"120,120,120", 120 * time.Second, nil},
		{"120, 60", 0, ErrConflict},
		{"120, soon", 0, ErrSyntax},
		{"Thu, 26 Mar 2026 16:01:00 GMT, Thu, 26 Mar 2026 16:01:00 GMT", time.Minute, nil},
		{"Thu, 26 Mar 2026 16:01:00 GMT, 60", time.Minute, nil},
		{"Thu, 26 Mar 2026 16:01:00 GMT, 61", 0, ErrConflict},
		{",,", 0, ErrSyntax},
		// Absurd values saturate instead of overflowing.
		{"99999999999999999999999", maxDuration, nil},
	}
	for _, tt := range tests {
		got, err := ParseRetryAfter(tt.in, now)
		if !errors.Is(err, tt.wantErr) || (err == nil && got != tt.want) {
			t.Errorf("ParseRetryAfter(%q) = %v, %v, want %v, %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestParseHTTPDateTwoDigitYear pins RFC 9110's 50-year rule, which differs
// from http.ParseTime's 69/70 pivot.
func TestParseHTTPDateTwoDigitYear(t *testing.T) {
	tests := []struct {
		now  time.Time
		in   string
		want int // year
	}{
		{now, "Sunday, 06-Nov-94 08:49:37 GMT", 1994},
		{now, "Sunday, 06-Nov-26 08:49:37 GMT", 2026},
		{now, "Sunday, 06-Nov-69 08:49:37 GMT", 2069}, // http.ParseTime: 1969
		{now, "Sunday, 06-Nov-70 08:49:37 GMT", 2070}, // http.ParseTime: 1970
		{now, "Sunday, 06-Nov-76 08:49:37 GMT", 1976}, // Nov 2076 is > 50 years after Mar 2026
		{now, "Sunday, 06-Nov-75 08:49:37 GMT", 2075}, // just under 50 years
		{now, "Sunday, 06-Nov-00 08:49:37 GMT", 2000},
		// The rule only corrects apparent future dates: read in the current
		// century, never moved forward.
		{time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), "Sunday, 06-Nov-05 08:49:37 GMT", 2005},
		{time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC), "Sunday, 06-Nov-39 08:49:37 GMT", 1939},
		{time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC), "Sunday, 06-Nov-89 08:49:37 GMT", 1989},
	}
	for _, tt := range tests {
		got, err := ParseHTTPDate(tt.in, tt.now)
		if err != nil || got.Year() != tt.want || got.Month() != time.November || got.Day() != 6 || got.Hour() != 8 {
			t.Errorf("ParseHTTPDate(%q, now %d) = %v, %v, want year %d", tt.in, tt.now.Year(), got, err, tt.want)
		}
	}
	// The difference from net/http is deliberate; keep it visible.
	if std, _ := http.ParseTime("Sunday, 06-Nov-69 08:49:37 GMT"); std.Year() != 1969 {
		t.Errorf("http.ParseTime pivot changed: got year %d, want 1969", std.Year())
	}
	// Feb 29 exists in 2000 but not in 1900.
	if got, err := ParseHTTPDate("Tuesday, 29-Feb-00 00:00:00 GMT", time.Date(2060, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil || got.Year() != 2000 {
		t.Errorf("ParseHTTPDate(29-Feb-00, 2060) = %v, %v, want 2000-02-29", got, err)
	}
}

func TestParseHTTPDateForms(t *testing.T) {
	want := time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)
	ref := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, in := range []string{
		"Sun, 06 Nov 1994 08:49:37 GMT",
		"Sunday, 06-Nov-94 08:49:37 GMT",
		"Sun Nov  6 08:49:37 1994",
		" Sun, 06 Nov 1994 08:49:37 GMT ",
		"sun, 06 nov 1994 08:49:37 GMT", // names without regard to case, as time.Parse
		"Mon, 06 Nov 1994 08:49:37 GMT", // weekday not checked, as time.Parse
		"Sun, 06 Nov 1994 08:49:37 UTC", // time.RFC1123 of a UTC time
		"Sun, 06 Nov 1994 08:49:37 +0000",
		"Sun, 06 Nov 1994 03:49:37 -0500",
	} {
		if got, err := ParseHTTPDate(in, ref); err != nil || !got.Equal(want) {
			t.Errorf("ParseHTTPDate(%q) = %v, %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{
		"", "Sun, 06 Nov 1994 08:49:37 gmt", "Sun, 06 Nov 1994 08:49:37 PST",
		"Sun, 6 Nov 1994 08:49:37 GMT", "1994-11-06T08:49:37Z", "Sun, 31 Feb 1994 08:49:37 GMT",
	} {
		if got, err := ParseHTTPDate(in, ref); err == nil {
			t.Errorf("ParseHTTPDate(%q) = %v, nil, want an error", in, got)
		}
	}
}
