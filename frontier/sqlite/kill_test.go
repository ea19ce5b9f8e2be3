package sqlite

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
)

const (
	childEnv   = "EXITGATE_FRONTIER_CHILD_DB"
	childJobs  = 2000
	childBatch = 500
)

func childURL(i int) string { return fmt.Sprintf("http://h%d.example/p/%d", i%7, i) }

// TestHelperProcess is the child of TestKill9: it opens the frontier,
// recovers, pushes childJobs jobs, then claims and completes until nothing
// is left, printing each ID once Complete has returned. It does nothing
// when run as a test.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(childEnv)
	if path == "" {
		return
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	s, err := Open(ctx, Config{Path: path, Lease: time.Hour})
	if err != nil {
		fail(err)
	}
	if _, err := s.Recover(ctx, time.Now()); err != nil {
		fail(err)
	}
	out := os.Stdout // unbuffered: a line is out once Write returns
	out.WriteString("pushing\n")
	for b := 0; b < childJobs; b += childBatch {
		jobs := make([]frontier.NewJob, childBatch)
		for i := range jobs {
			jobs[i] = frontier.NewJob{URL: childURL(b + i)}
		}
		if _, err := s.Push(ctx, jobs); err != nil {
			fail(err)
		}
	}
	out.WriteString("pushed\n")
	for {
		js, err := s.Claim(ctx, time.Now(), 8, nil)
		if err != nil {
			fail(err)
		}
		if len(js) == 0 {
			out.WriteString("empty\n")
			os.Exit(0)
		}
		for _, j := range js {
			if err := s.Complete(ctx, j.Lease(), frontier.Result{Status: 200, Bytes: int64(j.ID)}); err != nil {
				fail(err)
			}
			out.WriteString("done " + strconv.FormatInt(j.ID, 10) + "\n")
		}
	}
}

// runChild starts the child on path and SIGKILLs it once it has printed
// killAfter lines starting with prefix (never when killAfter < 0). It
// returns the IDs the child reported done and whether it ran to the end.
func runChild(t *testing.T, path, prefix string, killAfter int) (done []int64, finished bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Bound the run whatever happens.
	timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	seen := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, "done "); ok {
			n, err := strconv.ParseInt(id, 10, 64)
			if err != nil {
				t.Fatalf("child printed %q", line)
			}
			done = append(done, n)
		}
		if line == "empty" {
			finished = true
		}
		if killAfter >= 0 && strings.HasPrefix(line, prefix) {
			if seen++; seen == killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if killAfter < 0 {
			t.Fatalf("child killed by %v (timeout?)", ws.Signal())
		}
		return done, false
	}
	if err != nil {
		t.Fatalf("child failed: %v", err)
	}
	return done, finished
}

// TestKill9 kills a child that is pushing and completing jobs at several
// points, and checks after each kill that what the child reported done is
// done, that everything else is claimable, and that no job is lost or
// duplicated.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 test re-executes the test binary; skipped in -short")
	}
	path := filepath.Join(t.TempDir(), "kill.db")
	reported := make(map[int64]int) // ID -> round that reported it done
	kills := []struct {
		prefix string
		after  int
	}{
		{"pushing", 1}, // while pushing: batches are all or nothing
		{"done", 1},
		{"done", 200},
		{"done", 600},
		{"done", 50},
		{"", -1}, // to the end
	}
	for round, k := range kills {
		done, finished := runChild(t, path, k.prefix, k.after)
		for _, id := range done {
			if r, dup := reported[id]; dup {
				t.Fatalf("round %d: job %d completed again (first in round %d)", round, id, r)
			}
			reported[id] = round
		}
		checkAfterKill(t, path, round, reported)
		if finished {
			if len(reported) > childJobs {
				t.Fatalf("round %d: %d jobs reported done, only %d exist", round, len(reported), childJobs)
			}
			c := countsAt(t, path)
			if c.Done != childJobs || c.Total() != childJobs {
				t.Fatalf("after the child finished: %+v, want all %d done", c, childJobs)
			}
			t.Logf("round %d ran to the end; %d jobs reported done in all", round, len(reported))
			return
		}
		t.Logf("round %d: killed after %d %q lines; %d jobs reported done so far", round, k.after, k.prefix, len(reported))
	}
	t.Fatal("the last child did not run to the end")
}

func countsAt(t *testing.T, path string) frontier.Counts {
	t.Helper()
	s, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, _ := s.Counts(ctx)
	return c
}

func checkAfterKill(t *testing.T, path string, round int, reported map[int64]int) {
	t.Helper()
	s, err := Open(ctx, Config{Path: path, Lease: time.Hour})
	if err != nil {
		t.Fatalf("round %d: reopen: %v", round, err)
	}
	defer s.Close()
	now := time.Now()
	before, _ := s.Counts(ctx)
	n, err := s.Recover(ctx, now)
	if err != nil || n != before.Leased {
		t.Fatalf("round %d: Recover() = %d, %v, want the %d leased jobs", round, n, err, before.Leased)
	}
	for id := range reported {
		if j, err := s.Get(ctx, id); err != nil || j.State != frontier.Done || j.Result.Bytes != id {
			t.Fatalf("round %d: job %d was reported done, store has %+v, %v", round, id, j, err)
		}
	}
	byKey := make(map[string]int64)
	note := func(j frontier.Job) {
		if other, dup := byKey[j.Key]; dup {
			t.Fatalf("round %d: key %s held by jobs %d and %d", round, j.Key, other, j.ID)
		}
		byKey[j.Key] = j.ID
	}
	for after := int64(0); ; {
		page, err := s.Finished(ctx, after, 500)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, j := range page {
			note(j)
		}
		after = page[len(page)-1].ID
	}
	c, _ := s.Counts(ctx)
	claimed, err := s.Claim(ctx, now, childJobs+1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != c.Unfinished() {
		t.Fatalf("round %d: claimed %d jobs, want all %d unfinished ones", round, len(claimed), c.Unfinished())
	}
	for _, j := range claimed {
		if _, ok := reported[j.ID]; ok {
			t.Fatalf("round %d: job %d was reported done but is claimable", round, j.ID)
		}
		note(j)
	}
	// Pushes commit in whole batches; once all are in, every URL is there
	// exactly once.
	if len(byKey)%childBatch != 0 || len(byKey) > childJobs || len(byKey) != c.Total() {
		t.Fatalf("round %d: %d distinct jobs (counts %+v), want whole batches of %d, at most %d", round, len(byKey), c, childBatch, childJobs)
	}
	for i := range len(byKey) {
		k, _ := frontier.Normalize(childURL(i))
		if _, ok := byKey[k]; !ok && len(byKey) == childJobs {
			t.Fatalf("round %d: %s lost", round, k)
		}
	}
}
