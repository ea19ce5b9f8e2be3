//go:build !linux

package sqlite

// diskHint says nothing on systems other than Linux.
func diskHint(string) string { return "" }
