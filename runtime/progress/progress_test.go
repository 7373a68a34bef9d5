package progress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/journal"
)

// TestPlainProgress: plain progress prints a line per node start, end,
// failure and retry, counting tokens from model responses; other events,
// however large, print nothing.
func TestPlainProgress(t *testing.T) {
	tests := []struct {
		name   string
		events []journal.Event
		want   string
	}{
		{
			name: "node with calls",
			events: []journal.Event{
				{Type: "node_started", Key: "answer/round=1", Data: json.RawMessage(`{"kind":"ask","node":"answer","scope":"round=1"}`)},
				{Type: "model_request", Key: "answer/round=1/a", Data: json.RawMessage(`{"messages":[{"role":"user","chars":3}],"node":"answer"}`)},
				{Type: "model_request", Key: "answer/round=1/b", Data: json.RawMessage(`{"node":"answer"}`)},
				{Type: "model_response", Key: "answer/round=1/a", Data: json.RawMessage(`{"content":"a\nb","prompt_tokens":100,"completion_tokens":50}`)},
				{Type: "model_response", Key: "answer/round=1/b", Data: json.RawMessage(`{"content":"c","prompt_tokens":7.9,"completion_tokens":"many"}`)},
				{Type: "message", Key: "m1", Data: json.RawMessage(`{"content":"a\nb","node":"answer"}`)},
				{Type: "node_finished", Key: "answer/round=1", Data: json.RawMessage(`{"calls":2,"messages":2,"node":"answer"}`)},
			},
			want: "[round=1] answer: started\n[round=1] answer: done (2 calls, 157 tokens so far)\n",
		},
		{
			name: "retry and failure outside loops",
			events: []journal.Event{
				{Type: "node_started", Key: "answer/-", Data: json.RawMessage(`{"kind":"ask","node":"answer","scope":"-"}`)},
				{Type: "retry", Key: "answer/-/a", Data: json.RawMessage(`{"attempt":1,"error":"status 503","status":503,"wait_ms":10}`)},
				{Type: "node_failed", Key: "answer/-", Data: json.RawMessage(`{"error":"gave up","node":"answer"}`)},
			},
			want: "· answer: started\nretrying answer/-/a in 10ms (attempt 1 failed): status 503\n· answer: failed: gave up\n",
		},
		{
			name: "a node stopped by Ctrl-C",
			events: []journal.Event{
				{Type: "node_started", Key: "answer/-", Data: json.RawMessage(`{"kind":"ask","node":"answer","scope":"-"}`)},
				{Type: "node_failed", Key: "answer/-", Data: json.RawMessage(`{"error":"context canceled","node":"answer"}`)},
			},
			want: "· answer: started\n· answer: stopped\n",
		},
		{
			name: "payloads that are not what they should be",
			events: []journal.Event{
				{Type: "node_started", Key: "x", Data: json.RawMessage(`{"node":7,"scope":"goal=g/round=2"}`)},
				{Type: "model_response", Key: "x/a", Data: json.RawMessage(`not json`)},
				{Type: "node_finished", Key: "x"},
			},
			want: "[goal=g round=2] x: started\n· x: done (0 calls, 0 tokens so far)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			observe := New(&out, Plain, Options{})
			for i := range tt.events {
				observe(runtime.Notice{Event: &tt.events[i]})
			}
			if out.String() != tt.want {
				t.Errorf("progress printed\n%q\nwant\n%q", out.String(), tt.want)
			}
		})
	}
}

func ev(typ, key, data string) runtime.Notice {
	return runtime.Notice{Event: &journal.Event{Type: event.Type(typ), Key: key, Data: json.RawMessage(data)}}
}

// TestPlainLabels: a watcher's end is named as the watcher and the node it
// ran in goes on under its own name; the first line after a resume (whose
// node start is not repeated) names its node; call counts include repairs
// and tool round trips and say so.
func TestPlainLabels(t *testing.T) {
	notices := []runtime.Notice{
		ev("node_started", "panel/goal=fit", `{"node":"panel","scope":"goal=fit"}`),
		ev("model_request", "panel/goal=fit/t1/priya", `{"node":"panel"}`),
		ev("model_request", "panel/goal=fit/t1/priya#repair1", `{"node":"panel"}`),
		ev("node_started", "moderation/goal=fit", `{"node":"moderation","scope":"goal=fit"}`),
		ev("model_request", "moderation/goal=fit/t1/mod", `{"node":"moderation"}`),
		ev("node_finished", "moderation/goal=fit", `{"node":"moderation","calls":1}`),
		ev("model_request", "panel/goal=fit/t2/tomas", `{"node":"panel"}`),
		ev("node_finished", "panel/goal=fit", `{"node":"panel","calls":2}`),
		// A resumed run: the node it stopped in finishes without a start.
		ev("run_resumed", "", `{}`),
		ev("model_request", "answer/round=2/a", `{"node":"answer"}`),
		ev("model_request", "answer/round=2/a/tool1", `{"node":"answer"}`),
		ev("model_request", "answer/round=2/a/tool2", `{"node":"answer"}`),
		ev("model_response", "answer/round=2/a/tool2", `{"prompt_tokens":10,"completion_tokens":5}`),
		ev("node_finished", "answer/round=2", `{"node":"answer","calls":1}`),
	}
	var out bytes.Buffer
	observe := New(&out, Plain, Options{})
	for _, n := range notices {
		observe(n)
	}
	want := "[goal=fit] panel: started\n" +
		"[goal=fit] moderation: started\n" +
		"[goal=fit] moderation: done (1 call, 0 tokens so far)\n" +
		"[goal=fit] panel: done (3 calls incl. 1 repair, 0 tokens so far)\n" +
		"[round=2] answer: done (3 calls incl. 2 tool round trips, 15 tokens so far)\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}

// screen replays what a terminal shows for text with carriage returns:
// the lines, each as it ends up, and whether any line grew past width.
func screen(text string, width int) (lines []string, wrapped bool) {
	var cur []rune
	col := 0
	for _, r := range text {
		switch r {
		case '\n':
			lines = append(lines, strings.TrimRight(string(cur), " "))
			cur, col = nil, 0
		case '\r':
			col = 0
		default:
			if col >= width {
				wrapped = true
			}
			if col < len(cur) {
				cur[col] = r
			} else {
				cur = append(cur, r)
			}
			col++
		}
	}
	if s := strings.TrimRight(string(cur), " "); s != "" {
		lines = append(lines, s)
	}
	return lines, wrapped
}

// TestLiveLineFitsTheTerminal: at 80 columns, with node and agent names
// too long for any line, the live line never reaches the last column, and
// after a run nothing of it is left on the screen: only the lines printed
// for good (a warning, a failure).
func TestLiveLineFitsTheTerminal(t *testing.T) {
	for _, width := range []int{80, 40, 12} {
		var out bytes.Buffer
		now := time.Unix(0, 0)
		observe := New(&out, Live, Options{Width: func() int { return width }, Now: func() time.Time { return now }})
		node := "synthesize_the_final_architecture_recommendation_for_the_board"
		agents := []string{"principal_security_architect_with_compliance_focus", "performance_engineering_lead", "kiss"}
		observe(ev("node_started", node+"/goal=a_rather_long_goal_name/round=3", `{"node":"`+node+`","scope":"goal=a_rather_long_goal_name/round=3"}`))
		for _, a := range agents {
			observe(runtime.Notice{Progress: &kit.ProgressEvent{Node: node, Agent: a, Started: true, Expected: 3}, Scope: "goal=a_rather_long_goal_name/round=3"})
		}
		observe(runtime.Notice{Message: "w: keep"})
		for _, a := range agents {
			observe(ev("model_response", node+"/x/"+a, `{"prompt_tokens":1200,"completion_tokens":300}`))
			observe(runtime.Notice{Progress: &kit.ProgressEvent{Node: node, Agent: a, Finished: true, Expected: 3}})
		}
		observe(ev("node_finished", node+"/goal=a_rather_long_goal_name/round=3", `{"node":"`+node+`"}`))
		observe(ev("run_finished", "", `{}`))
		if testing.Verbose() {
			t.Logf("width %d: %q", width, out.String())
		}
		lines, wrapped := screen(out.String(), width)
		if wrapped {
			t.Errorf("width %d: the live line wrapped:\n%q", width, out.String())
		}
		if len(lines) != 1 || lines[0] != "w: keep" {
			t.Errorf("width %d: the screen holds %q, want only the warning", width, lines)
		}
		if width >= 40 && (!strings.Contains(out.String(), "working") || !strings.Contains(out.String(), "3/3 calls")) {
			t.Errorf("width %d: the live line lost its counts: %q", width, out.String())
		}
	}
}

// TestJSONModeIsJSON: in JSON mode every line is a journal event; warnings
// and progress are not printed as text.
func TestJSONModeIsJSON(t *testing.T) {
	var out bytes.Buffer
	observe := New(&out, JSON, Options{})
	observe(ev("node_started", "a/-", `{"node":"a"}`))
	observe(runtime.Notice{Message: "warning: x"})
	observe(runtime.Notice{Progress: &kit.ProgressEvent{Node: "a", Agent: "b", Started: true}})
	observe(ev("warning", "", `{"message":"x"}`))
	Line(&out, "run_dir", map[string]string{"dir": "runs/x"})
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil || v["type"] == nil {
			t.Errorf("not a JSON line with a type: %q", line)
		}
	}
	if n := strings.Count(out.String(), "\n"); n != 3 {
		t.Errorf("printed %d lines, want 3:\n%s", n, out.String())
	}
}

// TestRetriesCollapse: an unreachable endpoint's many retries print the
// first retry of each call and one line when it ends (plain), or only a
// count on the live line and that one line (terminal), not a line each.
func TestRetriesCollapse(t *testing.T) {
	var notices []runtime.Notice
	notices = append(notices, ev("node_started", "answer/-", `{"node":"answer","scope":"-"}`))
	for _, agent := range []string{"a", "b"} {
		notices = append(notices, ev("model_request", "answer/-/"+agent, `{"node":"answer"}`))
	}
	for attempt := 1; attempt <= 6; attempt++ {
		for _, agent := range []string{"a", "b"} {
			notices = append(notices, ev("retry", "answer/-/"+agent, fmt.Sprintf(`{"attempt":%d,"error":"connection refused","wait_ms":500}`, attempt)))
		}
	}
	screensBeforeC := len(notices)
	for attempt := 1; attempt <= 2; attempt++ {
		notices = append(notices, ev("retry", "answer/-/c", fmt.Sprintf(`{"attempt":%d,"error":"timeout","wait_ms":500}`, attempt)))
	}
	notices = append(notices,
		ev("model_response", "answer/-/b", `{"content":"ok","prompt_tokens":1,"completion_tokens":1}`),
		ev("model_error", "answer/-/a", `{"error":"gave up"}`),
		ev("node_failed", "answer/-", `{"node":"answer","error":"endpoint unreachable"}`))

	var plain bytes.Buffer
	observe := New(&plain, Plain, Options{})
	for _, n := range notices {
		observe(n)
	}
	want := "· answer: started\n" +
		"retrying answer/-/a in 500ms (attempt 1 failed): connection refused\n" +
		"retrying answer/-/b in 500ms (attempt 1 failed): connection refused\n" +
		"retrying answer/-/c in 500ms (attempt 1 failed): timeout\n" +
		"answer/-/b: 6 retries, then it was answered (last error: connection refused)\n" +
		"answer/-/a: 6 retries, then it failed (last error: connection refused)\n" +
		"answer/-/c: 2 retries, then it was stopped (last error: timeout)\n" +
		"· answer: failed: endpoint unreachable\n"
	if plain.String() != want {
		t.Errorf("plain printed\n%s\nwant\n%s", plain.String(), want)
	}

	var live bytes.Buffer
	now := time.Unix(0, 0)
	observe = New(&live, Live, Options{Width: func() int { return 200 }, Now: func() time.Time { return now }})
	var screens []string
	for _, n := range notices {
		observe(n)
		screens = append(screens, live.String())
	}
	out := live.String()
	if strings.Count(out, "(attempt") != 0 {
		t.Errorf("live mode printed a line per retry:\n%q", out)
	}
	// After the second retry of a: one call retried; after the last
	// retries: both, counted together.
	if s := screens[3]; !strings.HasSuffix(lastDraw(s), "retrying answer/-/a (1 failed attempt): connection refused · 0 tokens · 0s") {
		t.Errorf("live line after a's first retry: %q", lastDraw(s))
	}
	if s := screens[screensBeforeC-1]; !strings.Contains(lastDraw(s), "retrying 2 calls (12 failed attempts): connection refused") {
		t.Errorf("live line after 12 retries: %q", lastDraw(s))
	}
	for _, w := range []string{
		"answer/-/b: 6 retries, then it was answered (last error: connection refused)\n",
		"answer/-/a: 6 retries, then it failed (last error: connection refused)\n",
		"answer/-/c: 2 retries, then it was stopped (last error: timeout)\n",
		"· answer: failed: endpoint unreachable\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("live output lacks %q:\n%q", w, out)
		}
	}
}

// lastDraw is the live line last drawn on a screen written with \r.
func lastDraw(s string) string {
	parts := strings.Split(s, "\r")
	for i := len(parts) - 1; i >= 0; i-- {
		if strings.TrimSpace(parts[i]) != "" {
			return parts[i]
		}
	}
	return ""
}
