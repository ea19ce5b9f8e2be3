package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v4"
)

// configSetAnnotation marks a flag whose value came from the config file,
// with the file and line it came from.
const configSetAnnotation = "exitgate_config_set"

// applyConfigFile reads a YAML file whose keys are the command's flag names
// and sets every flag the command line did not set. Unknown keys and bad
// values are errors that name the file, line and key. Flags given on the
// command line win over the file.
func applyConfigFile(flags *pflag.FlagSet, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return yamlError(path, data, err)
	}
	if len(doc.Content) == 0 { // empty file
		return nil
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d: want a mapping of flag names to values", path, m.Line)
	}
	var errs []string
	seen := map[string]int{} // key: its line
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		f := flags.Lookup(k.Value)
		if f == nil || k.Value == "config" || k.Value == "help" {
			msg := fmt.Sprintf("%s:%d: unknown key %q", path, k.Line, k.Value)
			var names []string
			flags.VisitAll(func(f *pflag.Flag) {
				if f.Name != "config" && f.Name != "help" {
					names = append(names, f.Name)
				}
			})
			bare := strings.TrimLeft(k.Value, "-")
			switch {
			case bare == "config" || bare == "help":
				// Not a key at all: no advice towards one.
			case bare != k.Value && flags.Lookup(bare) != nil:
				msg += fmt.Sprintf(" (keys are flag names without their dashes: %s)", bare)
			case len(bare) == 1 && flags.ShorthandLookup(bare) != nil && flags.ShorthandLookup(bare).Name != "help":
				msg += fmt.Sprintf(" (keys are flag names: %s)", flags.ShorthandLookup(bare).Name)
			default:
				if sug := suggest(bare, names); len(sug) > 0 {
					msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(sug, " or "))
				}
			}
			errs = append(errs, msg)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			// Refused: the first value would win unread (format: csv then
			// format: bogus ran as csv without a word).
			errs = append(errs, fmt.Sprintf("%s:%d: %q given twice (first at line %d)", path, k.Line, k.Value, first))
			continue
		}
		seen[k.Value] = k.Line
		if f.Changed {
			continue // the command line wins
		}
		if v.Kind == yaml.SequenceNode && repeatable(f) {
			// A flag given once per value (-H, -x): each item is one
			// value, as on the command line. Joined with commas, a list
			// of two headers went out as one ("X-A: 1,X-B: 2").
			bad := false
			for _, item := range v.Content {
				if item.Kind != yaml.ScalarNode {
					errs = append(errs, fmt.Sprintf("%s:%d: %s: want a list of plain values", path, item.Line, k.Value))
					bad = true
					break
				}
				if err := flags.Set(k.Value, item.Value); err != nil {
					errs = append(errs, fmt.Sprintf("%s:%d: %s: %v", path, item.Line, k.Value, err))
					bad = true
					break
				}
			}
			if bad {
				continue
			}
		} else {
			val, err := scalar(v)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s:%d: %s: %v", path, v.Line, k.Value, err))
				continue
			}
			if err := flags.Set(k.Value, val); err != nil {
				if want, ok := valueWant(err); ok {
					errs = append(errs, fmt.Sprintf("%s:%d: %s %q: want %s", path, v.Line, k.Value, val, want))
				} else {
					errs = append(errs, fmt.Sprintf("%s:%d: %s: %v", path, v.Line, k.Value, err))
				}
				continue
			}
		}
		// A value the command's checks refuse later is said with its
		// line (withSources), as one from the environment is.
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[configSetAnnotation] = []string{fmt.Sprintf("%s:%d", path, v.Line)}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// yamlError says where the YAML in data (read from path) is broken, as
// path:line: what. A fault found at the end of the input is said on the
// file's last line: the parser counts a line past it ("line 2" of a file
// of one line without its newline).
func yamlError(path string, data []byte, err error) error {
	var le *yaml.LoadError
	if !errors.As(err, &le) || le.Mark.Line <= 0 {
		return fmt.Errorf("config %s: %w", path, err)
	}
	line, lines := le.Mark.Line, bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		lines++ // the last line, without its newline
	}
	where := ""
	if line > lines {
		line, where = max(lines, 1), " (at the end of the file)"
	}
	return fmt.Errorf("%s:%d: %s%s", path, line, le.Message, where)
}

// repeatable reports whether a flag takes one value each time it is given
// (a string array: -H, -x), not a comma-separated list in one.
func repeatable(f *pflag.Flag) bool { return f.Value.Type() == "stringArray" }

// scalar returns a YAML value as the string a flag parses; a sequence of
// scalars becomes a comma-separated list, and a mapping of scalars a
// comma-separated list of key=value (host-budget: {api.example.com: 0.1%}).
func scalar(n *yaml.Node) (string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value, nil
	case yaml.SequenceNode:
		parts := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return "", fmt.Errorf("want a list of plain values")
			}
			parts = append(parts, c.Value)
		}
		return strings.Join(parts, ","), nil
	case yaml.MappingNode:
		parts := make([]string, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
				return "", fmt.Errorf("want a mapping of plain values")
			}
			parts = append(parts, k.Value+"="+v.Value)
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("want a plain value")
}
