package urlfile

import (
	"errors"
	"strings"
	"testing"
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
	if len(bad) != len(wantBad) {
		t.Fatalf("Read reported %d bad lines (%v), want %d", len(bad), bad, len(wantBad))
	}
	for i, w := range wantBad {
		if bad[i].Line != w.line || !strings.Contains(bad[i].Error(), w.has) || !strings.HasPrefix(bad[i].Error(), "urls.txt:") {
			t.Errorf("bad[%d] = %q, want line %d mentioning %q", i, bad[i].Error(), w.line, w.has)
		}
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
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				t.Fatalf("accepted %q", u)
			}
			return nil
		})
	})
}
