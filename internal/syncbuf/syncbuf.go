// Package syncbuf is a text buffer safe for concurrent writers: a log
// destination that tests read while the code under test still writes.
package syncbuf

import (
	"strings"
	"sync"
)

// Buffer collects what is written to it. Its zero value is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p; it never fails.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
