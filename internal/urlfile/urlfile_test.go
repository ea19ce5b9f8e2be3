package urlfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/memory"
	"github.com/exitgate/exitgate/frontier/sqlite"
)

func TestRead(t *testing.T) {
	in := "# seeds\nhttp://a.example/1\n\n  https://b.example/x?q=1  \nftp://c.example/\nnot a url\n/relative\nhttp://\nhttp://a.example/%zz\nhttp://d.example/last"
	var got []string
	bad, err := Read(strings.NewReader(in), "urls.txt", func(u string) error { got = append(got, u); return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://a.example/1", "https://b.example/x?q=1", "http://d.example/last"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Read URLs = %q, want %q", got, want)
	}
	wantBad := []struct {
		line int
		has  string
	}{{5, "scheme \"ftp\""}, {6, "spaces"}, {7, "not an absolute URL"}, {8, "no host"}, {9, "invalid URL escape"}}
	if bad.Count() != len(wantBad) || bad.More != 0 {
		t.Fatalf("Read reported %d bad lines (%v), want %d", bad.Count(), bad.Lines, len(wantBad))
	}
	for i, w := range wantBad {
		if b := bad.Lines[i]; b.Line != w.line || !strings.Contains(b.Error(), w.has) || !strings.HasPrefix(b.Error(), "urls.txt:") {
			t.Errorf("bad[%d] = %q, want line %d mentioning %q", i, b.Error(), w.line, w.has)
		}
	}
}

// TestReadSameRulesAsFrontier: lines that url.Parse takes but the frontier
// would refuse (port 0, a port over 65535, bytes no host name has) are
// reported here, with their line, instead of failing the push of a whole
// batch; every line Read accepts, frontier.Normalize accepts too.
func TestReadSameRulesAsFrontier(t *testing.T) {
	in := "http://a.example/1\nhttp://127.0.0.1:0/x\nhttp://127.0.0.1:99999/x\nhttp://exa!mple.com/\nhttp://a,b/\nhttp://b.example/2\n"
	var got []string
	bad, err := Read(strings.NewReader(in), "urls.txt", func(u string) error {
		if _, err := frontier.Normalize(u); err != nil {
			t.Errorf("Read accepted %q, which the frontier refuses: %v", u, err)
		}
		got = append(got, u)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://a.example/1 http://b.example/2"; strings.Join(got, " ") != want {
		t.Errorf("Read URLs = %q, want %q", got, want)
	}
	want := []string{
		`urls.txt:2: "http://127.0.0.1:0/x": invalid port "0"`,
		`urls.txt:3: "http://127.0.0.1:99999/x": invalid port "99999"`,
		`urls.txt:4: "http://exa!mple.com/": invalid character '!' in host`,
		`urls.txt:5: "http://a,b/": invalid character ',' in host`,
	}
	if bad.Count() != len(want) {
		t.Fatalf("Read reported %v, want %d bad lines", bad.Lines, len(want))
	}
	for i, w := range want {
		if bad.Lines[i].Error() != w {
			t.Errorf("bad[%d] = %q, want %q", i, bad.Lines[i].Error(), w)
		}
	}
}

// TestReadBOM: a UTF-8 byte order mark before the first line (Windows
// editors write one) is not part of the first URL; it used to make that line
// "not an absolute URL" and drop it.
func TestReadBOM(t *testing.T) {
	var got []string
	bad, err := Read(strings.NewReader("\uFEFFhttp://a.example/1\r\nhttp://b.example/2\r\n"), "urls.txt", func(u string) error {
		got = append(got, u)
		return nil
	})
	if err != nil || bad.Count() != 0 {
		t.Fatalf("Read = %v, %v; want no bad lines", bad.Lines, err)
	}
	if want := "http://a.example/1 http://b.example/2"; strings.Join(got, " ") != want {
		t.Errorf("Read URLs = %q, want %q", got, want)
	}
}

func TestReadStopsOnAddError(t *testing.T) {
	stop := errors.New("full")
	_, err := Read(strings.NewReader("http://a/\nhttp://b/\n"), "u", func(string) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("Read error = %v, want the add error", err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add("http://a.example/1\n#c\nftp://x\n")
	f.Add("\xff\x00http://[::1]:80/\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		Read(strings.NewReader(in), "f", func(u string) error {
			if _, err := frontier.Normalize(u); err != nil {
				t.Fatalf("accepted %q, which the frontier refuses: %v", u, err)
			}
			return nil
		})
	})
}

// failingFrontier fails every Push after the first.
type failingFrontier struct {
	frontier.Frontier
	pushes int
}

func (f *failingFrontier) Push(ctx context.Context, jobs []frontier.NewJob) (int, error) {
	f.pushes++
	if f.pushes > 1 {
		return 0, errors.New("disk full")
	}
	return f.Frontier.Push(ctx, jobs)
}

// TestPush loads a file of several batches into a frontier: every good URL
// is added, every bad line is reported with its line; a push that fails
// stops the load with its error (and does not hang the reader).
func TestPush(t *testing.T) {
	const n = 3*pushBatch + 17
	path := writeURLFile(t, n)
	fr, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// The memory store takes NewJobs; the SQLite one prepared jobs.
	db, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "f.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, f := range []frontier.Frontier{fr, db} {
		l, err := Push(context.Background(), f, path)
		added, bad := l.Added, l.Bad
		if err != nil || added != n-n/1000 || bad.Count() != n/1000 || len(bad.Lines) != MaxBadKept {
			t.Fatalf("Push(%T) = %d added, %d bad (%d kept), %v; want %d, %d (%d kept), nil", f, added, bad.Count(), len(bad.Lines), err, n-n/1000, n/1000, MaxBadKept)
		}
		if c, _ := f.Counts(context.Background()); c.Queued != n-n/1000 {
			t.Errorf("Push(%T): %d queued, want %d", f, c.Queued, n-n/1000)
		}
	}
	l, err := Push(context.Background(), fr, path)
	added, bad := l.Added, l.Bad
	if err != nil || added != 0 || bad.Count() != n/1000 || l.Usable != n-n/1000 {
		t.Fatalf("Push again = %d added, %d usable, %d bad, %v; want 0 (all known), %d, %d, nil", added, l.Usable, bad.Count(), err, n-n/1000, n/1000)
	}
	if b := bad.Lines[0]; b.Line != 1000 || !strings.Contains(b.Error(), `urls.txt:1000: "http://127.0.0.1:0/bad/999": invalid port "0"`) {
		t.Errorf("bad[0] = %v, want line 1000 with its reason", b)
	}
	fr2, _ := memory.New(memory.Config{})
	l, err = Push(context.Background(), &failingFrontier{Frontier: fr2}, path)
	added = l.Added
	if err == nil || !strings.Contains(err.Error(), "disk full") || added != pushBatch {
		t.Errorf("Push(failing frontier) = %d, %v; want %d, disk full", added, err, pushBatch)
	}
	if _, err := Push(context.Background(), fr, path+".missing"); err == nil {
		t.Error("Push(missing file) = nil error")
	}
}

// TestIdentify: a list's copy with other line ends, another order, a byte
// order mark, comments, blank lines and spaces is the same list; a list with
// a URL changed, added or dropped is not.
func TestIdentify(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) Identity {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		id, err := Identify(path)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	orig := write("orig.txt", "http://a.example/1\nhttp://a.example/2\nhttp://b.example/3\n")
	for name, content := range map[string]string{
		"crlf":     "http://a.example/1\r\nhttp://a.example/2\r\nhttp://b.example/3\r\n",
		"reversed": "http://b.example/3\nhttp://a.example/2\nhttp://a.example/1",
		"dressed":  "\uFEFF# the seeds\n\n  http://a.example/2  \nhttp://b.example/3\n# more\nhttp://a.example/1\n\n",
	} {
		id := write(name+".txt", content)
		if id.File == orig.File {
			t.Errorf("%s: the file's bytes differ, its File digest does not", name)
		}
		if !id.Same(orig) {
			t.Errorf("%s: not the same list as the original", name)
		}
	}
	for name, content := range map[string]string{
		"edited":  "http://a.example/1\nhttp://a.example/2\nhttp://b.example/4\n",
		"added":   "http://a.example/1\nhttp://a.example/2\nhttp://b.example/3\nhttp://b.example/5\n",
		"dropped": "http://a.example/1\nhttp://b.example/3\n",
		"twice":   "http://a.example/1\nhttp://a.example/1\nhttp://a.example/2\nhttp://b.example/3\n",
	} {
		if id := write(name+".txt", content); id.Same(orig) {
			t.Errorf("%s: taken for the original list", name)
		}
	}
	// A record of an older crawl has the file's digest alone.
	if !(Identity{File: orig.File}).Same(orig) || (Identity{File: "other"}).Same(Identity{File: "x"}) {
		t.Errorf("a record without Lines is matched by its file digest alone")
	}
	if _, err := Identify(filepath.Join(dir, "missing.txt")); err == nil {
		t.Errorf("a missing file: no error")
	}
}
