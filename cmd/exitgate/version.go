package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version, when set at build time with -ldflags "-X main.version=v1.2.3",
// wins over the module version the build recorded.
var version = ""

// versionLine is what --version and `exitgate version` print: the version,
// then the commit, its time and whether the tree was modified, when the
// build recorded them, and the Go toolchain and platform. bi is nil when the
// binary carries no build information.
//
//	exitgate v1.2.0 (go1.26.8 linux/amd64)
//	exitgate (devel) commit 19ea4c1d2e3f 2026-12-01T10:00:00Z, modified (go1.26.8 linux/amd64)
func versionLine(bi *debug.BuildInfo, ldflags string) string {
	v := ldflags
	goVersion := runtime.Version()
	var rev, at string
	modified := false
	if bi != nil {
		if v == "" {
			v = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "exitgate %s", v)
	if rev != "" {
		fmt.Fprintf(&b, " commit %.12s", rev)
		if at != "" {
			fmt.Fprintf(&b, " %s", at)
		}
		if modified {
			b.WriteString(", modified")
		}
	}
	fmt.Fprintf(&b, " (%s %s/%s)", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

// buildVersion is versionLine for this binary.
func buildVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return versionLine(bi, version)
}
