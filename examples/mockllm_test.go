package examples_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/runtest"
)

// mockLLMConfig makes @dwmkerr/mock-llm answer every chat completion with
// a worked answer in the form reasoning-debate parses. mock-llm sends no
// token usage, streaming or not.
const mockLLMConfig = `streaming:
  chunkSize: 10
  chunkIntervalMs: 1
rules:
  - path: "/v1/chat/completions"
    match: "@"
    response:
      status: 200
      content: |
        {"id": "chatcmpl-{{timestamp}}", "object": "chat.completion", "model": "{{jmes request body.model}}",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "12+7*3 = 12+21 = 33. \\boxed{33}"}, "finish_reason": "stop"}]}
`

// startMockLLM starts the mock-llm server RUNNER_MOCK_LLM names (its
// command) on a free loopback port and returns its base URL. Without it the
// test is skipped, unless RUNNER_REQUIRE_MOCK_LLM is set (.ci/run sets it):
// then it fails.
func startMockLLM(t *testing.T) string {
	t.Helper()
	command := os.Getenv("RUNNER_MOCK_LLM")
	if command == "" {
		if os.Getenv("RUNNER_REQUIRE_MOCK_LLM") != "" {
			t.Fatal("RUNNER_REQUIRE_MOCK_LLM is set but RUNNER_MOCK_LLM names no mock-llm command (.ci/run installs it from npm)")
		}
		t.Skip("RUNNER_MOCK_LLM is not set: install @dwmkerr/mock-llm and point it at its mock-llm command (.ci/run does)")
	}
	if _, err := os.Stat(command); err != nil {
		t.Fatalf("RUNNER_MOCK_LLM: %v", err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mock-llm.yaml")
	if err := os.WriteFile(cfg, []byte(mockLLMConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	// The port is picked free and then handed to mock-llm, so another
	// process may take it in between: a server that ends before it answers
	// is started again on a new port, up to four times.
	var last string
	for attempt := 0; attempt < 4; attempt++ {
		root, out, ok := tryMockLLM(t, command, dir, cfg)
		if ok {
			return root + "/v1"
		}
		last = out
	}
	t.Fatalf("mock-llm did not come up: %s", last)
	return ""
}

// tryMockLLM makes one try at starting mock-llm on a free port. It gives
// the server's root and true once /health answers 200; else what went wrong
// and false, the server stopped.
func tryMockLLM(t *testing.T, command, dir, cfg string) (string, string, bool) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(command, "--config", cfg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOST=127.0.0.1", fmt.Sprintf("PORT=%d", port))
	log := &runtest.Output{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting mock-llm: %v", err)
	}
	ended := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(ended)
	}()
	stop := func() {
		_ = cmd.Process.Kill()
		<-ended
	}
	root := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(root + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Cleanup(stop)
				return root, "", true
			}
		}
		select {
		case <-ended:
			return root, fmt.Sprintf("it ended before answering on %s: %v\n%s", root, err, log.String()), false
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return root, fmt.Sprintf("no answer on %s within 30s: %v\n%s", root, err, log.String()), false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReasoningDebateOnMockLLM runs examples/reasoning-debate with the real
// binary against @dwmkerr/mock-llm, a third-party OpenAI-compatible mock
// server, plain and streaming. mock-llm reports no usage: the runs complete
// with the majority answer, their tokens counted with the tokenizer and
// marked as estimated.
func TestReasoningDebateOnMockLLM(t *testing.T) {
	base := startMockLLM(t)
	bin := runnerBinary(t)
	example, err := os.ReadFile(filepath.Join("reasoning-debate", "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			dir := t.TempDir()
			spec := filepath.Join(dir, "spec.yaml")
			text := string(example) + fmt.Sprintf("\nmodels:\n  default: {model: gpt-4o-mini, stream: %v}\n", stream)
			if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			runs := filepath.Join(dir, "runs")
			cmd := exec.Command(bin, "run", spec, "-i", "question=What is 12+7*3?", "--runs-dir", runs, "--no-cache", "-v")
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "OPENAI_BASE_URL=" + base}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			if strings.TrimSpace(stdout.String()) != "33" {
				t.Errorf("stdout = %q, want 33", stdout.String())
			}
			m := runLine.FindStringSubmatch(stderr.String())
			if m == nil {
				t.Fatalf("no run directory in\n%s", stderr.String())
			}
			var res struct {
				Status string
				Usage  struct {
					Total struct {
						Calls          int `json:"calls"`
						PromptTokens   int `json:"prompt_tokens"`
						EstimatedCalls int `json:"estimated_calls"`
					} `json:"total"`
				} `json:"usage"`
				Warnings []string `json:"warnings"`
			}
			data, err := os.ReadFile(filepath.Join(m[1], "result.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &res); err != nil {
				t.Fatal(err)
			}
			u := res.Usage.Total
			if res.Status != "completed" || u.Calls != 6 || u.EstimatedCalls != 6 || u.PromptTokens == 0 {
				t.Errorf("status %s, usage %+v; want 6 calls, all estimated", res.Status, u)
			}
			if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "sent no token usage") {
				t.Errorf("warnings %q", res.Warnings)
			}
		})
	}
}
