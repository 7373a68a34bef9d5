package ask

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
)

// callFailed is an endpoint failure after retries, as the runtime's
// EndpointError is one.
type callFailed struct{ key string }

func (e callFailed) Error() string        { return "model call " + e.key + " failed: HTTP 500" }
func (e callFailed) Is(target error) bool { return target == kit.ErrCallFailed }

// TestMinAnswers: with min_answers, an agent whose call fails after its
// retries, or whose reply stays unusable after its repairs, is left out
// (no message, no output, a warning and an "absent" event naming it) while
// enough answered; with fewer answers the node fails with the failures'
// own errors; without min_answers nothing changes.
func TestMinAnswers(t *testing.T) {
	schema, err := spec.CompileJSONSchema("s", []byte(`{"type": "object", "required": ["score"], "properties": {"score": {"type": "integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	down := func(secProse bool, agents ...string) func(c kit.Call) (kit.Reply, error) {
		return func(c kit.Call) (kit.Reply, error) {
			for _, a := range agents {
				if c.Agent.ID == a {
					return kit.Reply{}, callFailed{c.Key}
				}
			}
			if secProse && c.Agent.ID == "sec" {
				return kit.Reply{Content: "no JSON here"}, nil
			}
			return kit.Reply{Content: `{"score": 7}`}, nil
		}
	}
	for _, tc := range []struct {
		name       string
		min        int
		sequential bool
		down       []string
		outputs    string
		absent     string
		err        string
	}{
		{name: "one down", min: 1, down: []string{"perf"}, outputs: "map[arch:map[score:7]]", absent: "perf sec"},
		{name: "one down, sequential", min: 1, sequential: true, down: []string{"perf"}, outputs: "map[arch:map[score:7]]", absent: "perf sec"},
		{name: "too few", min: 3, down: []string{"perf"}, err: "2 of 3 calls answered, fewer than its min_answers (3)"},
		{name: "all down", min: 1, down: []string{"arch", "perf", "sec"}, err: "0 of 3 calls answered"},
		{name: "without min_answers", min: 0, down: []string{"perf"}, err: "HTTP 500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// sec's replies never parse, but when the node fails the
			// first failure decides its error: then sec answers.
			h := &host{scope: kit.Scope{Round: 1}, reply: down(tc.err == "", tc.down...)}
			cfg := &Config{Template: "t", Record: "grade", MinAnswers: tc.min, Sequential: tc.sequential,
				Output: Output{Format: FormatJSON, Schema: schema, Repair: 1}}
			res, err := kit.Typed(Kind{}).Execute(context.Background(), h, node(cfg))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				if !errors.Is(err, kit.ErrCallFailed) {
					t.Errorf("the node's error %v does not keep the endpoint failure (the CLI exits 3 on it)", err)
				}
				if len(h.recorded) != 0 || hasEvent(h, "absent") {
					t.Errorf("a failed node recorded %d messages or journaled an absence: %v", len(h.recorded), h.events)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(res.Outputs); got != tc.outputs {
				t.Errorf("outputs %s, want %s", got, tc.outputs)
			}
			var absent []string
			for _, a := range res.Absent {
				absent = append(absent, a.Agent)
			}
			if got := strings.Join(absent, " "); got != tc.absent {
				t.Errorf("absent %q, want %q", got, tc.absent)
			}
			if len(h.recorded) != 1 || h.recorded[0].From != "arch" {
				t.Errorf("recorded %+v, want arch's reply alone", h.recorded)
			}
			want := map[string]string{"perf": "model call perf failed: HTTP 500", "sec": "reply still not valid json after 1 repair(s)"}
			for _, a := range res.Absent {
				if !strings.Contains(a.Reason, want[a.Agent]) {
					t.Errorf("%s is absent because %q, want %q", a.Agent, a.Reason, want[a.Agent])
				}
			}
			if a := res.Absent; len(a) == 2 && (a[0].Key != "perf" || a[1].Key != "sec#repair1") {
				t.Errorf("absence keys %q %q, want the failed call and the last unusable reply", a[0].Key, a[1].Key)
			}
			if len(h.warnings) != 2 || !strings.Contains(h.warnings[0], `agent "perf" is left out`) || !strings.Contains(h.warnings[1], `agent "sec" is left out`) {
				t.Errorf("warnings %q", h.warnings)
			}
			if !hasEvent(h, "absent perf") || !hasEvent(h, "absent sec#repair1") {
				t.Errorf("events %v lack the absences", h.events)
			}
		})
	}
}

// TestMinAnswersKeepsFallback: a node with a fallback still uses it for
// unusable replies; min_answers leaves out only the failed calls.
func TestMinAnswersKeepsFallback(t *testing.T) {
	var mu sync.Mutex
	h := &host{reply: func(c kit.Call) (kit.Reply, error) {
		mu.Lock()
		defer mu.Unlock()
		switch c.Agent.ID {
		case "perf":
			return kit.Reply{}, callFailed{c.Key}
		case "sec":
			return kit.Reply{Content: "prose"}, nil
		}
		return kit.Reply{Content: `{"a": 1}`}, nil
	}}
	cfg := &Config{Template: "t", MinAnswers: 1, Output: Output{Format: FormatJSON, Repair: 0, Fallback: map[string]any{}}}
	res, err := kit.Typed(Kind{}).Execute(context.Background(), h, node(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Outputs); got != "map[arch:map[a:1] sec:map[text:prose]]" {
		t.Errorf("outputs %s", got)
	}
	if len(res.Absent) != 1 || res.Absent[0].Agent != "perf" {
		t.Errorf("absent %+v, want perf alone", res.Absent)
	}
}

func hasEvent(h *host, ev string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.events {
		if e == ev || strings.HasPrefix(e, ev+" ") {
			return true
		}
	}
	return false
}
