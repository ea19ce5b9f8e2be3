// Command exitgate is the command-line face of exitgate: it wires flags to the
// library packages and holds no logic of its own.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "exitgate:", err)
		os.Exit(exitCode(err))
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "exitgate",
		Short: "Rate-limit-aware fetching through proxy pools, keyed on (host, exit)",
		Long: `exitgate fetches through a pool of proxy exits while keeping one learned
budget per (target host, exit) lane and a polite ceiling per host.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	root.AddCommand(
		newVersionCmd(),
		newHeadersCmd(),
		newProxiesCmd(),
		newCrawlCmd(),
		newBenchCmd(),
		newDemoCmd(),
	)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the exitgate version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "exitgate", version)
			return err
		},
	}
}

// Exit codes, documented in README.md and in crawl --help.
const (
	exitFailed     = 1 // a failure: storage, the frontier, no working exit, ...
	exitUsage      = 2 // bad flags, arguments or input files: nothing was done
	exitAbandoned  = 3 // crawl: finished, but some URLs were abandoned
	exitUnfinished = 4 // crawl: URLs left to do (a signal, --duration, or parked for later)
)

// usageError marks err as the user's input being refused.
func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

// exitError carries a process exit code through cobra's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	if e, ok := err.(*exitError); ok {
		return e.code
	}
	return 1
}
