// Package rawhead reads one HTTP response head from text, as "curl -sD -"
// prints it, for the headers command and its tests. It never fails: each line
// it cannot read is reported by number and skipped.
package rawhead

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/exitgate/exitgate/rlheader"
)

// Head is one response head as read from text. Problems lists the lines
// that could not be read, each named "line N" in its Header field.
type Head struct {
	Status     int    // 0 when there was no status line
	StatusLine string // as given
	Header     http.Header
	Body       []byte // what follows the blank line, for block-page sniffing
	Problems   []rlheader.Ignored
}

// Parse reads a raw response head as "curl -sD -" prints it: a status line
// (optional), header lines, CRLF or LF, folded continuation lines joined. It
// never fails: what it cannot read it reports in Problems. When heads follow
// each other (curl -L, 100 Continue) the last one wins. Header keeps each
// name as first spelled in the input.
func Parse(data []byte) Head {
	var hd Head
	lineNo := 0
	next := func() (string, bool) {
		if len(data) == 0 {
			return "", false
		}
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		lineNo++
		return strings.TrimSuffix(string(line), "\r"), true
	}
	// Skip blank lines before the first head.
	var line string
	var ok bool
	for {
		if line, ok = next(); !ok {
			return hd
		}
		if strings.TrimSpace(line) != "" {
			break
		}
	}
	for {
		hd = Head{Header: http.Header{}, Problems: hd.Problems[:0]}
		canonical := map[string]string{} // lowercase name -> first spelling
		if strings.HasPrefix(line, "HTTP/") {
			hd.StatusLine = line
			if code, ok := parseStatusLine(line); ok {
				hd.Status = code
			} else {
				hd.Problems = append(hd.Problems, rlheader.Ignored{Header: fmt.Sprintf("line %d", lineNo), Value: line, Reason: "malformed status line"})
			}
		} else {
			hd.addHeaderLine(line, lineNo, canonical, "")
		}
		last := ""
		for {
			if line, ok = next(); !ok || line == "" {
				break
			}
			last = hd.addHeaderLine(line, lineNo, canonical, last)
		}
		// A further head (after 1xx, or a redirect curl followed)?
		rest := data
		for len(rest) > 0 && (rest[0] == '\r' || rest[0] == '\n') {
			rest = rest[1:]
		}
		if bytes.HasPrefix(rest, []byte("HTTP/")) {
			peek := rest
			if i := bytes.IndexByte(peek, '\n'); i >= 0 {
				peek = peek[:i]
			}
			if _, ok := parseStatusLine(strings.TrimSuffix(string(peek), "\r")); ok {
				for {
					if line, _ = next(); strings.TrimSpace(line) != "" {
						break
					}
				}
				continue
			}
		}
		hd.Body = data
		return hd
	}
}

// addHeaderLine files one header line; it returns the name the next
// continuation line extends ("" when none).
func (hd *Head) addHeaderLine(line string, lineNo int, canonical map[string]string, last string) string {
	bad := func(reason string) string {
		hd.Problems = append(hd.Problems, rlheader.Ignored{Header: fmt.Sprintf("line %d", lineNo), Value: line, Reason: reason})
		return ""
	}
	if line[0] == ' ' || line[0] == '\t' {
		if last == "" {
			return bad("continuation line without a header before it")
		}
		vs := hd.Header[last]
		vs[len(vs)-1] = strings.TrimSpace(vs[len(vs)-1] + " " + strings.TrimSpace(line))
		return last
	}
	name, value, ok := strings.Cut(line, ":")
	if !ok {
		return bad("not a header line (no colon)")
	}
	if !isFieldName(name) {
		return bad("not a header line (invalid field name)")
	}
	lower := strings.ToLower(name)
	key, seen := canonical[lower]
	if !seen {
		key = name
		canonical[lower] = name
	}
	hd.Header[key] = append(hd.Header[key], strings.Trim(value, " \t"))
	return key
}

func parseStatusLine(line string) (int, bool) {
	_, rest, ok := strings.Cut(line, " ")
	if !ok {
		return 0, false
	}
	code, _, _ := strings.Cut(strings.TrimLeft(rest, " "), " ")
	if len(code) != 3 {
		return 0, false
	}
	n, err := strconv.Atoi(code)
	if err != nil || n < 100 {
		return 0, false
	}
	return n, true
}

// isFieldName reports whether s is an RFC 9110 token (a valid field name).
func isFieldName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
