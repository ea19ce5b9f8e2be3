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
	{"http://[FE80::1]/", "http://[fe80::1]/"},
	{"http://127.0.0.1:80/x", "http://127.0.0.1/x"},
	{"http://Bücher.example/", "http://bücher.example/"},
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
