package calibrate

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/exitgate/exitgate/sim/measure"
)

// ReadFigures reads real runs' figures from a file of lines
// "target utilization ratio_429 [seconds]" (fractions; seconds default
// 120; blank lines and lines starting with # are skipped), until the
// harness hands measure.Figures over directly.
func ReadFigures(path string) (map[string]measure.Figures, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]measure.Figures{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		target, fig, ok, err := ParseFigures(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if ok {
			out[target] = fig
		}
	}
	return out, sc.Err()
}

// ParseFigures parses one line of ReadFigures' format; ok is false for a
// blank or comment line. It never panics.
func ParseFigures(line string) (target string, f measure.Figures, ok bool, err error) {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return "", f, false, nil
	}
	fs := strings.Fields(line)
	if len(fs) != 3 && len(fs) != 4 {
		return "", f, false, fmt.Errorf("want \"target utilization ratio_429 [seconds]\", got %d fields", len(fs))
	}
	f.Seconds = 120
	nums := []*float64{&f.Utilization, &f.Ratio429, &f.Seconds}
	for i, s := range fs[1:] {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 || v != v || v > 1e9 {
			return "", measure.Figures{}, false, fmt.Errorf("field %d: %q is not a non-negative number", i+2, s)
		}
		*nums[i] = v
	}
	if f.Seconds <= 0 {
		return "", measure.Figures{}, false, fmt.Errorf("seconds must be positive")
	}
	return fs[0], f, true, nil
}
