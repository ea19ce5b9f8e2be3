package frontier

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/exitgate/exitgate/internal/hostname"
)

// Normalize returns the deduplication key of an absolute http or https URL.
//
// The normalisation is deliberately conservative: two URLs get the same key
// only when every server must treat them alike (RFC 3986 section 6.2.2 and
// the http(s) scheme rules). A missed duplicate costs one extra fetch; a
// false one silently drops a page. Normalize
//
//   - lowercases the scheme and the host; rewrites an IPv6 literal in its
//     canonical form;
//   - drops the port when it is the scheme's default (80, 443) or empty, and
//     writes other ports without leading zeros;
//   - drops the fragment, which is never sent to the server;
//   - writes an empty path as "/";
//   - in path and query, decodes percent-encoded unreserved characters
//     (%41 becomes A, %7E becomes ~), writes the other escapes in upper case
//     (%2f becomes %2F), percent-encodes bytes that may not appear raw (a
//     space becomes %20) and writes a stray '%' as %25.
//
// It keeps everything else as given, notably: the order of query
// parameters (some sites give it meaning), '+' versus %20 in the query,
// a trailing '?', dot segments and duplicate slashes in the path, the
// userinfo and a trailing dot in the host. An internationalised host name
// is keyed in its punycode form (internal/hostname), the form Go's client
// sends: "bücher.example" and "xn--bcher-kva.example" are one host and one
// page; a name the IDNA lookup rules refuse is rejected.
//
// Normalize rejects, with an error wrapping ErrInvalidURL, anything that
// is not an absolute http or https URL with a host: relative and opaque
// URLs, other schemes, malformed escapes or ports, port 0, and hosts with
// characters no host name has.
func Normalize(raw string) (string, error) {
	n, err := normalize(raw)
	if err != nil {
		return "", err
	}
	return n.key, nil
}

type normalized struct {
	key  string
	host string // lowercase host with non-default port: the default host key
}

// URLError says why Normalize rejected a URL. It wraps ErrInvalidURL.
// Readers of URL lists (internal/urlfile) report Reason next to their own
// file and line, so that a list is checked by the same rules as a push.
type URLError struct {
	URL    string // as given
	Reason string // what is wrong, e.g. `invalid port "0"`
}

func (e *URLError) Error() string {
	return fmt.Sprintf("%v %q: %s", ErrInvalidURL, e.URL, e.Reason)
}

// Unwrap returns ErrInvalidURL.
func (e *URLError) Unwrap() error { return ErrInvalidURL }

func invalid(raw, why string) error {
	return &URLError{URL: raw, Reason: why}
}

func normalize(raw string) (normalized, error) {
	if n, ok := normalizedAlready(raw); ok {
		return n, nil
	}
	return normalizeSlow(raw)
}

// normalizedAlready recognises, without allocating, the common URL that is
// its own key: a lowercase scheme and host, no userinfo, a port only when
// it is not the default one, a path that starts with '/', and only bytes
// that the key writes as they are (no '%', no '#'). Anything else returns
// false and goes the whole way through url.Parse; both ways agree on every
// URL this one accepts (TestNormalizedAlready, FuzzNormalize).
func normalizedAlready(raw string) (normalized, bool) {
	var rest, defPort string
	switch {
	case strings.HasPrefix(raw, "http://"):
		rest, defPort = raw[len("http://"):], "80"
	case strings.HasPrefix(raw, "https://"):
		rest, defPort = raw[len("https://"):], "443"
	default:
		return normalized{}, false
	}
	end := strings.IndexByte(rest, '/')
	if end <= 0 {
		return normalized{}, false // no host, or no path
	}
	authority := rest[:end]
	host, port, hasPort := strings.Cut(authority, ":")
	if host == "" {
		return normalized{}, false
	}
	numeric := true // digits, dots and hex: an address, maybe spelt otherwise
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return normalized{}, false
		}
		numeric = numeric && ('0' <= c && c <= '9' || c == '.' || c == 'x' || 'a' <= c && c <= 'f')
	}
	if numeric {
		if a, ok := hostname.NumericIPv4(host); ok && a.String() != host {
			return normalized{}, false // 127.1: the slow way writes 127.0.0.1
		}
	}
	if host[len(host)-1] == '.' {
		return normalized{}, false // its key leaves the dot out
	}
	if hasPort {
		if port == "" || len(port) > 5 || port[0] == '0' || port == defPort {
			return normalized{}, false
		}
		n := 0
		for i := 0; i < len(port); i++ {
			c := port[i]
			if c < '0' || c > '9' {
				return normalized{}, false
			}
			n = n*10 + int(c-'0')
		}
		if n > 65535 {
			return normalized{}, false
		}
	}
	// The first '?' starts the query, where later ones are kept as they
	// are too.
	for i := len(authority) + (len(raw) - len(rest)); i < len(raw); i++ {
		c := raw[i]
		switch {
		case isUnreserved(c) || c == '/' || c == ':' || c == '@' || c == '?':
		case c == '!' || c == '$' || c == '&' || c == '\'' || c == '(' || c == ')' || c == '*' || c == '+' || c == ',' || c == ';' || c == '=':
		default:
			return normalized{}, false
		}
	}
	return normalized{key: raw, host: authority}, true
}

// plainScheme reports whether s can be a URL scheme as one is written: a
// letter, then letters, digits, '+' or '-' (a dot makes it a host name).
func plainScheme(s string) bool {
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-'):
		default:
			return false
		}
	}
	return s != ""
}

// userinfoFirst reports whether sch:rest is a user name, a password and a
// host (user:pass@example.com/a), not a scheme and its part: unless sch is
// a scheme URLs are written with (mailto:x@example.com).
func userinfoFirst(sch, rest string) bool {
	switch strings.ToLower(sch) {
	case "http", "https", "mailto", "javascript", "data", "ftp", "ftps", "file", "tel", "sms", "ws", "wss", "about", "blob", "urn", "news", "irc", "ssh", "git":
		return false
	}
	at := strings.IndexByte(rest, '@')
	return at > 0 && !strings.ContainsAny(rest[:at], "/?#")
}

// notAbsolute says that raw has no scheme, with the http URL it likely
// meant when that is one: a host first, or //host (a bare /path has none,
// and an IPv6 address needs its brackets).
func notAbsolute(raw string) string {
	guess := "http://" + strings.TrimPrefix(raw, "//")
	if strings.HasPrefix(raw, "/") && !strings.HasPrefix(raw, "//") {
		guess = ""
	}
	if u, err := url.Parse(guess); guess != "" && err == nil && u.Hostname() != "" &&
		(!strings.Contains(u.Hostname(), ":") || strings.HasPrefix(u.Host, "[")) {
		return fmt.Sprintf("not an absolute URL (want http:// or https://: %s?)", Redact(guess))
	}
	return "not an absolute URL (want http:// or https://)"
}

func normalizeSlow(raw string) (normalized, error) {
	if raw == "" {
		return normalized{}, invalid(raw, "empty")
	}
	if sch, rest, ok := strings.Cut(raw, ":"); !ok || !plainScheme(sch) || rest != "" && rest[0] >= '0' && rest[0] <= '9' || userinfoFirst(sch, rest) {
		// A scheme forgotten: 127.0.0.1:8080/a read as "first path
		// segment in URL cannot contain colon", example.com:8080/a as
		// the scheme "example.com". (mailto:, javascript: and http:/x
		// keep what url.Parse makes of them, below.)
		return normalized{}, invalid(raw, notAbsolute(raw))
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the URL; keep only its cause.
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err
		}
		return normalized{}, invalid(raw, err.Error())
	}
	scheme := strings.ToLower(u.Scheme)
	var defPort string
	switch scheme {
	case "http":
		defPort = "80"
	case "https":
		defPort = "443"
	case "":
		return normalized{}, invalid(raw, "not an absolute URL (want http:// or https://)")
	default:
		return normalized{}, invalid(raw, fmt.Sprintf("scheme %q is not http or https", u.Scheme))
	}
	if u.Opaque != "" {
		return normalized{}, invalid(raw, "opaque url")
	}
	host, err := normalizeHost(u.Hostname())
	if err != nil {
		return normalized{}, invalid(raw, err.Error())
	}
	// The host key leaves out a name's final dot: example.com. is
	// example.com's server, and was a host (and a ceiling) of its own. The
	// URL keeps it, as written.
	keyHost := strings.TrimSuffix(host, ".")
	if keyHost == "" {
		keyHost = host
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return normalized{}, invalid(raw, fmt.Sprintf("invalid port %q", p))
		}
		if p = strconv.FormatUint(n, 10); p != defPort {
			host += ":" + p
			keyHost += ":" + p
		}
	}

	var b strings.Builder
	b.Grow(len(raw) + 8)
	b.WriteString(scheme)
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(u.User.String())
		b.WriteByte('@')
	}
	b.WriteString(host)
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	escapeURLPart(&b, path, false)
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteByte('?')
		escapeURLPart(&b, u.RawQuery, true)
	}
	return normalized{key: b.String(), host: keyHost}, nil
}

// normalizeHost lowercases a host name, writes an IPv6 literal in canonical
// form within brackets, and rejects characters no host name has: url.Parse
// accepts more than DNS, and some of it (a decoded '%') would not survive a
// second parse of the key.
func normalizeHost(h string) (string, error) {
	if h == "" {
		return "", fmt.Errorf("no host")
	}
	if strings.Contains(h, ":") {
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is6() {
			return "", fmt.Errorf("invalid ipv6 host %q", h)
		}
		key, _ := hostname.Address(h) // canonical, in brackets; an IPv4-mapped one as its IPv4
		return key, nil
	}
	if !utf8.ValidString(h) {
		return "", fmt.Errorf("host is not utf-8")
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c >= 0x80 || isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~' {
			continue
		}
		return "", fmt.Errorf("invalid character %q in host", c)
	}
	a, err := hostname.ASCII(h)
	if err != nil {
		return "", err
	}
	if key, ok := hostname.Address(a); ok {
		// An address in one spelling: 127.1, 2130706433 and
		// [::ffff:127.0.0.1] are one URL's host, 127.0.0.1, as browsers
		// read the first two (after the mapping: ₉ is 9, 0.0.0.9).
		return key, nil
	}
	return a, nil
}

// escapeURLPart writes a path or query in canonical escaping (see Normalize).
func escapeURLPart(b *strings.Builder, s string, query bool) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			d := unhex(s[i+1])<<4 | unhex(s[i+2])
			if isUnreserved(d) {
				b.WriteByte(d)
			} else {
				b.WriteByte('%')
				b.WriteByte(hex[d>>4])
				b.WriteByte(hex[d&15])
			}
			i += 2
		case c != '%' && (isUnreserved(c) || isSubDelim(c) || c == ':' || c == '@' || c == '/' || (query && c == '?')):
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isUnreserved(c byte) bool {
	return isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~'
}

func isSubDelim(c byte) bool {
	return strings.IndexByte("!$&'()*+,;=", c) >= 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// Redact returns raw with the password of its userinfo, if any, replaced
// by "xxxxx", as url.URL.Redacted does, but on the text itself: it holds
// for a URL that does not parse too (a line refused as invalid is printed
// with its reason). Messages and results show URLs through it; the job
// keeps the URL whole, whose credentials are sent as Basic auth.
func Redact(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	rest := raw[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return raw
	}
	colon := strings.Index(rest[:at], ":")
	if colon < 0 {
		return raw
	}
	return raw[:i+3] + rest[:colon+1] + "xxxxx" + rest[at:]
}
