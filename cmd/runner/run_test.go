package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
)

// invoke runs the CLI in-process with the given environment.
func invoke(t *testing.T, envv map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(k string) string {
		if v, ok := envv[k]; ok {
			return v
		}
		if k == "RUNNER_CACHE_DIR" {
			return os.Getenv(k) // the test binary's temporary cache (TestMain)
		}
		return ""
	}}
	code = run(args, e)
	return code, out.String(), errb.String()
}

func readResult(t *testing.T, dir string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func runDirFrom(t *testing.T, stderr string) string {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "run: ") {
			return strings.TrimPrefix(l, "run: ")
		}
		var line struct {
			Type string `json:"type"`
			Data struct {
				Dir string `json:"dir"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(l), &line) == nil && line.Type == "run_dir" {
			return line.Data.Dir
		}
	}
	t.Fatalf("no run directory in stderr:\n%s", stderr)
	return ""
}

func TestRunReasoningDebate(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		// Agents answer 19, except agent B in round 1.
		if strings.Contains(r.LastUser(), "most recent answers") {
			return llmtest.Reply{Content: "Checked again. \\boxed{19}"}
		}
		if r.N == 2 {
			return llmtest.Reply{Content: "I think \\boxed{21}"}
		}
		return llmtest.Reply{Content: "12+7=19 so \\boxed{19}"}
	})
	runs := t.TempDir()
	if d := os.Getenv("RUNNER_TEST_KEEP"); d != "" {
		runs = d
	}
	code, stdout, stderr := invoke(t, map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test-secret-123"},
		"run", "../../examples/reasoning-debate/spec.yaml", "--input", "question=What is 12+7?", "--runs-dir", runs, "-q")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	if strings.TrimSpace(stdout) != "19" {
		t.Errorf("stdout = %q, want 19", stdout)
	}
	if srv.Count() != 6 {
		t.Errorf("calls = %d, want 6 (3 agents x 2 rounds)", srv.Count())
	}
	dir := runDirFrom(t, stderr)
	res := readResult(t, dir)
	if res["status"] != "completed" {
		t.Errorf("status = %v", res["status"])
	}
	msgs := res["messages"].([]any)
	if len(msgs) != 6 {
		t.Errorf("messages = %d, want 6", len(msgs))
	}
	for _, f := range []string{"journal.jsonl", "result.json", "report.md", "run.json", "spec.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if bytes.Contains(data, []byte("sk-test-secret-123")) {
			t.Errorf("%s contains the API key", f)
		}
	}
	fmt.Println(stderr)
}
