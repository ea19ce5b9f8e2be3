// Package urlfile reads a crawl's URL list: one absolute http(s) URL per line,
// with blank lines and "#" comments allowed, and an optional UTF-8 byte order
// mark before the first line. A line is checked by the frontier's own rules
// (frontier.Normalize), so that every URL Read accepts is one the frontier
// takes. A bad line is reported with its file name and line number and
// skipped; it never stops the rest.
package urlfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/exitgate/exitgate/frontier"
)

// LineError is one line that could not be used.
type LineError struct {
	File   string
	Line   int
	Reason string
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason) }

// MaxLine is the longest line accepted; longer lines are reported.
const MaxLine = 64 << 10

// Read calls add for each usable URL of r, in order, and returns the bad
// lines. name labels errors. The error is non-nil only when r itself fails.
func Read(r io.Reader, name string, add func(rawURL string) error) ([]*LineError, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var bad []*LineError
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if n == 1 {
			// Editors on Windows start UTF-8 files with a byte order mark.
			line = strings.TrimPrefix(line, "\uFEFF")
		}
		if len(line) > MaxLine {
			bad = append(bad, &LineError{name, n, fmt.Sprintf("line is %d bytes, longer than %d", len(line), MaxLine)})
		} else if reason := check(line); reason != "" {
			bad = append(bad, &LineError{name, n, reason})
		} else if u := strings.TrimSpace(line); u != "" && !strings.HasPrefix(u, "#") {
			if aerr := add(u); aerr != nil {
				return bad, aerr
			}
		}
		if errors.Is(err, io.EOF) {
			return bad, nil
		}
		if err != nil {
			return bad, fmt.Errorf("%s: %w", name, err)
		}
	}
}

// check returns why a line is not a usable URL, or "" if it is (or is blank
// or a comment). Beyond the line's own form (one URL, no spaces), the rules
// are the frontier's.
func check(line string) string {
	s := strings.TrimSpace(line)
	if s == "" || strings.HasPrefix(s, "#") {
		return ""
	}
	if strings.ContainsAny(s, " \t") {
		return fmt.Sprintf("%q: a URL cannot contain spaces (one URL per line)", clip(s))
	}
	if _, err := frontier.Normalize(s); err != nil {
		var ue *frontier.URLError
		if errors.As(err, &ue) {
			return fmt.Sprintf("%q: %s", clip(s), ue.Reason)
		}
		return fmt.Sprintf("%q: %v", clip(s), err)
	}
	return ""
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
