package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/pool"
)

// parseRate reads a rate flag with limit.ParseRate and, when it cannot,
// suggests the spelling it takes: --host-rate 20rps → "did you mean 20/s?".
func parseRate(flag, s string) (limit.Rate, error) {
	r, err := limit.ParseRate(s)
	if err == nil {
		return r, nil
	}
	if sug := suggestRate(s); sug != "" {
		return r, fmt.Errorf("%s: %w (did you mean %s?)", flag, err, sug)
	}
	return r, fmt.Errorf("%s: %w (want a count per period: 10/s, 600/min, 100/h, 7/2s)", flag, err)
}

// isNumber reports whether s is a number strconv reads, out of range or not.
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil || errors.Is(err, strconv.ErrRange)
}

// rateUnits maps the ways people write a period to the one ParseRate takes.
var rateUnits = map[string]string{
	"s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
	"m": "min", "min": "min", "mins": "min", "minute": "min", "minutes": "min",
	"h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
	"d": "24h", "day": "24h", "days": "24h",
}

// suggestRate returns what a rate that ParseRate refused was probably meant
// to be ("20rps" → "20/s", "5 req/min" → "5/min", "100 per hour" → "100/h",
// "2/seconds" → "2/s"), or "" when it cannot tell.
func suggestRate(s string) string {
	s = strings.TrimSpace(s)
	if count, _, _ := strings.Cut(s, "/"); isNumber(count) {
		if _, err := limit.ParseRate(count); err != nil {
			return "" // a count ParseRate refuses (1e309, -5, NaN): no spelling to suggest
		}
	}
	i := 0
	digits := func() {
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
	}
	digits()
	if j := i + 1; i > 0 && j < len(s) && (s[i] == 'e' || s[i] == 'E') {
		if s[j] == '+' || s[j] == '-' {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' { // an exponent: 1e3rps
			i = j
			digits()
		}
	}
	num := s[:i]
	if _, err := strconv.ParseFloat(num, 64); err != nil {
		return ""
	}
	if before, _, _ := strings.Cut(s[i:], "/"); strings.ContainsAny(before, "0123456789") {
		return "" // a number not read whole (0x10/s): "0/s" turned the ceiling off
	}
	unit := strings.ToLower(strings.Join(strings.Fields(s[i:]), ""))
	switch {
	case strings.Contains(unit, "/"):
		_, unit, _ = strings.Cut(unit, "/")
	case strings.HasPrefix(unit, "per"):
		unit = strings.TrimPrefix(unit, "per")
	case strings.HasSuffix(unit, "ps"), strings.HasSuffix(unit, "pm"), strings.HasSuffix(unit, "ph"):
		// rps, qps, reqps, rpm, rph: requests per s, m, h
		unit = unit[len(unit)-1:]
		if unit == "m" {
			unit = "min"
		}
	default:
		for _, word := range []string{"requests", "request", "reqs", "req", "r", "q"} {
			if rest, ok := strings.CutPrefix(unit, word); ok && rest != "" {
				unit = rest
				break
			}
		}
	}
	per, ok := rateUnits[strings.TrimPrefix(unit, "per")]
	if !ok {
		return ""
	}
	sug := num + "/" + per
	if _, err := limit.ParseRate(sug); err != nil || sug == s {
		return ""
	}
	return sug
}

// parseHeaders reads -H values, "Name: value" as curl takes them, into a
// header. User-Agent is returned apart: it also picks the robots.txt group.
// Headers that the transport sets itself (Host, framing, hop-by-hop) are
// refused rather than silently dropped or doubled. An error names the -H by
// its place and the header by its name, never the value: a token or a
// password is often what was mistyped (-H 'Authorization Bearer TOKEN').
func parseHeaders(values []string) (http.Header, string, error) {
	h := http.Header{}
	ua := ""
	for i, v := range values {
		name, val, ok := strings.Cut(v, ":")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		switch {
		case !ok:
			return nil, "", fmt.Errorf("-H #%d: want \"Name: value\" (no colon; the value is not repeated here)", i+1)
		case !isToken(name):
			return nil, "", fmt.Errorf("-H #%d: the part before the colon is not a header name", i+1)
		case strings.ContainsAny(val, "\r\n\x00"):
			return nil, "", fmt.Errorf("-H #%d (%s): the value holds a line break or NUL", i+1, http.CanonicalHeaderKey(name))
		case !httpguts.ValidHeaderFieldValue(val):
			// Go's transport refuses such a request: every URL was
			// retried and abandoned as a "transport error".
			return nil, "", fmt.Errorf("-H #%d (%s): the value holds a control character (%s)", i+1, http.CanonicalHeaderKey(name), firstControl(val))
		}
		key := http.CanonicalHeaderKey(name)
		switch key {
		case "Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade", "Proxy-Connection", "Proxy-Authorization":
			return nil, "", fmt.Errorf("-H #%d: %s is set by the transport (proxy credentials go in the proxy's URL)", i+1, key)
		case "User-Agent":
			if val == "" {
				// curl's way to drop the header; it was sent anyway.
				return nil, "", fmt.Errorf("-H #%d: an empty User-Agent: exitgate always sends one (default %q); give it with --user-agent", i+1, fetch.DefaultUserAgent)
			}
			if ua != "" && ua != val {
				return nil, "", fmt.Errorf("-H #%d: a second User-Agent (%q after %q): give one", i+1, val, ua)
			}
			ua = val
			continue
		}
		h.Add(key, val)
	}
	return h, ua, nil
}

// checkHeaderValue refuses a value Go's transport would refuse to send
// (a control character: every request failed, each URL abandoned as a
// "transport error"), naming the flag.
func checkHeaderValue(flag, val string) error {
	if httpguts.ValidHeaderFieldValue(val) {
		return nil
	}
	return fmt.Errorf("%s holds a control character (%s): a header value cannot (a YAML block scalar, | or >, ends its value with a line break: write it on the key's line)", flag, firstControl(val))
}

// firstControl names the first control character of s and where it is.
func firstControl(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return fmt.Sprintf("%q at byte %d", string(c), i+1)
		}
	}
	return "none"
}

// isToken reports whether s is an HTTP token (RFC 9110 §5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// loadProxies reads the exits of --proxies FILE and of every -x/--proxy
// value as one list, so that IDs are unique across both and two sessions on
// one gateway are told apart wherever they were given. A bad line names
// FILE:LINE, the Nth bad -x value "--proxy:N". Credentials are never printed.
func loadProxies(file string, urls []string) ([]pool.Exit, error) {
	var data []byte
	if file != "" {
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return nil, err
		}
	}
	return parseProxies(file, data, urls)
}

// parseProxies is loadProxies on a list already read; name is its name in
// errors ("" for none).
func parseProxies(name string, data []byte, urls []string) ([]pool.Exit, error) {
	if name != "" && len(urls) > 0 && !hasExitLine(data) {
		// The file is empty (a list a failed download emptied): refused
		// even beside -x, where it ran on the -x exits alone, unsaid.
		// The -x exits come back with the error, for --proxy-template.
		exits, err := parseProxies("", nil, urls)
		if err != nil {
			return nil, err
		}
		return exits, fmt.Errorf("%s: %w (one exit a line; write \"direct\" for this machine's own address)", name, errNoExits)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	fileLines := bytes.Count(data, []byte("\n"))
	for _, u := range urls {
		if strings.ContainsAny(u, "\r\n") {
			return nil, errors.New("--proxy: a value holds a line break")
		}
		data = append(data, u...)
		data = append(data, '\n')
	}
	if name == "" {
		name = "--proxy"
	}
	exits, err := pool.Parse(bytes.NewReader(data), name)
	var les pool.LineErrors
	if errors.As(err, &les) {
		for _, le := range les {
			if le.Line > fileLines {
				le.File, le.Line = "--proxy", le.Line-fileLines
			}
			if le.FirstLine > fileLines {
				le.FirstFile, le.FirstLine = "--proxy", le.FirstLine-fileLines
			}
		}
	}
	if err == nil && len(exits) == 1 && exits[0].Kind() == pool.Direct && !hasDirectLine(data) {
		return nil, fmt.Errorf("%s: %w (one exit a line; write \"direct\" for this machine's own address)", name, errNoExits)
	}
	return exits, err
}

// errNoExits is a proxy list with no exit in it (empty, or comments only).
// pool.Parse reads it as one direct exit; given as --proxies, with no
// --proxy-template beside it, it is refused: a crawl meant to go out
// through proxies went out from this machine's own address, unasked.
var errNoExits = errors.New("no exits in it")

// hasExitLine reports whether a proxy list has a line other than blanks and
// comments.
func hasExitLine(data []byte) bool {
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			return true
		}
	}
	return false
}

// hasDirectLine reports whether a proxy list names the direct exit itself.
func hasDirectLine(data []byte) bool {
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if i := strings.IndexAny(line, " \t"); i >= 0 {
			line = line[:i] // " # comment"
		}
		if strings.EqualFold(line, "direct") {
			return true
		}
	}
	return false
}
