package calibrate

import "testing"

func TestParseFigures(t *testing.T) {
	for _, tc := range []struct {
		line       string
		target     string
		util, r429 float64
		secs       float64
		ok, err    bool
	}{
		{"nginx-1rs 0.79 0.017", "nginx-1rs", 0.79, 0.017, 120, true, false},
		{"  haproxy-2per10s-ra30 0.5 0.17 600 ", "haproxy-2per10s-ra30", 0.5, 0.17, 600, true, false},
		{"", "", 0, 0, 0, false, false},
		{"# comment", "", 0, 0, 0, false, false},
		{"nginx 0.5", "", 0, 0, 0, false, true},
		{"nginx x 0.1", "", 0, 0, 0, false, true},
		{"nginx 0.5 -0.1", "", 0, 0, 0, false, true},
		{"nginx 0.5 0.1 0", "", 0, 0, 0, false, true},
		{"nginx NaN 0.1", "", 0, 0, 0, false, true},
	} {
		target, f, ok, err := ParseFigures(tc.line)
		if ok != tc.ok || (err != nil) != tc.err || target != tc.target ||
			(ok && (f.Utilization != tc.util || f.Ratio429 != tc.r429 || f.Seconds != tc.secs)) {
			t.Errorf("ParseFigures(%q) = %q, %+v, %v, %v", tc.line, target, f, ok, err)
		}
	}
}

func FuzzParseFigures(f *testing.F) {
	for _, s := range []string{"nginx-1rs 0.79 0.017", "a 1 2 3", "", "#", "x NaN Inf", "y 1e400 0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		target, fig, ok, err := ParseFigures(line)
		if ok && (err != nil || target == "" || fig.Seconds <= 0 || fig.Utilization < 0 || fig.Ratio429 < 0) {
			t.Errorf("ParseFigures(%q) = %q %+v %v %v", line, target, fig, ok, err)
		}
	})
}
