package callview_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/runtime/callview"
)

// A journal as a run writes it, prompts not logged: a call retried once
// whose reply the parser refused, its repair, a reply from the cache, a
// tool round, a replayed reply without a request, and a call that failed.
// The user's prompt is a message recorded before (m0), so its text is
// found by its digest.
const journalText = `{"seq":1,"time":"2026-11-20T10:00:00Z","type":"message","key":"m0","data":{"id":"m0","node":"given","from":"user","content":"hello"}}
{"seq":2,"time":"2026-11-20T10:00:01Z","type":"model_request","key":"judge/round=1/ann","data":{"agent":"ann","endpoint":"main","messages":[{"role":"system","chars":9,"digest":"aaaa"},{"role":"user","chars":5,"digest":"4ee1f2d3bfa1d9f6"}],"model":"gpt-x","model_name":"fast","node":"judge","params":{"temperature":0.2},"prompt_chars":14,"request_digest":"r1"}}
{"seq":3,"time":"2026-11-20T10:00:02Z","type":"retry","key":"judge/round=1/ann","data":{"attempt":1,"status":429,"error":"rate limited","wait_ms":1500}}
{"seq":4,"time":"2026-11-20T10:00:04Z","type":"model_response","key":"judge/round=1/ann","data":{"content":"not json","finish_reason":"stop","model":"gpt-x","prompt_tokens":1000,"completion_tokens":10,"cached_tokens":400,"latency_ms":900,"attempts":2}}
{"seq":5,"time":"2026-11-20T10:00:04Z","type":"repair","key":"judge/round=1/ann","data":{"error":"the reply is not valid JSON","attempt":1,"mode":"feedback"}}
{"seq":6,"time":"2026-11-20T10:00:05Z","type":"model_request","key":"judge/round=1/ann#repair1","data":{"agent":"ann","endpoint":"main","messages":[{"role":"system","chars":9,"digest":"aaaa"},{"role":"user","chars":5,"digest":"4ee1f2d3bfa1d9f6"},{"role":"assistant","chars":8,"digest":"b8f7a0b2a3e4b3a6"}],"model":"gpt-x","model_name":"fast","node":"judge"}}
{"seq":7,"time":"2026-11-20T10:00:06Z","type":"model_response","key":"judge/round=1/ann#repair1","data":{"content":"{\"score\": 7}","prompt_tokens":1100,"completion_tokens":5,"latency_ms":300,"attempts":1,"source":"cache"}}
{"seq":8,"time":"2026-11-20T10:00:06Z","type":"output","key":"judge/round=1/ann#repair1","data":{"output":{"score":7}}}
{"seq":9,"time":"2026-11-20T10:00:07Z","type":"message","key":"m1","data":{"id":"m1","node":"judge","from":"ann","content":"","content_digest":"PLACEHOLDER"}}
{"seq":10,"time":"2026-11-20T10:00:08Z","type":"model_request","key":"ask/bob","data":{"agent":"bob","messages":[{"role":"user","chars":5,"digest":"4ee1f2d3bfa1d9f6"}],"model":"gpt-x","model_name":"fast","node":"ask","tools":["search_history"]}}
{"seq":11,"time":"2026-11-20T10:00:09Z","type":"model_response","key":"ask/bob","data":{"content":"","tool_calls":[{"id":"c1","name":"search_history","arguments":"{\"query\":\"x\"}"}],"prompt_tokens":10,"completion_tokens":3,"latency_ms":5,"attempts":1}}
{"seq":12,"time":"2026-11-20T10:00:09Z","type":"tool_call","key":"ask/bob","data":{"agent":"bob","tool":"search_history","arguments":"{\"query\":\"x\"}","result":"found it"}}
{"seq":13,"time":"2026-11-20T10:00:10Z","type":"model_request","key":"ask/bob/tool1","data":{"agent":"bob","messages":[{"role":"user","chars":5,"digest":"4ee1f2d3bfa1d9f6"},{"role":"assistant","chars":0,"digest":"e3b0c44298fc1c14","tool_calls":[{"id":"c1","name":"search_history","arguments":"{\"query\":\"x\"}"}]},{"role":"tool","chars":8,"digest":"TOOLDIGEST","name":"search_history","tool_call_id":"c1"}],"model":"gpt-x","model_name":"fast","node":"ask"}}
{"seq":14,"time":"2026-11-20T10:00:11Z","type":"model_response","key":"ask/bob/tool1","data":{"content":"The answer.","prompt_tokens":20,"completion_tokens":3,"latency_ms":5,"attempts":1}}
{"seq":15,"time":"2026-11-20T10:00:11Z","type":"output","key":"ask/bob","data":{"output_is_reply":true}}
{"seq":16,"time":"2026-11-20T10:00:12Z","type":"model_response","key":"old/round=2/cy","data":{"content":"from a recording","prompt_tokens":1,"completion_tokens":1,"latency_ms":1,"attempts":1,"source":"replay"}}
{"seq":17,"time":"2026-11-20T10:00:13Z","type":"model_request","key":"last/dee","data":{"agent":"dee","messages":[{"role":"user","chars":5,"digest":"4ee1f2d3bfa1d9f6"}],"model":"gpt-x","model_name":"fast","node":"last"}}
{"seq":18,"time":"2026-11-20T10:00:14Z","type":"model_request","key":"cut/eve","data":{"agent":"eve","messages":[],"node":"cut"}}
{"seq":19,"time":"2026-11-20T10:00:14Z","type":"model_error","key":"last/dee","data":{"error":"model call last/dee failed: 500"}}
{"seq":20,"time":"2026-11-20T10:00:15Z","type":"run_finished","data":{"status":"failed"}}
`

func writeRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	text := journalText
	// Digests are the first 8 bytes of SHA-256 of the text, in hex.
	text = strings.ReplaceAll(text, "PLACEHOLDER", digestOf(`{"score": 7}`))
	text = strings.ReplaceAll(text, "TOOLDIGEST", digestOf("found it"))
	text = strings.ReplaceAll(text, "4ee1f2d3bfa1d9f6", digestOf("hello"))
	text = strings.ReplaceAll(text, "b8f7a0b2a3e4b3a6", digestOf("not json"))
	manifest := `{"run_id":"r1","spec_name":"demo","models":{"fast":{"model":"gpt-x","price":{"prompt":1,"completion":2,"cached_prompt":0.5}}}}`
	if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "journal.jsonl"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRead(t *testing.T) {
	run, err := callview.Read(writeRun(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"judge/round=1/ann", "judge/round=1/ann#repair1", "ask/bob", "ask/bob/tool1", "old/round=2/cy", "last/dee", "cut/eve"}
	if got := strings.Join(run.Keys(), " "); got != strings.Join(want, " ") {
		t.Fatalf("keys %s, want %s", got, strings.Join(want, " "))
	}
	c, _ := run.Call("judge/round=1/ann")
	if !c.Requested || c.PromptsLogged || len(c.Messages) != 2 || c.Messages[1].Text != "hello" || c.Messages[1].TextFrom != "digest" || c.Messages[0].TextFrom != "" {
		t.Errorf("messages: %+v", c.Messages)
	}
	if c.Source != "network" || c.Attempts != 2 || len(c.Retries) != 1 || c.Retries[0].Status != 429 || c.Retries[0].WaitMS != 1500 {
		t.Errorf("source and retries: %s %d %+v", c.Source, c.Attempts, c.Retries)
	}
	// 600 prompt tokens at 1, 400 cached at 0.5, 10 completion at 2 (per million).
	if !c.Priced || c.Cost <= 0 || c.CachedTokens != 400 {
		t.Errorf("cost: %v %v cached %d", c.Priced, c.Cost, c.CachedTokens)
	}
	if len(c.Repairs) != 1 || c.Repairs[0].Next != "judge/round=1/ann#repair1" || !strings.Contains(c.Repairs[0].Error, "not valid JSON") || len(c.Output) != 0 {
		t.Errorf("repairs: %+v, output %s", c.Repairs, c.Output)
	}
	r, _ := run.Call("judge/round=1/ann#repair1")
	if r.RepairOf != c.Key || r.Source != "cache" || string(r.Output) != `{"score":7}` || r.Messages[2].Text != "not json" || strings.Join(r.Recorded, ",") != "m1" {
		t.Errorf("the repair: %+v", r)
	}
	b, _ := run.Call("ask/bob")
	if len(b.ToolCalls) != 1 || len(b.ToolRuns) != 1 || b.ToolRuns[0].Result != "found it" || strings.Join(b.Tools, ",") != "search_history" || len(b.Output) != 0 {
		t.Errorf("the tool call: %+v", b)
	}
	tr, _ := run.Call("ask/bob/tool1")
	if m := tr.Messages; len(m) != 3 || len(m[1].ToolCalls) != 1 || m[1].TextFrom != "journal" || m[2].Name != "search_history" || m[2].ToolCallID != "c1" || m[2].Text != "found it" {
		t.Errorf("the tool round's messages: %+v", m)
	}
	if string(tr.Output) != `"The answer."` {
		t.Errorf("the tool round's output: %s", tr.Output)
	}
	old, _ := run.Call("old/round=2/cy")
	if old.Requested || old.Source != "replay" || old.Agent != "cy" || old.Node != "old" || !old.Priced {
		t.Errorf("the replayed call: %+v", old)
	}
	last, _ := run.Call("last/dee")
	if last.Done || len(last.Errors) != 1 {
		t.Errorf("the failed call: %+v", last)
	}
	if s := run.Summaries()[5]; s.Source != "failed" {
		t.Errorf("the failed call's summary: %+v", s)
	}
	// A call the run ended without answering (another call failed).
	if s := run.Summaries()[6]; s.Source != "no reply" {
		t.Errorf("the unanswered call's summary: %+v", s)
	}
}

func TestFindAndWrite(t *testing.T) {
	run, err := callview.Read(writeRun(t))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := run.Find("2"); err != nil || c.Key != "judge/round=1/ann#repair1" {
		t.Errorf("Find(2): %v %v", c, err)
	}
	if c, err := run.Find("tool1"); err != nil || c.Key != "ask/bob/tool1" {
		t.Errorf("Find(tool1): %v %v", c, err)
	}
	if _, err := run.Find("ann"); err == nil || !strings.Contains(err.Error(), "did you mean one of: judge/round=1/ann, judge/round=1/ann#repair1") {
		t.Errorf("Find(ann): %v", err)
	}
	if _, err := run.Find("zzz"); err == nil || !strings.Contains(err.Error(), "has 7 calls") {
		t.Errorf("Find(zzz): %v", err)
	}
	var b bytes.Buffer
	c, _ := run.Call("judge/round=1/ann")
	if err := callview.Write(&b, c); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Call judge/round=1/ann", "gpt-x (fast) at endpoint main", "1000 prompt (400 cached), 10 completion", "Messages sent (2)",
		"text not journaled; digest aaaa. Run with --log-prompts", "  | hello", "Reply\n  | not json", "attempt 1 HTTP 429: rate limited (waited 1.50 s)",
		"repair 1: the reply is not valid JSON; asked again as judge/round=1/ann#repair1 (feedback)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the call's text lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := callview.WriteList(&b, run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "7 calls") || !strings.Contains(b.String(), "1 retry, 1 repair") || !strings.Contains(b.String(), "failed") {
		t.Errorf("the list:\n%s", b.String())
	}
	if _, err := callview.Read(t.TempDir()); !errors.Is(err, callview.ErrNoRun) {
		t.Errorf("a folder without run.json: %v", err)
	}
}
