// Package urlfile reads a crawl's URL list: one absolute http(s) URL per line,
// with blank lines and "#" comments allowed, and an optional UTF-8 byte order
// mark before the first line. A line is checked by the frontier's own rules
// (frontier.Normalize), so that every URL Read accepts is one the frontier
// takes. A bad line is reported with its file name and line number and
// skipped; it never stops the rest.
package urlfile

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/exitgate/exitgate/frontier"
)

// LineError is one line that could not be used.
type LineError struct {
	File   string
	Line   int
	Reason string
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason) }

// MaxLine is the longest line accepted; longer lines are reported.
const MaxLine = 64 << 10

// MaxBadKept is how many bad lines a read keeps to report; past it they
// are counted (Bad.More): a list of a million broken lines would otherwise
// hold them all and print each.
const MaxBadKept = 20

// Bad is the unusable lines of a list: the first MaxBadKept, in order, and
// how many more there were.
type Bad struct {
	Lines []*LineError
	More  int
}

// Count is how many lines were unusable.
func (b *Bad) Count() int { return len(b.Lines) + b.More }

func (b *Bad) add(e *LineError) {
	if len(b.Lines) < MaxBadKept {
		b.Lines = append(b.Lines, e)
		return
	}
	b.More++
}

// Read calls add for each usable URL of r, in order, and returns the bad
// lines. name labels errors. The error is non-nil only when r itself fails
// or add returns one.
func Read(r io.Reader, name string, add func(rawURL string) error) (Bad, error) {
	return read(r, name, func(u string) (string, error) {
		if _, err := frontier.Normalize(u); err != nil {
			return reason(u, err), nil
		}
		return "", add(u)
	})
}

// read calls use with the URL of each line that is not blank, a comment or
// malformed as a line; use checks the URL by the frontier's rules and
// returns why it is unusable ("" when it took it), or an error that stops
// the read. Push checks each URL as it prepares its job for a frontier that
// takes prepared jobs, instead of parsing it once to check the line and
// again to prepare it.
func read(r io.Reader, name string, use func(u string) (string, error)) (Bad, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var bad Bad
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if n == 1 {
			// Editors on Windows start UTF-8 files with a byte order mark.
			line = strings.TrimPrefix(line, "\uFEFF")
		}
		u := strings.TrimSpace(line)
		switch {
		case len(line) > MaxLine:
			bad.add(&LineError{name, n, fmt.Sprintf("line is %d bytes, longer than %d", len(line), MaxLine)})
		case u == "" || strings.HasPrefix(u, "#"):
		case strings.ContainsAny(u, " \t"):
			bad.add(&LineError{name, n, fmt.Sprintf("%q: a URL cannot contain spaces (one URL per line)", clip(u))})
		default:
			why, uerr := use(u)
			if uerr != nil {
				return bad, uerr
			}
			if why != "" {
				bad.add(&LineError{name, n, why})
			}
		}
		if errors.Is(err, io.EOF) {
			return bad, nil
		}
		if err != nil {
			return bad, fmt.Errorf("%s: %w", name, err)
		}
	}
}

// reason says why the frontier refused URL u with err.
func reason(u string, err error) string {
	var ue *frontier.URLError
	if errors.As(err, &ue) {
		return fmt.Sprintf("%q: %s", clip(u), ue.Reason)
	}
	return fmt.Sprintf("%q: %v", clip(u), err)
}

// clip shortens URL s for a message, its password masked.
func clip(s string) string {
	s = frontier.Redact(s)
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// pushBatch is how many URLs go to the frontier in one Push.
const pushBatch = 50000

// Loaded is what Push made of a URL file.
type Loaded struct {
	Added  int // URLs new to the frontier
	Usable int // lines that were URLs the frontier takes, new or not
	Bad    Bad // the lines that were not
}

// Push adds the URL file at path to fr in batches and says how many URLs
// were new and usable. Bad lines are returned, not fatal. The file is read and
// checked on one goroutine while the previous batch is pushed on another;
// with a frontier.PreparedPusher, the jobs are prepared there too; with a
// frontier.BulkLoader, the pushes go in one BulkLoad (Push is for a
// frontier nothing else uses meanwhile: a crawl loading its list).
func Push(ctx context.Context, fr frontier.Frontier, path string) (l Loaded, err error) {
	file, err := os.Open(path)
	if err != nil {
		return Loaded{}, err
	}
	defer file.Close()
	if bl, ok := fr.(frontier.BulkLoader); ok {
		err = bl.BulkLoad(ctx, func() error {
			l, err = push(ctx, fr, file, path)
			return err
		})
		return l, err
	}
	return push(ctx, fr, file, path)
}

// push is Push on an open file.
func push(ctx context.Context, fr frontier.Frontier, file *os.File, path string) (Loaded, error) {
	pp, prepare := fr.(frontier.PreparedPusher)
	var (
		batches = make(chan batch, 2)
		free    = make(chan batch, 3)
		stop    = make(chan struct{})
		bad     Bad
		usable  int
		readErr error
		done    = make(chan struct{})
	)
	for range cap(free) {
		b := batch{}
		if prepare {
			b.prepared = frontier.NewPrepared(pushBatch)
		}
		free <- b
	}
	errStopped := errors.New("stopped")
	go func() {
		defer close(done)
		defer close(batches)
		b := <-free
		bad, readErr = read(file, path, func(u string) (string, error) {
			if prepare {
				// Preparing the job checks the URL by the frontier's rules.
				if err := b.prepared.Add(frontier.NewJob{URL: u}); err != nil {
					return reason(u, err), nil
				}
			} else {
				if _, err := frontier.Prepare(frontier.NewJob{URL: u}); err != nil {
					return reason(u, err), nil
				}
				b.jobs = append(b.jobs, frontier.NewJob{URL: u})
			}
			usable++
			if b.len() < pushBatch {
				return "", nil
			}
			select {
			case batches <- b:
			case <-stop:
				return "", errStopped
			}
			select {
			case b = <-free:
			case <-stop:
				return "", errStopped
			}
			return "", nil
		})
		if readErr == nil && b.len() > 0 {
			select {
			case batches <- b:
			case <-stop:
			}
		}
	}()
	added := 0
	var pushErr error
	for b := range batches {
		if pushErr == nil {
			var n int
			if prepare {
				n, pushErr = pp.PushPrepared(ctx, b.prepared)
			} else {
				n, pushErr = fr.Push(ctx, b.jobs)
			}
			added += n
			if pushErr != nil {
				close(stop)
			}
		}
		free <- b.reset()
	}
	<-done
	l := Loaded{Added: added, Usable: usable, Bad: bad}
	if pushErr != nil {
		return l, pushErr
	}
	return l, readErr
}

// batch is one push of Push: prepared jobs, or jobs to push as they are.
type batch struct {
	prepared frontier.Prepared
	jobs     []frontier.NewJob
}

func (b batch) len() int { return b.prepared.Len() + len(b.jobs) }

// reset empties b, keeping the jobs' array.
func (b batch) reset() batch {
	return batch{prepared: b.prepared.Reset(), jobs: b.jobs[:0]}
}

// Identity is what makes two URL files the same list.
type Identity struct {
	// File is the SHA-256 of the file's bytes, as crawls before Lines
	// recorded a list.
	File string
	// Lines is the same for any file holding the same URL lines, in any
	// order, whatever its line ends, byte order mark, blank lines,
	// comments and spaces around a line: a copy of a list saved on another
	// machine (CRLF) or sorted is the list it was, where its bytes differ.
	// It is the sum of each line's 128-bit XXH3 (a multiset hash: no
	// order, no sorting, no memory that grows with the list; a guard
	// against a mistake, not against a forger).
	Lines string
}

// Same reports whether id and other name one list.
func (id Identity) Same(other Identity) bool {
	return id.File == other.File || (id.Lines != "" && id.Lines == other.Lines)
}

// Identify reads the URL file at path once and returns its Identity.
func Identify(path string) (Identity, error) {
	f, err := os.Open(path)
	if err != nil {
		return Identity{}, err
	}
	defer f.Close()
	file := sha256.New()
	var sum xxh3.Uint128
	_, err = read(io.TeeReader(f, file), path, func(u string) (string, error) {
		// A line's hash added in: 128 bits, with carry.
		h := xxh3.HashString128(u)
		var carry uint64
		sum.Lo, carry = bits.Add64(sum.Lo, h.Lo, 0)
		sum.Hi, _ = bits.Add64(sum.Hi, h.Hi, carry)
		return "", nil
	})
	if err != nil {
		return Identity{}, err
	}
	lines := sum.Bytes()
	return Identity{File: hex.EncodeToString(file.Sum(nil)), Lines: hex.EncodeToString(lines[:])}, nil
}
