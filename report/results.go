package report

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/exitgate/exitgate/frontier"
)

// Format is how the results file is written.
type Format uint8

const (
	// JSONL is results.jsonl: one JSON object per line.
	JSONL Format = iota
	// CSV is results.csv: a header line, then one row per URL, with the
	// columns of CSVHeader.
	CSV
)

// ParseFormat reads "jsonl" or "csv".
func ParseFormat(s string) (Format, error) {
	switch s {
	case "jsonl":
		return JSONL, nil
	case "csv":
		return CSV, nil
	}
	return 0, fmt.Errorf("%q: want jsonl or csv", s)
}

// other is the format a results file of f is converted from or to.
func (f Format) other() Format {
	if f == JSONL {
		return CSV
	}
	return JSONL
}

// File is the results file's name in the output directory.
func (f Format) File() string {
	if f == CSV {
		return "results.csv"
	}
	return "results.jsonl"
}

// CSVHeader names the columns of results.csv, in order; they are the JSON
// names of Result's fields.
var CSVHeader = []string{"id", "url", "outcome", "status", "reason", "attempts", "exit", "bytes", "elapsed_ms",
	"body", "truncated", "final_url", "content_type", "fetched_at", "etag", "last_modified", "content_encoding"}

// olderCSVHeaders are the headers of files an older exitgate wrote, each
// CSVHeader's first columns: such a file is given the new columns, empty
// in its rows, before rows are added (migrateCSV).
var olderCSVHeaders = [][]string{CSVHeader[:16]}

func (r Result) csvRecord() []string {
	at := ""
	if !r.FetchedAt.IsZero() {
		at = r.FetchedAt.Format(time.RFC3339Nano)
	}
	return []string{strconv.FormatInt(r.ID, 10), r.URL, r.Outcome, strconv.Itoa(r.Status), r.Reason,
		strconv.Itoa(r.Attempts), r.Exit, strconv.FormatInt(r.Bytes, 10), strconv.FormatInt(r.ElapsedMS, 10),
		r.Body, strconv.FormatBool(r.Truncated), r.FinalURL, r.ContentType, at, r.ETag, r.LastModified, r.ContentEncoding}
}

// AddResponse fills in what the answer that finished a URL said: the URL
// that gave it (where redirects led), when it came, and the headers results
// keep (Content-Type, ETag, Last-Modified, Content-Encoding).
func (r *Result) AddResponse(finalURL string, at time.Time, h http.Header) {
	r.FinalURL = urlText(frontier.Redact(finalURL))
	if !at.IsZero() {
		r.FetchedAt = at.UTC()
	}
	r.ContentType = h.Get("Content-Type")
	r.ETag = h.Get("ETag")
	r.LastModified = h.Get("Last-Modified")
	// Go's transport removes the header where it decoded the body itself.
	r.ContentEncoding = h.Get("Content-Encoding")
}

// urlText is a URL as results write it: bytes that are not UTF-8 (a URL
// file's raw \xff\xfe, sent as %FF%FE) percent-encoded as they go on the
// wire. Written raw, JSON gave each as U+FFFD and two URLs read the same.
func urlText(u string) string {
	if utf8.ValidString(u) {
		return u
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(u); {
		r, n := utf8.DecodeRuneInString(u[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteByte('%')
			b.WriteByte(hex[u[i]>>4])
			b.WriteByte(hex[u[i]&15])
		} else {
			b.WriteString(u[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Results is the results file of a crawl, written as URLs finish: `tail -f`
// shows them, and a crawl killed with -9 leaves the rows of the URLs it
// finished. OpenResults and Close reconcile the file with the frontier, so
// that every finished job has exactly one row whatever happened in between.
// It is safe for concurrent use.
type Results struct {
	dir    string
	path   string
	format Format

	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	csv *csv.Writer
	err error // the first write error; later Adds return it
}

// OpenResults reconciles dir's results file in format with fr and opens it
// for Add. Reconciling drops a last row cut short by a crash and appends a
// row, from the frontier, for every finished job that has none (a job the
// frontier recorded finished just before a crash, before its row was
// written). A file whose rows cannot be matched to jobs (written by an older
// exitgate, without ids, or edited) is rebuilt from the frontier.
func OpenResults(ctx context.Context, fr frontier.Frontier, dir string, format Format) (*Results, error) {
	r := &Results{dir: dir, path: filepath.Join(dir, format.File()), format: format}
	if err := r.reconcile(ctx, fr); err != nil {
		return nil, fmt.Errorf("results %s: %w", r.path, err)
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	r.f, r.w = f, bufio.NewWriterSize(f, 16<<10)
	if format == CSV {
		r.csv = csv.NewWriter(r.w)
	}
	return r, nil
}

// Add writes one row and flushes it to the file.
func (r *Results) Add(row Result) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.err = r.writeRow(row)
	if r.err == nil {
		r.err = r.w.Flush()
	}
	return r.err
}

func (r *Results) writeRow(row Result) error {
	if r.csv != nil {
		r.csv.Write(row.csvRecord())
		r.csv.Flush()
		return r.csv.Error()
	}
	b, err := json.Marshal(row)
	if err != nil {
		return err
	}
	_, err = r.w.Write(append(b, '\n'))
	return err
}

// Close syncs and closes the file, then reconciles it with fr again, which
// adds the rows that Add could not (a write error is returned after that).
func (r *Results) Close(ctx context.Context, fr frontier.Frontier) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.w.Flush()
	if serr := r.f.Sync(); err == nil {
		err = serr
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	if rerr := r.reconcile(ctx, fr); rerr != nil {
		return fmt.Errorf("results %s: %w", r.path, rerr)
	}
	if r.err != nil {
		return r.err
	}
	return err
}

// errUnmatched: the file has a complete row that names no job.
var errUnmatched = errors.New("a row without a job id")

// reconcile makes the file hold exactly one row per finished job of fr.
func (r *Results) reconcile(ctx context.Context, fr frontier.Frontier) error {
	if err := r.convertOther(); err != nil {
		return err
	}
	if r.format == CSV {
		if err := migrateCSV(r.path); err != nil {
			return err
		}
	}
	seen, end, err := r.scan()
	if errors.Is(err, os.ErrNotExist) {
		return r.rebuild(ctx, fr)
	}
	if errors.Is(err, errUnmatched) {
		return r.rebuild(ctx, fr)
	}
	if err != nil {
		return err
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(end); err != nil { // a row cut short by a crash
		return err
	}
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	if err := r.eachMissing(ctx, fr, seen, w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Sync()
}

// otherRows reads the rows of the other format's file that seen lacks: a
// run in the other format (--format csv --append, then jsonl again) wrote
// rows this file has not, with what the answers said (final URL, content
// type, ...), which a row rebuilt from the frontier lacks. nil when there
// is no such file.
func (r *Results) otherRows(seen *idSet) map[int64]Result {
	from := r.format.other()
	f, err := os.Open(filepath.Join(r.dir, from.File()))
	if err != nil {
		return nil
	}
	defer f.Close()
	rows := map[int64]Result{}
	eachRow(f, from, func(row Result) error { // a row it cannot read is rebuilt as before
		if row.ID > 0 && (seen == nil || !seen.has(row.ID)) {
			rows[row.ID] = row
		}
		return nil
	})
	return rows
}

// rebuild writes the file afresh from fr, atomically.
func (r *Results) rebuild(ctx context.Context, fr frontier.Frontier) error {
	return writeAtomic(r.path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		if err := r.eachMissing(ctx, fr, nil, bw); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// eachMissing writes the header when seen is nil (a new file), then a row
// for every finished job of fr whose id is not in seen, in job order.
func (r *Results) eachMissing(ctx context.Context, fr frontier.Frontier, seen *idSet, w io.Writer) error {
	enc := rowEncoder(w, r.format, seen == nil)
	other := r.otherRows(seen)
	if seen == nil {
		seen = &idSet{}
	}
	var after int64
	for {
		jobs, err := fr.Finished(ctx, after, 1000)
		if err != nil {
			// The frontier's (Redis away: "results.jsonl: i/o timeout"
			// read as a failure of the file).
			return fmt.Errorf("reading the finished jobs from the frontier to add their rows: %w", err)
		}
		if len(jobs) == 0 {
			return nil
		}
		for _, j := range jobs {
			after = j.ID
			if seen.has(j.ID) {
				continue
			}
			row := ResultOf(j, r.dir)
			if o, ok := other[j.ID]; ok && o.Outcome == row.Outcome && o.URL == row.URL {
				row = o // the other file's row: what the answer said too
			}
			if err := enc(row); err != nil {
				return err
			}
		}
	}
}

// scan reads the file's job ids and returns them with the offset just past
// its last complete row. A last row cut short (by a crash mid-write) is not
// counted; a complete row with no id, or an id seen before, or (CSV) a header
// that is not CSVHeader, makes errUnmatched.
func (r *Results) scan() (*idSet, int64, error) {
	f, err := os.Open(r.path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if r.format == CSV {
		return scanCSV(f)
	}
	return scanJSONL(f)
}

func scanJSONL(f io.Reader) (*idSet, int64, error) {
	seen := &idSet{}
	br := bufio.NewReaderSize(f, 64<<10)
	var end int64
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var row struct {
				ID int64 `json:"id"`
			}
			if json.Unmarshal(line, &row) != nil || row.ID <= 0 || seen.has(row.ID) {
				return nil, 0, errUnmatched
			}
			seen.add(row.ID)
			end += int64(len(line))
		}
		if errors.Is(err, io.EOF) {
			return seen, end, nil
		}
		if err != nil {
			return nil, 0, err
		}
	}
}

// convertOther writes the results file, when there is none yet, from the
// rows of the other format's file in the same directory, if there is one
// (--format changed between runs): rebuilt from the frontier instead, every
// row lost what the answers said (final URL, content type, ...). A last row
// cut short is left out; reconcile then adds the rows missing.
func (r *Results) convertOther() error {
	if _, err := os.Stat(r.path); !errors.Is(err, os.ErrNotExist) {
		return nil // there is one (or it cannot be told): reconcile judges it
	}
	from := r.format.other()
	f, err := os.Open(filepath.Join(r.dir, from.File()))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return writeAtomic(r.path, func(w io.Writer) error {
		return eachRow(f, from, rowEncoder(w, r.format, true))
	})
}

// rowEncoder returns a function that writes one row to w in format, after
// the header if header (CSV).
func rowEncoder(w io.Writer, format Format, header bool) func(Result) error {
	if format == CSV {
		cw := csv.NewWriter(w)
		if header {
			cw.Write(CSVHeader)
		}
		return func(row Result) error { cw.Write(row.csvRecord()); cw.Flush(); return cw.Error() }
	}
	je := json.NewEncoder(w)
	je.SetEscapeHTML(false)
	return func(row Result) error { return je.Encode(row) }
}

// eachRow calls fn with each complete row of a results file in format,
// until the end or a row that cannot be read (a last row cut short).
func eachRow(f io.Reader, format Format, fn func(Result) error) error {
	if format == JSONL {
		br := bufio.NewReaderSize(f, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			var row Result
			if len(line) == 0 || line[len(line)-1] != '\n' || json.Unmarshal(line, &row) != nil || row.ID <= 0 {
				return nil
			}
			if ferr := fn(row); ferr != nil {
				return ferr
			}
			if err != nil {
				return nil
			}
		}
	}
	cr := csv.NewReader(bufio.NewReaderSize(f, 64<<10))
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil
	}
	col := make(map[string]int, len(head))
	for i, name := range head {
		col[name] = i
	}
	for {
		rec, err := cr.Read()
		if err != nil || len(rec) != len(head) {
			return nil
		}
		if row, ok := fromCSV(col, rec); ok {
			if err := fn(row); err != nil {
				return err
			}
		}
	}
}

// fromCSV reads a results.csv row, its columns named by col (a header of
// this exitgate or an older one); ok is false for a row without a job id.
func fromCSV(col map[string]int, rec []string) (Result, bool) {
	get := func(name string) string {
		if i, ok := col[name]; ok {
			return rec[i]
		}
		return ""
	}
	var r Result
	var err error
	if r.ID, err = strconv.ParseInt(get("id"), 10, 64); err != nil || r.ID <= 0 {
		return r, false
	}
	r.URL, r.Outcome, r.Reason, r.Exit, r.Body = get("url"), get("outcome"), get("reason"), get("exit"), get("body")
	r.Status, _ = strconv.Atoi(get("status"))
	r.Attempts, _ = strconv.Atoi(get("attempts"))
	r.Bytes, _ = strconv.ParseInt(get("bytes"), 10, 64)
	r.ElapsedMS, _ = strconv.ParseInt(get("elapsed_ms"), 10, 64)
	r.Truncated, _ = strconv.ParseBool(get("truncated"))
	r.FinalURL, r.ContentType, r.ETag, r.LastModified = get("final_url"), get("content_type"), get("etag"), get("last_modified")
	r.ContentEncoding = get("content_encoding")
	if at := get("fetched_at"); at != "" {
		r.FetchedAt, _ = time.Parse(time.RFC3339Nano, at)
	}
	return r, true
}

// migrateCSV gives a results.csv an older exitgate wrote (olderCSVHeaders)
// CSVHeader's columns, empty in its rows, atomically: its rows are read by
// their columns' names and written again (eachRow, rowEncoder), up to the
// end or a last row cut short by a kill, whose job gets its row back from
// the frontier (reconcile). Rebuilt from the frontier instead, its rows
// would lose what the answers said (final URL, content type, ...). Any other
// file is left as it is, for scan to judge.
func migrateCSV(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	head, err := csv.NewReader(bufio.NewReader(f)).Read()
	if err != nil || !slices.ContainsFunc(olderCSVHeaders, func(h []string) bool { return slices.Equal(head, h) }) {
		return nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return writeAtomic(path, func(w io.Writer) error {
		return eachRow(f, CSV, rowEncoder(w, CSV, true))
	})
}

func scanCSV(f io.ReadSeeker) (*idSet, int64, error) {
	seen := &idSet{}
	cr := csv.NewReader(bufio.NewReaderSize(f, 64<<10))
	cr.FieldsPerRecord = len(CSVHeader)
	cr.ReuseRecord = true
	if head, err := cr.Read(); err != nil || !slices.Equal(head, CSVHeader) {
		return nil, 0, errUnmatched
	}
	end := cr.InputOffset()
	// A row is complete once another follows it; the last one only if it
	// ends with its newline.
	var pending, pendingEnd int64
	followed := false
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if _, err := cr.Read(); !errors.Is(err, io.EOF) {
				return nil, 0, errUnmatched
			}
			followed = true // by the last row, cut short
			break
		}
		if pending != 0 {
			seen.add(pending)
			end = pendingEnd
		}
		id, perr := strconv.ParseInt(rec[0], 10, 64)
		if perr != nil || id <= 0 || seen.has(id) {
			return nil, 0, errUnmatched
		}
		pending, pendingEnd = id, cr.InputOffset()
	}
	if pending != 0 && (followed || lastByteIs(f, pendingEnd, '\n')) {
		seen.add(pending)
		end = pendingEnd
	}
	return seen, end, nil
}

// lastByteIs reports whether the byte just before offset off of f is c: a
// row the CSV reader took at the end of the file without its newline may
// have been cut short.
func lastByteIs(f io.ReadSeeker, off int64, c byte) bool {
	if off == 0 {
		return false
	}
	var b [1]byte
	if _, err := f.Seek(off-1, io.SeekStart); err != nil {
		return false
	}
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return false
	}
	return b[0] == c
}

// idSet is a set of job ids: a bitset per value of the id's upper 32 bits.
// Ids are dense within that: the SQLite frontier numbers jobs 1, 2, 3...
// (one block), the Redis frontier numbers them host<<32 | sequence (a
// block per host). One flat bitset over Redis ids would take 2^32 bits
// (512 MiB) for the first host alone.
type idSet struct {
	blocks map[int64][]uint64
	lastHi int64    // the block of the last add or has, the usual next one
	last   []uint64 // blocks[lastHi], or nil
}

const idLowBits = 32

func (s *idSet) block(hi int64) []uint64 {
	if s.last != nil && hi == s.lastHi {
		return s.last
	}
	b := s.blocks[hi]
	if b != nil {
		s.lastHi, s.last = hi, b
	}
	return b
}

func (s *idSet) add(id int64) {
	hi, lo := id>>idLowBits, id&(1<<idLowBits-1)
	b := s.block(hi)
	if i := int(lo >> 6); i >= len(b) {
		b = append(b, make([]uint64, i+1-len(b))...)
		if s.blocks == nil {
			s.blocks = make(map[int64][]uint64)
		}
		s.blocks[hi] = b
		s.lastHi, s.last = hi, b
	}
	b[lo>>6] |= 1 << (uint(lo) & 63)
}

func (s *idSet) has(id int64) bool {
	if id < 0 {
		return false
	}
	hi, lo := id>>idLowBits, id&(1<<idLowBits-1)
	b := s.block(hi)
	i := int(lo >> 6)
	return i < len(b) && b[i]&(1<<(uint(lo)&63)) != 0
}
