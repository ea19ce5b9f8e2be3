package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exitgate/exitgate/internal/peertest"
)

// run executes the root command in-process and returns stdout, the error text and the
// process exit code main would use.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(""))
	root.SetArgs(args)
	err := root.Execute()
	code, msg := 0, ""
	if err != nil {
		code, msg = exitCode(err), err.Error()
	}
	return out.String() + errOut.String(), msg, code
}

func writeList(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "proxies.txt")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// echo answers any request, including an absolute-form one sent to it as a proxy,
// with the client's address: a stand-in for a gateway whose sessions share one IP.
func echo(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprint(w, host)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestProxiesCheckRealCredentials: tinyproxy with BasicAuth; the right credentials
// work, missing ones draw a 407 and wrong ones tinyproxy's 401, both reported as
// rejected credentials; the command exits 1 and never prints the passwords.
func TestProxiesCheckRealCredentials(t *testing.T) {
	ng := peertest.StartNginx(t, peertest.NginxConfig{Rate: "100r/s", Burst: 50})
	p := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.14", User: "alice", Password: "RightPw1"})
	list := writeList(t,
		"# three ways into one authenticated proxy",
		"http://alice:RightPw1@"+p.Addr(),
		p.Addr(),
		p.Addr()+":mallory:WrongPw2", // alice twice would be a duplicate exit
	)
	out, msg, code := run(t, "proxies", "check", "--echo-url", ng.URL()+"/ip", "--timeout", "10s", list)
	if code != 1 || msg != "2 of 3 exits failed" {
		t.Errorf("proxies check = exit %d %q, want 1 %q\n%s", code, msg, "2 of 3 exits failed", out)
	}
	for _, want := range []string{
		"127.0.0.14",
		"proxy rejected credentials (407)",
		"proxy rejected credentials (401)",
		"3 exits: 1 ok, 2 failed, 0 duplicate IP",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("proxies check output lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"RightPw1", "WrongPw2"} {
		if strings.Contains(out+msg, secret) {
			t.Errorf("proxies check output leaks %q:\n%s", secret, out)
		}
	}
}

// TestProxiesCheckRealExits: two tinyproxy exits, each resolved to its bind address, in JSON.
func TestProxiesCheckRealExits(t *testing.T) {
	ng := peertest.StartNginx(t, peertest.NginxConfig{Rate: "100r/s", Burst: 50})
	p1 := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.11"})
	p2 := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.12"})
	list := writeList(t, p1.URL(), p2.Addr())
	out, msg, code := run(t, "proxies", "check", "--json", "--echo-url", ng.URL()+"/ip", list)
	if code != 0 {
		t.Fatalf("proxies check = exit %d %q, want 0\n%s", code, msg, out)
	}
	var doc checkJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if doc.OK != 2 || doc.Failed != 0 || len(doc.Exits) != 2 {
		t.Fatalf("JSON summary = %+v, want 2 ok", doc)
	}
	for i, want := range []string{"127.0.0.11", "127.0.0.12"} {
		e := doc.Exits[i]
		if e.Status != "ok" || e.IP != want || e.LatencyMS <= 0 {
			t.Errorf("exit %d = %+v, want ok with IP %s and a latency", i, e, want)
		}
	}
}

func TestProxiesCheckBadLinesRefused(t *testing.T) {
	srv := echo(t)
	list := writeList(t, "h:1", "http://u:SECRETpw@h:99999", "bind:127.0.0.300")
	out, msg, code := run(t, "proxies", "check", "--echo-url", srv.URL, list)
	want := fmt.Sprintf("2 bad line(s), nothing checked:\n%s:2: port \"99999\" out of range\n%s:3: bad bind address \"127.0.0.300\"", list, list)
	if code != 2 || msg != want {
		t.Errorf("proxies check = exit %d\n%s\nwant exit 2\n%s", code, msg, want)
	}
	if out != "" || strings.Contains(msg, "SECRETpw") {
		t.Errorf("refused run printed %q / leaked in %q", out, msg)
	}
}

// With no FILE, -x or template, proxies check says it checks this
// machine's own address (it checked "direct" unsaid).
func TestProxiesCheckNothingGivenSaysDirect(t *testing.T) {
	srv := echo(t)
	out, msg, code := run(t, "proxies", "check", "--echo-url", srv.URL)
	if code != 0 || !strings.Contains(out, "no exits given") || !strings.Contains(out, "direct  ok") {
		t.Errorf("proxies check with nothing = exit %d (%s), output %q; want direct checked and the warning", code, msg, out)
	}
}

func TestProxiesCheckTemplateDuplicates(t *testing.T) {
	gw := echo(t) // every session comes out from the same IP
	tmpl := "http://user-session-{session}:SECRETpw@" + gw.Listener.Addr().String()
	out, msg, code := run(t, "proxies", "check", "--proxy-template", tmpl, "--sessions", "3", "--echo-url", "http://echo.test/ip")
	if code != 0 {
		t.Errorf("duplicates without --fail-duplicates = exit %d %q, want 0", code, msg)
	}
	id := gw.Listener.Addr().String()
	for _, want := range []string{
		id + "#session-1  ok",
		id + "#session-2  dup",
		"same exit IP as " + id + "#session-1",
		"3 exits: 1 ok, 0 failed, 2 duplicate IP",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "SECRETpw") || strings.Contains(out, "user-session") {
		t.Errorf("output leaks credentials:\n%s", out)
	}
	_, msg, code = run(t, "proxies", "check", "--proxy-template", tmpl, "--sessions", "3", "--fail-duplicates", "--echo-url", "http://echo.test/ip")
	if code != 1 || msg != "2 of 3 exits share an exit IP with another" {
		t.Errorf("--fail-duplicates = exit %d %q, want 1", code, msg)
	}
}

func TestProxiesCheckBindAndStdin(t *testing.T) {
	srv := echo(t)
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetIn(strings.NewReader("bind:127.0.0.31-127.0.0.32\n"))
	root.SetArgs([]string{"proxies", "check", "--echo-url", srv.URL, "-"})
	if err := root.Execute(); err != nil {
		t.Fatalf("check from stdin: %v\n%s", err, out.String())
	}
	for _, want := range []string{"bind:127.0.0.31  ok      127.0.0.31", "bind:127.0.0.32  ok      127.0.0.32"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestProxiesCheckFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"proxies", "check", "--sessions", "3"},
		{"proxies", "check", "--timeout", "0s"},
		{"proxies", "check", "--concurrency", "0"},
		{"proxies", "check", "--nope"},
		{"proxies", "check", "a", "b"},
		{"proxies", "check", "--proxy-template", "http://u:SECRETpw@gw:1"},
		{"proxies", "check", "--echo-url", "ftp://x"},
		{"proxies", "check", filepath.Join(t.TempDir(), "missing.txt")},
	} {
		_, msg, code := run(t, args...)
		if code != 2 || strings.Contains(msg, "SECRETpw") {
			t.Errorf("%v = exit %d %q, want 2 without the password", args, code, msg)
		}
	}
}

func TestProxiesCheckHelp(t *testing.T) {
	out, _, code := run(t, "proxies", "check", "--help")
	if code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, want := range []string{
		"--proxy-template", "--sessions int", "default 10]", "--echo-url", "default https://api.ipify.org]",
		"--exit-ip-header", "--timeout duration", "default 15s]", "--concurrency int", "default 16]",
		"--json", "--fail-duplicates", "Exit status",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// TestProxiesCheckProxyFlag: -x URLs are checked with FILE's exits, and
// alone without a FILE; a bad one is refused naming its position.
func TestProxiesCheckProxyFlag(t *testing.T) {
	e := echo(t)
	p := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.84"})
	list := writeList(t, "bind:127.0.0.85")
	out, msg, code := run(t, "proxies", "check", "--echo-url", e.URL, "-x", "http://"+p.Addr(), list)
	if code != 0 || !strings.Contains(out, "127.0.0.84") || !strings.Contains(out, "127.0.0.85") || !strings.Contains(out, "2 exits: 2 ok") {
		t.Errorf("proxies check -x with a FILE = exit %d %q\n%s", code, msg, out)
	}
	out, msg, code = run(t, "proxies", "check", "--echo-url", e.URL, "--proxy", p.Addr())
	if code != 0 || !strings.Contains(out, "1 exits: 1 ok") {
		t.Errorf("proxies check -x alone = exit %d %q\n%s", code, msg, out)
	}
	_, msg, code = run(t, "proxies", "check", "-x", p.Addr(), "-x", "gopher://x:1")
	if code != exitBadInput || !strings.Contains(msg, "--proxy:2:") {
		t.Errorf("proxies check with a bad -x = exit %d %q, want %d naming --proxy:2", code, msg, exitBadInput)
	}
}

// TestEmptyProxyListRefused: a --proxies file with no exit in it (empty, or
// comments only) is refused before work starts; it once crawled from this
// machine's own address. A file that says "direct" means it, and beside a
// template an empty file stands for no proxies.
func TestEmptyProxyListRefused(t *testing.T) {
	urls := filepath.Join(t.TempDir(), "urls.txt")
	if err := os.WriteFile(urls, []byte("http://127.0.0.1:9/x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, lines := range [][]string{{}, {"# only a comment", ""}} {
		list := writeList(t, lines...)
		for _, args := range [][]string{
			{"crawl", "--proxies", list, "--out", filepath.Join(t.TempDir(), "o"), "--ignore-robots", urls},
			{"proxies", "check", list},
			// Beside -x too: a list a failed download emptied ran on the
			// -x exit alone, unsaid.
			{"crawl", "--proxies", list, "-x", "127.0.0.1:9", "--out", filepath.Join(t.TempDir(), "o"), "--ignore-robots", urls},
		} {
			_, msg, code := run(t, args...)
			if code != 2 || !strings.Contains(msg, list+": no exits in it") {
				t.Errorf("%s with %q: exit %d %q, want 2 naming the file with no exits", args[0], lines, code, msg)
			}
		}
	}
	srv := echo(t)
	if out, msg, code := run(t, "proxies", "check", "--echo-url", srv.URL, writeList(t, "direct # this machine")); code != 0 || !strings.Contains(out, "direct") {
		t.Errorf(`proxies check of "direct": exit %d %q %q, want the direct exit, working`, code, out, msg)
	}
	gw := echo(t)
	out, msg, code := run(t, "proxies", "check", "--echo-url", srv.URL, "--proxy-template", "http://u-{session}:p@"+gw.Listener.Addr().String(),
		"--sessions", "2", writeList(t, "# none"))
	if strings.Contains(msg, "no exits") || strings.Contains(out, "direct") || strings.Count(out, "#session-") < 2 {
		t.Errorf("an empty list beside a template: exit %d %q %q, want the template's two exits alone", code, out, msg)
	}
}

// TestBindNotLocalRefused: a bind: exit whose address is not this
// machine's is refused before work starts; its requests once failed one by
// one as the URLs' transport errors, and every URL was abandoned.
func TestBindNotLocalRefused(t *testing.T) {
	urls := filepath.Join(t.TempDir(), "urls.txt")
	if err := os.WriteFile(urls, []byte("http://127.0.0.1:9/x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	list := writeList(t, "bind:127.0.0.5", "bind:192.0.2.7")
	out := filepath.Join(t.TempDir(), "o")
	_, msg, code := run(t, "crawl", "--proxies", list, "--out", out, "--ignore-robots", urls)
	if code != 2 || !strings.Contains(msg, "bind:192.0.2.7: 192.0.2.7 is not an address of this machine") {
		t.Errorf("crawl with bind:192.0.2.7: exit %d %q, want 2 naming the exit", code, msg)
	}
	if _, err := os.Stat(filepath.Join(out, "frontier.db")); err == nil {
		t.Errorf("a frontier was made in %s before the refusal", out)
	}
}

// TestBadOutAndIdentityRefused: an --out where nothing can be written, and
// an --echo-url or --exit-ip-header that cannot work, are refused before
// work starts, exit 2, naming the flag. They once exited 1 after the URLs
// were loaded (--echo-url ftp://...), or on the frontier's first write
// (--out /proc).
func TestBadOutAndIdentityRefused(t *testing.T) {
	urls := filepath.Join(t.TempDir(), "urls.txt")
	if err := os.WriteFile(urls, []byte("http://127.0.0.1:9/x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "o")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", "/proc/exitgate-out"}, "--out /proc/exitgate-out"},
		{[]string{"--out", "/proc"}, "--out /proc: not writable"},
		{[]string{"--out", file}, "--out " + file},
		{[]string{"--out", good, "--echo-url", "ftp://127.0.0.1/ip"}, `--echo-url: echo URL "ftp://127.0.0.1/ip"`},
		{[]string{"--out", good, "--exit-ip-header", "X Bad"}, `--exit-ip-header: identity header "X Bad"`},
	} {
		args := append([]string{"crawl", "--ignore-robots"}, c.args...)
		_, msg, code := run(t, append(args, urls)...)
		if code != 2 || !strings.Contains(msg, c.want) {
			t.Errorf("crawl %q: exit %d %q, want 2 with %q", c.args, code, msg, c.want)
		}
		if strings.Contains(msg, "URLs new") {
			t.Errorf("crawl %q: URLs were loaded before the refusal: %q", c.args, msg)
		}
		sargs := append([]string{"serve", "--listen", "127.0.0.1:0"}, c.args...)
		if _, msg, code := run(t, sargs...); code != 2 || !strings.Contains(msg, c.want) {
			t.Errorf("serve %q: exit %d %q, want 2 with %q", c.args, code, msg, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(good, "frontier.db")); err == nil {
		t.Errorf("a frontier was made in %s before the refusal", good)
	}
}

// TestProxyFlagDuplicateNamesBothPlaces: an exit given in --proxies and
// again with -x is refused naming the -x and the file's line it repeats;
// the message named "--proxy:1" for both.
func TestProxyFlagDuplicateNamesBothPlaces(t *testing.T) {
	_, err := parseProxies("pxz.txt", []byte("# pool\n127.0.0.6:18892\n"), []string{"http://10.0.0.1:8080", "http://127.0.0.6:18892"})
	want := "--proxy:2: duplicate exit 127.0.0.6:18892 (first at pxz.txt:2)"
	if err == nil || err.Error() != want {
		t.Errorf("parseProxies(file, -x, -x again) error = %v, want %q", err, want)
	}
	_, err = parseProxies("", nil, []string{"http://127.0.0.6:18892", "127.0.0.6:18892"})
	if want := "--proxy:2: duplicate exit 127.0.0.6:18892 (first on line 1)"; err == nil || err.Error() != want {
		t.Errorf("parseProxies(-x twice) error = %v, want %q", err, want)
	}
}
