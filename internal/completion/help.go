package completion

import (
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/kong"
)

// HelpArgs turns "runner help [COMMAND...]" (words are what follows help)
// into "runner [COMMAND...] --help", as git and go read it; a COMMAND
// runner lacks is an error with the near name, which near finds among the
// names there are ("" for none).
func HelpArgs(app *kong.Application, words []string, near func(name string, names []string) string) ([]string, error) {
	node := app.Node
	for _, w := range words {
		var names []string
		var next *kong.Node
		for _, child := range node.Children {
			if child.Hidden {
				continue
			}
			names = append(names, child.Name)
			if child.Name == w || slices.Contains(child.Aliases, w) {
				next = child
			}
		}
		if next == nil {
			what := "runner has no command"
			if node != app.Node {
				what = fmt.Sprintf("%q has no subcommand", node.FullPath())
			}
			if len(names) == 0 {
				return nil, fmt.Errorf("help %s: %s %q; run 'runner help %s'", strings.Join(words, " "), what, w, strings.TrimPrefix(node.FullPath(), "runner "))
			}
			return nil, fmt.Errorf("help %s: %s %q%s; run 'runner help' for the list", strings.Join(words, " "), what, w, near(w, names))
		}
		node = next
	}
	return append(append([]string(nil), words...), "--help"), nil
}
