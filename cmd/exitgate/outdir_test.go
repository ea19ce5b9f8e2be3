package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaimWorkerOut: a distributed worker's --out is its own. Two crawls'
// workers sharing one --out both exited 0, one crawl's results and bodies
// overwritten by the other's (bodies are named by job id, and each crawl
// numbers its jobs from the same start); two workers of one crawl wrote
// one journal and added up their runs in one summary.
func TestClaimWorkerOut(t *testing.T) {
	dir := t.TempDir()
	release, before, err := claimWorkerOut(dir, "a")
	if err != nil || before {
		t.Fatalf("a fresh --out: %v, before %v; want it claimed, new", err, before)
	}
	if _, _, err := claimWorkerOut(dir, "a"); err == nil || !strings.Contains(err.Error(), "in use by another exitgate") {
		t.Errorf("a second worker on the same --out: %v, want refused as in use", err)
	}
	release()
	again, before, err := claimWorkerOut(dir, "a")
	if err != nil || !before {
		t.Fatalf("the same crawl's worker again, after the first stopped: %v, before %v; want it claimed, a worker's of the crawl before", err, before)
	}
	again()
	if _, _, err := claimWorkerOut(dir, "b"); err == nil || !strings.Contains(err.Error(), `distributed crawl "a"`) {
		t.Errorf("another crawl's worker on a's --out: %v, want refused naming a", err)
	}
	if _, err := checkURLFile(dir, writeLines(t, t.TempDir(), "urls.txt", []string{"http://x.example/"}), false); err == nil || !strings.Contains(err.Error(), `distributed crawl "a"`) {
		t.Errorf("a crawl of its own into a worker's --out: %v, want refused", err)
	}

	local := t.TempDir()
	if err := os.WriteFile(filepath.Join(local, "frontier.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := claimWorkerOut(local, "a"); err == nil || !strings.Contains(err.Error(), "frontier.db") {
		t.Errorf("a worker into a crawl's own --out: %v, want refused", err)
	}
}

func TestCheckCrawlName(t *testing.T) {
	for _, bad := range []string{"", "..", ".", "a/b", "../x", "a{b}", "a\x00b", "a\nb", strings.Repeat("n", 101)} {
		if err := checkCrawlName(bad); err == nil {
			t.Errorf("checkCrawlName(%q) = nil, want an error", bad)
		}
	}
	for _, good := range []string{"shop", "shop 2026-12", "crawl|x*", "ünïcode", strings.Repeat("n", 100)} {
		if err := checkCrawlName(good); err != nil {
			t.Errorf("checkCrawlName(%q) = %v", good, err)
		}
	}
}
