package view_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/callview"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/spectest"
	"github.com/debate-runner/runner/runtime/view"
)

// TestMessagesLinkTheirCalls: every message an agent's reply made names
// the call it came from (the page links to it), with the node, agent and
// addressee of the message, and /api/call serves that call.
func TestMessagesLinkTheirCalls(t *testing.T) {
	root, runs := keptExample(t, "design-debate", "a_confident_judge|is_repaired")
	ts := serve(t, root)
	for _, id := range runs {
		run, err := callview.Read(filepath.Join(root, filepath.FromSlash(id)))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(ts.URL + "/api/events?id=" + url.QueryEscape(id))
		if err != nil {
			t.Fatal(err)
		}
		linked := 0
		readEvents(t, resp.Body, func(name string, data []byte) bool {
			if name == "caught_up" {
				return false
			}
			var ev struct {
				Type string
				Data json.RawMessage
			}
			if err := json.Unmarshal(data, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Type != "message" {
				return true
			}
			var m view.Message
			if err := json.Unmarshal(ev.Data, &m); err != nil {
				t.Fatal(err)
			}
			if m.Call == "" {
				t.Errorf("%s: message %s of %s (node %s) names no call", id, m.ID, m.From, m.Node)
				return true
			}
			linked++
			c, ok := run.Call(m.Call)
			switch {
			case !ok:
				t.Errorf("%s: message %s names call %s, which the journal does not have", id, m.ID, m.Call)
			case c.Node != m.Node || c.Agent != m.From:
				t.Errorf("%s: message %s (node %s, from %s) names call %s of node %s, agent %s", id, m.ID, m.Node, m.From, m.Call, c.Node, c.Agent)
			case m.To != "" && !strings.Contains(m.Call, m.From+">"+m.To):
				t.Errorf("%s: message %s from %s to %s names call %s", id, m.ID, m.From, m.To, m.Call)
			case strings.Contains(id, "repaired") && m.Node == "evaluate" && !strings.HasSuffix(m.Call, "#repair1"):
				t.Errorf("%s: the repaired judge's message names call %s, not its repair", id, m.Call)
			}
			return true
		})
		resp.Body.Close()
		if linked < 14 {
			t.Errorf("%s: %d messages linked to their calls", id, linked)
		}
		// The call's API: the call, its neighbours, the rendered reply.
		code, body := get(t, ts, "/api/call?id="+url.QueryEscape(id)+"&key="+url.QueryEscape("synthesize/-/judge"))
		if code != http.StatusOK {
			t.Fatalf("/api/call: %d %s", code, body)
		}
		var got struct {
			Call  callview.Call `json:"call"`
			Prev  string        `json:"prev"`
			Count int           `json:"count"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if got.Call.Key != "synthesize/-/judge" || got.Count != len(run.Calls) || got.Prev == "" || len(got.Call.Messages) != 2 || len(got.Call.Output) == 0 {
			t.Errorf("/api/call: %+v", got)
		}
	}
	if code, body := get(t, ts, "/api/call?id="+url.QueryEscape(runs[0])+"&key=nope"); code != http.StatusNotFound || !strings.Contains(string(body), "has no call nope") {
		t.Errorf("/api/call of a missing call: %d %s", code, body)
	}
	if code, _ := get(t, ts, "/api/call?id=../x&key=a"); code != http.StatusNotFound {
		t.Errorf("/api/call outside the root: %d", code)
	}
}

// TestEveryExampleCallServes runs every example's spec test with its
// scripted replies, keeping the runs, and asks the view for every call of
// every run: each is served with its messages and reply, and the run's
// event stream names the same calls the Calls tab lists.
func TestEveryExampleCallServes(t *testing.T) {
	root := t.TempDir()
	files, err := spectest.Find([]string{"../../examples/"})
	if err != nil {
		t.Fatal(err)
	}
	var opts spectest.Options
	opts.Registry, opts.RunsDir, opts.Parallel = nodes.Registry(), root, 2
	var runs []string
	for _, f := range spectest.Run(context.Background(), files, opts) {
		if f.Err != nil {
			t.Fatalf("%s: %v", f.Path, f.Err)
		}
		for _, c := range f.Cases {
			rel, _ := filepath.Rel(root, c.RunDir)
			runs = append(runs, filepath.ToSlash(rel))
		}
	}
	ts := serve(t, root)
	calls := 0
	for _, id := range runs {
		code, body := get(t, ts, "/api/call?id="+url.QueryEscape(id))
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", id, code, body)
		}
		var list struct {
			Calls []callview.Summary `json:"calls"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		// The keys the page's Calls tab lists: those of the event stream.
		streamed := map[string]bool{}
		resp, err := http.Get(ts.URL + "/api/events?id=" + url.QueryEscape(id))
		if err != nil {
			t.Fatal(err)
		}
		readEvents(t, resp.Body, func(name string, data []byte) bool {
			if name == "caught_up" {
				return false
			}
			var ev struct{ Type, Key string }
			_ = json.Unmarshal(data, &ev)
			if ev.Type == "model_request" || ev.Type == "model_response" {
				streamed[ev.Key] = true
			}
			return true
		})
		resp.Body.Close()
		if len(streamed) != len(list.Calls) {
			t.Errorf("%s: the stream has %d calls, the call list %d", id, len(streamed), len(list.Calls))
		}
		for _, s := range list.Calls {
			if !streamed[s.Key] {
				t.Errorf("%s: call %s is listed but not streamed", id, s.Key)
			}
			code, body := get(t, ts, "/api/call?id="+url.QueryEscape(id)+"&key="+url.QueryEscape(s.Key))
			if code != http.StatusOK {
				t.Errorf("%s %s: %d %s", id, s.Key, code, body)
				continue
			}
			var got struct {
				Call callview.Call `json:"call"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			c := got.Call
			if c.Key != s.Key || (c.Requested && len(c.Messages) == 0) || (!c.Done && c.Unanswered() == "in flight") {
				t.Errorf("%s %s: %+v", id, s.Key, c)
			}
			calls++
		}
	}
	if len(runs) < 60 || calls < 400 {
		t.Errorf("%d calls of %d runs served; the examples' tests have more", calls, len(runs))
	}
	t.Logf("%d calls of %d runs of every example served", calls, len(runs))
}

// TestReplayedCallShowsTheRecordingsRequest: a run replayed from a
// recording in the runs folder shows, on a replayed call's page, the
// messages the recording sent.
func TestReplayedCallShowsTheRecordingsRequest(t *testing.T) {
	root, runs := keptExample(t, "design-debate", "a_confident_judge")
	recording := filepath.Join(root, filepath.FromSlash(runs[0]))
	replies, err := runtime.LoadReplay(recording)
	if err != nil {
		t.Fatal(err)
	}
	plan := runtest.LoadPlan(t, "../../examples/design-debate/spec.yaml")
	r, err := runtime.Start(plan, runtime.Options{Launch: launch.Launch{Given: launch.Given{InputValues: map[string]any{"problem": "Design a URL shortener for 10k requests per second."}}, Recording: launch.Recording{Replay: replies, ReplayFrom: recording}}, Settings: runtime.Settings{RunsDir: root}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Execute(context.Background()); err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("the replay: %v %+v", err, res)
	}
	ts := serve(t, root)
	id := filepath.Base(r.Dir)
	code, body := get(t, ts, "/api/call?id="+url.QueryEscape(id)+"&key="+url.QueryEscape("synthesize/-/judge"))
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var got struct {
		Call callview.Call `json:"call"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	c := got.Call
	if c.Requested || c.Source != "replay" || c.RequestFrom == "" || len(c.Messages) != 2 || !strings.Contains(c.Messages[1].Text, "Design a URL shortener") {
		t.Errorf("the replayed call: %+v", c)
	}
}
