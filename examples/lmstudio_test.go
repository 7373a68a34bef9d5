package examples_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
)

// TestDesignDebateOnLMStudio runs examples/design-debate, as it is, with the
// real binary against a server with LM Studio's rules: it refuses
// response_format json_object with its own 400, takes json_schema, needs no
// key. Every call that wants JSON (clarify, evaluate, synthesize) goes out
// as json_schema with its node's schema, at once: no request is refused and
// the run says nothing about falling back.
func TestDesignDebateOnLMStudio(t *testing.T) {
	bin := runnerBinary(t)
	tmp := t.TempDir()
	path, err := filepath.Abs(filepath.Join("design-debate", "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := newScripted(loadVariant(t, path))
	srv := llmtest.NewProvider(t, llmtest.LMStudio(), s.handle)

	cmd := exec.Command(bin, "run", path, "--input", "problem=@"+filepath.Join("design-debate", "problem.md"),
		"--set", "max_rounds=2", "--runs-dir", filepath.Join(tmp, "runs"), "--no-cache", "-v")
	// LM Studio on localhost needs no key: none is in the environment.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "OPENAI_BASE_URL=" + srv.URL}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("design-debate on LM Studio: %v\n%s", err, stderr.String())
	}
	if strings.TrimSpace(stdout.String()) != "SOLUTION" {
		t.Errorf("stdout = %q, want the synthesized solution", stdout.String())
	}
	if strings.Contains(stderr.String(), "warning") {
		t.Errorf("the run warned:\n%s", stderr.String())
	}
	s.mu.Lock()
	calls := append([]scriptedCall(nil), s.calls...)
	s.mu.Unlock()
	jsonCalls := map[string]int{}
	for _, c := range calls {
		switch c.phase {
		case "clarify", "evaluate", "synthesize":
			jsonCalls[c.phase]++
			if c.req.ResponseFormat != "json_schema" || len(c.req.JSONSchema) == 0 {
				t.Errorf("%s call of %s asked with response_format %q", c.phase, c.agent, c.req.ResponseFormat)
			}
		default:
			if c.req.ResponseFormat != "" {
				t.Errorf("%s call asked for %q", c.phase, c.req.ResponseFormat)
			}
		}
	}
	if jsonCalls["clarify"] != 3 || jsonCalls["evaluate"] != 2 || jsonCalls["synthesize"] != 1 {
		t.Errorf("JSON calls %v, want 3 clarify, 2 evaluate, 1 synthesize", jsonCalls)
	}
	t.Logf("%d calls, %d requests, %d of them asking for JSON", len(calls), srv.Count(), jsonCalls["clarify"]+jsonCalls["evaluate"]+jsonCalls["synthesize"])
	if n := srv.Count(); n != len(calls) {
		t.Errorf("the server got %d requests for %d calls: some were refused", n, len(calls))
	}
	for _, c := range s.find("clarify", "") {
		if !c.req.Strict {
			t.Errorf("clarify's closed questions schema was not sent strict")
		}
	}
}
