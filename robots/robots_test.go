package robots

import (
	"strings"
	"testing"
	"time"
)

const sample = `# comment
User-agent: *
Disallow: /private/
Allow: /private/open
Disallow: /*.pdf$
Crawl-delay: 2

User-agent: exitgate
User-agent: other
Disallow: /no-exitgate
Crawl-delay: 0.5

User-agent: greedy
Disallow: /
Sitemap: https://example.com/sitemap.xml
`

func TestAllowed(t *testing.T) {
	tests := []struct {
		ua, path string
		want     bool
	}{
		{"somebot/1.0", "/", true},
		{"somebot/1.0", "/private/x", false},
		{"somebot/1.0", "/private/open", true}, // longer Allow wins
		{"somebot/1.0", "/private/openness", true},
		{"somebot/1.0", "/doc.pdf", false},
		{"somebot/1.0", "/doc.pdf?x=1", true}, // $ anchors the end
		{"somebot/1.0", "/robots.txt", true},
		{"exitgate/0.1 (+https://example)", "/private/x", true}, // own group replaces *
		{"exitgate/0.1", "/no-exitgate/page", false},
		{"Other", "/no-exitgate", false}, // case-insensitive, grouped agents
		{"greedy", "/anything", false},
		{"greedy", "/robots.txt", true},
	}
	for _, tt := range tests {
		r := Parse(strings.NewReader(sample), tt.ua)
		if got := r.Allowed(tt.path); got != tt.want {
			t.Errorf("Parse(sample, %q).Allowed(%q) = %v, want %v", tt.ua, tt.path, got, tt.want)
		}
	}
}

func TestCrawlDelay(t *testing.T) {
	tests := []struct {
		ua   string
		want time.Duration
	}{
		{"somebot", 2 * time.Second},
		{"exitgate", 500 * time.Millisecond},
		{"greedy", 0},
	}
	for _, tt := range tests {
		if got := Parse(strings.NewReader(sample), tt.ua).CrawlDelay(); got != tt.want {
			t.Errorf("Parse(sample, %q).CrawlDelay() = %v, want %v", tt.ua, got, tt.want)
		}
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"/", "/a", true},
		{"/a", "/b", false},
		{"/*/x", "/a/b/x/y", true},
		{"/*.php$", "/index.php", true},
		{"/*.php$", "/index.php5", false},
		{"/fish*", "/fishheads", true},
		{"/fish$", "/fish", true},
		{"/fish$", "/fishy", false},
		{"*", "/anything", true},
		{"/a*b*c", "/axxbyyc", true},
		{"/a*b*c", "/axxcyyb", false},
	}
	for _, tt := range tests {
		if got := match(tt.pattern, tt.path); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestGarbageAllowsAll(t *testing.T) {
	r := Parse(strings.NewReader("<html>not robots</html>\n\x00\xff:::\nDisallow: /x\n"), "bot")
	if !r.Allowed("/x") {
		t.Errorf("a Disallow outside any group applied; want it ignored")
	}
	if !AllowAll.Allowed("/x") || DisallowAll.Allowed("/x") {
		t.Errorf("AllowAll/DisallowAll do not mean what they say")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample, "exitgate", "/private/x")
	f.Add("User-agent: *\nDisallow: /*a*$\n", "x", "/bab")
	f.Fuzz(func(t *testing.T, body, ua, path string) {
		r := Parse(strings.NewReader(body), ua)
		r.Allowed(path)
		if d := r.CrawlDelay(); d < 0 {
			t.Fatalf("negative crawl delay %v", d)
		}
	})
}

// TestRFC9309 holds the cases where github.com/temoto/robotstxt v1.1.2
// departs from RFC 9309 (see the package doc), and a few more of the RFC's.
func TestRFC9309(t *testing.T) {
	tests := []struct {
		name, body, path string
		want             bool
	}{
		{"a malformed Crawl-delay spoils nothing else", "User-agent: *\nDisallow: /private\nCrawl-delay: 1s\n", "/private", false},
		{"a rule before any group is skipped, the rest applies", "Disallow: /x\nUser-agent: *\nDisallow: /private\n", "/private", false},
		{"a wildcard rule matches from the start of the path", "User-agent: *\nDisallow: /a*b\n", "/x/a1b", true},
		{"... and does match there", "User-agent: *\nDisallow: /a*b\n", "/a1b", false},
		{"a tie goes to Allow, Disallow first", "User-agent: *\nDisallow: /page\nAllow: /page\n", "/page", true},
		{"a tie goes to Allow, Allow first", "User-agent: *\nAllow: /page\nDisallow: /page\n", "/page", true},
		{"a percent-encoded unreserved character is the character", "User-agent: *\nDisallow: /%7Ejoe\n", "/~joe", false},
		{"... either way round", "User-agent: *\nDisallow: /~joe\n", "/%7ejoe/x", false},
		{"an encoded slash is not a slash", "User-agent: *\nDisallow: /a/b\n", "/a%2Fb", true},
		{"escapes compare case-insensitively", "User-agent: *\nDisallow: /a%2fb\n", "/a%2Fb", false},
		{"non-ASCII in a rule matches its encoding", "User-agent: *\nDisallow: /caf\u00e9\n", "/caf%C3%A9", false},
		{"$ ends the match", "User-agent: *\nDisallow: /fish$\n", "/fish/x", true},
		{"longest match wins", "User-agent: *\nDisallow: /\nAllow: /public/\n", "/public/x", true},
	}
	for _, tt := range tests {
		if got := Parse(strings.NewReader(tt.body), "bot").Allowed(tt.path); got != tt.want {
			t.Errorf("%s: Allowed(%q) = %v, want %v", tt.name, tt.path, got, tt.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/%7ejoe", "/~joe"},
		{"/a%2fb", "/a%2Fb"},
		{"/caf\u00e9", "/caf%C3%A9"},
		{"/100%", "/100%"},
		{"/%zz", "/%zz"},
		{"/*.pdf$", "/*.pdf$"},
	} {
		if got := normalize(tt.in); got != tt.want {
			t.Errorf("normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestCrawlDelayADayOrMore: a Crawl-delay of a day or more (up to "inf") is
// held to a day, which parks the host; it used to be ignored, and the host
// crawled at full speed.
func TestCrawlDelayADayOrMore(t *testing.T) {
	for _, v := range []string{"86399", "86400", "10000000000", "inf"} {
		want := 24 * time.Hour
		if v == "86399" {
			want = 86399 * time.Second
		}
		if got := Parse(strings.NewReader("User-agent: *\nCrawl-delay: "+v+"\n"), "exitgate").CrawlDelay(); got != want {
			t.Errorf("Crawl-delay: %s read as %v, want %v", v, got, want)
		}
	}
}
