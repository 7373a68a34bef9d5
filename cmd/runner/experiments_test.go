package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/dryrun"
	"github.com/debate-runner/runner/runtime/sweep"
)

const (
	debateSpec   = "../../examples/reasoning-debate/spec.yaml"
	baselineSpec = "../../examples/reasoning-debate/baseline.yaml"
	datasetFile  = "../../examples/reasoning-debate/dataset.jsonl"
)

var arithmetic = regexp.MustCompile(`What is the result of (\d+)\+(\d+)\*(\d+)\+(\d+)-(\d+)\*(\d+)\?`)

// solver is a model that computes a+b*c+d-e*f but drops the sign of a
// negative result, so it is right on the dataset's 6 positive problems and
// wrong on its 4 negative ones. Other questions get 19.
func solver(r llmtest.Request) llmtest.Reply {
	m := arithmetic.FindStringSubmatch(r.LastUser())
	if m == nil {
		return llmtest.Reply{Content: fmt.Sprintf("call %d: \\boxed{19}", r.N)}
	}
	n := make([]int, 6)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	v := n[0] + n[1]*n[2] + n[3] - n[4]*n[5]
	if v < 0 {
		v = -v
	}
	return llmtest.Reply{Content: fmt.Sprintf("Step by step... \\boxed{%d}", v)}
}

// live is an environment pointing the default endpoint at srv.
func live(srv *llmtest.Server, extra ...string) map[string]string {
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-experiments-test"}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

func mustRun(t *testing.T, env map[string]string, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := invoke(t, env, args...)
	if code != 0 {
		t.Fatalf("runner %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout, stderr
}

func TestDryRunFlag(t *testing.T) {
	srv := llmtest.New(t, solver)
	stdout, _ := mustRun(t, live(srv), "run", debateSpec, "-i", "question=What is 1,000+7*3?", "--dry-run")
	for _, want := range []string{
		"=== answer/round=1/a", "Question: What is 1,000+7*3?",
		"| answer | ask | 2 | 3 | 6 | 12 |", "Worst case: 6 calls", "with every repair and tool round: 12",
		"| gpt-4o-mini | default | o200k_base | 6 |", "Estimated cost: ", "built-in list prices of ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "=== answer/round=2/") {
		t.Error("the dry run printed a round-2 prompt, which depends on replies")
	}
	stdout, _ = mustRun(t, live(srv), "run", debateSpec, "--dry-run", "--json", "--set", "rounds=4")
	var rep dryrun.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	if rep.Calls != 12 || len(rep.Prompts) != 3 || rep.Models[0].PromptTokens <= 0 || !strings.Contains(strings.Join(rep.Notes, "\n"), "question not given") {
		t.Errorf("report = %+v", rep)
	}
	if srv.Count() != 0 {
		t.Errorf("the dry run sent %d requests", srv.Count())
	}
}

func TestReplayFlag(t *testing.T) {
	srv := llmtest.New(t, solver)
	runs := t.TempDir()
	q := "question=What is the result of 10+20*30+40-5*6?"
	out1, stderr := mustRun(t, live(srv), "run", debateSpec, "-i", q, "--runs-dir", runs, "-q")
	dir := runDirFrom(t, stderr)
	if srv.Count() != 6 {
		t.Fatalf("%d calls recorded, want 6", srv.Count())
	}
	recorded := readResult(t, dir)

	// No environment at all: no endpoint, no key; inputs come from run.json.
	out2, stderr := mustRun(t, map[string]string{}, "run", debateSpec, "--replay", dir, "--runs-dir", runs, "-q")
	if srv.Count() != 6 {
		t.Errorf("the replay sent %d requests", srv.Count()-6)
	}
	if out1 != out2 {
		t.Errorf("replay printed %q, the recording %q", out2, out1)
	}
	replayed := readResult(t, runDirFrom(t, stderr))
	for _, field := range []string{"outputs", "messages"} {
		a, _ := json.Marshal(recorded[field])
		b, _ := json.Marshal(replayed[field])
		if !bytes.Equal(a, b) {
			t.Errorf("replayed %s differ:\n%s\n%s", field, a, b)
		}
	}
	// The journal file works as well as the directory.
	if _, err := os.Stat(filepath.Join(dir, "journal.jsonl")); err != nil {
		t.Fatal(err)
	}
	mustRun(t, map[string]string{}, "run", debateSpec, "--replay", filepath.Join(dir, "journal.jsonl"), "--runs-dir", runs, "-q")

	code, _, stderr := invoke(t, map[string]string{}, "run", debateSpec, "--replay", dir, "--set", "rounds=3", "--runs-dir", runs, "-q")
	if code != exitcode.Failure || !regexp.MustCompile(`no response for call answer/round=3/[abc]`).MatchString(stderr) {
		t.Errorf("a call missing from the recording: exit %d\n%s", code, stderr)
	}
	_, stderr = mustRun(t, live(srv), "run", debateSpec, "--replay", dir, "--set", "rounds=3", "--replay-missing", "live", "--runs-dir", runs)
	if srv.Count() != 9 {
		t.Errorf("--replay-missing live sent %d requests, want 3", srv.Count()-6)
	}
	if !strings.Contains(stderr, "calls: 9 (3 sent, 6 replayed)") {
		t.Errorf("stderr does not count the calls:\n%s", stderr)
	}
}

func TestCacheFlagsAndCommand(t *testing.T) {
	srv := llmtest.New(t, solver)
	cacheDir, runs := t.TempDir(), t.TempDir()
	env := live(srv, "RUNNER_CACHE_DIR", cacheDir)
	args := []string{"run", debateSpec, "-i", "question=What is 12+7?", "--runs-dir", runs}
	out1, _ := mustRun(t, env, args...)
	if srv.Count() != 6 {
		t.Fatalf("first run: %d requests", srv.Count())
	}
	out2, stderr := mustRun(t, env, args...)
	if srv.Count() != 6 || out1 != out2 || !strings.Contains(stderr, "calls: 6 (0 sent, 6 from the cache)") {
		t.Errorf("second identical run: %d new requests, output %q vs %q\n%s", srv.Count()-6, out2, out1, stderr)
	}
	stdout, _ := mustRun(t, env, "cache", "stats")
	if !strings.Contains(stdout, "entries: 6") || !strings.Contains(stdout, "| test-model |") && !strings.Contains(stdout, "| gpt-4o-mini |") {
		t.Errorf("cache stats:\n%s", stdout)
	}
	mustRun(t, env, append(args, "--no-cache")...)
	if srv.Count() != 12 {
		t.Errorf("--no-cache sent %d requests, want 6", srv.Count()-6)
	}
	other := t.TempDir()
	mustRun(t, live(srv), append(args, "--cache-dir", other)...)
	if srv.Count() != 18 {
		t.Errorf("an empty --cache-dir sent %d requests, want 6", srv.Count()-12)
	}
	stdout, _ = mustRun(t, env, "cache", "clear")
	if !strings.Contains(stdout, "removed 6 cached responses") {
		t.Errorf("cache clear: %s", stdout)
	}
	stdout, _ = mustRun(t, map[string]string{}, "cache", "stats", "--json", "--cache-dir", cacheDir)
	var st struct{ Entries int }
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || st.Entries != 0 {
		t.Errorf("stats after clear: %s (%v)", stdout, err)
	}
	if code, _, stderr := invoke(t, map[string]string{"RUNNER_CACHE_DIR": ""}, "cache", "stats"); code != exitcode.Usage || !strings.Contains(stderr, "RUNNER_CACHE_DIR") {
		t.Errorf("stats with no cache location: exit %d, %s", code, stderr)
	}
}

func TestSweepRunsAndCompare(t *testing.T) {
	srv := llmtest.New(t, solver)
	cacheDir, runs := t.TempDir(), t.TempDir()
	env := live(srv, "RUNNER_CACHE_DIR", cacheDir)
	stdout, stderr := mustRun(t, env, "run", debateSpec, "-i", "question=What is 12+7?", "--runs-dir", runs, "--matrix", "rounds=1,2,3")
	if !strings.Contains(stdout, "calls made: 9; without the cache: 18") || srv.Count() != 9 {
		t.Fatalf("%d requests; stdout:\n%s", srv.Count(), stdout)
	}
	var sweepDir string
	for _, l := range strings.Split(stderr, "\n") {
		if s, ok := strings.CutPrefix(l, "sweep: "); ok && !strings.Contains(s, " runs in ") {
			sweepDir = s
		}
	}
	if sweepDir == "" || !strings.Contains(stderr, "[3/3] completed") {
		t.Fatalf("stderr:\n%s", stderr)
	}
	for _, f := range []string{"summary.json", "summary.md"} {
		if _, err := os.Stat(filepath.Join(sweepDir, f)); err != nil {
			t.Error(err)
		}
	}

	stdout, _ = mustRun(t, env, "runs", runs)
	if n := strings.Count(stdout, filepath.Base(sweepDir)+"/"); n != 3 || !strings.Contains(stdout, "| completed | 3 |  | 9 |") {
		t.Errorf("runs lists %d runs of the sweep:\n%s", n, stdout)
	}
	// Ids are printed whole, however long, so that they can be pasted.
	members, _ := filepath.Glob(filepath.Join(sweepDir, "*", "run.json"))
	if len(members) != 3 {
		t.Fatalf("%d runs in the sweep directory", len(members))
	}
	for _, m := range members {
		label := filepath.Base(sweepDir) + "/" + filepath.Base(filepath.Dir(m))
		if len(label) <= 60 {
			t.Fatalf("label %s is too short to test", label)
		}
		if !strings.Contains(stdout, "| "+label+" |") {
			t.Errorf("runs does not print the whole id %s:\n%s", label, stdout)
		}
	}
	cmp, _ := mustRun(t, env, "compare", sweepDir)
	for _, m := range members {
		if label := filepath.Base(sweepDir) + "/" + filepath.Base(filepath.Dir(m)); !strings.Contains(cmp, "| "+label+" |") {
			t.Errorf("compare does not print the whole id %s:\n%s", label, cmp)
		}
	}
	if !strings.Contains(cmp, "| "+filepath.Base(sweepDir)+" |") || strings.Contains(stdout+cmp, "…") {
		t.Errorf("compare shortens the sweep's id:\n%s", cmp)
	}

	stdout, _ = mustRun(t, env, "compare", sweepDir, "--csv")
	rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil || len(rows) != 4 {
		t.Fatalf("compare --csv: %v\n%s", err, stdout)
	}
	header := strings.Join(rows[0], ",")
	if !strings.Contains(header, "var rounds") || !strings.Contains(header, "answer") || strings.Contains(header, "input question") {
		t.Errorf("header = %s (vars that differ, outputs; not the input that is the same)", header)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for i, want := range []string{"3", "6", "9"} {
		if got := rows[i+1][col["calls"]]; got != want {
			t.Errorf("run %d: %s calls, want %s", i+1, got, want)
		}
	}
	var summary sweep.Summary
	data, _ := os.ReadFile(filepath.Join(sweepDir, "summary.json"))
	if err := json.Unmarshal(data, &summary); err != nil {
		t.Fatal(err)
	}
	stdout, _ = mustRun(t, env, "compare", summary.Runs[0].Dir, summary.Runs[2].Dir)
	if !strings.Contains(stdout, "| var rounds |") || !strings.Contains(stdout, "| 1 |") {
		t.Errorf("compare of two runs:\n%s", stdout)
	}
	if code, _, _ := invoke(t, env, "compare", t.TempDir()); code != exitcode.Usage {
		t.Errorf("compare of a folder that is no run: exit %d", code)
	}
}

func TestDatasetDebateAgainstBaseline(t *testing.T) {
	srv := llmtest.New(t, solver)
	cacheDir, runs := t.TempDir(), t.TempDir()
	env := live(srv, "RUNNER_CACHE_DIR", cacheDir)
	const want = "accuracy: 0.600 (95% CI 0.313–0.832, wilson, n=10)"
	stdout, stderr := mustRun(t, env, "run", debateSpec, "--dataset", datasetFile, "--runs-dir", runs, "-q")
	if !strings.Contains(stdout, want) || srv.Count() != 60 {
		t.Fatalf("debate: %d requests\n%s\n%s", srv.Count(), stdout, stderr)
	}
	debate := strings.TrimPrefix(strings.TrimSpace(stderr), "sweep: ")
	stdout, stderr = mustRun(t, env, "run", baselineSpec, "--dataset", datasetFile, "--runs-dir", runs, "-q")
	if !strings.Contains(stdout, want) {
		t.Fatalf("baseline:\n%s", stdout)
	}
	// The baseline asks what agent a asks in round 1: all from the cache.
	if srv.Count() != 60 || !strings.Contains(stdout, "calls made: 0; without the cache: 10") {
		t.Errorf("baseline sent %d requests:\n%s", srv.Count()-60, stdout)
	}
	baseline := strings.TrimPrefix(strings.TrimSpace(stderr), "sweep: ")
	stdout, _ = mustRun(t, env, "compare", debate, baseline)
	for _, w := range []string{"| reasoning-debate | 10 | 10 | 0.600 (n=10) | 0.313–0.832 (wilson) | 60 | 60 |", "| reasoning-baseline | 10 | 10 | 0.600 (n=10) | 0.313–0.832 (wilson) | 0 | 10 |", "| expected | score |"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("compare lacks %q:\n%s", w, stdout)
		}
	}
}

func TestExperimentUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--matrix", "rounds"}, "NAME=V1,V2"},
		{[]string{"--matrix", "bogus=1,2"}, `no var or input "bogus"`},
		{[]string{"--repeat", "0"}, "--repeat 0"},
		{[]string{"--dataset", "missing.jsonl"}, "--dataset: missing.jsonl: no such file or directory"},
		{[]string{"--dataset", "missing.csv"}, "--dataset: missing.csv: no such file or directory"},
		{[]string{"--replay", "missing-run"}, "--replay"},
		{[]string{"--dry-run", "--matrix", "rounds=1,2"}, "--dry-run"},
		{[]string{"--replay-missing", "maybe"}, "maybe"},
		{[]string{"--batch"}, "--batch sends the calls of a sweep's runs as provider batches; it needs --dataset"},
		{[]string{"--batch", "--repeat", "2", "--offline"}, `endpoint "offline" is of kind offline, which has no batch API`},
		{[]string{"--batch", "--repeat", "2", "--temporal", "127.0.0.1:1"}, "--batch: the temporal executor does not gather"},
		// A model axis that puts an endpoint without batches in the
		// default model's place, and the implicit endpoint moved to this
		// machine by OPENAI_BASE_URL.
		{[]string{"--batch", "--matrix", "model=gpt-4o,offline"}, `endpoint "offline" is of kind offline, which has no batch API`},
		{[]string{"--batch", "--repeat", "2", "--env", "OPENAI_BASE_URL=http://127.0.0.1:8080/v1"}, `endpoint "default" (OPENAI_BASE_URL=http://127.0.0.1:8080/v1) runs on this machine`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			env := map[string]string{"OPENAI_API_KEY": "k"}
			if i := slices.Index(tc.args, "--env"); i >= 0 {
				name, value, _ := strings.Cut(tc.args[i+1], "=")
				env[name] = value
				tc.args = slices.Delete(slices.Clone(tc.args), i, i+2)
			}
			args := append([]string{"run", debateSpec, "-i", "question=q", "--runs-dir", t.TempDir()}, tc.args...)
			code, _, stderr := invoke(t, env, args...)
			if code != exitcode.Usage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitcode.Usage, stderr)
			}
		})
	}
}

// TestReplayWithChangedPrompts: a recording replayed with prompts that
// differ (here another question; a newer runner or a changed template does
// the same) is served with a warning for each call naming the first message
// that differs, and result.json lists the calls in changed_prompts;
// --strict fails (exit 1) and names the call. The spec pinned to another
// version of its library whose prompts render the same replays silently.
func TestReplayWithChangedPrompts(t *testing.T) {
	srv := llmtest.New(t, solver)
	runs := t.TempDir()
	_, stderr := mustRun(t, live(srv), "run", debateSpec, "-i", "question=What is 2+3*4?", "--runs-dir", runs, "-q")
	dir := runDirFrom(t, stderr)
	other := "question=What is 2+3*5?"
	_, stderr = mustRun(t, map[string]string{}, "run", debateSpec, "--replay", dir, "-i", other, "--runs-dir", runs)
	if !regexp.MustCompile(`model call answer/round=1/a is served from the recording although its prompt differs from the recorded one from message \d+ \(user`).MatchString(stderr) {
		t.Errorf("no warning naming the call and its message:\n%s", stderr)
	}
	res := readResult(t, runDirFrom(t, stderr))
	if changed, _ := res["changed_prompts"].([]any); len(changed) != srv.Count() {
		t.Errorf("changed_prompts = %v, want all %d calls", res["changed_prompts"], srv.Count())
	}
	code, _, stderr := invoke(t, map[string]string{}, "run", debateSpec, "--replay", dir, "-i", other, "--strict", "--runs-dir", runs, "-q")
	if code != exitcode.Failure || !strings.Contains(stderr, "--strict serves a recorded reply only for the request it was recorded for") {
		t.Errorf("--strict: exit %d\n%s", code, stderr)
	}
	// reasoning@1 renders this debate's prompts as reasoning@2 does (its
	// change is in comments and empty cases): a strict replay passes.
	data, err := os.ReadFile(debateSpec)
	if err != nil || !bytes.Contains(data, []byte("use: [reasoning@2]")) {
		t.Fatalf("%s does not pin reasoning@2 (%v)", debateSpec, err)
	}
	older := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(older, bytes.Replace(data, []byte("use: [reasoning@2]"), []byte("use: [reasoning@1]"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr := mustRun(t, map[string]string{}, "run", older, "--replay", dir, "--strict", "--runs-dir", runs); strings.Contains(stderr, "differs") {
		t.Errorf("an unchanged replay warned:\n%s", stderr)
	}
	if code, _, stderr := invoke(t, map[string]string{}, "run", debateSpec, "--strict", "-i", "question=x", "--runs-dir", runs); code != exitcode.Usage || !strings.Contains(stderr, "--strict") {
		t.Errorf("--strict without --replay: exit %d\n%s", code, stderr)
	}
}
