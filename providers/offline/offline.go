// Package offline is the provider kind `offline`: a simulated model that
// runs inside runner, with no key, no server and no network. Its replies
// are made, not generated: deterministic for a request and a seed, and of
// the shape the node expects (its output format, JSON Schema, pattern or
// tags), so that every node's checks pass and a spec runs from start to
// end. It is a provider kind like any other (journal, replay, cache,
// budget and resume treat its calls as they treat any endpoint's); its
// calls are never priced, and runs that use it say they are simulated.
//
// Every spec can use it without declaring it (the built-in endpoint and
// model `offline`); `runner run --offline` puts it in place of every model.
package offline

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
)

//go:embed settings.json
var settings []byte

// Name is the kind's name, and that of its built-in endpoint and model.
const Name = "offline"

// Base is the base URL of its endpoints: a name that never leaves this
// machine, which its transport answers.
const Base = "http://offline.localhost/v1"

// Kind is the offline provider kind.
type Kind struct{ llm.ChatCompletions }

// Name implements spec.Provider.
func (Kind) Name() string { return Name }

// Description implements spec.Provider.
func (Kind) Description() string {
	return "a simulated model inside runner (no key, no network): deterministic replies of the shape each node expects, never priced."
}

// Settings implements spec.Provider: seed.
func (Kind) Settings() []byte { return settings }

// Doc implements spec.Provider.
func (Kind) Doc() spec.ProviderDoc {
	return spec.ProviderDoc{
		Speaks:    "nothing: replies are made inside runner, shaped by the node's output format and schema, and marked simulated",
		Settings:  "none needed (the built-in endpoint and model `offline`, or `runner run --offline`); optional `seed`",
		Test:      "`TestOfflineQuickStart`, `TestEveryExampleRunsOffline`",
		GenAIName: "runner.offline",
	}
}

// Builtin implements spec.Builtin: every spec may use it.
func (Kind) Builtin() bool { return true }

// Unpriced implements spec.Unpriced: its calls cost nothing.
func (Kind) Unpriced() bool { return true }

// Simulated marks the kind's replies as made, not generated.
func (Kind) Simulated() bool { return true }

// Check implements spec.Provider.
func (Kind) Check(e *spec.EndpointCheck) {
	if e.BaseURL.Set {
		e.Errorf(e.BaseURL.Pos, "kind offline takes no base_url: its model runs inside runner")
	}
	if s, ok := e.Settings["seed"]; ok {
		if _, err := strconv.ParseInt(s.V, 10, 64); err != nil {
			e.Errorf(s.Pos, "seed %q is not a whole number", s.V)
		}
	}
}

// Base implements llm.Protocol: always Base.
func (Kind) Base(string, map[string]string) (*url.URL, error) { return url.Parse(Base) }

// Local implements llm.Protocol: it runs here.
func (Kind) Local(string) bool { return true }

// Transport implements llm.Protocol: the simulated model.
func (Kind) Transport() http.RoundTripper { return model{} }

// model answers Chat Completions requests in-process.
type model struct{}

// request is what the model reads of a request.
type request struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
	Seed           *int64 `json:"seed"`
	Stream         bool   `json:"stream"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

// RoundTrip implements http.RoundTripper.
func (model) RoundTrip(hr *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(hr.Body)
	hr.Body.Close()
	if err != nil {
		return nil, err
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return respond(hr, http.StatusBadRequest, "application/json", fmt.Sprintf(`{"error":{"message":%q,"type":"invalid_request_error"}}`, "the offline model could not read the request: "+err.Error())), nil
	}
	seed := int64(0)
	if v := hr.URL.Query().Get("seed"); v != "" {
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	if req.Seed != nil {
		seed = *req.Seed
	}
	call := calls.CallFrom(hr.Context())
	content := Reply(call, &req, body, seed)
	prompt := 0
	for _, m := range req.Messages {
		prompt += tokens(fmt.Sprint(m.Content))
	}
	completion := tokens(content)
	if req.Stream {
		var b strings.Builder
		chunk := func(v any) {
			data, _ := json.Marshal(v)
			fmt.Fprintf(&b, "data: %s\n\n", data)
		}
		chunk(map[string]any{"model": Name, "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": content}}}})
		chunk(map[string]any{"model": Name, "choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
		chunk(map[string]any{"model": Name, "choices": []any{}, "usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}})
		b.WriteString("data: [DONE]\n\n")
		return respond(hr, http.StatusOK, "text/event-stream", b.String()), nil
	}
	out, _ := json.Marshal(map[string]any{
		"id": "offline", "object": "chat.completion", "created": 0, "model": Name,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
	})
	return respond(hr, http.StatusOK, "application/json", string(out)), nil
}

func respond(hr *http.Request, status int, contentType, body string) *http.Response {
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {contentType}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: hr,
	}
}

// tokens is the simulated model's count of a text's tokens: one per four
// bytes, at least one.
func tokens(s string) int { return max(1, (len(s)+3)/4) }

// Reply is the simulated model's reply to a request (body, as sent) for
// call (nil when the request came without one): text of a few sentences
// drawn from the request's digest and the seed, put in the shape the call
// expects, else the shape the request's response_format asks for.
func Reply(call *calls.Call, req *request, body []byte, seed int64) string {
	h := fnv.New64a()
	h.Write(body)
	var s [8]byte
	binary.LittleEndian.PutUint64(s[:], uint64(seed))
	h.Write(s[:])
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(seed)))
	shape := kit.Shape{}
	who := "the model"
	if call != nil {
		shape = call.Kit.Shape
		if call.Agent != "" {
			who = call.Agent
		}
	} else if rf := req.ResponseFormat; rf != nil && rf.Type != "text" {
		shape.Format = "json"
		if rf.JSONSchema != nil {
			shape.Schema = rf.JSONSchema.Schema
		}
	}
	text := prose(rng, who, call)
	if shape.Format == "" || shape.Format == "text" {
		return text
	}
	return calls.StandIn(shape, text)
}

// prose is a few sentences that say what they are.
func prose(rng *rand.Rand, who string, call *calls.Call) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "[simulated] %s", who)
	if call != nil && call.Node != "" {
		fmt.Fprintf(&b, " at %s", call.Node)
		if call.Round > 0 {
			fmt.Fprintf(&b, ", round %d", call.Round)
		}
	}
	b.WriteString(": ")
	n := 2 + rng.IntN(2)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(sentences[rng.IntN(len(sentences))])
	}
	return b.String()
}

// sentences are what the simulated model says: plain statements that a
// reader of a run takes for what they are.
var sentences = []string{
	"This reply was made offline, without a model.",
	"It has the shape the node asks for, so the run goes on as it would.",
	"A real model would weigh the question here.",
	"The argument is placeholder text, chosen from the request and the seed.",
	"Run the spec with a real endpoint to see what a model says.",
	"The same request always gets this same reply.",
	"Nothing here was priced or sent anywhere.",
}

// URL implements llm.Protocol: BASE/chat/completions, with the endpoint's
// seed.
func (k Kind) URL(base url.URL, s map[string]string, req *llm.Request) string {
	if seed := s["seed"]; seed != "" {
		base.RawQuery = url.Values{"seed": {seed}}.Encode()
	}
	return k.ChatCompletions.URL(base, s, req)
}
