//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package memory

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
