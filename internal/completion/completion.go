// Package completion completes runner's command line in the shell: the
// scripts for bash, zsh and fish, which ask runner itself what to offer
// (runner __complete WORD...), and the candidates for a word read from the
// CLI's kong model: commands, flags, enum values, the spec's input and var
// names after --input and --set, and paths of the kind a flag takes; and
// the command that runner help COMMAND... describes (HelpArgs), and go
// test's -run read as runner test's --run (GoTestFlags).
package completion

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/alecthomas/kong"
	"gopkg.in/yaml.v3"
)

// Script is the completion script for shell (bash, zsh or fish), "" for
// another.
func Script(shell string) string {
	return map[string]string{"bash": bash, "zsh": zsh, "fish": fish}[shell]
}

// The scripts. Each passes the words before the cursor and the word being
// completed, and offers what comes back; candidates ending in / or = take
// no space after them, so that a folder or a value can follow.
const bash = `# bash completion for runner. Load it with: source <(runner completion bash)
_runner() {
    local line="${COMP_LINE:0:COMP_POINT}" cur
    local -a words
    read -r -a words <<<"$line"
    if [[ "$line" =~ [[:space:]]$ ]]; then
        words+=("")
    fi
    cur="${words[${#words[@]}-1]}"
    local IFS=$'\n'
    COMPREPLY=($(command runner __complete "${words[@]:1}" 2>/dev/null))
    local c
    for c in "${COMPREPLY[@]}"; do
        case "$c" in
        */ | *=) compopt -o nospace 2>/dev/null; break ;;
        esac
    done
    # bash replaces only what follows the last '=' or ':' of the word.
    if [[ "$cur" == *[=:]* ]]; then
        local pre="${cur%"${cur##*[=:]}"}" i
        for i in "${!COMPREPLY[@]}"; do
            COMPREPLY[i]="${COMPREPLY[i]#"$pre"}"
        done
    fi
}
complete -F _runner runner
`

const zsh = `#compdef runner
# zsh completion for runner. Put it in a folder of $fpath as _runner, or
# load it with: source <(runner completion zsh) (after compinit).
_runner() {
    local -a out open closed
    local c
    out=("${(@f)$(command runner __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    for c in "${out[@]}"; do
        [[ -z "$c" ]] && continue
        if [[ "$c" == */ || "$c" == *= ]]; then
            open+=("$c")
        else
            closed+=("$c")
        fi
    done
    (( ${#open} )) && compadd -Q -S '' -- "${open[@]}"
    (( ${#closed} )) && compadd -Q -- "${closed[@]}"
    return 0
}
if (( $+functions[compdef] )); then
    compdef _runner runner
fi
`

const fish = `# fish completion for runner. Save it as ~/.config/fish/completions/runner.fish
function __runner_complete
    set -l words (commandline -opc) (commandline -ct)
    command runner __complete $words[2..-1] 2>/dev/null
end
complete -c runner -f -a '(__runner_complete)'
`

// Values are the values of flags whose values a command knows (the
// names of a test's cases, say), given the word being completed and the
// positional words after the command; false for other flags.
type Values func(flag *kong.Flag, cur string, args []string) ([]string, bool)

// Candidates are the candidates for the last of words, given the ones
// before it (as the command line reads them: rewritten by the caller
// where it rewrites arguments).
func Candidates(app *kong.Application, words []string, values Values) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur := words[len(words)-1]
	node := app.Node
	positional := 0
	specFile := ""
	var args []string        // the positional words after the command
	var valueFlag *kong.Flag // the flag the current word is the value of
	for i := 0; i < len(words)-1; i++ {
		w := words[i]
		if w == "--" {
			continue
		}
		if strings.HasPrefix(w, "-") && len(w) > 1 {
			f := findFlag(node, w)
			if f != nil && !f.IsBool() && !f.IsCounter() && !strings.Contains(w, "=") {
				if i+1 == len(words)-1 {
					valueFlag = f
				}
				i++ // its value
			}
			continue
		}
		if child := findCommand(node, w); child != nil && positional == 0 {
			node = child
			continue
		}
		positional++
		args = append(args, w)
		if specFile == "" && (strings.HasSuffix(w, ".yaml") || strings.HasSuffix(w, ".yml")) && !strings.HasSuffix(w, ".test.yaml") {
			specFile = w
		}
	}
	if valueFlag != nil {
		if out, ok := values(valueFlag, cur, args); ok {
			return out
		}
		return flagValues(valueFlag, cur, specFile)
	}
	if name, value, ok := strings.Cut(cur, "="); ok && strings.HasPrefix(cur, "--") {
		if f := findFlag(node, name); f != nil {
			var out []string
			for _, v := range flagValues(f, value, specFile) {
				out = append(out, name+"="+v)
			}
			return out
		}
	}
	if strings.HasPrefix(cur, "-") {
		return flagNames(node, cur)
	}
	if positional == 0 && len(commandsOf(node)) > 0 {
		return Filter(commandsOf(node), cur)
	}
	if len(node.Positional) > 0 {
		p := node.Positional[min(positional, len(node.Positional)-1)]
		if p.Enum != "" {
			return Filter(strings.Split(p.Enum, ","), cur)
		}
		return paths(cur, pathKind(p.Name, p.Help))
	}
	return nil
}

func commandsOf(n *kong.Node) []string {
	var out []string
	for _, c := range n.Children {
		if c.Type == kong.CommandNode && !c.Hidden {
			out = append(out, c.Name)
		}
	}
	return out
}

func findCommand(n *kong.Node, name string) *kong.Node {
	for _, c := range n.Children {
		if c.Type == kong.CommandNode && (c.Name == name || contains(c.Aliases, name)) {
			return c
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// findFlag finds a flag of a command or of the commands above it.
func findFlag(n *kong.Node, word string) *kong.Flag {
	name, _, _ := strings.Cut(word, "=")
	for ; n != nil; n = n.Parent {
		for _, f := range n.Flags {
			if name == "--"+f.Name || (f.Short != 0 && name == "-"+string(f.Short)) {
				return f
			}
		}
	}
	return nil
}

func flagNames(n *kong.Node, cur string) []string {
	var out []string
	for ; n != nil; n = n.Parent {
		for _, f := range n.Flags {
			if f.Hidden {
				continue
			}
			out = append(out, "--"+f.Name)
			if f.Short != 0 && len(cur) <= 2 && !strings.HasPrefix(cur, "--") {
				out = append(out, "-"+string(f.Short))
			}
		}
	}
	sort.Strings(out)
	return Filter(out, cur)
}

// flagValues are the values a flag may take: the spec's input or var
// names for --input and --set, an enum's values, or paths.
func flagValues(f *kong.Flag, cur, specFile string) []string {
	switch f.Name {
	case "input", "set":
		if strings.Contains(cur, "=") {
			name, value, _ := strings.Cut(cur, "=")
			if f.Name == "input" && strings.HasPrefix(value, "@") {
				var out []string
				for _, p := range paths(value[1:], anyPath) {
					out = append(out, name+"=@"+p)
				}
				return out
			}
			return nil
		}
		return Filter(specNames(specFile, f.Name), cur)
	}
	if f.Enum != "" {
		return Filter(strings.Split(f.Enum, ","), cur)
	}
	return paths(cur, pathKind(f.PlaceHolder, f.Help))
}

// specNames are a spec's input (or var) names, each with its "=".
func specNames(path, flag string) []string {
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var s struct {
		Inputs yaml.Node `yaml:"inputs"`
		Vars   yaml.Node `yaml:"vars"`
	}
	if yaml.Unmarshal(data, &s) != nil {
		return nil
	}
	m := s.Inputs
	if flag == "set" {
		m = s.Vars
	}
	var out []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		out = append(out, m.Content[i].Value+"=")
	}
	return out
}

type pathKindT int

const (
	noPath pathKindT = iota
	anyPath
	specPath
	dirPath
)

// pathKind reads what a flag or argument takes from its placeholder or
// name and help: a spec file, a folder, any file, or no path.
func pathKind(name, help string) pathKindT {
	switch {
	case strings.Contains(name, "DIR") && !strings.Contains(name, "FILE"), name == "RUN":
		return dirPath
	case name == "FILE" && strings.Contains(strings.ToLower(help), "spec"), name == "PATH":
		return specPath
	case strings.Contains(name, "FILE") || strings.Contains(name, "JOURNAL"):
		return anyPath
	}
	return noPath
}

// paths lists the files and folders that complete cur: folders with a
// trailing slash, and files of the kind asked for.
func paths(cur string, kind pathKindT) []string {
	if kind == noPath {
		return nil
	}
	dir, prefix := filepath.Split(cur)
	read := dir
	if read == "" {
		read = "."
	}
	entries, err := os.ReadDir(read)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(prefix, ".")) {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			if info, err := os.Stat(filepath.Join(read, name)); err == nil {
				isDir = info.IsDir()
			}
		}
		switch {
		case isDir:
			out = append(out, dir+name+"/")
		case kind == dirPath:
		case kind == specPath && !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml"):
		default:
			out = append(out, dir+name)
		}
	}
	return out
}

// Filter is the items of list that start with prefix.
func Filter(list []string, prefix string) []string {
	var out []string
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}
