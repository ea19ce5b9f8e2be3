package pool

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/exitgate/exitgate/internal/hostname"
)

// Sentinels wrapped by LineError, so callers can branch with errors.Is.
var (
	ErrSyntax      = errors.New("malformed exit")
	ErrScheme      = errors.New("unsupported proxy scheme")
	ErrHost        = errors.New("bad host")
	ErrPort        = errors.New("bad port")
	ErrCredentials = errors.New("bad credentials")
	ErrBind        = errors.New("bad bind address")
	ErrDuplicate   = errors.New("duplicate exit")
	ErrTemplate    = errors.New("bad session template")
)

// Limits that keep a typo (bind:10.0.0.0-10.255.255.255) from allocating millions of exits.
const (
	MaxBindRange = 4096   // addresses in one bind: range
	MaxSessions  = 100000 // sessions from one template
)

// LineError is one bad line of a proxy list. Its message names the file, line and the
// field that is wrong, and never contains a password:
//
//	proxies.txt:7: port "99999" out of range
type LineError struct {
	File   string // name given to Parse, or the path given to ParseFile
	Line   int    // 1-based
	Reason string // what is wrong, e.g. `port "99999" out of range`
	Err    error  // one of the ErrXxx sentinels
	// FirstLine is, for a duplicate, the line the exit was first given on,
	// in FirstFile when that is not File (a list put together from a file
	// and command-line values names each part).
	FirstFile string
	FirstLine int
}

func (e *LineError) Error() string {
	s := fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	switch {
	case e.FirstLine == 0:
	case e.FirstFile == "" || e.FirstFile == e.File:
		s += fmt.Sprintf(" (first on line %d)", e.FirstLine)
	default:
		s += fmt.Sprintf(" (first at %s:%d)", e.FirstFile, e.FirstLine)
	}
	return s
}

// Unwrap returns the sentinel.
func (e *LineError) Unwrap() error { return e.Err }

// LineErrors is every bad line of one list, in line order.
type LineErrors []*LineError

func (es LineErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap lets errors.Is and errors.As see each line error.
func (es LineErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// fieldError is a line error before the file and line are known.
type fieldError struct {
	err    error
	reason string
}

func (e *fieldError) Error() string { return e.reason }
func (e *fieldError) Unwrap() error { return e.err }

func errorf(sentinel error, format string, args ...any) *fieldError {
	return &fieldError{err: sentinel, reason: fmt.Sprintf(format, args...)}
}

// ParseFile reads a proxy list from path; see Parse.
func ParseFile(path string) ([]Exit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads a proxy list, one exit per line, and returns the exits in line order.
// name is used in error messages. Accepted lines:
//
//	http://user:pass@host:port   also https://, socks5://, socks5h:// (default ports 80, 443, 1080)
//	user:pass@host:port          http
//	host:port                    http
//	host:port:user:pass          provider export (user:pass:host:port is recognised too,
//	                             by which end is a host and a port; a line that reads
//	                             both ways is refused)
//	[2001:db8::1]:8080           IPv6 in brackets, in every form above
//	bind:127.0.0.11              a local source address, no proxy
//	bind:127.0.0.11-127.0.0.30   a range of them, at most MaxBindRange
//	direct                       the host's own address
//
// Blank lines and lines starting with # are skipped; " # text" ends a line. Credentials
// in URLs may be percent-encoded. Several exits on one proxy address are distinct when
// their user names differ (gateways often encode a session or country in it), or their
// passwords (some encode the session there).
//
// A list without any exit yields one direct exit. If some lines are bad, Parse returns
// the good exits together with a LineErrors error listing every bad line, so the caller
// can refuse before work starts. Any other error is an I/O error.
func Parse(r io.Reader, name string) ([]Exit, error) {
	var (
		exits []Exit
		lines []int // line of each exit
		bad   LineErrors
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		text := sc.Text()
		if n == 1 {
			if strings.HasPrefix(text, "\xff\xfe") || strings.HasPrefix(text, "\xfe\xff") {
				// Every line of it read as "missing port".
				return nil, LineErrors{lineError(name, 1, errorf(ErrSyntax, "the file is UTF-16 text (a byte order mark of its own): save it as UTF-8"))}
			}
			text = strings.TrimPrefix(text, "\uFEFF")
		}
		if strings.Contains(text, "{session}") {
			// A template in a list was one exit whose user name read
			// "user-session-{session}" literally.
			bad = append(bad, lineError(name, n, errorf(ErrSyntax, "a {session} placeholder: a template is given with --proxy-template (and --sessions), not in a list")))
			continue
		}
		if i := strings.IndexFunc(text, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }); i >= 0 {
			// A NUL or other control character read as "port is not a
			// number" or the like.
			bad = append(bad, lineError(name, n, errorf(ErrSyntax, "a control character (%q) at column %d", text[i], i+1)))
			continue
		}
		got, err := parseLine(text)
		if err != nil {
			bad = append(bad, lineError(name, n, err))
			continue
		}
		for range got {
			lines = append(lines, n)
		}
		exits = append(exits, got...)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, append(bad, lineError(name, n+1, errorf(ErrSyntax, "a line longer than 1 MiB (one exit per line)")))
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	exits, dups := assignIDs(exits, lines, name)
	bad = append(bad, dups...)
	if len(bad) > 0 {
		sortLineErrors(bad)
		return exits, bad
	}
	if len(exits) == 0 {
		exits = []Exit{DirectExit()}
	}
	return exits, nil
}

func lineError(name string, line int, err error) *LineError {
	var fe *fieldError
	if errors.As(err, &fe) {
		return &LineError{File: name, Line: line, Reason: fe.reason, Err: fe.err}
	}
	return &LineError{File: name, Line: line, Reason: "malformed exit", Err: ErrSyntax}
}

func sortLineErrors(es LineErrors) {
	// Insertion sort: duplicates are appended after the per-line errors.
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Line < es[j-1].Line; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

// assignIDs makes IDs unique: exits that share a proxy address get a suffix derived from
// their user name, and those that share the user name too the rank of their password
// among that user's (some providers, IPRoyal's among them, carry the sticky session in
// the password: user:pass_session-abc); true duplicates are dropped and reported.
func assignIDs(exits []Exit, lines []int, name string) ([]Exit, LineErrors) {
	perBase := make(map[string]int, len(exits))
	passwords := make(map[string]map[string]int) // address and user -> password -> rank
	for _, e := range exits {
		perBase[e.id]++
		if e.kind == Proxy && e.proxy.User != nil {
			k := e.id + "\x00" + e.proxy.User.Username()
			pw, _ := e.proxy.User.Password()
			if passwords[k] == nil {
				passwords[k] = make(map[string]int)
			}
			if _, ok := passwords[k][pw]; !ok {
				passwords[k][pw] = len(passwords[k]) + 1
			}
		}
	}
	seen := make(map[string]int, len(exits)) // final ID -> line
	out := exits[:0]
	var dups LineErrors
	for i, e := range exits {
		if e.kind == Proxy && perBase[e.id] > 1 && e.proxy.User != nil {
			user := e.proxy.User.Username()
			ranks := passwords[e.id+"\x00"+user]
			e.id += "#u-" + userTag(user)
			if len(ranks) > 1 {
				// The rank, not a hash: a short hash of a password
				// would let a reader of the output test guesses.
				pw, _ := e.proxy.User.Password()
				e.id += "-p" + strconv.Itoa(ranks[pw])
			}
		}
		id := e.ID()
		if first, ok := seen[id]; ok {
			dups = append(dups, &LineError{File: name, Line: lines[i], Err: ErrDuplicate,
				Reason: "duplicate exit " + id, FirstFile: name, FirstLine: first})
			continue
		}
		seen[id] = lines[i]
		out = append(out, e)
	}
	return out, dups
}

// userTag is a short, stable tag for a user name, so IDs can tell apart sessions on one
// gateway without printing the name.
func userTag(user string) string {
	sum := sha256.Sum256([]byte(user))
	return hex.EncodeToString(sum[:4])
}

// parseLine parses one line into zero (blank, comment), one or, for bind ranges, many exits.
func parseLine(line string) ([]Exit, error) {
	s := strings.TrimSpace(line)
	if s == "" || s[0] == '#' {
		return nil, nil
	}
	// A comment after an exit must follow whitespace: '#' may appear in passwords.
	if i := strings.Index(s, " #"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if i := strings.Index(s, "\t#"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if strings.ContainsAny(s, " \t\v\f\r\n") {
		return nil, errorf(ErrSyntax, "unexpected space inside the exit (one exit per line; # starts a comment)")
	}
	lower := strings.ToLower(s)
	switch {
	case lower == "direct":
		return []Exit{DirectExit()}, nil
	case strings.HasPrefix(lower, "bind:"):
		return parseBind(s[len("bind:"):])
	case strings.Contains(s, "://"):
		e, err := parseURL(s)
		if err != nil {
			return nil, err
		}
		return []Exit{e}, nil
	}
	e, err := parseBare(s)
	if err != nil {
		return nil, err
	}
	return []Exit{e}, nil
}

var defaultPorts = map[string]int{"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080}

// parseURL parses scheme://[user[:pass]@]host[:port][/].
func parseURL(s string) (Exit, error) {
	scheme, rest, _ := strings.Cut(s, "://")
	scheme = strings.ToLower(scheme)
	def, ok := defaultPorts[scheme]
	if !ok {
		if isToken(scheme) && len(scheme) <= 16 {
			return Exit{}, errorf(ErrScheme, "scheme %q not supported (want http, https, socks5 or socks5h)", scheme)
		}
		return Exit{}, errorf(ErrScheme, "bad scheme (want http://, https://, socks5:// or socks5h://)")
	}
	// The host is after the last '@': passwords may contain '@', '/', ':' and '#'.
	userinfo, hostport, hasUser := "", rest, false
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		userinfo, hostport, hasUser = rest[:i], rest[i+1:], true
	}
	hostport = strings.TrimSuffix(hostport, "/")
	if strings.ContainsAny(hostport, "/?#") {
		return Exit{}, errorf(ErrSyntax, "unexpected path after host:port (a proxy URL is scheme://[user:pass@]host:port)")
	}
	host, port, err := parseHostPort(hostport, def)
	if err != nil {
		return Exit{}, err
	}
	var ui *url.Userinfo
	if hasUser {
		user, pass, hasPass := strings.Cut(userinfo, ":")
		ui, err = userinfoOf(unescape(user), unescape(pass), hasPass)
		if err != nil {
			return Exit{}, err
		}
	}
	return proxyExit(scheme, host, port, ui), nil
}

// parseBare parses the scheme-less forms: user:pass@host:port, host:port,
// host:port:user:pass and user:pass:host:port.
func parseBare(s string) (Exit, error) {
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		if host, port, err := parseHostPort(s[i+1:], 0); err == nil {
			user, pass, hasPass := strings.Cut(s[:i], ":")
			ui, err := userinfoOf(unescape(user), unescape(pass), hasPass)
			if err != nil {
				return Exit{}, err
			}
			return proxyExit("http", host, port, ui), nil
		}
		// Not user:pass@host:port; maybe host:port:user:p@ss.
	}
	var hostport, user, pass string
	var creds bool
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return Exit{}, errorf(ErrHost, "missing ] after IPv6 address")
		}
		rest := s[end+1:]
		if !strings.HasPrefix(rest, ":") {
			return Exit{}, errorf(ErrPort, "missing port (want [ipv6]:port)")
		}
		f := strings.SplitN(rest[1:], ":", 3)
		hostport = s[:end+1] + ":" + f[0]
		switch len(f) {
		case 2:
			return Exit{}, errorf(ErrCredentials, "missing password (want host:port:user:pass)")
		case 3:
			user, pass, creds = f[1], f[2], true
		}
	} else {
		if looksLikeBareIPv6(s) {
			return Exit{}, errorf(ErrHost, "IPv6 address needs brackets ([2001:db8::1]:8080)")
		}
		f := strings.SplitN(s, ":", 4)
		switch len(f) {
		case 1:
			return Exit{}, errorf(ErrPort, "missing port (want host:port)")
		case 2:
			hostport = s
		case 3:
			return Exit{}, errorf(ErrCredentials, "missing password (want host:port:user:pass)")
		case 4:
			var err error
			if hostport, user, pass, err = splitFour(f); err != nil {
				return Exit{}, err
			}
			creds = true
		}
	}
	host, port, err := parseHostPort(hostport, 0)
	if err != nil {
		return Exit{}, err
	}
	var ui *url.Userinfo
	if creds {
		if ui, err = userinfoOf(user, pass, true); err != nil {
			return Exit{}, err
		}
	}
	return proxyExit("http", host, port, ui), nil
}

// splitFour reads a four-field line as host:port:user:pass or as
// user:pass:host:port, by which end parses as a host and a port. An end whose
// host looks like one (an IP address, localhost, a name with a dot) wins over
// an end that is a bare word and a number, so that "admin:12345:gw.example:8080"
// is not the proxy admin:12345. When both ends fit alike the line is refused:
// guessing wrong would send the password to a host named after the user, and
// print it as the exit's name. When neither fits, the error is that of the
// host:port:user:pass reading. No error echoes a field that may be a password.
func splitFour(f []string) (hostport, user, pass string, err error) {
	a, b := hostPortFit(f[0], f[1]), hostPortFit(f[2], f[3])
	switch {
	case a > b, a == 0 && b == 0:
		return f[0] + ":" + f[1], f[2], f[3], nil
	case b > a:
		return f[2] + ":" + f[3], f[0], f[1], nil
	}
	return "", "", "", errorf(ErrSyntax, "ambiguous: both ends of the line read as host:port (host:port:user:pass or user:pass:host:port?); write it as http://user:pass@host:port")
}

// hostPortFit says how well host and port read as a proxy's address: 0 not
// at all, 1 a bare word and a port, 2 an IP address, localhost or a dotted
// name and a port.
func hostPortFit(host, port string) int {
	if _, err := parsePort(port); err != nil || !isHostname(host) {
		return 0
	}
	if _, err := netip.ParseAddr(host); err == nil || strings.EqualFold(host, "localhost") || strings.Contains(strings.TrimSuffix(host, "."), ".") {
		return 2
	}
	return 1
}

// looksLikeBareIPv6 reports whether s is an IPv6 address, with or without a :port.
func looksLikeBareIPv6(s string) bool {
	if a, err := netip.ParseAddr(s); err == nil && a.Is6() {
		return true
	}
	i := strings.LastIndexByte(s, ':')
	a, err := netip.ParseAddr(s[:max(i, 0)])
	return err == nil && a.Is6()
}

func proxyExit(scheme, host string, port int, ui *url.Userinfo) Exit {
	if a, ok := hostname.NumericIPv4(host); ok {
		// One address, one exit: http://127.1:3128 and
		// http://127.0.0.1:3128 were two, each with lanes of its own
		// through the same IP.
		host = a.String()
	}
	hp := net.JoinHostPort(host, strconv.Itoa(port))
	return Exit{id: hp, kind: Proxy, proxy: &url.URL{Scheme: scheme, Host: hp, User: ui}}
}

func userinfoOf(user, pass string, hasPass bool) (*url.Userinfo, error) {
	if user == "" {
		if hasPass {
			return nil, errorf(ErrCredentials, "empty user name before the password")
		}
		return nil, errorf(ErrCredentials, "empty user name before @")
	}
	if strings.ContainsAny(user, "\x00\r\n") || strings.ContainsAny(pass, "\x00\r\n") {
		return nil, errorf(ErrCredentials, "control character in credentials")
	}
	if strings.Contains(user, ":") {
		// Basic auth joins them with a colon (RFC 7617: a user name holds
		// none): us%3Ax with p went out as us:x:p, read as user us.
		return nil, errorf(ErrCredentials, "a colon in the user name (%%3A): Basic auth cannot carry it")
	}
	if !hasPass {
		return url.User(user), nil
	}
	return url.UserPassword(user, pass), nil
}

// unescape decodes percent-encoding, keeping s as written if it is not valid escaping
// (a literal % in a provider's password).
func unescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// parseHostPort parses host:port or [ipv6]:port. defPort 0 means the port is required.
// Host names are lowercased.
func parseHostPort(hp string, defPort int) (string, int, error) {
	var host, port string
	hasPort := false
	if strings.HasPrefix(hp, "[") {
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return "", 0, errorf(ErrHost, "missing ] after IPv6 address")
		}
		host = hp[1:end]
		rest := hp[end+1:]
		if rest != "" {
			if rest[0] != ':' {
				return "", 0, errorf(ErrSyntax, "unexpected text after ]")
			}
			port, hasPort = rest[1:], true
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", 0, errorf(ErrHost, "bad IPv6 address %q", clip(host))
		}
		host = a.String()
	} else {
		if strings.Count(hp, ":") > 1 {
			return "", 0, errorf(ErrHost, "IPv6 address needs brackets ([2001:db8::1]:8080)")
		}
		host, port, hasPort = strings.Cut(hp, ":")
		if host == "" {
			return "", 0, errorf(ErrHost, "missing host")
		}
		// An internationalised name is its punycode form, as a URL
		// file's hosts are (it was a bare "bad host").
		a, err := hostname.ASCII(host)
		if err != nil {
			return "", 0, errorf(ErrHost, "%v", err)
		}
		if !isHostname(a) {
			return "", 0, errorf(ErrHost, "bad host %q: a host name has letters, digits, '-', '_' and '.' only", clip(host))
		}
		host = a
	}
	if !hasPort {
		if defPort == 0 {
			return "", 0, errorf(ErrPort, "missing port")
		}
		return host, defPort, nil
	}
	p, err := parsePort(port)
	return host, p, err
}

func parsePort(s string) (int, error) {
	if s == "" {
		return 0, errorf(ErrPort, "missing port")
	}
	// Only digits are echoed: a misplaced field that is not a number may be a password.
	if !isDigits(s) {
		return 0, errorf(ErrPort, "port is not a number")
	}
	if len(s) > 5 {
		return 0, errorf(ErrPort, "port %q out of range", clip(s))
	}
	p, _ := strconv.Atoi(s)
	if p < 1 || p > 65535 {
		return 0, errorf(ErrPort, "port %q out of range", s)
	}
	return p, nil
}

// parseBind parses "addr" or "first-last" after "bind:".
func parseBind(s string) ([]Exit, error) {
	first, last, isRange := strings.Cut(s, "-")
	a, err := parseBindAddr(first)
	if err != nil {
		return nil, err
	}
	if !isRange {
		return []Exit{BindExit(a)}, nil
	}
	b, err := parseBindAddr(last)
	if err != nil {
		return nil, err
	}
	if a.Is4() != b.Is4() {
		return nil, errorf(ErrBind, "bind range %s-%s mixes IPv4 and IPv6", a, b)
	}
	if b.Less(a) {
		return nil, errorf(ErrBind, "bind range %s-%s ends before it starts", a, b)
	}
	var out []Exit
	for x := a; ; x = x.Next() {
		if len(out) == MaxBindRange {
			return nil, errorf(ErrBind, "bind range %s-%s has more than %d addresses", a, b, MaxBindRange)
		}
		out = append(out, BindExit(x))
		if x == b {
			return out, nil
		}
	}
}

func parseBindAddr(s string) (netip.Addr, error) {
	t := strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if t == "" {
		return netip.Addr{}, errorf(ErrBind, "missing bind address")
	}
	a, err := netip.ParseAddr(t)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, errorf(ErrBind, "bad bind address %q", clip(t))
	}
	a = a.Unmap()
	if a.IsUnspecified() || a.IsMulticast() {
		return netip.Addr{}, errorf(ErrBind, "bind address %s cannot be a source address", a)
	}
	return a, nil
}

// FromTemplate expands a rotating gateway's sticky-session template into n exits, one
// per session: every "{session}" in tmpl is replaced by 1..n. The template is any line
// Parse accepts, usually "http://user-session-{session}:pass@gw.example:7777". IDs are
// "gw.example:7777#session-7". Errors never contain the template's password.
func FromTemplate(tmpl string, n int) ([]Exit, error) {
	const ph = "{session}"
	if !strings.Contains(tmpl, ph) {
		return nil, fmt.Errorf("%w: no %s placeholder", ErrTemplate, ph)
	}
	if n < 1 || n > MaxSessions {
		return nil, fmt.Errorf("%w: session count %d not in 1..%d", ErrTemplate, n, MaxSessions)
	}
	out := make([]Exit, 0, n)
	for i := 1; i <= n; i++ {
		session := strconv.Itoa(i)
		got, err := parseLine(strings.ReplaceAll(tmpl, ph, session))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
		}
		if len(got) != 1 || got[0].kind != Proxy {
			return nil, fmt.Errorf("%w: want one proxy URL", ErrTemplate)
		}
		e := got[0]
		e.id += "#session-" + session
		e.session = session
		out = append(out, e)
	}
	return out, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// isHostname accepts DNS names (letters, digits, '-', '_', '.') and IPv4 literals.
func isHostname(s string) bool {
	if len(s) > 253 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return s[0] != '.' && s[0] != '-'
}

// clip shortens a value echoed in an error.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
