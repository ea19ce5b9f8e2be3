package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/exitgate/exitgate/internal/syncbuf"
)

func TestMonitorFlags(t *testing.T) {
	parse := func(args ...string) (monitorFlags, error) {
		var f monitorFlags
		fl := pflag.NewFlagSet("crawl", pflag.ContinueOnError)
		addMonitorFlags(fl, &f)
		return f, fl.Parse(args)
	}
	f, err := parse("--budget", "0.5%", "--host-budget", "API.example.com=0.1%", "--host-budget", "a.test=0.02,b.test=3%",
		"--alert-after", "1m", "--breaker-after", "2m", "--breaker-cooldown", "30s", "--budget-window", "20s")
	if err != nil {
		t.Fatal(err)
	}
	c, err := monitorConfig(f)
	if err != nil {
		t.Fatalf("monitorConfig: %v", err)
	}
	if c.Budget != 0.005 || c.Budgets["api.example.com"] != 0.001 || c.Budgets["a.test"] != 0.02 || c.Budgets["b.test"] != 0.03 ||
		c.AlertAfter != time.Minute || c.BreakAfter != 2*time.Minute || c.Cooldown != 30*time.Second || c.Window != 20*time.Second {
		t.Errorf("config %+v", c)
	}
	f, _ = parse("--breaker-after", "0")
	if c, err := monitorConfig(f); err != nil || c.BreakAfter >= 0 {
		t.Errorf("--breaker-after 0: %+v, %v; want no breaker", c.BreakAfter, err)
	}
	// A value under 0 is refused saying 0 is taken (it said "want above 0").
	f, _ = parse("--breaker-after", "-1s")
	if _, err := monitorConfig(f); err == nil || err.Error() != "--breaker-after -1s: want 0 (none) or more" {
		t.Errorf("--breaker-after -1s: %v, want the range with 0 in it", err)
	}
	for _, bad := range [][]string{
		{"--budget", "2"}, {"--budget", "0%"}, {"--budget", "lots"}, {"--host-budget", "nohost"}, {"--host-budget", "a.test=200%"},
		{"--alert-after", "0s"}, {"--breaker-after", "1m"}, {"--metrics-exits", "-1"},
	} {
		f, err := parse(bad...)
		if err == nil {
			_, err = monitorConfig(f)
		}
		if err == nil {
			t.Errorf("%v accepted", bad)
		} else if !strings.Contains(err.Error(), strings.TrimPrefix(bad[0], "--")) {
			t.Errorf("%v: error %q does not name the flag", bad, err)
		}
	}
}

// TestHostBudgetInConfigFile: per-host budgets as a YAML mapping.
func TestHostBudgetInConfigFile(t *testing.T) {
	var f monitorFlags
	fl := pflag.NewFlagSet("crawl", pflag.ContinueOnError)
	addMonitorFlags(fl, &f)
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("budget: 2%\nhost-budget:\n  api.example.com: 0.1%\n  slow.example.org: 0.05\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := applyConfigFile(fl, path); err != nil {
		t.Fatal(err)
	}
	c, err := monitorConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Budget != 0.02 || c.Budgets["api.example.com"] != 0.001 || c.Budgets["slow.example.org"] != 0.05 {
		t.Errorf("budgets from the config file: %v, %v", c.Budget, c.Budgets)
	}
}

// A --host-budget's host is keyed as the crawl keys hosts: an
// internationalised name in punycode, an address in one spelling, the
// default port dropped; one that is no host is refused by name.
func TestHostBudgetKeys(t *testing.T) {
	f := monitorFlags{budget: "1%", budgetWindow: time.Minute, alertAfter: time.Minute, breakerCooldown: time.Minute,
		hostBudgets: []string{"Bücher.example=0.1%", "127.1:8080=0.2%", "api.example.com:80=0.3%",
			// https's port, or an https URL: as the crawl keys
			// https://shop.example/ (HOST:443 matched no host).
			"shop.example:443=0.4%", "https://secure.example=0.5%", "https://alt.example:8443/=0.6%",
			// A URL copied from a list: its path and query do not count.
			"https://listed.example/item/3?a=b=0.5%"}}
	c, err := monitorConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"xn--bcher-kva.example": 0.001, "127.0.0.1:8080": 0.002, "api.example.com": 0.003,
		"shop.example": 0.004, "secure.example": 0.005, "alt.example:8443": 0.006, "listed.example": 0.005}
	for k, v := range want {
		if c.Budgets[k] != v {
			t.Errorf("budgets %v: want %s at %v", c.Budgets, k, v)
		}
	}
	f.hostBudgets = []string{"x.example/y=1%"}
	if _, err := monitorConfig(f); err == nil || !strings.Contains(err.Error(), "is no host") {
		t.Errorf("--host-budget x.example/y=1%%: %v, want it refused as no host (a path without a scheme)", err)
	}
}

// TestStatusBadArguments: an ADDR that is no crawl's address, and a bad
// flag value, are refused as usage (exit 2), each by name: "http://" was
// looked up as a host named http, ftp://x failed as the run (exit 1), and
// the range error named three flags at once.
func TestStatusBadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "http://"}, `ADDR "http://": no host`},
		{[]string{"status", "ftp://x"}, `scheme "ftp"`},
		{[]string{"status", "--rows", "-1", "127.0.0.1:1"}, "--rows -1: want 0 or more"},
		{[]string{"status", "--timeout", "0s", "127.0.0.1:1"}, "--timeout 0s: want above 0"},
		// Nothing given: said what is wanted (cobra's "accepts 1 arg(s),
		// received 0" named nothing), as crawl's missing URL file.
		{[]string{"status"}, "status needs what to show"},
		{[]string{"crawl"}, "crawl needs a URL file"},
		{[]string{"crawl", "/nonexistent/urls.txt"}, "URLFILE: stat /nonexistent/urls.txt"},
		// A number flag's bad value: what it wants, not strconv's words.
		{[]string{"crawl", "--concurrency", "abc", "/dev/null"}, `--concurrency "abc": want a whole number`},
		// Two files: both named (cobra's "accepts 1 arg(s), received 2").
		{[]string{"crawl", "a.txt", "b.txt"}, `crawl takes one URL file, given 2: ["a.txt" "b.txt"]`},
		// A directory as the exits' file: the flag named.
		{[]string{"crawl", "--proxies", os.TempDir(), "--out", filepath.Join(t.TempDir(), "o"), "/dev/null"}, "--proxies: read " + os.TempDir()},
		{[]string{"headers", "/dev/null"}, "no response head in /dev/null"},
	} {
		_, msg, code := run(t, tc.args...)
		if code != exitUsage || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: exit %d %q, want %d with %q", tc.args, code, msg, exitUsage, tc.want)
		}
	}
}

// TestStatusCrawlWithoutRuns: a crawl's --out before its first run
// summary (its first second) is said to be one, exit 1; a directory that is
// no crawl's is a usage error. (Both were "a directory without runs",
// exit 2.)
func TestStatusCrawlWithoutRuns(t *testing.T) {
	dir := t.TempDir()
	if _, msg, code := run(t, "status", dir); code != exitUsage || !strings.Contains(msg, "without runs") {
		t.Errorf("status of an empty directory: exit %d %q, want 2, no crawl's", code, msg)
	}
	os.WriteFile(filepath.Join(dir, crawlRecordFile), []byte(`{"url_files":[]}`), 0o644)
	if _, msg, code := run(t, "status", dir); code != exitFailed || !strings.Contains(msg, "no run summary yet") {
		t.Errorf("status of a crawl in its first seconds: exit %d %q, want 1, its summary not written yet", code, msg)
	}
}

func TestStatusUnreachable(t *testing.T) {
	var out syncbuf.Buffer
	err := runStatus(context.Background(), &out, "127.0.0.1:1", false, 5, 0, time.Second)
	if err == nil || !strings.Contains(err.Error(), "--ui") {
		t.Errorf("status of nothing: %v, want an error that says to start a crawl with --ui", err)
	}
}
