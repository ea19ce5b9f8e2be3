package pool

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parseTests is shared by the table test and the fuzz seeds.
var parseTests = []struct {
	line  string
	id    string // "" means the line yields no exit
	str   string // String()
	proxy string // full proxy URL with credentials, "" for none
}{
	{"", "", "", ""},
	{"   ", "", "", ""},
	{"# a comment", "", "", ""},
	{"direct", "direct", "direct", ""},
	{"DIRECT", "direct", "direct", ""},
	{"http://proxy.example:8080", "proxy.example:8080", "http://proxy.example:8080", "http://proxy.example:8080"},
	{"HTTP://Proxy.Example:8080/", "proxy.example:8080", "http://proxy.example:8080", "http://proxy.example:8080"},
	{"http://user:pass@proxy.example:8080", "proxy.example:8080", "http://user:***@proxy.example:8080", "http://user:pass@proxy.example:8080"},
	{"https://user:pass@proxy.example:8443", "proxy.example:8443", "https://user:***@proxy.example:8443", "https://user:pass@proxy.example:8443"},
	{"https://proxy.example", "proxy.example:443", "https://proxy.example:443", "https://proxy.example:443"},
	{"http://proxy.example", "proxy.example:80", "http://proxy.example:80", "http://proxy.example:80"},
	{"socks5://u:p@10.0.0.1:1080", "10.0.0.1:1080", "socks5://u:***@10.0.0.1:1080", "socks5://u:p@10.0.0.1:1080"},
	{"socks5h://10.0.0.1", "10.0.0.1:1080", "socks5h://10.0.0.1:1080", "socks5h://10.0.0.1:1080"},
	{"http://user:p%40ss@h:1", "h:1", "http://user:***@h:1", "http://user:p%40ss@h:1"},
	{"http://user:p@ss#w/rd@h:1", "h:1", "http://user:***@h:1", "http://user:p%40ss%23w%2Frd@h:1"},
	{"http://user@h:1", "h:1", "http://user@h:1", "http://user@h:1"},
	{"http://[2001:db8::1]:3128", "[2001:db8::1]:3128", "http://[2001:db8::1]:3128", "http://[2001:db8::1]:3128"},
	{"http://u:p@[2001:DB8::1]:3128", "[2001:db8::1]:3128", "http://u:***@[2001:db8::1]:3128", "http://u:p@[2001:db8::1]:3128"},
	{"proxy.example:3128", "proxy.example:3128", "http://proxy.example:3128", "http://proxy.example:3128"},
	{"  10.1.2.3:3128  # office", "10.1.2.3:3128", "http://10.1.2.3:3128", "http://10.1.2.3:3128"},
	{"[::1]:3128", "[::1]:3128", "http://[::1]:3128", "http://[::1]:3128"},
	{"user:pass@10.1.2.3:3128", "10.1.2.3:3128", "http://user:***@10.1.2.3:3128", "http://user:pass@10.1.2.3:3128"},
	{"10.1.2.3:3128:user:pass", "10.1.2.3:3128", "http://user:***@10.1.2.3:3128", "http://user:pass@10.1.2.3:3128"},
	{"10.1.2.3:3128:user:pa:ss", "10.1.2.3:3128", "http://user:***@10.1.2.3:3128", "http://user:pa%3Ass@10.1.2.3:3128"},
	{"10.1.2.3:3128:user:p@ss", "10.1.2.3:3128", "http://user:***@10.1.2.3:3128", "http://user:p%40ss@10.1.2.3:3128"},
	{"user:pass:gw.example:7777", "gw.example:7777", "http://user:***@gw.example:7777", "http://user:pass@gw.example:7777"},
	{"admin:12345:gw.example:7777", "gw.example:7777", "http://admin:***@gw.example:7777", "http://admin:12345@gw.example:7777"},
	{"gw.example:7777:admin:12345", "gw.example:7777", "http://admin:***@gw.example:7777", "http://admin:12345@gw.example:7777"},
	{"admin:12345:127.0.0.1:3128", "127.0.0.1:3128", "http://admin:***@127.0.0.1:3128", "http://admin:12345@127.0.0.1:3128"},
	{"127.0.0.1:3128:admin:12345", "127.0.0.1:3128", "http://admin:***@127.0.0.1:3128", "http://admin:12345@127.0.0.1:3128"},
	{"admin:12345:localhost:3128", "localhost:3128", "http://admin:***@localhost:3128", "http://admin:12345@localhost:3128"},
	{"[2001:db8::2]:8080:user:pass", "[2001:db8::2]:8080", "http://user:***@[2001:db8::2]:8080", "http://user:pass@[2001:db8::2]:8080"},
	{"bind:127.0.0.11", "bind:127.0.0.11", "bind:127.0.0.11", ""},
	{"BIND:[::1]", "bind:::1", "bind:::1", ""},
	{"bind:::ffff:127.0.0.12", "bind:127.0.0.12", "bind:127.0.0.12", ""},
}

func TestParseLineForms(t *testing.T) {
	for _, tt := range parseTests {
		exits, err := Parse(strings.NewReader(tt.line), "p.txt")
		if err != nil {
			t.Errorf("Parse(%q) error %v, want none", tt.line, err)
			continue
		}
		if tt.id == "" {
			// An empty list is one direct exit.
			if len(exits) != 1 || exits[0].Kind() != Direct {
				t.Errorf("Parse(%q) = %v, want [direct]", tt.line, exits)
			}
			continue
		}
		if len(exits) != 1 {
			t.Errorf("Parse(%q) = %d exits, want 1", tt.line, len(exits))
			continue
		}
		e := exits[0]
		if e.ID() != tt.id || e.String() != tt.str {
			t.Errorf("Parse(%q) = ID %q String %q, want %q %q", tt.line, e.ID(), e.String(), tt.id, tt.str)
		}
		var proxy string
		if u := e.ProxyURL(); u != nil {
			proxy = u.String()
		}
		if proxy != tt.proxy {
			t.Errorf("Parse(%q).ProxyURL() = %q, want %q", tt.line, proxy, tt.proxy)
		}
	}
}

func TestParseBadLines(t *testing.T) {
	tests := []struct {
		line string
		want string // exact message, file name "proxies.txt", line 2
		is   error
	}{
		{"h:99999", `proxies.txt:2: port "99999" out of range`, ErrPort},
		{"h:0", `proxies.txt:2: port "0" out of range`, ErrPort},
		{"h:1234567", `proxies.txt:2: port "1234567" out of range`, ErrPort},
		{"http://u:pw@h:99999", `proxies.txt:2: port "99999" out of range`, ErrPort},
		{"h:http", `proxies.txt:2: port is not a number`, ErrPort},
		{"h", `proxies.txt:2: missing port (want host:port)`, ErrPort},
		{"h:", `proxies.txt:2: missing port`, ErrPort},
		{"h:1:user", `proxies.txt:2: missing password (want host:port:user:pass)`, ErrCredentials},
		{"[::1]:1:user", `proxies.txt:2: missing password (want host:port:user:pass)`, ErrCredentials},
		// Both ends read as host:port alike: refused, naming neither field.
		{"gw:8080:admin:12345", `proxies.txt:2: ambiguous: both ends of the line read as host:port (host:port:user:pass or user:pass:host:port?); write it as http://user:pass@host:port`, ErrSyntax},
		{"10.0.0.1:8080:10.0.0.2:3128", `proxies.txt:2: ambiguous: both ends of the line read as host:port (host:port:user:pass or user:pass:host:port?); write it as http://user:pass@host:port`, ErrSyntax},
		{"h:http:user:pass", `proxies.txt:2: port is not a number`, ErrPort},
		{"ftp://h:21", `proxies.txt:2: scheme "ftp" not supported (want http, https, socks5 or socks5h)`, ErrScheme},
		{"h t t p://h:21", `proxies.txt:2: unexpected space inside the exit (one exit per line; # starts a comment)`, ErrSyntax},
		{"://h:21", `proxies.txt:2: bad scheme (want http://, https://, socks5:// or socks5h://)`, ErrScheme},
		{"http://h:1/path", `proxies.txt:2: unexpected path after host:port (a proxy URL is scheme://[user:pass@]host:port)`, ErrSyntax},
		{"http://:pw@h:1", `proxies.txt:2: empty user name before the password`, ErrCredentials},
		{"http://us%3Ax:pw@h:1", `proxies.txt:2: a colon in the user name (%3A): Basic auth cannot carry it`, ErrCredentials},
		{"http://h_ost!:1", `proxies.txt:2: bad host "h_ost!": a host name has letters, digits, '-', '_' and '.' only`, ErrHost},
		{"http://:1", `proxies.txt:2: missing host`, ErrHost},
		{"2001:db8::1:8080", `proxies.txt:2: IPv6 address needs brackets ([2001:db8::1]:8080)`, ErrHost},
		{"[2001:db8::1:8080", `proxies.txt:2: missing ] after IPv6 address`, ErrHost},
		{"[fe80::1%eth0]:80", `proxies.txt:2: bad IPv6 address "fe80::1%eth0"`, ErrHost},
		{"[1.2.3.4]:80", `proxies.txt:2: bad IPv6 address "1.2.3.4"`, ErrHost},
		{"[::1]", `proxies.txt:2: missing port (want [ipv6]:port)`, ErrPort},
		{"bind:", `proxies.txt:2: missing bind address`, ErrBind},
		{"bind:127.0.0.300", `proxies.txt:2: bad bind address "127.0.0.300"`, ErrBind},
		{"bind:0.0.0.0", `proxies.txt:2: bind address 0.0.0.0 cannot be a source address`, ErrBind},
		{"bind:127.0.0.30-127.0.0.11", `proxies.txt:2: bind range 127.0.0.30-127.0.0.11 ends before it starts`, ErrBind},
		{"bind:127.0.0.1-::1", `proxies.txt:2: bind range 127.0.0.1-::1 mixes IPv4 and IPv6`, ErrBind},
		{"bind:10.0.0.0-10.255.255.255", `proxies.txt:2: bind range 10.0.0.0-10.255.255.255 has more than 4096 addresses`, ErrBind},
	}
	for _, tt := range tests {
		input := "# header\n" + tt.line + "\nh:1\n"
		exits, err := Parse(strings.NewReader(input), "proxies.txt")
		var les LineErrors
		if !errors.As(err, &les) || len(les) != 1 {
			t.Errorf("Parse(%q) error = %v, want one LineError", tt.line, err)
			continue
		}
		if got := les[0].Error(); got != tt.want {
			t.Errorf("Parse(%q) error = %q, want %q", tt.line, got, tt.want)
		}
		if !errors.Is(err, tt.is) {
			t.Errorf("Parse(%q) error %v does not wrap %v", tt.line, err, tt.is)
		}
		if les[0].Line != 2 || les[0].File != "proxies.txt" {
			t.Errorf("Parse(%q) error at %s:%d, want proxies.txt:2", tt.line, les[0].File, les[0].Line)
		}
		// The good line is still returned, so a caller may choose to go on.
		if len(exits) != 1 || exits[0].ID() != "h:1" {
			t.Errorf("Parse(%q) exits = %v, want [h:1]", tt.line, exits)
		}
	}
}

func TestParseManyErrorsInLineOrder(t *testing.T) {
	input := "h:1\nh:x\n\nh:1\nbind:nope\n"
	_, err := Parse(strings.NewReader(input), "list")
	want := "list:2: port is not a number\nlist:4: duplicate exit h:1 (first on line 1)\nlist:5: bad bind address \"nope\""
	if err == nil || err.Error() != want {
		t.Fatalf("Parse(%q) error =\n%v\nwant\n%s", input, err, want)
	}
	if !errors.Is(err, ErrDuplicate) {
		t.Errorf("error does not wrap ErrDuplicate")
	}
}

func TestParseSharedGatewayUsers(t *testing.T) {
	input := "gw:7777:user-country-us:pw\ngw:7777:user-country-de:pw\nother:1\n"
	exits, err := Parse(strings.NewReader(input), "list")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gw:7777#u-" + userTag("user-country-us"), "gw:7777#u-" + userTag("user-country-de"), "other:1"}
	if got := ids(exits); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Parse(%q) IDs = %v, want %v", input, got, want)
	}
	for _, e := range exits {
		if strings.Contains(e.ID(), "country") {
			t.Errorf("ID %q contains the user name", e.ID())
		}
	}
	// The same user with other passwords: sessions carried in the password
	// (IPRoyal's user:pass_session-abc), told apart by the password's rank
	// among the user's, never by the password; the same password twice is a
	// duplicate, redacted.
	input = "gw:7777:u:pass_session-aaa\nhttp://u:pass_session-bbb@gw:7777\ngw:7777:u:pass_session-aaa\ngw:7777:v:x\n"
	exits, err = Parse(strings.NewReader(input), "list")
	if !errors.Is(err, ErrDuplicate) || !strings.Contains(err.Error(), "list:3: duplicate exit") || strings.Contains(err.Error(), "session") {
		t.Errorf("Parse(%q) error = %v, want a redacted ErrDuplicate on line 3 only", input, err)
	}
	u := "gw:7777#u-" + userTag("u")
	want = []string{u + "-p1", u + "-p2", "gw:7777#u-" + userTag("v")}
	if got := ids(exits); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Parse(%q) IDs = %v, want %v", input, got, want)
	}
}

func TestParseBindRange(t *testing.T) {
	exits, err := Parse(strings.NewReader("bind:127.0.0.11-127.0.0.30\n"), "list")
	if err != nil {
		t.Fatal(err)
	}
	if len(exits) != 20 {
		t.Fatalf("bind range: %d exits, want 20", len(exits))
	}
	for i, e := range exits {
		want := netip.AddrFrom4([4]byte{127, 0, 0, byte(11 + i)})
		if e.Kind() != Bind || e.LocalAddr() != want || e.ID() != "bind:"+want.String() {
			t.Errorf("exit %d = %v %v %q, want bind %v", i, e.Kind(), e.LocalAddr(), e.ID(), want)
		}
	}
	one, err := Parse(strings.NewReader("bind:10.0.0.255-10.0.1.0\nbind:::1-::2\nbind:127.0.0.5-127.0.0.5"), "list")
	if got := ids(one); err != nil || fmt.Sprint(got) != "[bind:10.0.0.255 bind:10.0.1.0 bind:::1 bind:::2 bind:127.0.0.5]" {
		t.Errorf("bind ranges = %v, %v", got, err)
	}
	// Exactly MaxBindRange is allowed.
	max, err := Parse(strings.NewReader("bind:10.0.0.0-10.0.15.255"), "list")
	if err != nil || len(max) != MaxBindRange {
		t.Errorf("bind range of %d = %d exits, %v; want %d", MaxBindRange, len(max), err, MaxBindRange)
	}
}

func TestParseEmptyIsDirect(t *testing.T) {
	exits, err := Parse(strings.NewReader("\uFEFF# nothing here\n\n"), "list")
	if err != nil || len(exits) != 1 || exits[0].ID() != "direct" {
		t.Errorf("Parse(empty) = %v, %v; want [direct]", exits, err)
	}
	// But a list whose only lines are bad yields no exit, so nothing runs unproxied by
	// accident.
	exits, err = Parse(strings.NewReader("h:0\n"), "list")
	if err == nil || len(exits) != 0 {
		t.Errorf("Parse(bad only) = %v, %v; want no exits and an error", exits, err)
	}
}

func TestParseFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "proxies.txt")
	if err := os.WriteFile(path, []byte("http://a:1\n\nb:2:u:SECRETpw\nc:99999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	exits, err := ParseFile(path)
	if err == nil || err.Error() != path+`:4: port "99999" out of range` {
		t.Errorf("ParseFile error = %v, want %s:4: port \"99999\" out of range", err, path)
	}
	if fmt.Sprint(ids(exits)) != "[a:1 b:2]" {
		t.Errorf("ParseFile exits = %v, want [a:1 b:2]", ids(exits))
	}
	if _, err := ParseFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ParseFile(missing) = %v, want ErrNotExist", err)
	}
}

func TestFromTemplate(t *testing.T) {
	exits, err := FromTemplate("http://user-session-{session}:SECRETpw@gw.example:7777", 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(exits) != 50 {
		t.Fatalf("FromTemplate: %d exits, want 50", len(exits))
	}
	seen := map[string]bool{}
	for i, e := range exits {
		n := fmt.Sprint(i + 1)
		if e.ID() != "gw.example:7777#session-"+n || e.Session() != n {
			t.Errorf("exit %d: ID %q session %q, want gw.example:7777#session-%s", i, e.ID(), e.Session(), n)
		}
		if got := e.ProxyURL().User.Username(); got != "user-session-"+n {
			t.Errorf("exit %d user = %q, want user-session-%s", i, got, n)
		}
		if seen[e.ID()] {
			t.Errorf("duplicate ID %q", e.ID())
		}
		seen[e.ID()] = true
		assertNoSecret(t, e, "SECRETpw")
	}
	for _, tt := range []struct {
		tmpl string
		n    int
		want string
	}{
		{"http://user:SECRETpw@gw:1", 5, "bad session template: no {session} placeholder"},
		{"http://user-{session}:SECRETpw@gw:1", 0, "bad session template: session count 0 not in 1..100000"},
		{"http://user-{session}:SECRETpw@gw:99999", 2, `bad session template: port "99999" out of range`},
		{"bind:127.0.0.{session}", 2, "bad session template: want one proxy URL"},
	} {
		_, err := FromTemplate(tt.tmpl, tt.n)
		if err == nil || err.Error() != tt.want || !errors.Is(err, ErrTemplate) {
			t.Errorf("FromTemplate(%q, %d) = %v, want %q", tt.tmpl, tt.n, err, tt.want)
		}
	}
}

// TestRedaction checks that no form of output ever carries the password.
func TestRedaction(t *testing.T) {
	const secret = "S3cr3tPw"
	lines := []string{
		"http://alice:" + secret + "@h:1",
		"socks5://alice:" + secret + "@h:2",
		"alice:" + secret + "@h:3",
		"h:4:alice:" + secret,
		"alice:" + secret + ":h:5",
		"[::1]:6:alice:" + secret,
		"http://alice:" + secret + "@h:7/",
	}
	exits, err := Parse(strings.NewReader(strings.Join(lines, "\n")), "list")
	if err != nil {
		t.Fatal(err)
	}
	if len(exits) != len(lines) {
		t.Fatalf("got %d exits, want %d", len(exits), len(lines))
	}
	for _, e := range exits {
		assertNoSecret(t, e, secret)
		if pw, _ := e.ProxyURL().User.Password(); pw != secret {
			t.Errorf("%v: password %q lost, want %q", e, pw, secret)
		}
	}
	// Bad lines carrying credentials: the message never echoes them.
	bad := []string{
		"http://alice:" + secret + "@h:99999",
		"http://alice:" + secret + "@h!:1",
		"http://alice:" + secret,
		"h:x:alice:" + secret,
		"h:1:alice",
		"ftp://alice:" + secret + "@h:1",
		"http://alice:" + secret + "@h:1/path",
		"alice:" + secret + "@h",
		"alice:" + secret + " h:1",
		"http://alice:" + secret + "@h:1\nhttp://alice:" + secret + "@h:1",
	}
	for _, line := range bad {
		_, err := Parse(strings.NewReader(line), "list")
		if err == nil {
			t.Errorf("Parse(%q) = nil error, want one", line)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Parse(%q) error %q leaks the password", line, err)
		}
	}
	// Scrub catches the password in foreign text, raw and escaped.
	e := exits[0]
	for _, s := range []string{"x " + secret + " y", "http://alice:" + secret + "@h:1"} {
		if got := e.Scrub(s); strings.Contains(got, secret) {
			t.Errorf("Scrub(%q) = %q, still has the password", s, got)
		}
	}
	odd, _ := Parse(strings.NewReader("http://alice:p%40ss%20w@h:1"), "list")
	if got := odd[0].Scrub("err: p@ss w and p%40ss%20w and p%40ss+w"); strings.Contains(got, "ss") {
		t.Errorf("Scrub(escaped forms) = %q, want every form replaced", got)
	}
}

func assertNoSecret(t *testing.T, e Exit, secret string) {
	t.Helper()
	js, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var logBuf strings.Builder
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("x", "exit", e)
	for name, s := range map[string]string{
		"ID": e.ID(), "String": e.String(), "%v": fmt.Sprintf("%v", e), "%+v": fmt.Sprintf("%+v", e),
		"%#v": fmt.Sprintf("%#v", e), "%s of pointer": fmt.Sprintf("%s", &e), "JSON": string(js),
		"slog": logBuf.String(),
	} {
		if strings.Contains(s, secret) {
			t.Errorf("%s of %v = %q leaks the password", name, e.ID(), s)
		}
	}
	if strings.Contains(e.ID(), "alice") {
		t.Errorf("ID %q contains the user name", e.ID())
	}
}

func ids(exits []Exit) []string {
	out := make([]string, len(exits))
	for i, e := range exits {
		out[i] = e.ID()
	}
	return out
}

func FuzzParse(f *testing.F) {
	for _, tt := range parseTests {
		f.Add(tt.line)
	}
	for _, s := range []string{"h:99999", "bind:127.0.0.1-127.0.0.9", "[::1]:1:u:p", "u:p:h:1", "http://u:p@h:1\nh:1\nh:1", "gw:1:a:b\ngw:1:c:d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		exits, err := Parse(strings.NewReader(input), "fuzz")
		seen := map[string]bool{}
		for _, e := range exits {
			id := e.ID()
			if id == "" || seen[id] {
				t.Fatalf("Parse(%q): empty or duplicate ID %q", input, id)
			}
			seen[id] = true
			if e.Kind() == Proxy {
				u := e.ProxyURL()
				if u == nil || u.Host == "" {
					t.Fatalf("Parse(%q): proxy exit %q without host", input, id)
				}
				// No printed form depends on the password: swap it and compare.
				if pw, ok := u.User.Password(); ok {
					other := e
					ou := e.ProxyURL()
					ou.User = url.UserPassword(u.User.Username(), pw+"-other")
					other.proxy = ou
					j1, _ := json.Marshal(e)
					j2, _ := json.Marshal(other)
					if e.String() != other.String() || e.GoString() != other.GoString() || string(j1) != string(j2) || e.ID() != other.ID() {
						t.Fatalf("Parse(%q): printed form of %s depends on the password", input, id)
					}
				}
				// A proxy URL round-trips through net/url, which the transport relies on.
				if _, perr := Parse(strings.NewReader(u.String()), "again"); perr != nil && !strings.Contains(u.Host, "%") {
					t.Fatalf("Parse(%q): reparse of %s failed: %v", input, e, perr)
				}
			}
		}
		if len(exits) == 0 && err == nil {
			t.Fatalf("Parse(%q) = no exits and no error", input)
		}
		var les LineErrors
		if err != nil && errors.As(err, &les) {
			for _, le := range les {
				if le.Line < 1 || le.Reason == "" || !strings.HasPrefix(le.Error(), "fuzz:") {
					t.Fatalf("Parse(%q): bad LineError %+v", input, le)
				}
			}
		}
	})
}

// TestParseAddressSpellings: one proxy address in two spellings is one exit,
// the second a duplicate (127.1 and 127.0.0.1 were two exits, each with
// lanes of its own through the same IP).
func TestParseAddressSpellings(t *testing.T) {
	_, err := Parse(strings.NewReader("http://127.0.0.1:3128\nhttp://127.1:3128\n"), "list")
	if !errors.Is(err, ErrDuplicate) || !strings.Contains(err.Error(), "list:2: duplicate exit 127.0.0.1:3128") {
		t.Errorf("two spellings of one proxy: %v, want the second a duplicate", err)
	}
	exits, err := Parse(strings.NewReader("http://2130706433:3128\n"), "list")
	if err != nil || len(exits) != 1 || exits[0].ID() != "127.0.0.1:3128" {
		t.Errorf("Parse(2130706433:3128) = %v, %v; want 127.0.0.1:3128", exits, err)
	}
}

// TestParseControlAndUTF16: a control character in a line is named as such
// (a NUL read as "port is not a number"), and a UTF-16 file as UTF-16 (each
// of its lines read as "missing port").
func TestParseControlAndUTF16(t *testing.T) {
	_, err := Parse(strings.NewReader("h:1\nh:2\x00\n"), "list")
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), `list:2: a control character ('\x00') at column 4`) {
		t.Errorf("a NUL in a line: %v", err)
	}
	_, err = Parse(strings.NewReader("http://u-session-{session}:pw@gw:7000\n"), "list")
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "--proxy-template") {
		t.Errorf("a template in a list: %v, want it pointed at --proxy-template", err)
	}
	_, err = Parse(strings.NewReader("\xff\xfeh\x00:\x001\x00\n\x00"), "list")
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "list:1: the file is UTF-16 text") {
		t.Errorf("a UTF-16 file: %v", err)
	}
}

// TestParseLongLine: a line past the reader's bound is named by its number
// (it read "bufio.Scanner: token too long", no line).
func TestParseLongLine(t *testing.T) {
	_, err := Parse(strings.NewReader("h:1\n"+strings.Repeat("x", 2<<20)+"\n"), "list")
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "list:2: a line longer than 1 MiB") {
		t.Errorf("a 2-MiB line: %v", err)
	}
}

// TestScrubShortPassword: a short password is masked where it stands apart,
// not inside words and numbers: "s" made "connection refu***ed" of a
// message and "0" made "4***1", each showing where it was.
func TestScrubShortPassword(t *testing.T) {
	for _, tc := range []struct{ line, msg, want string }{
		{"http://user:s@127.0.0.1:1", "proxy unreachable (connection refused) via http://user:s@127.0.0.1:1", "proxy unreachable (connection refused) via http://user:***@127.0.0.1:1"},
		{"http://user:0@127.0.0.1:2", "proxy rejected credentials (401), password 0", "proxy rejected credentials (401), password ***"},
	} {
		exits, err := Parse(strings.NewReader(tc.line), "list")
		if err != nil {
			t.Fatal(err)
		}
		if got := exits[0].Scrub(tc.msg); got != tc.want {
			t.Errorf("Scrub(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

// An internationalised proxy host is read in its punycode form, as a URL
// file's hosts are: it was refused as a bare "bad host".
func TestParseIDNProxy(t *testing.T) {
	exits, err := Parse(strings.NewReader("http://b\u00fccher.example:20511\n"), "proxies.txt")
	if err != nil || len(exits) != 1 || !strings.Contains(exits[0].proxy.Host, "xn--bcher-kva.example:20511") {
		t.Fatalf("Parse(an IDN proxy) = %v, %v; want host xn--bcher-kva.example:20511", exits, err)
	}
}
