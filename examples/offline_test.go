package examples_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/runtime/result"
)

// offlineEnv is the environment of a user with no key and no server: the
// variables that would point runner at a model are gone.
func offlineEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "OPENAI_") || strings.HasPrefix(name, "OTEL_") || name == "HOME" || name == "XDG_CACHE_HOME" || name == "RUNNER_CACHE_DIR" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home)
}

// shellWords splits a command line as sh would for the README's commands:
// words separated by spaces, single or double quotes around a word's part.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var (
		out   []string
		word  strings.Builder
		quote rune
		have  bool
	)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '"' || r == '\'':
			quote, have = r, true
		case r == ' ' || r == '\t':
			if have {
				out = append(out, word.String())
				word.Reset()
				have = false
			}
		default:
			word.WriteRune(r)
			have = true
		}
	}
	if quote != 0 {
		t.Fatalf("unclosed quote in %q", line)
	}
	if have {
		out = append(out, word.String())
	}
	return out
}

// quickStart is the README's quick start: the first `runner run` line of
// the first sh block of its Quick start section.
func quickStart(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Quick start\n")
	if !ok {
		t.Fatal("README.md has no Quick start section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal("README.md's Quick start has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, "runner run ") {
			return shellWords(t, line)[1:]
		}
	}
	t.Fatalf("README.md's first quick start block has no `runner run` line:\n%s", block)
	return nil
}

// runOffline runs the binary in a fresh folder beside a link to the
// examples, as a user on a fresh clone would, and returns the exit code,
// stdout, stderr and the one run directory it left.
func runOffline(t *testing.T, args ...string) (int, string, string, string) {
	t.Helper()
	dir := t.TempDir()
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(here, filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	return runIn(t, dir, args...)
}

// runIn runs the binary in dir (see runOffline).
func runIn(t *testing.T, dir string, args ...string) (int, string, string, string) {
	t.Helper()
	bin := runnerBinary(t)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = offlineEnv(t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "result.json"))
	run := ""
	if len(runs) == 1 {
		run = filepath.Dir(runs[0])
	}
	return code, stdout.String(), stderr.String(), run
}

// readResult reads a run's result.json and run.json.
func readResult(t *testing.T, run string) (map[string]any, result.Manifest) {
	t.Helper()
	var res map[string]any
	data, err := os.ReadFile(filepath.Join(run, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	var m result.Manifest
	data, err = os.ReadFile(filepath.Join(run, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return res, m
}

// TestOfflineQuickStart runs exactly the README's quick start command,
// with no key and no server: it prints the run's output, leaves a run
// directory whose result is completed, unpriced and marked simulated.
func TestOfflineQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	args := quickStart(t)
	if !strings.Contains(strings.Join(args, " "), "--offline") {
		t.Fatalf("the README's quick start %q does not run offline", args)
	}
	code, stdout, stderr, run := runOffline(t, args...)
	if code != 0 {
		t.Fatalf("runner %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	if strings.TrimSpace(stdout) == "" || !strings.Contains(stdout, "[simulated]") {
		t.Errorf("stdout %q: want the run's first output, a simulated reply", stdout)
	}
	if run == "" {
		t.Fatalf("no run directory under runs/; stderr:\n%s", stderr)
	}
	if !strings.Contains(stderr, filepath.Base(run)) || !strings.Contains(stderr, "simulated run") {
		t.Errorf("stderr does not name the run directory %s and say it is simulated:\n%s", filepath.Base(run), stderr)
	}
	res, m := readResult(t, run)
	if res["status"] != "completed" {
		t.Errorf("status %v, want completed", res["status"])
	}
	if outs, _ := res["outputs"].(map[string]any); len(outs) == 0 {
		t.Errorf("result.json has no outputs: %v", res["outputs"])
	}
	total, _ := res["usage"].(map[string]any)["total"].(map[string]any)
	if total["priced"] != false || total["cost"] != nil && total["cost"] != 0.0 {
		t.Errorf("usage total %v: want unpriced, no cost", total)
	}
	for name, mi := range m.Models {
		if !mi.Simulated || mi.Kind != "offline" || mi.Price != nil {
			t.Errorf("run.json model %s: %+v; want kind offline, simulated, no price", name, mi)
		}
	}
}

// TestEveryExampleRunsOffline runs every example's spec with --offline
// through the binary, each required input given a text: each ends
// completed (exit 0) or inconclusive (exit 8), and every model it used is
// the simulated one.
func TestEveryExampleRunsOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	for _, name := range examples(t) {
		t.Run(name, func(t *testing.T) {
			plan := load(t, name)
			args := []string{"run", "examples/" + name + "/spec.yaml", "--offline", "-q"}
			for _, in := range plan.Inputs {
				if in.Required && !in.HasDefault {
					args = append(args, "-i", in.Name+"=an offline test of "+in.Name)
				}
			}
			code, _, stderr, run := runOffline(t, args...)
			if run == "" {
				t.Fatalf("exit %d and no run directory:\n%s", code, stderr)
			}
			res, m := readResult(t, run)
			for i := 0; i < 6 && res["status"] == "waiting"; i++ {
				// A clarify node asked: resume with its questions left
				// unanswered ("not applicable"), from the journal.
				answers := filepath.Join(run, "questions.yaml")
				code, _, stderr, _ = runIn(t, filepath.Dir(filepath.Dir(run)), "resume", run, "--answers", answers, "-q")
				res, m = readResult(t, run)
			}
			for model, mi := range m.Models {
				if !mi.Simulated {
					t.Errorf("model %s of the run is not the offline model: %+v", model, mi)
				}
			}
			switch res["status"] {
			case "completed", "inconclusive":
				if want := map[any]int{"completed": 0, "inconclusive": 8}[res["status"]]; code != want {
					t.Errorf("status %v but exit %d, want %d:\n%s", res["status"], code, want, stderr)
				}
			default:
				t.Errorf("status %v (exit %d), want completed or inconclusive:\n%s", res["status"], code, stderr)
			}
		})
	}
}

// journalSources counts a run's journaled replies by where they came from
// ("" for the endpoint itself).
func journalSources(t *testing.T, run string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(run, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Source string `json:"source"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("journal line %q: %v", line, err)
		}
		if ev.Type == "model_response" {
			out[ev.Data.Source]++
		}
	}
	return out
}

// runDirs lists the run directories under dir/runs, oldest first.
func runDirs(t *testing.T, dir string) []string {
	t.Helper()
	runs, err := filepath.Glob(filepath.Join(dir, "runs", "*", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		runs[i] = filepath.Dir(runs[i])
	}
	return runs
}

// TestOfflineIsAProviderLikeAnyOther drives the offline model through the
// binary as any endpoint is driven: its replies are journaled, the same
// run again gets the same outputs from the response cache, a replay of
// the run serves every call from the recording, a budget stops it (exit
// 6) and resume finishes it from its journal without asking again what
// was answered (each call asked once in all).
func TestOfflineIsAProviderLikeAnyOther(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	dir := t.TempDir()
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(here, filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	base := []string{"run", "examples/reasoning-debate/spec.yaml", "--offline", "-q", "-i", "question=What is 12+7*3?", "--cache-dir", cache}

	code, first, stderr, _ := runIn(t, dir, base...)
	if code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	runs := runDirs(t, dir)
	a := runs[0]
	if src := journalSources(t, a); src[""] == 0 || len(src) != 1 {
		t.Errorf("first run's replies by source %v, want all from the offline model", src)
	}
	resA, _ := readResult(t, a)

	code, second, stderr, _ := runIn(t, dir, base...)
	if code != 0 || second != first {
		t.Fatalf("second run: exit %d, output %q, want %q\n%s", code, second, first, stderr)
	}
	b := runDirs(t, dir)[1]
	if src := journalSources(t, b); src["cache"] == 0 || len(src) != 1 {
		t.Errorf("second run's replies by source %v, want all from the cache", src)
	}

	code, replayed, stderr, _ := runIn(t, dir, "run", "examples/reasoning-debate/spec.yaml", "-q", "--replay", a)
	if code != 0 || replayed != first {
		t.Fatalf("replay: exit %d, output %q, want %q\n%s", code, replayed, first, stderr)
	}
	c := runDirs(t, dir)[2]
	if src := journalSources(t, c); src["replay"] == 0 || len(src) != 1 {
		t.Errorf("replay's replies by source %v, want all replayed", src)
	}

	code, _, stderr, _ = runIn(t, dir, append(base, "--no-cache", "--budget", "calls=2")...)
	if code != 6 {
		t.Fatalf("run with a budget of 2 calls: exit %d, want 6\n%s", code, stderr)
	}
	d := runDirs(t, dir)[3]
	if res, _ := readResult(t, d); res["status"] != "budget_exceeded" {
		t.Errorf("budget run's status %v", res["status"])
	}
	stopped := journalSources(t, d)[""]
	code, resumed, stderr, _ := runIn(t, dir, "resume", d, "-q", "--budget", "calls=100")
	if code != 0 || resumed != first {
		t.Fatalf("resume: exit %d, output %q, want %q\n%s", code, resumed, first, stderr)
	}
	resD, _ := readResult(t, d)
	if resD["status"] != "completed" || fmt.Sprint(resD["outputs"]) != fmt.Sprint(resA["outputs"]) {
		t.Errorf("resumed run: status %v, outputs %v; want completed with the first run's %v", resD["status"], resD["outputs"], resA["outputs"])
	}
	// Each call is asked once: the replies journaled before the stop
	// serve the resumed run, and only the rest are asked.
	if src, want := journalSources(t, d), journalSources(t, a)[""]; stopped != 2 || src[""] != want || len(src) != 1 {
		t.Errorf("resumed run's replies by source %v (%d before the stop): want %d, each asked once", src, stopped, want)
	}
}
