package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/memory"
)

// finishJobs pushes n jobs and finishes the first done of them (done, except
// every third abandoned), leaving the rest leased.
func finishJobs(t *testing.T, n, done int) (*memory.Store, []frontier.Job) {
	t.Helper()
	ctx := context.Background()
	fr, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var nj []frontier.NewJob
	for i := range n {
		nj = append(nj, frontier.NewJob{URL: "http://a.example/" + strconv.Itoa(i+1)})
	}
	fr.Push(ctx, nj)
	jobs, err := fr.Claim(ctx, t0, n, nil)
	if err != nil || len(jobs) != n {
		t.Fatalf("Claim = %d, %v", len(jobs), err)
	}
	for _, j := range jobs[:done] {
		finish(t, fr, j)
	}
	return fr, jobs
}

func finish(t *testing.T, fr *memory.Store, j frontier.Job) {
	t.Helper()
	var err error
	if j.ID%3 == 0 {
		err = fr.Abandon(context.Background(), j.Lease(), 500, "retries exhausted: status 500")
	} else {
		err = fr.Complete(context.Background(), j.Lease(), frontier.Result{Status: 200, Bytes: j.ID, Exit: "e1"})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// richRow is the row the crawl adds when job j finishes, with what the
// response said, which the frontier does not keep.
func richRow(t *testing.T, fr *memory.Store, j frontier.Job, dir string) Result {
	t.Helper()
	g, err := fr.Get(context.Background(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	r := ResultOf(g, dir)
	r.AddResponse(j.URL+"?final", t0, http.Header{"Content-Type": {"text/html"}, "Etag": {`"v1"`}, "Content-Encoding": {"gzip"}})
	return r
}

// TestResultsReconcileAfterCrash: after a crash that left the results file
// with a row cut short and without the rows of jobs the frontier had already
// recorded finished, opening it again keeps the rows written (with what the
// responses said), drops the broken one and adds a row for each missing job:
// every finished job has exactly one row, in either format.
func TestResultsReconcileAfterCrash(t *testing.T) {
	ctx := context.Background()
	for _, format := range []Format{JSONL, CSV} {
		dir := t.TempDir()
		fr, jobs := finishJobs(t, 6, 4)
		res, err := OpenResults(ctx, fr, dir, format)
		if err != nil {
			t.Fatal(err)
		}
		// Rows were already written for the 4 finished at open; the run
		// then finishes job 5 and writes its row, then half of job 6's.
		finish(t, fr, jobs[4])
		if err := res.Add(richRow(t, fr, jobs[4], dir)); err != nil {
			t.Fatal(err)
		}
		finish(t, fr, jobs[5])
		res.f.WriteString(`{"id":6,"url":"http://a.ex`) // kill -9 mid-row
		res.f.Close()

		res, err = OpenResults(ctx, fr, dir, format)
		if err != nil {
			t.Fatalf("%s: reopen: %v", format.File(), err)
		}
		if err := res.Close(ctx, fr); err != nil {
			t.Fatal(err)
		}
		rows := readRows(t, filepath.Join(dir, format.File()), format)
		ids := map[int64]Result{}
		for _, r := range rows {
			if _, dup := ids[r.ID]; dup {
				t.Errorf("%s: job %d has two rows", format.File(), r.ID)
			}
			ids[r.ID] = r
		}
		if len(rows) != 6 || len(ids) != 6 {
			t.Errorf("%s: %d rows for jobs %v, want one for each of the 6 finished jobs", format.File(), len(rows), ids)
		}
		if r := ids[5]; r.ContentType != "text/html" || r.FinalURL != jobs[4].URL+"?final" || r.ETag != `"v1"` || !r.FetchedAt.Equal(t0) || r.ContentEncoding != "gzip" {
			t.Errorf("%s: row of job 5 = %+v, want the response's fields kept", format.File(), r)
		}
		if r := ids[6]; r.Outcome != "abandoned" || r.Reason != "retries exhausted: status 500" {
			t.Errorf("%s: row of job 6 = %+v, want it rebuilt from the frontier", format.File(), r)
		}
	}
}

// TestResultsMigratesOlderCSV: a results.csv written by an older exitgate,
// without the columns added since (content_encoding), gets them, empty in
// its rows, which keep what the answers said; rebuilt from the frontier,
// they lost the final URL, content type and the rest.
func TestResultsMigratesOlderCSV(t *testing.T) {
	dir := t.TempDir()
	fr, _ := finishJobs(t, 3, 3)
	var b strings.Builder
	cw := csv.NewWriter(&b)
	cw.Write(olderCSVHeaders[0])
	for id := 1; id <= 2; id++ { // job 3's row lost to a kill
		cw.Write([]string{strconv.Itoa(id), "http://a.example/" + strconv.Itoa(id), "done", "200", "", "1", "e1", "1", "5",
			"", "false", "http://a.example/final", "text/html", t0.Format(time.RFC3339Nano), `"v1"`, ""})
	}
	cw.Flush()
	path := filepath.Join(dir, "results.csv")
	if err := os.WriteFile(path, []byte(b.String()+`4,"http://a.ex`), 0o644); err != nil { // and a row cut short
		t.Fatal(err)
	}
	rows := reconciled(t, fr, dir, CSV) // fails unless the header is CSVHeader
	if len(rows) != 3 || rows[0].FinalURL != "http://a.example/final" || rows[1].ContentType != "text/html" || rows[2].ID != 3 {
		t.Errorf("rows after the migration = %+v, want jobs 1 and 2 with their answers' fields, then job 3 rebuilt", rows)
	}
}

// TestResultsFormatSwitchKeepsAnswers: a crawl run again with the other
// --format writes its file from the rows of the first format's, keeping
// what the answers said (final URL, content type, ...), and adds the rows
// missing from the frontier; rebuilt from the frontier alone, every row
// lost them.
func TestResultsFormatSwitchKeepsAnswers(t *testing.T) {
	dir := t.TempDir()
	fr, jobs := finishJobs(t, 4, 4)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, j := range jobs[:3] { // job 4's row lost to a kill
		enc.Encode(richRow(t, fr, j, dir))
	}
	b.WriteString(`{"id":4,"url":"http://a.ex`) // and cut short
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(format Format) {
		t.Helper()
		rows := reconciled(t, fr, dir, format)
		if len(rows) != 4 {
			t.Fatalf("%s: %d rows, want 4: %+v", format.File(), len(rows), rows)
		}
		for _, r := range rows[:3] {
			if r.FinalURL != jobs[r.ID-1].URL+"?final" || r.ContentType != "text/html" || r.ContentEncoding != "gzip" || !r.FetchedAt.Equal(t0) {
				t.Errorf("%s: row %+v lost what the answer said", format.File(), r)
			}
		}
		if rows[3].ID != 4 || rows[3].FinalURL != "" {
			t.Errorf("%s: last row %+v, want job 4 rebuilt from the frontier", format.File(), rows[3])
		}
	}
	check(CSV)
	if err := os.Remove(filepath.Join(dir, "results.jsonl")); err != nil {
		t.Fatal(err)
	}
	check(JSONL) // and back, from the CSV
}

// TestResultsFormatSwitchedBack: jsonl, then --format csv --append, then
// jsonl again: the rows the csv run added are taken from results.csv into
// results.jsonl whole; rebuilt from the frontier, they lost what the answers
// said.
func TestResultsFormatSwitchedBack(t *testing.T) {
	dir := t.TempDir()
	fr, jobs := finishJobs(t, 4, 4)
	var jl bytes.Buffer
	enc := json.NewEncoder(&jl)
	for _, j := range jobs[:2] { // the first run, jsonl
		enc.Encode(richRow(t, fr, j, dir))
	}
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), jl.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var cb bytes.Buffer // the second, csv: all four
	w := csv.NewWriter(&cb)
	w.Write(CSVHeader)
	for _, j := range jobs {
		w.Write(richRow(t, fr, j, dir).csvRecord())
	}
	w.Flush()
	if err := os.WriteFile(filepath.Join(dir, "results.csv"), cb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := reconciled(t, fr, dir, JSONL)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4: %+v", len(rows), rows)
	}
	for _, r := range rows {
		if r.FinalURL != jobs[r.ID-1].URL+"?final" || r.ContentType != "text/html" {
			t.Errorf("row %+v lost what the answer said", r)
		}
	}
}

// TestResultsRebuildsUnmatchedFile: a results file whose rows carry no job
// id (written by an older exitgate) is rebuilt from the frontier.
func TestResultsRebuildsUnmatchedFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fr, _ := finishJobs(t, 3, 3)
	old := `{"url":"http://a.example/1","outcome":"done","status":200}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(old+old), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := OpenResults(ctx, fr, dir, JSONL)
	if err != nil {
		t.Fatal(err)
	}
	res.Close(ctx, fr)
	rows := readRows(t, filepath.Join(dir, "results.jsonl"), JSONL)
	if len(rows) != 3 || rows[0].ID != 1 || rows[2].ID != 3 {
		t.Errorf("rebuilt results = %+v, want jobs 1 to 3", rows)
	}
}

func readRows(t *testing.T, path string, format Format) []Result {
	t.Helper()
	if format == JSONL {
		return readJSONL(t, path)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(recs) == 0 || !slices.Equal(recs[0], CSVHeader) {
		t.Fatalf("%s: header %v, want %v", path, recs, CSVHeader)
	}
	var out []Result
	for _, rec := range recs[1:] {
		id, _ := strconv.ParseInt(rec[0], 10, 64)
		status, _ := strconv.Atoi(rec[3])
		at, _ := time.Parse(time.RFC3339Nano, rec[13])
		out = append(out, Result{ID: id, URL: rec[1], Outcome: rec[2], Status: status, Reason: rec[4],
			FinalURL: rec[11], ContentType: rec[12], FetchedAt: at, ETag: rec[14], LastModified: rec[15], ContentEncoding: rec[16]})
	}
	return out
}

// The Redis frontier's job ids are host<<32 | sequence: the set of ids read
// back from results.jsonl must stay the size of the ids, not of their value
// (a flat bitset took 512 MiB and minutes under -race for the first host,
// and a distributed worker sat in Close past its run).
func TestIDSetSparseHighIDs(t *testing.T) {
	var s idSet
	for host := int64(1); host <= 3; host++ {
		for seq := int64(1); seq <= 1000; seq += 2 {
			s.add(host<<32 | seq)
		}
	}
	s.add(5) // a SQLite-style id alongside
	for host := int64(1); host <= 3; host++ {
		for seq := int64(1); seq <= 1000; seq++ {
			if got, want := s.has(host<<32|seq), seq%2 == 1; got != want {
				t.Fatalf("has(%d<<32|%d) = %v, want %v", host, seq, got, want)
			}
		}
	}
	if !s.has(5) || s.has(4) || s.has(4<<32|1) || s.has(-1) {
		t.Fatal("has is wrong outside the blocks added")
	}
	words := 0
	for _, b := range s.blocks {
		words += len(b)
	}
	if words > 4*(1000/64+1) {
		t.Fatalf("%d words for 1,501 ids: the set grows with the ids' values", words)
	}
}

// reconciled opens the results file in format in dir over fr's finished
// jobs, closes it, and returns its rows.
func reconciled(t *testing.T, fr frontier.Frontier, dir string, format Format) []Result {
	t.Helper()
	ctx := context.Background()
	res, err := OpenResults(ctx, fr, dir, format)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Close(ctx, fr); err != nil {
		t.Fatal(err)
	}
	return readRows(t, filepath.Join(dir, format.File()), format)
}

// A URL with bytes that are not UTF-8 is written as it went on the wire,
// those bytes percent-encoded: written raw, JSON gave each as U+FFFD and
// /x/\xff\xfe and /x/\xfe\xff read the same.
func TestURLText(t *testing.T) {
	for in, want := range map[string]string{
		"http://a.example/x/\xff\xfe": "http://a.example/x/%FF%FE",
		"http://a.example/x/\xfe\xff": "http://a.example/x/%FE%FF",
		"http://a.example/é":          "http://a.example/é",
		"http://a.example/%41":        "http://a.example/%41",
	} {
		if got := urlText(in); got != want {
			t.Errorf("urlText(%q) = %q, want %q", in, got, want)
		}
	}
}
