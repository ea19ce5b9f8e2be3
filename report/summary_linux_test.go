package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/exitgate/exitgate/internal/peertest"
)

// TestWriteSummaryFullDisk: on a real file system that is full, writing
// summary.json fails and leaves the previous one whole (and no temporary
// file). It used to be written in place: truncated first, then cut short by
// ENOSPC, so the previous summary was gone too.
func TestWriteSummaryFullDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	peertest.Tmpfs(t, dir, "size=64k")
	small := runOf(t0, 10, 0, 10, 0, 1, 10, 0)
	if _, err := WriteSummary(dir, small); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Fill what is left.
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err = f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the tmpfs ended with %v, want ENOSPC", err)
	}

	big := runOf(t0, 10, 0, 10, 0, 1, 10, 0)
	for i := range 300 { // a summary of many pages: more than the old one freed
		big.PerHost = append(big.PerHost, Scoped{Name: "host-" + string(rune('a'+i%26)) + string(rune('a'+i/26)), ResponsesByStatus: map[string]int64{"200": 1}})
	}
	if err := WriteJSON(filepath.Join(dir, "summary.json"), Cumulative([]Summary{small, big})); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing summary.json on a full disk = %v, want ENOSPC", err)
	}
	after, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil || !bytes.Equal(after, before) {
		t.Fatalf("summary.json after a failed write = %q, %v; want the previous one whole", after, err)
	}
	var s Summary
	if err := json.Unmarshal(after, &s); err != nil || s.Requests != 10 {
		t.Errorf("summary.json after a failed write: %+v, %v", s, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".summary.json-*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	// The run files are kept the same way.
	if _, err := WriteSummary(dir, big); err == nil {
		t.Errorf("WriteSummary on a full disk: nil error")
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "summary.json")); !bytes.Equal(after, before) {
		t.Errorf("summary.json changed by a failed WriteSummary")
	}
}
