package frontier

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

var normalizeTests = []struct {
	in, want string
}{
	{"http://example.com", "http://example.com/"},
	{"HTTP://Example.COM/Path", "http://example.com/Path"},
	{"https://example.com:443/a", "https://example.com/a"},
	{"http://example.com:80/a", "http://example.com/a"},
	{"http://example.com:0080/a", "http://example.com/a"},
	{"https://example.com:80/a", "https://example.com:80/a"},
	{"http://example.com:8080/a", "http://example.com:8080/a"},
	{"http://example.com:/a", "http://example.com/a"},
	{"http://example.com/a#frag", "http://example.com/a"},
	{"http://example.com/a?#frag", "http://example.com/a?"},
	{"http://example.com/a?b=2&a=1", "http://example.com/a?b=2&a=1"},
	{"http://example.com/a?q=a+b", "http://example.com/a?q=a+b"},
	{"http://example.com/a?q=a%20b", "http://example.com/a?q=a%20b"},
	{"http://example.com/a?q=a b", "http://example.com/a?q=a%20b"},
	{"http://example.com/%7euser/%41", "http://example.com/~user/A"},
	{"http://example.com/a%2fb", "http://example.com/a%2Fb"},
	{"http://example.com/a%2Fb", "http://example.com/a%2Fb"},
	{"http://example.com/a b", "http://example.com/a%20b"},
	{"http://example.com/caf%c3%a9", "http://example.com/caf%C3%A9"},
	{"http://example.com/café", "http://example.com/caf%C3%A9"},
	{"http://example.com/a?x=%zz", "http://example.com/a?x=%25zz"},
	{"http://example.com/a?x=%7e&y=%2f", "http://example.com/a?x=~&y=%2F"},
	{"http://example.com/a/../b/./c", "http://example.com/a/../b/./c"},
	{"http://example.com//a", "http://example.com//a"},
	{"http://example.com./", "http://example.com./"},
	{"http://user:pass@example.com/", "http://user:pass@example.com/"},
	{"http://[::1]:8080/", "http://[::1]:8080/"},
	{"http://[0:0::1]/", "http://[::1]/"},
	// An address in any spelling is one host, as browsers read the IPv4
	// forms: the same URL, and the same ceiling.
	{"http://127.1/a", "http://127.0.0.1/a"},
	{"http://2130706433:8080/a", "http://127.0.0.1:8080/a"},
	{"http://0x7f000001/a", "http://127.0.0.1/a"},
	{"http://[::ffff:127.0.0.1]/a", "http://127.0.0.1/a"},
	{"http://[::ffff:7f00:1]:8080/a", "http://127.0.0.1:8080/a"},
	{"http://cafe.example/a", "http://cafe.example/a"},
	{"http://[FE80::1]/", "http://[fe80::1]/"},
	{"http://127.0.0.1:80/x", "http://127.0.0.1/x"},
	{"http://Bücher.example/", "http://xn--bcher-kva.example/"},
	{"http://xn--BCHER-kva.example/", "http://xn--bcher-kva.example/"},
	{"https://例え.テスト:8443/a", "https://xn--r8jz45g.xn--zckzah:8443/a"},
	{"http://example.com?x", "http://example.com/?x"},
}

func TestNormalize(t *testing.T) {
	for _, tt := range normalizeTests {
		got, err := Normalize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Normalize(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
}

var normalizeErrors = []string{
	"",
	"example.com/a",
	"/a/b",
	"//example.com/a",
	"ftp://example.com/",
	"mailto:a@example.com",
	"javascript:alert(1)",
	"http:example.com",
	"http://",
	"http:///a",
	"http://:80/",
	"http://example.com:99999/",
	"http://example.com:0/",
	"http://example.com:x/",
	"http://exa mple.com/",
	"http://example.com/%zz",
	"http://ex%25ample.com/",
	"http://[::1/",
	"http://[1.2.3.4]/",
	"http://exa\x00mple.com/",
	"http://example.com/\x7f",
	" http://example.com/",
	"http://a\u200db.example/", // a joiner outside its context: no IDNA name
}

func TestNormalizeErrors(t *testing.T) {
	for _, in := range normalizeErrors {
		got, err := Normalize(in)
		if !errors.Is(err, ErrInvalidURL) {
			t.Errorf("Normalize(%q) = %q, %v, want error wrapping ErrInvalidURL", in, got, err)
		}
	}
}

func TestNormalizeErrorSaysWhy(t *testing.T) {
	_, err := Normalize("ftp://example.com/")
	if err == nil || !strings.Contains(err.Error(), `scheme "ftp" is not http or https`) {
		t.Errorf("Normalize(ftp) error = %v, want it to name the scheme", err)
	}
}

// hostOf is the default host key the full normalisation gives raw.
func hostOf(t *testing.T, raw string) string {
	t.Helper()
	n, err := normalizeSlow(raw)
	if err != nil {
		t.Fatalf("normalizeSlow(%q): %v", raw, err)
	}
	return n.host
}

// TestNormalizedAlready: the shortcut takes the common canonical URL and
// agrees with the whole normalisation on it; it leaves the rest alone.
func TestNormalizedAlready(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{"http://example.com/", true},
		{"https://www.shop1.example/catalog/item/7?ref=list&page=3", true},
		{"http://127.0.0.1:8080/a/b?x=1?y=(2)!*'", true},
		{"https://a-b.example:443/", false},
		{"http://a.example:80/", false},
		{"http://a.example:08080/", false},
		{"http://a.example:65536/", false},
		{"http://a.example:/", false},
		{"http://A.example/", false},
		{"HTTP://a.example/", false},
		{"http://a.example", false},
		{"http://a.example?x", false},
		{"http://u@a.example/", false},
		{"http://a.example/%41", false},
		{"http://a.example/a#f", false},
		{"http://a.example/a b", false},
		{"http://[::1]/", false},
		{"http://bücher.example/", false},
	} {
		n, ok := normalizedAlready(tt.in)
		if ok != tt.ok {
			t.Errorf("normalizedAlready(%q) ok = %v, want %v", tt.in, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		want, err := normalizeSlow(tt.in)
		if err != nil || n != want {
			t.Errorf("normalizedAlready(%q) = %+v, want %+v (%v)", tt.in, n, want, err)
		}
	}
	for _, tt := range normalizeTests {
		if n, ok := normalizedAlready(tt.in); ok && n.key != tt.want {
			t.Errorf("normalizedAlready(%q) = %q, want %q", tt.in, n.key, tt.want)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, tt := range normalizeTests {
		f.Add(tt.in)
	}
	for _, in := range normalizeErrors {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		key, err := Normalize(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidURL) {
				t.Fatalf("Normalize(%q) error %v does not wrap ErrInvalidURL", in, err)
			}
			return
		}
		if n, ok := normalizedAlready(in); ok && (n.key != key || n.host != hostOf(t, in)) {
			t.Fatalf("normalizedAlready(%q) = %+v, want key %q host %q", in, n, key, hostOf(t, in))
		}
		again, err := Normalize(key)
		if err != nil || again != key {
			t.Fatalf("Normalize(Normalize(%q) = %q) = %q, %v, want it unchanged", in, key, again, err)
		}
		u, err := url.Parse(key)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
			t.Fatalf("Normalize(%q) = %q, which parses as %#v, %v", in, key, u, err)
		}
	})
}

func TestPrepare(t *testing.T) {
	tests := []struct {
		in           NewJob
		host, method string
		wantErr      error
	}{
		{NewJob{URL: "http://A.example:8080/x"}, "a.example:8080", "GET", nil},
		{NewJob{URL: "https://a.example:443/x", Host: "example"}, "example", "GET", nil},
		{NewJob{URL: "https://a.example/x", Method: "HEAD"}, "a.example", "HEAD", nil},
		{NewJob{URL: "https://a.example/x", Method: "GE T"}, "", "", ErrInvalidJob},
		{NewJob{URL: "https://a.example/x", Host: "a\nb"}, "", "", ErrInvalidJob},
		{NewJob{URL: "file:///etc/passwd"}, "", "", ErrInvalidURL},
	}
	for _, tt := range tests {
		j, err := Prepare(tt.in)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Prepare(%+v) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || j.Host != tt.host || j.Method != tt.method || j.State != Queued || j.URL != tt.in.URL {
			t.Errorf("Prepare(%+v) = %+v, %v, want host %q method %q", tt.in, j, err, tt.host, tt.method)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:s3cret@example.com/a?b=c":  "http://user:xxxxx@example.com/a?b=c",
		"http://user:s3cret@127.0.0.1:0/bad":    "http://user:xxxxx@127.0.0.1:0/bad",
		"http://user:p@ss:w@rd@example.com/x@y": "http://user:xxxxx@example.com/x@y",
		"http://user@example.com/":              "http://user@example.com/",
		"http://example.com/a@b:c":              "http://example.com/a@b:c",
		"https://a:b@h":                         "https://a:xxxxx@h",
		"not a url":                             "not a url",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestIDNOneHost: an internationalised host and its punycode form are one
// page and one host key (the crawl's budget for the server), as Go's client
// sends both alike.
func TestIDNOneHost(t *testing.T) {
	a, err := Prepare(NewJob{URL: "http://bücher.example/a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Prepare(NewJob{URL: "http://xn--bcher-kva.example/a"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Key != b.Key || a.Host != b.Host || a.Host != "xn--bcher-kva.example" {
		t.Errorf("keys %q, %q; hosts %q, %q; want one key and the host xn--bcher-kva.example", a.Key, b.Key, a.Host, b.Host)
	}
	if a.URL != "http://bücher.example/a" {
		t.Errorf("URL %q, want it kept as given", a.URL)
	}
}

// TestNormalizeSchemeForgotten: a URL without its scheme says so, with the
// http URL it likely meant when that is one; a URL with another scheme
// says which (the first version of the hint read mailto:x as
// http://mailto:x, and ::1/p as http://::1/p, no URL).
func TestNormalizeSchemeForgotten(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"example.com/a", "want http:// or https://: http://example.com/a?"},
		{"127.0.0.1:8080/a", "want http:// or https://: http://127.0.0.1:8080/a?"},
		{"localhost:8080/a", "want http:// or https://: http://localhost:8080/a?"},
		{"//host/p", "want http:// or https://: http://host/p?"},
		{"example.com/?u=http://x.example/", "want http:// or https://: http://example.com/?u=http://x.example/?"},
		{"::1/p", "not an absolute URL (want http:// or https://)"},
		{"2001:db8::1/x", "not an absolute URL (want http:// or https://)"},
		{"mailto:x@example.com", `scheme "mailto" is not http or https`},
		{"javascript:alert(1)", `scheme "javascript" is not http or https`},
		{"http:/example.com/a", "no host"},
		{"user:pass@example.com/a", "want http:// or https://: http://user:xxxxx@example.com/a?"},
		{"[::1]:8080/a", "want http:// or https://: http://[::1]:8080/a?"},
		{"/path/only", "not an absolute URL (want http:// or https://)"},
	} {
		_, err := Normalize(tc.raw)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Normalize(%q) = %v, want it to say %q", tc.raw, err, tc.want)
		}
	}
}
