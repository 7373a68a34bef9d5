package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
)

func completionsOf(t *testing.T, words ...string) []string {
	t.Helper()
	code, stdout, stderr := invoke(t, nil, append([]string{completeCommand}, words...)...)
	if code != exitcode.OK {
		t.Fatalf("__complete %q: exit %d\n%s", words, code, stderr)
	}
	return strings.Fields(stdout)
}

func TestCompletions(t *testing.T) {
	for _, tc := range []struct {
		words      []string
		want, not  []string
		exactly    bool
		wantPrefix string
	}{
		{words: []string{""}, want: []string{"run", "test", "init", "validate", "completion"}, not: []string{completeCommand}},
		{words: []string{"r"}, want: []string{"run", "resume", "runs"}, exactly: true},
		{words: []string{"run", "--dr"}, want: []string{"--dry-run"}, exactly: true},
		{words: []string{"test", "-"}, want: []string{"--run", "--update", "--junit", "-v", "--help"}},
		{words: []string{"run", reasoningSpec, "-i", ""}, want: []string{"question="}, exactly: true},
		{words: []string{"run", reasoningSpec, "--input", "q"}, want: []string{"question="}, exactly: true},
		{words: []string{"run", reasoningSpec, "-s", ""}, want: []string{"rounds="}, exactly: true},
		{words: []string{"run", "-i", "x", reasoningSpec, "--set", "r"}, want: []string{"rounds="}, exactly: true},
		{words: []string{"graph", "--format", ""}, want: []string{"mermaid", "dot"}, exactly: true},
		{words: []string{"run", "x.yaml", "--replay-missing=l"}, want: []string{"--replay-missing=live"}, exactly: true},
		{words: []string{"completion", ""}, want: []string{"bash", "zsh", "fish"}, exactly: true},
		{words: []string{"init", "--from", "hir"}, want: []string{"hiring-panel"}, exactly: true},
		{words: []string{"test", reasoningSpec, "--run", "ma"}, want: []string{"majority_answer"}, exactly: true},
		{words: []string{"test", "../../examples/reasoning-debate/", "-run", "a_reply"}, want: []string{"a_reply_without_a_box_is_repaired", `a_reply_without_a_box_is_repaired_once,_then_the_run_is_inconclusive`}, exactly: true},
		{words: []string{"validate", "../../examples/reasoning-debate/"}, want: []string{"../../examples/reasoning-debate/spec.yaml", "../../examples/reasoning-debate/baseline.yaml", "../../examples/reasoning-debate/gen/"}, not: []string{"../../examples/reasoning-debate/dataset.jsonl", "../../examples/reasoning-debate/README.md"}},
		{words: []string{"run", reasoningSpec, "--dataset", "../../examples/reasoning-debate/da"}, want: []string{"../../examples/reasoning-debate/dataset.jsonl"}, exactly: true},
		{words: []string{"resume", "../../examples/"}, want: []string{"../../examples/hiring-panel/"}, not: []string{"../../examples/examples.go"}},
		{words: []string{"run", reasoningSpec, "-i", "question=@../../examples/hiring-panel/re"}, want: []string{"question=@../../examples/hiring-panel/resume.md"}, exactly: true},
	} {
		got := completionsOf(t, tc.words...)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q: %v lacks %q", tc.words, got, w)
			}
		}
		for _, w := range tc.not {
			if slices.Contains(got, w) {
				t.Errorf("%q: %v has %q", tc.words, got, w)
			}
		}
		if tc.exactly && len(got) != len(tc.want) {
			t.Errorf("%q: got %v, want only %v", tc.words, got, tc.want)
		}
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, stdout, _ := invoke(t, nil, "completion", shell)
		if code != exitcode.OK || !strings.Contains(stdout, "runner __complete") {
			t.Errorf("completion %s: exit %d\n%s", shell, code, stdout)
		}
	}
	if code, _, _ := invoke(t, nil, "completion", "tcsh"); code != exitcode.Usage {
		t.Errorf("completion tcsh: exit %d", code)
	}
}

// shellFor finds a shell for the completion tests: they skip without it,
// unless RUNNER_REQUIRE_SHELLS=1 (CI installs bash, zsh and fish).
func shellFor(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("RUNNER_REQUIRE_SHELLS") == "1" {
			t.Fatalf("%s is needed for its completion test (RUNNER_REQUIRE_SHELLS=1)", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return path
}

// runShell runs a shell script with the completion script in a file and
// the built runner first on the PATH.
func runShell(t *testing.T, shell, completion, script string) string {
	t.Helper()
	bin := runnerBinary(t)
	path := shellFor(t, shell)
	code, stdout, _ := invoke(t, nil, "completion", shell)
	if code != exitcode.OK {
		t.Fatal("no completion script")
	}
	file := filepath.Join(t.TempDir(), completion)
	if err := os.WriteFile(file, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "-c", strings.ReplaceAll(script, "SCRIPT", file))
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", shell, err, out)
	}
	return string(out)
}

func TestBashCompletion(t *testing.T) {
	out := runShell(t, "bash", "runner.bash", `source SCRIPT
complete -p runner
for line in "runner ru" "runner run `+reasoningSpec+` -i q" "runner run x.yaml --replay-missing=l"; do
    COMP_LINE="$line"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
    _runner
    printf '%s|' "${COMPREPLY[@]}"; echo
done`)
	for _, want := range []string{"complete -F _runner runner", "\nrun|runs|\n", "\nquestion=|\n", "\nlive|\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("bash completion lacks %q:\n%s", want, out)
		}
	}
}

func TestZshCompletion(t *testing.T) {
	// compadd is zsh's completion system's; stood in for, it shows what
	// the function offers and how.
	out := runShell(t, "zsh", "_runner", `compadd() { print -r -- "compadd $*" }
compdef() { print -r -- "compdef $*" }
source SCRIPT
words=(runner ru); CURRENT=2; _runner
words=(runner run `+reasoningSpec+` -i ""); CURRENT=5; _runner
words=(runner validate ../../examples/reasoning-debate/sp); CURRENT=3; _runner`)
	for _, want := range []string{"compdef _runner runner", "compadd -Q -- run runs\n", "compadd -Q -S  -- question=\n",
		"compadd -Q -S  -- ../../examples/reasoning-debate/spec.golden/\n", "compadd -Q -- ../../examples/reasoning-debate/spec.test.yaml ../../examples/reasoning-debate/spec.yaml\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("zsh completion lacks %q:\n%s", want, out)
		}
	}
}

func TestFishCompletion(t *testing.T) {
	out := runShell(t, "fish", "runner.fish", `source SCRIPT
complete -C"runner ru"
echo ---
complete -C"runner run `+reasoningSpec+` -i "
echo ---
complete -C"runner graph --format "`)
	parts := strings.Split(out, "---\n")
	if len(parts) != 3 {
		t.Fatalf("fish:\n%s", out)
	}
	for i, want := range [][]string{{"run", "runs"}, {"question="}, {"dot", "mermaid"}} {
		got := strings.Fields(parts[i])
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("fish completion %d: %v, want %v", i, got, want)
		}
	}
}

// TestZshCompletesInATerminal installs the zsh script as its help says
// (a file _runner in a folder of $fpath, then compinit) and presses Tab
// in a real interactive zsh, in tmux: what the line becomes is what a user
// sees. TestZshCompletion above checks what the function offers; this
// checks that zsh's completion system takes it.
func TestZshCompletesInATerminal(t *testing.T) {
	bin := runnerBinary(t)
	zsh := shellFor(t, "zsh")
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("RUNNER_REQUIRE_TMUX") != "" || os.Getenv("RUNNER_REQUIRE_SHELLS") == "1" {
			t.Fatal("tmux is needed to complete in a real zsh")
		}
		t.Skip("tmux is not installed")
	}
	home := t.TempDir()
	functions := filepath.Join(home, "functions")
	if err := os.MkdirAll(functions, 0o755); err != nil {
		t.Fatal(err)
	}
	code, script, _ := invoke(t, nil, "completion", "zsh")
	if code != exitcode.OK {
		t.Fatal("no zsh script")
	}
	rc := "fpath=(" + functions + " $fpath)\nautoload -Uz compinit\ncompinit -u -d " + filepath.Join(home, ".zcompdump") + "\nPS1='%% '\n"
	for name, text := range map[string]string{filepath.Join(functions, "_runner"): script, filepath.Join(home, ".zshrc"): rc} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tm := tmuxServer(t, tmux, "zsh")
	shell := fmt.Sprintf("env -i PATH=%s:/usr/bin:/bin HOME=%s ZDOTDIR=%s TERM=xterm %s -i", filepath.Dir(bin), home, home, zsh)
	tm("new-session", "-d", "-s", "z", "-x", "200", "-y", "20", "-c", wd, shell)
	screen := func() string { return tm("capture-pane", "-t", "z", "-p") }
	// Generous bounds: compinit scans every completion function, which
	// takes seconds on a busy machine.
	waitFor := func(want string, tries int) bool {
		for range tries {
			if strings.Contains(screen(), want) {
				return true
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false
	}
	if !waitFor("%", 600) {
		t.Fatalf("no zsh prompt:\n%s", screen())
	}
	// capture-pane drops the spaces that end a line, so a completion's
	// trailing space is not looked for.
	for _, tc := range []struct{ typed, want string }{
		{"runner valid", "% runner validate"},
		{"runner run " + reasoningSpec + " -i q", " -i question="},
		{"runner run " + reasoningSpec + " --set r", " --set rounds="},
		{"runner graph --format d", "--format dot"},
		{"runner test --ju", "runner test --junit"},
		{"runner validate ../../examples/hiring-panel/sp", "examples/hiring-panel/spec."},
	} {
		// The first keys can reach zsh before its line editor reads
		// them; a Tab that did nothing is pressed again on a clean line.
		ok := false
		for attempt := 0; attempt < 3 && !ok; attempt++ {
			tm("send-keys", "-t", "z", "C-u")
			tm("send-keys", "-t", "z", "C-l")
			tm("send-keys", "-t", "z", "-l", tc.typed)
			tm("send-keys", "-t", "z", "Tab")
			ok = waitFor(tc.want, 50)
		}
		if !ok {
			t.Errorf("zsh: %q then Tab does not give %q:\n%s", tc.typed, tc.want, screen())
		}
	}
}
