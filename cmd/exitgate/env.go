package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every flag of every command can also be set in the environment. The
// variables of crawl, the main command, are EXITGATE_ and the flag's name in
// capitals with dashes as underscores (EXITGATE_PROXIES, EXITGATE_OUT); those
// of any other command carry its path too (EXITGATE_BENCH_OUT,
// EXITGATE_PROXIES_CHECK_TIMEOUT), so that a crawl's EXITGATE_OUT never
// redirects a bench. A flag on the command line wins over its variable, and
// a variable over the --config file. An empty variable counts as unset; a
// repeatable flag (-H, -x, --rule) takes one value per line of its variable.
const envPrefix = "EXITGATE_"

// envSetAnnotation marks a flag whose value came from its variable, so that
// an error about the flag can name the variable.
const envSetAnnotation = "exitgate_env_set"

// alsoReadsAnnotation lists, on a flag, another command's variables it
// reads too (the ca commands' --ca-dir reads serve's EXITGATE_SERVE_CA_DIR):
// not warned of as another command's setting.
const alsoReadsAnnotation = "exitgate_env_also"

// defaultAnnotation overrides the default shown in help, for a flag whose
// zero value means something the value cannot say ("the current time").
const defaultAnnotation = "exitgate_default"

// noEnv lists the flags that have no variable: they are about the command
// line itself.
var noEnv = map[string]bool{"help": true, "version": true}

// envName returns the variable that sets flag of cmd.
func envName(cmd *cobra.Command, flag string) string {
	path := strings.Fields(cmd.CommandPath())[1:] // without "exitgate"
	if len(path) == 1 && path[0] == "crawl" {
		path = nil
	}
	parts := append(path, flag)
	return envPrefix + strings.ToUpper(strings.ReplaceAll(strings.Join(parts, "_"), "-", "_"))
}

// applyEnv sets every flag of cmd that the command line did not set from
// its variable, if that is set. A value the flag cannot take is an error
// naming the variable. A variable of the EXITGATE_ family that is close to
// one of cmd's but is no command's at all is probably a typo: warn is told.
func applyEnv(cmd *cobra.Command, warn io.Writer) error {
	var errs []error
	known := map[string]bool{}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if noEnv[f.Name] {
			return
		}
		name := envName(cmd, f.Name)
		known[name] = true
		for _, n := range f.Annotations[alsoReadsAnnotation] {
			known[n] = true
		}
		val, ok := os.LookupEnv(name)
		if !ok || strings.TrimSpace(val) == "" || f.Changed {
			return
		}
		vals := []string{val}
		if isRepeatable(f) {
			vals = nonBlankLines(val)
		}
		for _, v := range vals {
			if err := cmd.Flags().Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, plainValueError(err)))
				return
			}
		}
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[envSetAnnotation] = []string{name}
	})
	if err := errors.Join(errs...); err != nil {
		return usageError(err)
	}
	warnUnknownEnv(cmd, known, warn)
	return nil
}

// warnUnknownEnv says so when an EXITGATE_ variable that no command reads is
// within a typo of one that cmd reads.
func warnUnknownEnv(cmd *cobra.Command, known map[string]bool, warn io.Writer) {
	all := allEnvNames(cmd.Root())
	var mine []string
	for n := range known {
		mine = append(mine, n)
	}
	slices.Sort(mine)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || all[name] {
			continue
		}
		if s := suggest(name, mine); len(s) > 0 {
			fmt.Fprintf(warn, "exitgate: %s is not a setting; did you mean %s?\n", name, strings.Join(s, " or "))
		}
	}
	warnOthersEnv(cmd, known, warn)
}

// warnOthersEnv says so when a variable another command reads is set for a
// flag cmd has too: EXITGATE_PROXIES is crawl's, and `exitgate serve` ran
// direct with only a warning that no exits were given.
func warnOthersEnv(cmd *cobra.Command, known map[string]bool, warn io.Writer) {
	said := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c != cmd {
			c.Flags().VisitAll(func(f *pflag.Flag) {
				name := envName(c, f.Name)
				if noEnv[f.Name] || known[name] || said[name] || strings.TrimSpace(os.Getenv(name)) == "" || cmd.Flags().Lookup(f.Name) == nil {
					return
				}
				said[name] = true
				fmt.Fprintf(warn, "exitgate: %s is `%s`'s setting, not read here; `%s` reads %s\n", name, c.CommandPath(), cmd.CommandPath(), envName(cmd, f.Name))
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cmd.Root())
}

// allEnvNames returns the variables of every flag of every command under root.
func allEnvNames(root *cobra.Command) map[string]bool {
	names := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !noEnv[f.Name] {
				names[envName(c, f.Name)] = true
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return names
}

func isRepeatable(f *pflag.Flag) bool {
	_, ok := f.Value.(pflag.SliceValue)
	return ok
}

func nonBlankLines(s string) []string {
	var out []string
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// withSources adds to a usage error about a flag whose value came from its
// variable the name of that variable, which the user may not know is set,
// or from the config file the file and line. The value is not repeated: it
// may hold credentials.
func withSources(cmd *cobra.Command, err error) error {
	var ee *exitError
	if err == nil || !errors.As(err, &ee) || ee.code != exitUsage {
		return err
	}
	msg := err.Error()
	var from, at []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !mentionsFlag(msg, f.Name) && (f.Shorthand == "" || !mentionsShort(msg, f.Shorthand)) {
			return
		}
		if env := f.Annotations[envSetAnnotation]; len(env) == 1 && !strings.Contains(msg, env[0]) {
			from = append(from, env[0])
		}
		if line := f.Annotations[configSetAnnotation]; len(line) == 1 && !strings.Contains(msg, line[0]) {
			at = append(at, line[0])
		}
	})
	switch {
	case len(from) > 0:
		err = fmt.Errorf("%w (set by %s)", err, strings.Join(from, ", "))
	case len(at) > 0:
		err = fmt.Errorf("%w (set at %s)", err, strings.Join(at, ", "))
	default:
		return err
	}
	return &exitError{code: ee.code, err: err}
}

// mentionsFlag reports whether msg names --name as a whole flag.
func mentionsFlag(msg, name string) bool {
	return regexp.MustCompile(`--` + regexp.QuoteMeta(name) + `([^a-z0-9-]|$)`).MatchString(msg)
}

// mentionsShort reports whether msg names a flag by its shorthand, as the
// header checks do ("-H #2: ..."): a bad EXITGATE_HEADER went without
// "(set by EXITGATE_HEADER)".
func mentionsShort(msg, short string) bool {
	return regexp.MustCompile(`(^|[^a-zA-Z0-9-])-` + regexp.QuoteMeta(short) + `([^a-zA-Z0-9-]|$)`).MatchString(msg)
}

// flagError is the error of a flag the parser refused, with a suggestion
// when the flag is unknown but close to one cmd has: --proxie → --proxies,
// and -proxies (one dash, as Go's flag package allows) → --proxies.
func flagError(code int) func(*cobra.Command, error) error {
	return func(cmd *cobra.Command, err error) error {
		var ne *pflag.NotExistError
		if errors.As(err, &ne) {
			var names []string
			cmd.Flags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden {
					names = append(names, f.Name)
				}
			})
			s := suggest(ne.GetSpecifiedName(), names)
			if sh := ne.GetSpecifiedShortnames(); sh != "" {
				// -proxies: the whole word after the dash, as Go's flag
				// package would have read it.
				name, _, _ := strings.Cut(sh, "=")
				if s = suggest(name, names); slices.Contains(names, name) {
					s = []string{name}
				}
			}
			if len(s) > 0 {
				for i := range s {
					s[i] = "--" + s[i]
				}
				err = fmt.Errorf("%w (did you mean %s?)", err, strings.Join(s, " or "))
			}
		}
		return &exitError{code: code, err: plainValueError(err)}
	}
}

// plainValueError says what a number or boolean flag wants where pflag
// passed on strconv's words (`invalid argument "abc" for "--concurrency"
// flag: strconv.ParseInt: parsing "abc": invalid syntax`); any other error
// is returned as it is.
func plainValueError(err error) error {
	var ive *pflag.InvalidValueError
	want, ok := valueWant(err)
	if !ok || !errors.As(err, &ive) {
		return err
	}
	return fmt.Errorf("--%s %q: want %s", ive.GetFlag().Name, ive.GetValue(), want)
}

// valueWant returns what a number or boolean flag wants, said plainly, if
// err is strconv's refusal of its value.
func valueWant(err error) (string, bool) {
	var ne *strconv.NumError
	if !errors.As(err, &ne) {
		return "", false
	}
	want := "a whole number"
	switch {
	case strings.HasPrefix(ne.Func, "ParseFloat"):
		want = "a number"
	case ne.Func == "ParseBool":
		want = "true or false"
	}
	if errors.Is(ne.Err, strconv.ErrRange) {
		want += " in range"
	}
	return want, true
}

// suggest returns the candidates closest to name: at most two edits away
// (case-insensitive; and fewer than name has letters), or starting with it
// when it has three letters or more; the closest first, at most three.
func suggest(name string, candidates []string) []string {
	lname := strings.ToLower(name)
	type scored struct {
		s string
		d int
	}
	var hits []scored
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == lname {
			continue
		}
		d := editDistance(lname, lc)
		switch {
		case d <= 2 && d < len(lname):
		case len(lname) >= 3 && strings.HasPrefix(lc, lname):
			d = 3 // after any near miss
		default:
			continue
		}
		hits = append(hits, scored{c, d})
	}
	slices.SortStableFunc(hits, func(a, b scored) int { return a.d - b.d })
	var out []string
	for i, h := range hits {
		if i == 3 || h.d > hits[0].d {
			break
		}
		out = append(out, h.s)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// flagUsages renders cmd's own flags for --help: each flag with its value's
// name and its text, then a line with its variable and its default.
func flagUsages(cmd *cobra.Command) string {
	type row struct{ left, text, meta string }
	var rows []row
	width := 0
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		varname, text := pflag.UnquoteUsage(f)
		left := "      --" + f.Name
		if f.Shorthand != "" {
			left = "  -" + f.Shorthand + ", --" + f.Name
		}
		if varname != "" {
			left += " " + varname
		}
		var meta []string
		if !noEnv[f.Name] {
			meta = append(meta, "env "+envName(cmd, f.Name))
			meta = append(meta, "default "+defaultText(f))
		}
		rows = append(rows, row{left, text, strings.Join(meta, ", ")})
		width = max(width, len(left))
	})
	var b strings.Builder
	const total = 100
	textWidth := max(40, total-width-3)
	for _, r := range rows {
		lines := wrap(r.text, textWidth)
		if r.meta != "" {
			lines = append(lines, "["+r.meta+"]")
		}
		for i, l := range lines {
			left := ""
			if i == 0 {
				left = r.left
			}
			fmt.Fprintf(&b, "%-*s   %s\n", width, left, l)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// defaultText is how help shows a flag's default.
func defaultText(f *pflag.Flag) string {
	if d := f.Annotations[defaultAnnotation]; len(d) == 1 {
		return d[0]
	}
	switch v := f.DefValue; {
	case v == "" || v == "[]":
		return "none"
	case f.Value.Type() == "duration":
		if d, err := time.ParseDuration(v); err == nil {
			return shortDuration(d)
		}
	}
	return f.DefValue
}

// shortDuration prints 5m0s as 5m and 1h0m0s as 1h.
func shortDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// wrap breaks text into lines of at most width bytes at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}

// setDefaultText sets the default help shows for flag name of fs.
func setDefaultText(fs *pflag.FlagSet, name, text string) {
	if err := fs.SetAnnotation(name, defaultAnnotation, []string{text}); err != nil {
		panic(err) // a flag name mistyped in this file
	}
}
