package hostname

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestASCII(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"example.com", "example.com", ""},
		{"Example.COM", "example.com", ""},
		{"under_score.example", "under_score.example", ""}, // ASCII is kept as given, as Go's client does
		{"bücher.example", "xn--bcher-kva.example", ""},
		{"BÜCHER.example", "xn--bcher-kva.example", ""},       // mapped to lower case first
		{"bu\u0308cher.example", "xn--bcher-kva.example", ""}, // decomposed: normalised first
		{"xn--bcher-kva.example", "xn--bcher-kva.example", ""},
		{"例え.テスト", "xn--r8jz45g.xn--zckzah", ""},
		{"a\u200db.example", "", "no valid internationalised name"}, // a joiner outside its context
		{"\u200b", "", "is no name"},                                // a zero-width space alone: mapped to nothing
	} {
		got, err := ASCII(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ASCII(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ASCII(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestASCIIIsTheWire: the host Go's HTTP client sends for an
// internationalised URL is the one ASCII returns, but for case, which no
// host name's reader minds (the client keeps the ASCII letters' case:
// xn--Bcher-kva.example). A real request to a loopback server used as the
// client's proxy, so that the name need not resolve.
func TestASCIIIsTheWire(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Host }))
	defer srv.Close()
	proxy, _ := url.Parse(srv.URL)
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	resp, err := c.Get("http://Bücher.example/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want, err := ASCII("Bücher.example")
	if err != nil || !strings.EqualFold(got, want) {
		t.Errorf("the client sent Host %q; ASCII gives %q, %v", got, want, err)
	}
}

// An address is keyed one way however it is spelt, as browsers read URLs:
// a --host-rate was bypassed by writing the host another way.
func TestAddress(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1":        "127.0.0.1",
		"127.1":            "127.0.0.1",
		"2130706433":       "127.0.0.1",
		"0x7f000001":       "127.0.0.1",
		"0177.0.0.1":       "127.0.0.1",
		"::ffff:127.0.0.1": "127.0.0.1",
		"::ffff:7f00:1":    "127.0.0.1",
		"::1":              "[::1]",
		"2001:DB8::1":      "[2001:db8::1]",
		"fe80::1%eth0":     "[fe80::1%25eth0]",
		"example.com":      "",
		"1.example":        "",
		"256.256.256.256":  "",
		"4294967296":       "",
		"127.0.0.1.":       "",
		"":                 "",
	} {
		got, ok := Address(in)
		if ok != (want != "") || got != want {
			t.Errorf("Address(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
