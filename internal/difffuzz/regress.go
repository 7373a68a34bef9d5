package difffuzz

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// A regression case is a mutant kept as a spec file whose first lines say
// where it comes from:
//
//	# difffuzz seed: examples/design-debate/spec.yaml
//	# difffuzz grammar: templates
//	# difffuzz what: node propose renders {{index .History 5}}
//	# difffuzz found: accepted-then-failing: every profile fails (...)
//
// followed by the mutant's text. It is checked beside its seed's copy, as
// when it was found.

// FormatCase is the text of a finding's regression case.
func FormatCase(f Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# difffuzz seed: %s\n", f.Mutant.Seed)
	fmt.Fprintf(&b, "# difffuzz grammar: %s\n", f.Mutant.Grammar)
	fmt.Fprintf(&b, "# difffuzz what: %s\n", oneLine(f.Mutant.What, 2000))
	fmt.Fprintf(&b, "# difffuzz found: %s: %s\n", f.Class, oneLine(f.Detail, 2000))
	b.WriteString(f.Mutant.Text)
	return b.String()
}

// ReadCase reads a regression case.
func ReadCase(path string) (Mutant, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Mutant{}, "", err
	}
	m := Mutant{Text: string(data)}
	found := ""
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "# difffuzz ")
		if !ok {
			break
		}
		k, v, _ := strings.Cut(line, ": ")
		switch k {
		case "seed":
			m.Seed = v
		case "grammar":
			m.Grammar = v
		case "what":
			m.What = v
		case "found":
			found = v
		}
	}
	if m.Seed == "" || m.Grammar == "" {
		return m, found, fmt.Errorf("%s: no '# difffuzz seed:' and '# difffuzz grammar:' lines at its top", path)
	}
	return m, found, nil
}
