// Command exitgate is the command-line face of exitgate: it wires flags to the
// library packages and holds no logic of its own.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

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
budget per (target host, exit) lane and a polite ceiling per host.

Every flag can also be set in the environment: crawl's as EXITGATE_ and the
flag's name (EXITGATE_PROXIES, EXITGATE_OUT, EXITGATE_HOST_RATE), another
command's with its name too (EXITGATE_BENCH_OUT, EXITGATE_PROXIES_CHECK_TIMEOUT).
A flag on the command line wins over its variable, a variable over a --config
file. An empty variable counts as unset; a repeatable flag (-H, -x, --rule)
takes one value per line. Each command's --help names its variables.`,
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	group(root)
	root.SetHelpCommand(helpCmd(root))
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(flagError(exitUsage))
	root.AddCommand(
		newVersionCmd(),
		newHeadersCmd(),
		newProxiesCmd(),
		newCrawlCmd(),
		newStatusCmd(),
		newServeCmd(),
		newCACmd(),
		newBenchCmd(),
		newDemoCmd(),
	)
	// Every flag can come from the environment (env.go): the variables are
	// read once the command line is parsed, and help shows each flag's.
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		return applyEnv(cmd, cmd.ErrOrStderr())
	}
	cobra.AddTemplateFunc("flagUsages", flagUsages)
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(),
		"{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}", "{{flagUsages .}}", 1))
	var wrapRun func(*cobra.Command)
	wrapRun = func(c *cobra.Command) {
		if run := c.RunE; run != nil {
			c.RunE = func(cmd *cobra.Command, args []string) error { return withSources(cmd, run(cmd, args)) }
		}
		for _, sub := range c.Commands() {
			wrapRun(sub)
		}
	}
	wrapRun(root)
	return root
}

// group makes cmd, a command of commands, refuse one it does not have as
// a usage error (exit 2), with cobra's suggestions: `exitgate proxies chek`
// printed the help and exited 0, and `exitgate bogus` exited 1. Alone, it
// prints its help.
func group(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.SuggestionsMinimumDistance = 2
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if sug := cmd.SuggestionsFor(args[0]); len(sug) > 0 {
			msg += " (did you mean " + strings.Join(sug, " or ") + "?)"
		}
		return usageError(fmt.Errorf("%s; run '%s --help' for its commands", msg, cmd.CommandPath()))
	}
	return cmd
}

// helpCmd is `exitgate help [command ...]`: a command it does not know is
// a usage error (exit 2) with suggestions, as `exitgate bogus` is; cobra's
// own printed "Unknown help topic" and the root's help, and exited 0.
func helpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err == nil && len(rest) > 0 {
				// A word past a command: one it does not have (after a
				// command without any, it was ignored, exit 0).
				err = fmt.Errorf("unknown command %q", rest[0])
			}
			if target == nil || err != nil {
				word := args[len(args)-1]
				if target != nil && len(rest) > 0 {
					word = rest[0]
				} else {
					target = root
				}
				msg := fmt.Sprintf("no help topic %q for %q", word, target.CommandPath())
				if sug := target.SuggestionsFor(word); len(sug) > 0 && word != "" {
					msg += " (did you mean " + strings.Join(sug, " or ") + "?)"
				}
				what := "its commands"
				if !target.HasSubCommands() {
					what = "its help" // (crawl has no commands to list)
				}
				return usageError(fmt.Errorf("%s; run '%s --help' for %s", msg, target.CommandPath(), what))
			}
			return target.Help()
		},
		// As cobra's own help command: `exitgate help cr<TAB>` completes
		// the commands (the first version completed file names).
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range target.Commands() {
				if sub.IsAvailableCommand() && sub != c && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
	}
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the exitgate version, commit and Go version (same as --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), buildVersion())
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
