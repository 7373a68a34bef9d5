package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
)

// The tests in this file are docs/providers.md's compatibility table: one per
// provider row, each driving the real binary against a local server that
// answers with that provider's rules and error texts (internal/llmtest's
// presets), with the settings the row says the provider needs.

// bin is the command the package's tests run; TestMain removes it.
var bin runtest.Binary

// runnerBinary builds the command once for the package's tests.
func runnerBinary(t *testing.T) string {
	t.Helper()
	return bin.Path(t, ".")
}

// removeBinary deletes what runnerBinary built.
func removeBinary() { bin.Remove() }

// compatSpec is a small debate that uses both kinds of reply: two agents
// answer in a regex format, then a judge answers JSON with a schema.
// ENDPOINTS and MODELS are replaced per provider.
const compatSpec = `version: 1
name: compat
inputs:
  question: {default: "What is 3+4?"}
ENDPOINTS
MODELS
agents:
  a: {name: Alice}
  b: {name: Bob AGENTB}
templates:
  define:
    t/answer: "ANSWER {{.Inputs.question}} Put the result in \\boxed{}."
    t/judge: "JUDGE How sure are you? Reply as JSON."
nodes:
  answer: {kind: ask, agents: [a, b], template: t/answer, record: answer, output: {format: regex, pattern: '\\boxed\{([^}]*)\}'}}
  judge:
    kind: ask
    agents: [a]
    template: t/judge
    output:
      format: json
      schema: {type: object, required: [confidence], additionalProperties: false, properties: {confidence: {type: integer}}}
flow: [answer, judge]
outputs:
  answer: mode(map(latest("answer"), {.output}))
  confidence: nodes.judge.output.confidence
`

// compatReplies answers the compat spec's prompts.
func compatReplies(r llmtest.Request) llmtest.Reply {
	if strings.Contains(r.LastUser(), "JUDGE") {
		return llmtest.Reply{Content: `{"confidence": 80}`}
	}
	return llmtest.Reply{Content: "Three plus four. \\boxed{7}"}
}

// runBinary runs the binary with exactly env (plus PATH and the test's
// cache directory) and returns its exit code and output.
func runBinary(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(runnerBinary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "RUNNER_CACHE_DIR=" + os.Getenv("RUNNER_CACHE_DIR"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// compatRun writes the compat spec with its endpoints and models, runs it
// and returns the run directory, failing unless it completes with the
// expected outputs.
func compatRun(t *testing.T, endpoints, models, agentB string, env map[string]string, extraArgs ...string) (dir, stderr string) {
	t.Helper()
	src := strings.NewReplacer("ENDPOINTS", endpoints, "MODELS", models, " AGENTB", agentB).Replace(compatSpec)
	path := writeSpecFile(t, "spec.yaml", src)
	args := append([]string{"run", path, "--runs-dir", t.TempDir(), "--no-cache", "-v"}, extraArgs...)
	code, stdout, stderr := runBinary(t, env, args...)
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if strings.TrimSpace(stdout) != "7" {
		t.Errorf("stdout = %q, want the answer 7", stdout)
	}
	dir = runDirFrom(t, stderr)
	res := readResult(t, dir)
	if out, _ := res["outputs"].(map[string]any); out["confidence"] != 80.0 {
		t.Errorf("outputs = %v", res["outputs"])
	}
	return dir, stderr
}

// warningsOf returns result.json's warnings.
func warningsOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	ws, _ := readResult(t, dir)["warnings"].([]any)
	for _, w := range ws {
		out = append(out, w.(string))
	}
	return out
}

// judgeRequest returns the judge's request (the one asking for JSON).
func judgeRequest(t *testing.T, srv *llmtest.Server) llmtest.Request {
	t.Helper()
	for _, r := range srv.Requests() {
		if strings.Contains(r.LastUser(), "JUDGE") {
			return r
		}
	}
	t.Fatal("no judge request")
	return llmtest.Request{}
}

func TestCompatOpenAI(t *testing.T) {
	const key = "sk-compat-openai-0123456789"
	srv := llmtest.NewProvider(t, llmtest.OpenAI(key), compatReplies)
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": key}
	dir, _ := compatRun(t, "", "models:\n  default: {model: gpt-4o-mini, temperature: 0, max_tokens: 300}", "", env)
	if srv.Count() != 3 {
		t.Errorf("%d requests for 3 calls", srv.Count())
	}
	for _, r := range srv.Requests() {
		if r.Header.Get("Authorization") != "Bearer "+key || string(r.Fields["temperature"]) != "0" || string(r.Fields["max_tokens"]) != "300" {
			t.Errorf("request %d: Authorization %q, body %s", r.N, r.Header.Get("Authorization"), r.Body)
		}
	}
	if j := judgeRequest(t, srv); j.ResponseFormat != "json_schema" || !j.Strict || j.SchemaName != "judge" {
		t.Errorf("judge asked with %q strict %v name %q", j.ResponseFormat, j.Strict, j.SchemaName)
	}
	if w := warningsOf(t, dir); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
	assertNoSecret(t, dir, key)
}

func TestCompatOpenAIReasoning(t *testing.T) {
	const key = "sk-compat-openai-0123456789"
	srv := llmtest.NewProvider(t, llmtest.OpenAI(key), compatReplies)
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": key}
	// o3 takes no temperature: omit keeps the shared settings' one home.
	models := "models:\n  default: {model: gpt-4o, temperature: 0.3}\n  thinker: {model: o3-mini, temperature: 0.3, omit: [temperature], max_tokens: 2000, reasoning_effort: low}"
	dir, _ := compatRun(t, "", models, ", model: thinker", env)
	if srv.Count() != 3 {
		t.Errorf("%d requests for 3 calls: something was refused", srv.Count())
	}
	for _, r := range srv.Requests() {
		if r.Model != "o3-mini" {
			continue
		}
		if _, ok := r.Fields["temperature"]; ok || string(r.Fields["max_completion_tokens"]) != "2000" || string(r.Fields["reasoning_effort"]) != `"low"` {
			t.Errorf("o3-mini request: %s", r.Body)
		}
	}
	if w := warningsOf(t, dir); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
}

func TestCompatAzureClassic(t *testing.T) {
	const key = "azure-compat-key-0123456789"
	srv := llmtest.NewProvider(t, llmtest.AzureClassic(key, llmtest.Azure{
		Deployments: map[string]string{"prod-4o": "gpt-4o", "prod-reasoner": "o3"},
		Versions:    []string{"2024-10-21"},
	}), compatReplies)
	endpoints := "endpoints:\n  azure: {kind: azure, base_url: '" + srv.URL + "', api_version: 2024-10-21, api_key_env: AZURE_OPENAI_API_KEY}"
	models := "models:\n  default: {model: gpt-4o, endpoint: azure, deployment: prod-4o}\n  reasoner: {model: o3, endpoint: azure, deployment: prod-reasoner, max_tokens: 800}"
	dir, _ := compatRun(t, endpoints, models, ", model: reasoner", map[string]string{"AZURE_OPENAI_API_KEY": key})
	if srv.Count() != 3 {
		t.Errorf("%d requests for 3 calls", srv.Count())
	}
	for _, r := range srv.Requests() {
		if r.Header.Get("api-key") != key || r.Query.Get("api-version") != "2024-10-21" || !strings.HasPrefix(r.Path, "/openai/deployments/prod-") {
			t.Errorf("request %d to %s?%s with api-key %q", r.N, r.Path, r.Query.Encode(), r.Header.Get("api-key"))
		}
		if r.Path == "/openai/deployments/prod-reasoner/chat/completions" && string(r.Fields["max_completion_tokens"]) != "800" {
			t.Errorf("reasoner request: %s", r.Body)
		}
	}
	assertNoSecret(t, dir, key)
}

func TestCompatAzureV1(t *testing.T) {
	const key = "azure-compat-key-0123456789"
	srv := llmtest.NewProvider(t, llmtest.AzureV1(key, map[string]string{"chat": "gpt-4o", "team-reasoner": "o4-mini"}), compatReplies)
	endpoints := "endpoints:\n  azure: {base_url: '" + srv.URL + "', api_key_env: AZURE_OPENAI_API_KEY, api_key_header: api-key}"
	// A deployment of a reasoning model under a name of its own: the first
	// call learns that it wants max_completion_tokens.
	models := "models:\n  default: {model: chat, endpoint: azure}\n  reasoner: {model: team-reasoner, endpoint: azure, max_tokens: 800}"
	dir, _ := compatRun(t, endpoints, models, ", model: reasoner", map[string]string{"AZURE_OPENAI_API_KEY": key})
	if srv.Count() != 4 {
		t.Errorf("%d requests for 3 calls, want one more for the refused max_tokens", srv.Count())
	}
	w := warningsOf(t, dir)
	if len(w) != 1 || !strings.Contains(w[0], "max_completion_tokens") || !strings.Contains(w[0], `"azure"`) {
		t.Errorf("warnings: %q, want one naming the endpoint and the swap", w)
	}
	if !strings.HasSuffix(srv.Requests()[0].Path, "/openai/v1/chat/completions") {
		t.Errorf("path %s", srv.Requests()[0].Path)
	}
}

func TestCompatOpenRouter(t *testing.T) {
	const key = "sk-or-compat-0123456789"
	srv := llmtest.NewProvider(t, llmtest.OpenRouter(key, "anthropic/claude-3.5-sonnet"), compatReplies)
	endpoints := "endpoints:\n  openrouter:\n    base_url: '" + srv.URL + "'\n    api_key_env: OPENROUTER_API_KEY\n" +
		"    headers: {HTTP-Referer: 'https://example.test', X-Title: compat}\n    extra: {provider: {order: [anthropic], allow_fallbacks: false}}"
	models := "models:\n  default: {model: anthropic/claude-3.5-sonnet, endpoint: openrouter, stream: true}"
	compatRun(t, endpoints, models, "", map[string]string{"OPENROUTER_API_KEY": key})
	for _, r := range srv.Requests() {
		if string(r.Fields["provider"]) != `{"allow_fallbacks":false,"order":["anthropic"]}` && string(r.Fields["provider"]) != `{"order":["anthropic"],"allow_fallbacks":false}` {
			t.Errorf("provider = %s", r.Fields["provider"])
		}
		if r.Header.Get("X-Title") != "compat" || !r.Stream || !r.IncludeUsage {
			t.Errorf("request %d: X-Title %q stream %v usage %v", r.N, r.Header.Get("X-Title"), r.Stream, r.IncludeUsage)
		}
	}
}

func TestCompatOllama(t *testing.T) {
	srv := llmtest.NewProvider(t, llmtest.Ollama("llama3.2"), compatReplies)
	endpoints := "endpoints:\n  ollama: {base_url: '" + srv.URL + "', max_concurrency: 2}"
	models := "models:\n  default: {model: llama3.2, endpoint: ollama, temperature: 0.7}"
	dir, _ := compatRun(t, endpoints, models, "", nil)
	for _, r := range srv.Requests() {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("a key was sent to a local server: %q", r.Header.Get("Authorization"))
		}
	}
	if j := judgeRequest(t, srv); j.ResponseFormat != "json_schema" {
		t.Errorf("judge asked with %q", j.ResponseFormat)
	}

	// A model the server does not have: its own words, exit 3.
	src := strings.NewReplacer("ENDPOINTS", endpoints, "MODELS", "models:\n  default: {model: llama3.3, endpoint: ollama}", " AGENTB", "").Replace(compatSpec)
	code, _, stderr := runBinary(t, nil, "run", writeSpecFile(t, "spec.yaml", src), "--runs-dir", t.TempDir(), "--no-cache", "-q")
	if code != exitcode.Endpoint || !strings.Contains(stderr, `model \"llama3.3\" not found, try pulling it first`) && !strings.Contains(stderr, `model "llama3.3" not found, try pulling it first`) {
		t.Errorf("unknown model: exit %d\n%s", code, stderr)
	}
	_ = dir
}

func TestCompatVLLM(t *testing.T) {
	srv := llmtest.NewProvider(t, llmtest.VLLM("Qwen/Qwen2.5-7B-Instruct"), compatReplies)
	endpoints := "endpoints:\n  vllm: {base_url: '" + srv.URL + "'}"
	models := "models:\n  default: {model: Qwen/Qwen2.5-7B-Instruct, endpoint: vllm, extra: {top_k: 20, repetition_penalty: 1.05}}"
	compatRun(t, endpoints, models, "", nil)
	for _, r := range srv.Requests() {
		if string(r.Fields["top_k"]) != "20" || string(r.Fields["repetition_penalty"]) != "1.05" {
			t.Errorf("request %d: %s", r.N, r.Body)
		}
	}
	// The implicit default model is gpt-4o-mini, which vLLM does not serve.
	src := strings.NewReplacer("ENDPOINTS", "endpoints:\n  default: {base_url: '"+srv.URL+"'}", "MODELS", "", " AGENTB", "").Replace(compatSpec)
	code, _, stderr := runBinary(t, nil, "run", writeSpecFile(t, "spec.yaml", src), "--runs-dir", t.TempDir(), "--no-cache", "-q")
	if code != exitcode.Endpoint || !strings.Contains(stderr, "gpt-4o-mini` does not exist") {
		t.Errorf("unknown model: exit %d\n%s", code, stderr)
	}
}

func TestCompatLMStudio(t *testing.T) {
	srv := llmtest.NewProvider(t, llmtest.LMStudio(), compatReplies)
	endpoints := "endpoints:\n  lmstudio: {base_url: '" + srv.URL + "'}"
	models := "models:\n  default: {model: qwen2.5-7b-instruct, endpoint: lmstudio}"
	dir, _ := compatRun(t, endpoints, models, "", nil)
	if srv.Count() != 3 {
		t.Errorf("%d requests for 3 calls: the schema should have been taken at once", srv.Count())
	}
	if j := judgeRequest(t, srv); j.ResponseFormat != "json_schema" {
		t.Errorf("judge asked with %q", j.ResponseFormat)
	}
	if w := warningsOf(t, dir); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
}

func TestCompatLlamaCpp(t *testing.T) {
	srv := llmtest.NewProvider(t, llmtest.LlamaCpp(), compatReplies)
	// llama-server answers without /v1 too.
	endpoints := "endpoints:\n  local: {base_url: '" + srv.Root + "'}"
	models := "models:\n  default: {model: any-name, endpoint: local, max_tokens: 512}"
	compatRun(t, endpoints, models, "", nil)
	if r := srv.Requests()[0]; r.Path != "/chat/completions" {
		t.Errorf("path %s", r.Path)
	}
}

// TestCompatNoUsage: a server that reports no usage (mock-llm, some local
// servers, streams without stream_options) gets its tokens counted with the
// tokenizer, marked as estimated in result.json and the report, with one
// warning.
func TestCompatNoUsage(t *testing.T) {
	p := llmtest.LlamaCpp()
	p.NoUsage = true
	srv := llmtest.NewProvider(t, p, compatReplies)
	endpoints := "endpoints:\n  local: {base_url: '" + srv.URL + "'}"
	for _, stream := range []string{"false", "true"} {
		models := "models:\n  default: {model: local, endpoint: local, stream: " + stream + ", price: {prompt: 1, completion: 2}}"
		dir, _ := compatRun(t, endpoints, models, "", nil)
		usage, _ := readResult(t, dir)["usage"].(map[string]any)
		total, _ := usage["total"].(map[string]any)
		if total["estimated_calls"] != 3.0 || total["prompt_tokens"].(float64) < 10 || total["cost"] == nil {
			t.Errorf("stream %s: usage %v", stream, total)
		}
		w := warningsOf(t, dir)
		if len(w) != 1 || !strings.Contains(w[0], "sent no token usage") {
			t.Errorf("stream %s: warnings %q", stream, w)
		}
		report, err := os.ReadFile(filepath.Join(dir, "report.md"))
		if err != nil || !strings.Contains(string(report), "~ estimated") || !strings.Contains(string(report), "| ~") {
			t.Errorf("stream %s: the report does not mark estimates:\n%s", stream, report)
		}
	}
}

// TestTruncatedReply: a JSON reply cut off at max_tokens is reported as
// truncated, not as invalid JSON, and its repair asks for a shorter answer.
func TestTruncatedReply(t *testing.T) {
	p := llmtest.Ollama()
	p.TruncateAtLimit = true
	srv := llmtest.NewProvider(t, p, func(r llmtest.Request) llmtest.Reply {
		if !strings.Contains(r.Messages[0].Content, "JUDGE") {
			return compatReplies(r)
		}
		if strings.Contains(r.LastUser(), "cut off") {
			return llmtest.Reply{Content: `{"confidence": 80}`}
		}
		return llmtest.Reply{Content: `{"confidence": 80, "reasoning": "` + strings.Repeat("long ", 100) + `"}`}
	})
	endpoints := "endpoints:\n  local: {base_url: '" + srv.URL + "'}"
	dir, _ := compatRun(t, endpoints, "models:\n  default: {model: m, endpoint: local, max_tokens: 20}", "", nil)
	var repairs []string
	for _, ev := range e2eEvents(t, dir) {
		if ev.Type == "repair" {
			repairs = append(repairs, string(ev.Data))
		}
	}
	if len(repairs) != 1 || !strings.Contains(repairs[0], "truncated at the token limit") {
		t.Errorf("repairs: %q", repairs)
	}
	w := warningsOf(t, dir)
	if len(w) != 1 || !strings.Contains(w[0], "cut off at the token limit") || !strings.Contains(w[0], "max_tokens 20") {
		t.Errorf("warnings: %q", w)
	}
}

// TestMissingV1Hint: a base URL without /v1 gets the server's 404 and a
// hint, and exits 3 at once.
func TestMissingV1Hint(t *testing.T) {
	srv := llmtest.NewProvider(t, llmtest.Ollama(), compatReplies)
	src := strings.NewReplacer("ENDPOINTS", "endpoints:\n  ollama: {base_url: '"+srv.Root+"'}", "MODELS", "models:\n  default: {model: m, endpoint: ollama}", " AGENTB", "").Replace(compatSpec)
	code, _, stderr := runBinary(t, nil, "run", writeSpecFile(t, "spec.yaml", src), "--runs-dir", t.TempDir(), "-q")
	if code != exitcode.Endpoint || !strings.Contains(stderr, "404 page not found") || !strings.Contains(stderr, "try "+srv.Root+"/v1") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
	if srv.Count() > 2 {
		t.Errorf("%d requests for two calls: a 404 must not be retried", srv.Count())
	}
}

// TestEnvInHeadersAndURLs: ${NAME} in a base URL and header values comes
// from the environment; the run directory keeps the text as written and
// never the values of headers; a missing variable exits 2 naming it.
func TestEnvInHeadersAndURLs(t *testing.T) {
	const gwKey = "gw-secret-value-0123456789"
	p := llmtest.VLLM()
	srv := llmtest.NewProvider(t, p, func(r llmtest.Request) llmtest.Reply {
		if r.Header.Get("X-Gateway-Key") != gwKey {
			return llmtest.Reply{Status: 403, ErrorMessage: "bad gateway key " + r.Header.Get("X-Gateway-Key")}
		}
		if r.N == 1 {
			// Echo the secret in an error that is retried (and journaled).
			return llmtest.Reply{Status: 503, ErrorMessage: "gateway busy for key " + gwKey, RetryAfter: "0.01"}
		}
		return compatReplies(r)
	})
	endpoints := "endpoints:\n  gw: {base_url: '${GW_ROOT}/v1', headers: {X-Gateway-Key: '${GW_KEY}', X-Team: research}}"
	env := map[string]string{"GW_ROOT": srv.Root, "GW_KEY": gwKey}
	dir, stderr := compatRun(t, endpoints, "models:\n  default: {model: m, endpoint: gw}", "", env)
	assertNoSecret(t, dir, gwKey)
	if strings.Contains(stderr, gwKey) || !strings.Contains(stderr, "[REDACTED]") {
		t.Errorf("stderr shows the gateway key, or not its redaction:\n%s", stderr)
	}
	copySpec, _ := os.ReadFile(filepath.Join(dir, "spec.yaml"))
	if !strings.Contains(string(copySpec), "${GW_KEY}") {
		t.Errorf("the spec copy lost the ${GW_KEY} reference:\n%s", copySpec)
	}
	var m struct {
		Models map[string]struct {
			BaseURL string `json:"base_url"`
		} `json:"models"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "run.json"))
	if err := json.Unmarshal(data, &m); err != nil || m.Models["default"].BaseURL != "${GW_ROOT}/v1" {
		t.Errorf("run.json records base URL %q, want it as written", m.Models["default"].BaseURL)
	}

	src := strings.NewReplacer("ENDPOINTS", endpoints, "MODELS", "models:\n  default: {model: m, endpoint: gw}", " AGENTB", "").Replace(compatSpec)
	code, _, stderr := runBinary(t, map[string]string{"GW_ROOT": srv.Root}, "run", writeSpecFile(t, "spec.yaml", src), "--runs-dir", t.TempDir())
	if code != exitcode.Usage || !strings.Contains(stderr, "GW_KEY is not set") {
		t.Errorf("missing variable: exit %d\n%s", code, stderr)
	}
}

// TestJSONOutputIsPureJSON: with --json, a failing run's every stderr line
// is JSON, the error (with its exit code) included.
func TestJSONOutputIsPureJSON(t *testing.T) {
	srv := llmtest.NewProvider(t, llmtest.Ollama(), compatReplies)
	src := strings.NewReplacer("ENDPOINTS", "endpoints:\n  ollama: {base_url: '"+srv.Root+"'}", "MODELS", "models:\n  default: {model: m, endpoint: ollama}", " AGENTB", "").Replace(compatSpec)
	code, _, stderr := runBinary(t, nil, "run", writeSpecFile(t, "spec.yaml", src), "--runs-dir", t.TempDir(), "--json")
	if code != exitcode.Endpoint {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, l := range lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil || v["type"] == nil {
			t.Errorf("not a JSON line: %q", l)
		}
	}
	var last struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Type != "error" || last.Data["exit_code"] != 3.0 {
		t.Errorf("last line %q, want the error with exit_code 3", lines[len(lines)-1])
	}
}
