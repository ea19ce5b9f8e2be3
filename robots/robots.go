// Package robots parses robots.txt (RFC 9309) and answers whether a path may
// be fetched, plus the non-standard but widely honoured Crawl-delay.
//
// Parsing is lenient, as RFC 9309 asks: unknown and malformed lines are
// skipped, the rest still applies, and nothing here panics. What a fetch of
// robots.txt means (4xx: no rules; 5xx or no answer: unreachable, ask again)
// is the caller's (fetch.Core).
//
// Why not github.com/temoto/robotstxt (Colly's): tried here at v1.1.2 (its
// last release, 2021), it departs from RFC 9309 where this package does not:
// one malformed line (a "Crawl-delay: 1s", an Allow before any User-agent)
// fails the whole file, which a caller can only read as "allow everything";
// a wildcard rule matches anywhere in the path ("Disallow: /a*b" blocks
// "/x/a1b"); a tie between Allow and Disallow goes to whichever came first
// instead of Allow; and percent-encoded paths are compared as written
// ("/%7Ejoe" does not match "/~joe"). TestRFC9309 holds those cases.
package robots

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"time"
)

// maxBytes is the most of a robots.txt that is parsed. RFC 9309 §2.5 asks
// crawlers to parse at least 500 KiB.
const maxBytes = 512 << 10

// Rules are the directives that apply to one user agent. The zero value
// allows everything with no crawl delay. Rules are immutable once parsed and
// safe for concurrent use.
type Rules struct {
	rules      []rule
	crawlDelay time.Duration
}

type rule struct {
	allow   bool
	pattern string
}

// AllowAll is the rule set used when robots.txt is missing (4xx) or
// unreadable, as RFC 9309 §2.3.1.3 says.
var AllowAll = &Rules{}

// DisallowAll is the rule set for a robots.txt that answers 5xx: RFC 9309
// §2.3.1.4 says to assume complete disallow until it can be read.
var DisallowAll = &Rules{rules: []rule{{allow: false, pattern: "/"}}}

// Parse reads a robots.txt and returns the rules for userAgent (matched
// case-insensitively against each group's User-agent product tokens), falling
// back to the "*" group.
func Parse(r io.Reader, userAgent string) *Rules {
	ua := strings.ToLower(productToken(userAgent))
	type group struct {
		agents []string
		rules  []rule
		delay  time.Duration
	}
	var groups []*group
	var cur *group
	inAgents := false // consecutive User-agent lines share one group

	sc := bufio.NewScanner(io.LimitReader(r, maxBytes))
	sc.Buffer(make([]byte, 0, 4096), maxBytes)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		switch key {
		case "user-agent":
			if !inAgents || cur == nil {
				cur = &group{}
				groups = append(groups, cur)
			}
			cur.agents = append(cur.agents, strings.ToLower(val))
			inAgents = true
		case "allow", "disallow":
			inAgents = false
			if cur == nil {
				continue
			}
			if val == "" { // "Disallow:" with no path allows everything
				continue
			}
			cur.rules = append(cur.rules, rule{allow: key == "allow", pattern: normalize(val)})
		case "crawl-delay":
			inAgents = false
			if cur == nil {
				continue
			}
			if s, err := strconv.ParseFloat(val, 64); err == nil && s > 0 {
				// A day or more (up to "inf") is held to a day, which
				// parks the host: a site asking that is asking not to be
				// crawled now (such a delay used to be ignored, and the
				// host crawled at full speed).
				cur.delay = time.Duration(min(s, maxCrawlDelay.Seconds()) * float64(time.Second))
			}
		default:
			// Sitemap and unknown keys do not end a group of user agents
			// per RFC 9309, but they carry no rules for us.
		}
	}

	var star, mine []*group
	for _, g := range groups {
		for _, a := range g.agents {
			switch {
			case a == "*":
				star = append(star, g)
			case ua != "" && (a == ua || strings.HasPrefix(ua, a)):
				mine = append(mine, g)
			}
		}
	}
	chosen := mine
	if len(chosen) == 0 {
		chosen = star
	}
	out := &Rules{}
	for _, g := range chosen { // RFC 9309 §2.2.1: groups for the same agent merge
		out.rules = append(out.rules, g.rules...)
		out.crawlDelay = max(out.crawlDelay, g.delay)
	}
	return out
}

// productToken returns the first product token of a User-Agent header value:
// "exitgate/1.0 (+https://...)" -> "exitgate".
func productToken(ua string) string {
	ua = strings.TrimSpace(ua)
	if i := strings.IndexAny(ua, "/ "); i >= 0 {
		ua = ua[:i]
	}
	return ua
}

// maxCrawlDelay bounds a Crawl-delay: a longer one is read as this.
const maxCrawlDelay = 24 * time.Hour

// CrawlDelay returns the Crawl-delay that applies, or 0 when none is given.
func (r *Rules) CrawlDelay() time.Duration { return r.crawlDelay }

// Allowed reports whether path (the URL's path plus "?query", as sent on the
// request line) may be fetched. The longest matching pattern wins; on a tie
// Allow wins (RFC 9309 §2.2.2). "/robots.txt" is always allowed.
func (r *Rules) Allowed(path string) bool {
	if path == "" {
		path = "/"
	}
	path = normalize(path)
	if path == "/robots.txt" {
		return true
	}
	best, allowed := -1, true
	for _, ru := range r.rules {
		if !match(ru.pattern, path) {
			continue
		}
		n := len(ru.pattern)
		if n > best || (n == best && ru.allow) {
			best, allowed = n, ru.allow
		}
	}
	return allowed
}

// match reports whether path matches pattern, where "*" matches any run of
// characters and a trailing "$" anchors the end.
func match(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	parts := strings.Split(pattern, "*")
	// The first part must be a prefix.
	if !strings.HasPrefix(path, parts[0]) {
		return false
	}
	rest := path[len(parts[0]):]
	for i := 1; i < len(parts); i++ {
		p := parts[i]
		if i == len(parts)-1 && anchored {
			return strings.HasSuffix(rest, p)
		}
		j := strings.Index(rest, p)
		if j < 0 {
			return false
		}
		rest = rest[j+len(p):]
	}
	// Only a pattern without "*" gets here anchored: it must match whole.
	return !anchored || rest == ""
}

// normalize puts a path or pattern in the form RFC 9309 §2.2.2 compares:
// percent-encoded unreserved characters (letters, digits, "-._~") decoded,
// other escapes in upper case, and bytes outside US-ASCII percent-encoded.
// "/%7ejoe" and "/~joe" both become "/~joe"; "/a%2fb" stays "/a%2Fb".
func normalize(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			v := unhex(s[i+1])<<4 | unhex(s[i+2])
			if isUnreserved(v) {
				b.WriteByte(v)
			} else {
				b.WriteByte('%')
				b.WriteByte(hex[v>>4])
				b.WriteByte(hex[v&15])
			}
			i += 2
		case c >= 0x80:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0
}
