package scaffold

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/internal/exitcode"
)

// This file is what runner init and runner schema --write print and ask.

// List prints the starting points, their descriptions in a column.
func List(w io.Writer) {
	starts := Starts()
	width := nameWidth(starts)
	for _, s := range starts {
		fmt.Fprintf(w, "%-*s  %s\n", width, s.Name, s.Description)
	}
}

// nameWidth is the width of the longest starting point's name, so that
// descriptions line up in a column.
func nameWidth(starts []Start) int {
	w := 0
	for _, s := range starts {
		w = max(w, len(s.Name))
	}
	return w
}

// Ask asks on w which starting point to use (init --ask), reading the
// answer, a number or a name, from r.
func Ask(r io.Reader, w io.Writer) (string, error) {
	starts := Starts()
	width := nameWidth(starts)
	for i, s := range starts {
		fmt.Fprintf(w, "%2d. %-*s  %s\n", i+1, width, s.Name, s.Description)
	}
	fmt.Fprint(w, "Starting point (number or name): ")
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && line == "" {
		return "", exitcode.Errorf(exitcode.Usage, "--ask: no answer on stdin")
	}
	line = strings.TrimSpace(line)
	if n, err := strconv.Atoi(line); err == nil {
		if n < 1 || n > len(starts) {
			return "", exitcode.Errorf(exitcode.Usage, "--ask: %d is not on the list", n)
		}
		return starts[n-1].Name, nil
	}
	return line, nil
}

// Told prints what Write wrote into dir from the starting point from, and
// what to do next.
func Told(w io.Writer, from, dir string, files []string) {
	fmt.Fprintf(w, "wrote a %s project in %s:\n", from, dir)
	for _, f := range files {
		fmt.Fprintf(w, "  %s\n", filepath.FromSlash(f))
	}
	cd := ""
	if dir != "." {
		cd = "  cd " + dir + "\n"
	}
	fmt.Fprintf(w, `
Next:
%s  runner test                      # the spec's tests, offline
  cp .env.example .env             # then set your API key in .env
  runner run spec.yaml --dry-run   # what a run would send, and its cost
`, cd)
}

// WriteSchemas writes the schema files (by name) into dir, as runner init
// does, telling each on w (runner schema --write).
func WriteSchemas(dir string, schemas map[string][]byte, w io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return exitcode.Errorf(exitcode.Usage, "--dir %s: %v", dir, err)
	}
	for name, data := range schemas {
		p := filepath.Join(dir, name)
		if err := WriteFile(p, data); err != nil {
			return exitcode.With(exitcode.Failure, err)
		}
		fmt.Fprintf(w, "wrote %s\n", p)
	}
	return nil
}

// Names are the starting points' names.
func Names() []string {
	var out []string
	for _, s := range Starts() {
		out = append(out, s.Name)
	}
	return out
}
