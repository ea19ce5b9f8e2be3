//go:build race

package sqlite

// raceEnabled scales TestMemory down: the race detector multiplies both
// the time and the memory a push takes.
const raceEnabled = true
