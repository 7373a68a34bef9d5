package result

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec/value"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// TestSchemaIsPublished: schemas/result.schema.json is what Schema makes
// (run `go generate ./schemas` after changing the types), and a valid
// draft 2020-12 schema.
func TestSchemaIsPublished(t *testing.T) {
	made, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	published, err := os.ReadFile("../../schemas/result.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(made, published) {
		t.Fatal("schemas/result.schema.json differs from result.Schema(): run `go generate ./schemas`")
	}
	compile(t, made)
}

func compile(t *testing.T, schema []byte) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(SchemaID, bytes.NewReader(schema)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatalf("the result schema does not compile: %v", err)
	}
	return s
}

// sample is a result with every field set.
func sample() Result {
	score := 1.0
	return Result{
		RunID: "20261121T075339.896Z-x-a12900", Spec: "x", Status: StatusCompleted,
		Outputs: map[string]any{"answer": "33"}, OutputOrder: []string{"answer"},
		Messages: []value.Message{
			{ID: "m1", Node: "answer", From: "a", Record: "answer", Content: "  33\n", Output: "33"},
			{ID: "m2", Node: "judge", From: "j", Record: "rating", Content: `{"confidence": 80}`, Output: map[string]any{"confidence": 80.0}},
			{ID: "m3", Node: "panel", Goal: "g", Turn: 1, From: "b", To: "a", Whisper: true, Content: "psst", Verdict: "GOOD", Reasoning: "r", Withdrawn: true, Fields: map[string]string{"content": "psst"}},
			{ID: "m4", Node: "panel", Goal: "g", Turn: 1, From: "b", Private: true, Record: "private", Content: "thinking"},
		},
		GoalVerdicts: []value.GoalVerdicts{{Goal: "g", Node: "panel", Verdicts: []value.AgentVerdict{{Agent: "b", Verdict: "GOOD", Reasoning: "r", Withdrawn: true}}, Counts: map[string]int{"GOOD": 1}, Percent: map[string]float64{"GOOD": 100}}},
		Whispers:     []WhisperStat{{Goal: "g", From: "b", To: "a", Count: 1}},
		ToolCalls:    []ToolCallInfo{{Key: "k", Agent: "a", Tool: "read_file", Arguments: `{"path":"a"}`, Result: "text"}},
		Rejections:   []Rejection{{Key: "panel/goal=g/t1/b", Node: "panel", Goal: "g", Agent: "b", Attempt: 1, Reasons: "no", Content: "<Verdict>MAYBE</Verdict>"}},
		Usage: UsageReport{Total: Usage{Calls: 2, PromptTokens: 10, CompletionTokens: 5, LatencyMS: 7, Cost: 0.1, Priced: true},
			ByAgent: map[string]Usage{"a": {Calls: 1}}, ByNode: map[string]Usage{"answer": {Calls: 1}}, ByModel: map[string]Usage{"default": {Calls: 2}}},
		Expected: "33", Score: &score, Warnings: []string{"w"}, DurationMS: 1234,
	}
}

func TestMarshalValidatesAndStoresTextsOnce(t *testing.T) {
	schema := compile(t, must(Schema()))
	data, err := json.MarshalIndent(sample(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Fatalf("result.json does not match its schema: %v\n%s", err, data)
	}
	var raw struct {
		FormatVersion int              `json:"format_version"`
		Messages      []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.FormatVersion != FormatVersion {
		t.Errorf("format_version = %d, want %d", raw.FormatVersion, FormatVersion)
	}
	if _, ok := raw.Messages[0]["output"]; ok {
		t.Errorf("a text reply's output is stored beside its content: %v", raw.Messages[0])
	}
	if out, ok := raw.Messages[1]["output"].(map[string]any); !ok || out["confidence"] != 80.0 {
		t.Errorf("a parsed output was lost: %v", raw.Messages[1])
	}

	// The Go value reads back, with the text output left to the content.
	var back Result
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Messages[0].Output != nil || back.Messages[0].Content != "  33\n" || back.Rejections[0].Content != "<Verdict>MAYBE</Verdict>" {
		t.Errorf("read back: %+v", back.Messages[0])
	}
}

// TestEmptyResultValidates: a failed run's result has no null lists.
func TestEmptyResultValidates(t *testing.T) {
	schema := compile(t, must(Schema()))
	data, err := json.Marshal(Result{RunID: "r", Spec: "s", Status: StatusFailed, Error: "boom"})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("null")) {
		t.Errorf("null in %s", data)
	}
	var doc any
	_ = json.Unmarshal(data, &doc)
	if err := schema.Validate(doc); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	// The schema is strict: unknown fields and wrong statuses fail.
	for _, bad := range []string{
		strings.Replace(string(data), `"status":"failed"`, `"status":"running"`, 1),
		strings.Replace(string(data), `"spec":"s"`, `"spec":"s","extra":1`, 1),
		strings.Replace(string(data), `"format_version":2`, `"format_version":1`, 1),
	} {
		var doc any
		if err := json.Unmarshal([]byte(bad), &doc); err != nil {
			t.Fatal(err)
		}
		if schema.Validate(doc) == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
}

func TestWhisperStats(t *testing.T) {
	msgs := []value.Message{
		{Goal: "g", From: "a", To: "b", Whisper: true},
		{Goal: "g", From: "a", To: "b"},
		{Goal: "g", From: "a", To: "b", Whisper: true},
		{Goal: "h", From: "b", To: "a", Whisper: true},
	}
	got := WhisperStats(msgs)
	want := []WhisperStat{{Goal: "g", From: "a", To: "b", Count: 2}, {Goal: "h", From: "b", To: "a", Count: 1}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("WhisperStats = %+v, want %+v", got, want)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
