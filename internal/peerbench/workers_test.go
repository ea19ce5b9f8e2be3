package peerbench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every worker's results.jsonl holds every URL of the crawl at the end (the
// other workers' as rows rebuilt from the frontier): duplicateURLs counts a
// URL twice only when two workers each finished it themselves, or one file
// repeats it.
func TestDuplicateURLs(t *testing.T) {
	own := func(url, body string) string {
		return `{"url":"` + url + `","outcome":"done","status":200,"body":"` + body + `","fetched_at":"2026-12-04T21:31:38Z"}`
	}
	rebuilt := func(url, body string) string {
		return `{"url":"` + url + `","outcome":"done","status":200,"body":"` + body + `"}`
	}
	abandoned := `{"url":"u/9","outcome":"abandoned","reason":"throttled"}`
	for _, tt := range []struct {
		name  string
		files [][]string
		dups  int
		own   []int
	}{
		{"shared out", [][]string{
			{own("u/1", "bodies/1"), rebuilt("u/2", "../w2/bodies/2"), abandoned},
			{rebuilt("u/1", "../w1/bodies/1"), own("u/2", "bodies/2"), abandoned},
		}, 0, []int{1, 1}},
		// A row whose response fields were lost still counts as its
		// worker's by its body.
		{"own by body", [][]string{
			{rebuilt("u/1", "bodies/1")},
			{rebuilt("u/1", "../w1/bodies/1")},
		}, 0, []int{1, 0}},
		{"fetched twice", [][]string{
			{own("u/1", "bodies/1"), own("u/2", "bodies/2")},
			{own("u/1", "bodies/1"), rebuilt("u/2", "../w1/bodies/2")},
		}, 1, []int{2, 1}},
		{"twice in one file", [][]string{
			{own("u/1", "bodies/1"), rebuilt("u/1", "../w2/bodies/1")},
		}, 1, []int{1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var outs []string
			for _, lines := range tt.files {
				out := t.TempDir()
				if err := os.WriteFile(filepath.Join(out, "results.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				outs = append(outs, out)
			}
			dups, own, err := duplicateURLs(outs)
			if err != nil {
				t.Fatal(err)
			}
			if dups != tt.dups || !slices.Equal(own, tt.own) {
				t.Errorf("duplicateURLs = %d, own rows %v; want %d, %v", dups, own, tt.dups, tt.own)
			}
		})
	}
}
