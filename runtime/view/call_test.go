package view_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/runtime/callview"
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
