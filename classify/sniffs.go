package classify

// Sniffs reports whether Response looks at the body of an answer with
// status for a block page under these rules (403 and 503 unless
// SniffStatuses is set), so that a caller streaming bodies (the gateway)
// reads the first SniffBytes of those answers only.
func (r Rules) Sniffs(status int) bool { return r.sniffs(status) }
