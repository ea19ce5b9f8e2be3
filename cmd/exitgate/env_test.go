package main

import (
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runCmd runs `exitgate args...` in-process and returns its outputs.
func runCmd(t *testing.T, args ...string) crawlRun {
	t.Helper()
	return runCrawlCmd(t, 30*time.Second, args...)
}

func TestEnvName(t *testing.T) {
	root := newRootCmd()
	for _, tt := range []struct {
		path []string
		flag string
		want string
	}{
		{[]string{"crawl"}, "proxies", "EXITGATE_PROXIES"},
		{[]string{"crawl"}, "per-host-concurrency", "EXITGATE_PER_HOST_CONCURRENCY"},
		{[]string{"bench"}, "out", "EXITGATE_BENCH_OUT"},
		{[]string{"proxies", "check"}, "timeout", "EXITGATE_PROXIES_CHECK_TIMEOUT"},
		{[]string{"headers"}, "json", "EXITGATE_HEADERS_JSON"},
	} {
		cmd, _, err := root.Find(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := envName(cmd, tt.flag); got != tt.want {
			t.Errorf("envName(%v, %q) = %q, want %q", tt.path, tt.flag, got, tt.want)
		}
	}
}

// TestHelpShowsEveryFlagsEnvAndDefault: for every flag of every command,
// --help names its variable and its default, and no two flags of the whole
// command share a variable.
func TestHelpShowsEveryFlagsEnvAndDefault(t *testing.T) {
	root := newRootCmd()
	seen := map[string]string{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && !c.Hidden {
			r := runCmd(t, append(strings.Fields(c.CommandPath())[1:], "--help")...)
			if r.err != nil {
				t.Errorf("%s --help: %v", c.CommandPath(), r.err)
			}
			help := r.stdout
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if noEnv[f.Name] {
					return
				}
				env := envName(c, f.Name)
				want := fmt.Sprintf("[env %s, default %s]", env, defaultText(f))
				if !strings.Contains(help, want) {
					t.Errorf("%s --help does not show %q for --%s", c.CommandPath(), want, f.Name)
				}
				if other, dup := seen[env]; dup {
					t.Errorf("%s is the variable of both %s and %s --%s", env, other, c.CommandPath(), f.Name)
				}
				seen[env] = c.CommandPath() + " --" + f.Name
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, want := range []string{"EXITGATE_PROXIES", "EXITGATE_OUT", "EXITGATE_HEADER", "EXITGATE_PROXY", "EXITGATE_PROXIES_CHECK_TIMEOUT"} {
		if _, ok := seen[want]; !ok {
			t.Errorf("no flag reads %s", want)
		}
	}
}

// TestCrawlFromEnvironment: a crawl configured by its variables alone
// writes where EXITGATE_OUT says, at the rates they give, with the header
// EXITGATE_HEADER holds (one per line); a flag on the command line wins
// over its variable.
func TestCrawlFromEnvironment(t *testing.T) {
	site, srv := newHeaderSite(t)
	dir := t.TempDir()
	urlFile := writeLines(t, dir, "urls.txt", siteURLs(srv.URL, 3))
	envOut := filepath.Join(dir, "env-out")
	t.Setenv("EXITGATE_OUT", envOut)
	t.Setenv("EXITGATE_LANE_RATE", "50/s")
	t.Setenv("EXITGATE_IGNORE_ROBOTS", "true")
	t.Setenv("EXITGATE_PROGRESS", "0")
	t.Setenv("EXITGATE_HEADER", "X-Team: blue\n\nAccept-Language: fr, en;q=0.5\n")
	if r := runCmd(t, "crawl", urlFile); r.err != nil {
		t.Fatalf("crawl from the environment: %v\nstderr:\n%s", r.err, r.stderr)
	}
	checkAllDoneOnce(t, readResults(t, envOut), siteURLs(srv.URL, 3))
	h := site.last("/p/000")
	if h.Get("X-Team") != "blue" || h.Get("Accept-Language") != "fr, en;q=0.5" {
		t.Errorf("request headers = %v, want X-Team and Accept-Language from EXITGATE_HEADER", h)
	}

	flagOut := filepath.Join(dir, "flag-out")
	if r := runCmd(t, "crawl", "--out", flagOut, urlFile); r.err != nil {
		t.Fatalf("crawl --out over EXITGATE_OUT: %v\nstderr:\n%s", r.err, r.stderr)
	}
	checkAllDoneOnce(t, readResults(t, flagOut), siteURLs(srv.URL, 3))
}

// TestEnvBadValueNamesVariable: a value the flag cannot take, or one that
// its checks refuse, is a usage error (exit 2) that names the variable, and
// nothing is fetched. A value holding credentials is not echoed.
func TestEnvBadValueNamesVariable(t *testing.T) {
	site, srv := newCountingSite(t, 0)
	dir := t.TempDir()
	urlFile := writeLines(t, dir, "urls.txt", siteURLs(srv.URL, 1))
	for _, tt := range []struct {
		env, value string
		want       []string
	}{
		// What the flag wants, not strconv's words ("strconv.ParseInt:
		// parsing \"lots\": invalid syntax").
		{"EXITGATE_CONCURRENCY", "lots", []string{`EXITGATE_CONCURRENCY: --concurrency "lots": want a whole number`}},
		{"EXITGATE_IGNORE_ROBOTS", "perhaps", []string{`EXITGATE_IGNORE_ROBOTS: --ignore-robots "perhaps": want true or false`}},
		{"EXITGATE_CONCURRENCY", "0", []string{"--concurrency 0: want 1 to 10000", "(set by EXITGATE_CONCURRENCY)"}},
		{"EXITGATE_IGNORE_ROBOTS", "perhaps", []string{"EXITGATE_IGNORE_ROBOTS"}},
		{"EXITGATE_TIMEOUT", "30", []string{"EXITGATE_TIMEOUT", "missing unit"}},
		{"EXITGATE_HOST_RATE", "20rps", []string{"EXITGATE_HOST_RATE", "did you mean 20/s?"}},
		{"EXITGATE_PROXY_TEMPLATE", "http://user:hunter2@gw.example:7777", []string{"--proxy-template", "EXITGATE_PROXY_TEMPLATE"}},
		// Named by its shorthand in the check's words (-H #1), and still
		// the variable's.
		{"EXITGATE_HEADER", "bad header", []string{"-H #1", "(set by EXITGATE_HEADER)"}},
	} {
		t.Run(tt.env+"="+tt.value, func(t *testing.T) {
			t.Setenv(tt.env, tt.value)
			r := runCmd(t, "crawl", "--out", filepath.Join(dir, "out"), urlFile)
			if code := exitCode(r.err); code != exitUsage {
				t.Fatalf("crawl with %s=%q: %v (exit %d), want exit %d", tt.env, tt.value, r.err, code, exitUsage)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.err.Error(), w) {
					t.Errorf("crawl with %s=%q: error %q does not say %q", tt.env, tt.value, r.err, w)
				}
			}
			if strings.Contains(r.err.Error(), "hunter2") {
				t.Errorf("the error repeats a password: %q", r.err)
			}
		})
	}
	if seen, _ := site.snapshot(); len(seen) != 0 {
		t.Errorf("the site was asked %v", seen)
	}
}

// TestEnvTypoWarned: an EXITGATE_ variable no command reads, a typo away
// from one the command does, is pointed out (and the run goes on).
func TestEnvTypoWarned(t *testing.T) {
	t.Setenv("EXITGATE_PROXIE", "x.txt")
	r := runCmd(t, "crawl", filepath.Join(t.TempDir(), "missing.txt"))
	if want := "EXITGATE_PROXIE is not a setting; did you mean EXITGATE_PROXIES?"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr = %q, want it to say %q", r.stderr, want)
	}
}

// TestEnvOfAnotherCommandWarned: a variable another command reads, set for
// a flag this one has too, is pointed out: EXITGATE_PROXIES is crawl's, and
// serve ran direct with only a warning that no exits were given.
func TestEnvOfAnotherCommandWarned(t *testing.T) {
	t.Setenv("EXITGATE_PROXIES", "px.txt")
	r := runCmd(t, "headers", "--profile", "bogus") // (a command with no --proxies: nothing said)
	if strings.Contains(r.stderr, "EXITGATE_PROXIES") {
		t.Errorf("headers, which has no --proxies, spoke of EXITGATE_PROXIES: %q", r.stderr)
	}
	r = runCmd(t, "serve", "--listen", "127.0.0.1:0", "--timeout", "0s") // refused before it serves
	if want := "EXITGATE_PROXIES is `exitgate crawl`'s setting, not read here; `exitgate serve` reads EXITGATE_SERVE_PROXIES"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr = %q, want it to say %q", r.stderr, want)
	}
}

func TestFlagSuggestion(t *testing.T) {
	urlFile := writeLines(t, t.TempDir(), "urls.txt", []string{"http://127.0.0.1:9/x"})
	for _, tt := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"crawl", "--proxie", "p.txt", urlFile}, "unknown flag: --proxie (did you mean --proxies?)", exitUsage},
		{[]string{"crawl", "-proxies", "p.txt", urlFile}, "(did you mean --proxies?)", exitUsage},
		{[]string{"crawl", "--concurrence", "4", urlFile}, "(did you mean --concurrency?)", exitUsage},
		{[]string{"crawl", "--lane", "4/s", urlFile}, "(did you mean --lane-rate?)", exitUsage},
		{[]string{"proxies", "check", "--timout", "1s"}, "(did you mean --timeout?)", exitBadInput},
		{[]string{"bench", "--scenarios", "all"}, "(did you mean --scenario?)", exitUsage},
	} {
		r := runCmd(t, tt.args...)
		if r.err == nil || !strings.Contains(r.err.Error(), tt.want) || exitCode(r.err) != tt.code {
			t.Errorf("exitgate %s: %v (exit %d), want exit %d and %q", strings.Join(tt.args, " "), r.err, exitCode(r.err), tt.code, tt.want)
		}
	}
	r := runCmd(t, "crawl", "--zzzzzz", urlFile)
	if r.err == nil || strings.Contains(r.err.Error(), "did you mean") {
		t.Errorf("crawl --zzzzzz: %v, want no suggestion", r.err)
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"proxies", "proxy", "proxy-template", "concurrency", "per-host-concurrency", "out"}
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"proxie", []string{"proxies"}},
		{"PROXIES", nil}, // the same name is no suggestion
		{"prxy", []string{"proxy"}},
		{"ot", []string{"out"}},
		{"o", nil},
		{"concur", []string{"concurrency"}},
		{"xyz", nil},
	} {
		if got := suggest(tt.in, names); !slices.Equal(got, tt.want) {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSuggestRate(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"20rps", "20/s"},
		{"0x10/s", ""}, // not "0/s", which turns the ceiling off
		{"1_000/s", ""},
		{"20 rps", "20/s"},
		{"1.5qps", "1.5/s"},
		{"30rpm", "30/min"},
		{"100rph", "100/h"},
		{"5 req/min", "5/min"},
		{"5r/s", "5/s"},
		{"2/seconds", "2/s"},
		{"10/mins", "10/min"},
		{"100 per hour", "100/h"},
		{"100/hr", "100/h"},
		{"20 requests/minute", "20/min"},
		{"1000/day", "1000/24h"},
		{"fast", ""},
		{"20/fortnight", ""},
		{"1e309/s", ""}, // a count out of range: no spelling to suggest (it said "1/s")
		{"-5/s", ""},
		{"1e3rps", "1e3/s"},
	} {
		if got := suggestRate(tt.in); got != tt.want {
			t.Errorf("suggestRate(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRateSuggestionOnEveryRateFlag: every rate the crawl reads, from the
// command line or a config file, suggests the spelling it takes.
func TestRateSuggestionOnEveryRateFlag(t *testing.T) {
	dir := t.TempDir()
	urlFile := writeLines(t, dir, "urls.txt", []string{"http://127.0.0.1:9/x"})
	cfg := writeLines(t, dir, "cfg.yaml", []string{"lane-rate: 30 per minute"})
	for _, args := range [][]string{
		{"crawl", "--host-rate", "20rps", urlFile},
		{"crawl", "--lane-rate", "20rps", urlFile},
		{"crawl", "--config", cfg, urlFile},
	} {
		r := runCmd(t, args...)
		if r.err == nil || exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), "did you mean") {
			t.Errorf("exitgate %s: %v, want exit 2 with a suggestion", strings.Join(args, " "), r.err)
		}
	}
}

// TestEnvSubprocess: the built binary reads its variables from its own
// environment, and a bad one exits 2 naming it.
func TestEnvSubprocess(t *testing.T) {
	bin := exitgateBinary(t)
	_, srv := newCountingSite(t, 0)
	dir := t.TempDir()
	urlFile := writeLines(t, dir, "urls.txt", siteURLs(srv.URL, 2))
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "crawl", urlFile)
	cmd.Env = append(os.Environ(), "EXITGATE_OUT="+out, "EXITGATE_LANE_RATE=50/s", "EXITGATE_IGNORE_ROBOTS=1", "EXITGATE_PROGRESS=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("exitgate crawl with EXITGATE_OUT: %v\n%s", err, b)
	}
	checkAllDoneOnce(t, readResults(t, out), siteURLs(srv.URL, 2))

	cmd = exec.Command(bin, "crawl", urlFile)
	cmd.Env = append(os.Environ(), "EXITGATE_OUT="+out, "EXITGATE_MAX_WAIT=soon")
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage || !strings.Contains(string(b), "EXITGATE_MAX_WAIT") {
		t.Errorf("exitgate crawl with EXITGATE_MAX_WAIT=soon: %v\n%s\nwant exit 2 naming the variable", err, b)
	}
}

// TestVerboseAndLogLevel: where --verbose and --log-level say different
// things, the one given where it counts more wins (the command line over the
// environment), and both on the command line are refused: EXITGATE_VERBOSE
// turned --log-level error into debug, unsaid.
func TestVerboseAndLogLevel(t *testing.T) {
	_, srv := newHeaderSite(t)
	dir := t.TempDir()
	urlFile := writeLines(t, dir, "urls.txt", siteURLs(srv.URL, 2))
	t.Setenv("EXITGATE_VERBOSE", "true")
	r := runCmd(t, "crawl", "--log-level", "error", "--ignore-robots", "--progress", "0", "--out", filepath.Join(dir, "a"), urlFile)
	if r.err != nil || strings.Contains(r.stderr, "level=DEBUG") {
		t.Errorf("--log-level error over EXITGATE_VERBOSE: %v, stderr with debug lines:\n%s", r.err, r.stderr)
	}
	t.Setenv("EXITGATE_VERBOSE", "")
	r = runCmd(t, "crawl", "--verbose", "--log-level", "error", "--ignore-robots", "--out", filepath.Join(dir, "b"), urlFile)
	if code := exitCode(r.err); code != exitUsage || !strings.Contains(r.err.Error(), "disagree") {
		t.Errorf("--verbose --log-level error: %v (exit %d), want exit %d saying they disagree", r.err, code, exitUsage)
	}
}

// TestStdLogGoesToTheLogger: the standard log package's lines (net/http's
// own) go to the crawl's logger at debug, not raw to stderr.
func TestStdLogGoesToTheLogger(t *testing.T) {
	var buf strings.Builder
	f := exitFlags{logLevel: "info"}
	f.logger(&buf)
	t.Cleanup(func() { log.SetOutput(os.Stderr); log.SetFlags(log.LstdFlags) })
	log.Print("Unsolicited response received on idle HTTP channel")
	if buf.Len() != 0 {
		t.Errorf("at info: %q, want nothing", buf.String())
	}
	f.verbose = true
	f.logger(&buf)
	log.Print("Unsolicited response received on idle HTTP channel")
	if !strings.Contains(buf.String(), `level=DEBUG msg="Unsolicited response`) {
		t.Errorf("at debug: %q, want the line as a debug record", buf.String())
	}
}
