package limit

import (
	"math"
	"strings"
	"testing"
	"time"
)

var rateTests = []struct {
	in   string
	want Rate
	str  string
}{
	{"30/min", Rate{30, time.Minute}, "30/min"},
	{"30/m", Rate{30, time.Minute}, "30/min"},
	{"5/s", Rate{5, time.Second}, "5/s"},
	{"5", Rate{5, time.Second}, "5/s"},
	{"100/h", Rate{100, time.Hour}, "100/h"},
	{"7/2s", Rate{7, 2 * time.Second}, "7/2s"},
	{"0.5/s", Rate{0.5, time.Second}, "0.5/s"},
	{"0", Rate{}, "0"},
}

func TestParseRate(t *testing.T) {
	for _, tc := range rateTests {
		got, err := ParseRate(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseRate(%q) = %v, %v, want %v", tc.in, got, err, tc.want)
		}
		if s := got.String(); s != tc.str {
			t.Errorf("ParseRate(%q).String() = %q, want %q", tc.in, s, tc.str)
		}
	}
	for _, bad := range []string{"x/min", "-1/s", "5/fortnight", "5/-1s", "NaN/s", "/", "1e309/s"} {
		if r, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) = %v, nil, want error", bad, r)
		}
	}
	if _, err := ParseRate("1e309/s"); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("ParseRate(1e309/s): %v, want the count out of range", err)
	}
	if hz := PerMinute(30).Hz(); hz != 0.5 {
		t.Errorf("PerMinute(30).Hz() = %v, want 0.5", hz)
	}
	if iv := PerMinute(30).Interval(); iv != 2*time.Second {
		t.Errorf("PerMinute(30).Interval() = %v, want 2s", iv)
	}
}

func FuzzParseRate(f *testing.F) {
	for _, tc := range rateTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		// What parses must print and parse back to the same rate.
		back, err := ParseRate(r.String())
		if err != nil || back.Hz() != r.Hz() && (back.Hz()-r.Hz())/r.Hz() > 1e-9 {
			t.Errorf("ParseRate(%q) = %v; re-parse of %q = %v, %v", s, r, r.String(), back, err)
		}
	})
}

// TestNegativeRateSaidAsItIs: a negative rate in a Config is refused
// naming the value given; it read "HostCeiling 0 must be a positive finite
// rate".
func TestNegativeRateSaidAsItIs(t *testing.T) {
	_, err := New(Config{HostCeiling: PerSecond(-3)})
	if err == nil || !strings.Contains(err.Error(), "HostCeiling -3/s must be a positive finite rate") {
		t.Errorf("New(HostCeiling -3/s) = %v, want it refused naming -3/s", err)
	}
}

// TestRateAccessorsAgree: IsZero, Hz and Interval read every Rate alike
// (NaN was not zero but had no rate: Hz NaN, Interval the longest), and a
// period of zero or less prints per second, as Hz reads it (it printed
// "5/-1s", which does not parse back).
func TestRateAccessorsAgree(t *testing.T) {
	for _, r := range []Rate{{}, {N: -3, Per: time.Second}, {N: math.NaN(), Per: time.Second}, {N: 5, Per: -time.Second}, {N: 5}, {N: 5, Per: time.Minute}, {N: 1e-300, Per: time.Second}} {
		zero := r.IsZero()
		if zero != (r.Hz() == 0) || zero != (r.Interval() == 0) {
			t.Errorf("%#v: IsZero %v, Hz %v, Interval %v: want all to say no rate, or none", r, zero, r.Hz(), r.Interval())
		}
		if zero {
			continue
		}
		back, err := ParseRate(r.String())
		if err != nil || back.Hz() != r.Hz() {
			t.Errorf("%#v prints %q, which parses to %v, %v", r, r.String(), back, err)
		}
	}
}
