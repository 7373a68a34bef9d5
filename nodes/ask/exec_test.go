package ask

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
)

// host is the part of kit.Host an ask node uses; the embedded nil
// interface makes any other call panic. reply answers each call.
type host struct {
	kit.Host
	scope   kit.Scope
	history []value.Message
	reply   func(c kit.Call) (kit.Reply, error)

	mu       sync.Mutex
	calls    []kit.Call
	events   []string
	warnings []string
	recorded []value.Message
}

func (h *host) Scope() kit.Scope { return h.scope }

func (h *host) Messages() []value.Message { return append([]value.Message(nil), h.history...) }

func (h *host) Base(_ *spec.NodePlan, a *spec.AgentPlan) value.PromptBase {
	history, _ := value.List(h.Messages())
	return value.PromptBase{Agent: a.View(), Round: h.scope.Round, History: history}
}

func (h *host) Render(_ string, data any) (string, error) {
	d := data.(*PromptData)
	return fmt.Sprintf("%s answers %s (own: %q)", d.Agent.ID, d.Target.From, d.Own.Content), nil
}

func (h *host) Summary(context.Context, *spec.AgentPlan, string) string { return "" }
func (h *host) ContextDir() string                                      { return "" }
func (h *host) Progress(kit.ProgressEvent)                              {}

func (h *host) Warn(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.warnings = append(h.warnings, fmt.Sprintf(format, args...))
}

func (h *host) Event(typ event.Type, key string, _ any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, string(typ)+" "+key)
	return nil
}

func (h *host) RunTool(ctx context.Context, key, _ string, _ kit.ToolCall, run func(context.Context) kit.ToolResult) (string, error) {
	res := run(ctx)
	_ = h.Event("tool_call", key, nil)
	return res.Text, res.Err
}

func (h *host) Complete(ctx context.Context, c kit.Call) (kit.Reply, error) {
	h.mu.Lock()
	h.calls = append(h.calls, c)
	h.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return kit.Reply{}, err
	}
	return h.reply(c)
}

func (h *host) Record(msgs ...value.Message) []value.Message {
	h.recorded = append(h.recorded, msgs...)
	return msgs
}

func (h *host) keys() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, c := range h.calls {
		out = append(out, c.Key)
	}
	sort.Strings(out)
	return out
}

var agents = []*spec.AgentPlan{{ID: "arch"}, {ID: "perf"}, {ID: "sec"}}

func node(cfg *Config) *spec.NodePlan {
	return &spec.NodePlan{ID: "n", Agents: agents, Config: cfg}
}

// echo answers every call with its key after a random pause, so replies
// arrive in any order.
func echo(c kit.Call) (kit.Reply, error) {
	time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
	return kit.Reply{Content: "reply " + c.Key}, nil
}

func TestTargets(t *testing.T) {
	all := []value.Message{
		{From: "arch", Record: "proposal", Content: "arch 1"},
		{From: "sec", Record: "proposal", Content: "sec 1"},
		{From: "arch", Record: "proposal", Content: "arch 2"},
		{From: "perf", Record: "proposal", Goal: "other", Content: "perf in another goal"},
		{From: "perf", Record: "critique", Content: "not a proposal"},
	}
	n := node(&Config{})
	for _, tc := range []struct {
		from From
		self string
		want string
	}{
		{FromOthers, "sec", "[arch 2]"},
		{FromOthers, "perf", "[arch 2 sec 1]"},
		{FromAll, "perf", "[arch 2 sec 1]"},
		{FromSelf, "arch", "[arch 2]"},
		{FromSelf, "perf", "[]"},
	} {
		var got []string
		for _, m := range targets(n, &Each{Record: "proposal", From: tc.from}, all, tc.self, "") {
			got = append(got, m.Content)
		}
		if s := fmt.Sprint(got); s != tc.want {
			t.Errorf("from %s, self %s: %v, want %s", tc.from, tc.self, got, tc.want)
		}
	}
}

// TestEachRecordsInDeclarationOrder: one call per agent and target, made
// concurrently, recorded in agent then target order whatever the timing.
func TestEachRecordsInDeclarationOrder(t *testing.T) {
	h := &host{scope: kit.Scope{Round: 1, Key: "round=1"}, reply: echo, history: []value.Message{
		{ID: "m1", From: "arch", Record: "proposal", Round: 1, Content: "A"},
		{ID: "m2", From: "perf", Record: "proposal", Round: 1, Content: "P"},
		{ID: "m3", From: "sec", Record: "proposal", Round: 1, Content: "S"},
	}}
	res, err := kit.Typed(Kind{}).Execute(context.Background(), h, node(&Config{Template: "t", Record: "critique", Each: &Each{Record: "proposal", From: FromOthers}}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range h.recorded {
		got = append(got, m.From+">"+m.To+":"+m.Content)
	}
	want := "[arch>perf:reply arch>perf arch>sec:reply arch>sec perf>arch:reply perf>arch perf>sec:reply perf>sec sec>arch:reply sec>arch sec>perf:reply sec>perf]"
	if fmt.Sprint(got) != want {
		t.Errorf("recorded %v\nwant     %s", got, want)
	}
	if res.Calls != 6 {
		t.Errorf("Calls = %d, want 6", res.Calls)
	}
	for _, c := range h.calls {
		if c.Target == "" || !strings.HasSuffix(c.Key, ">"+c.Target) {
			t.Errorf("call %s has target %q", c.Key, c.Target)
		}
	}
}

// TestCarryOver: from round 2 an agent's latest refinement is recorded as
// its proposal without a call; an agent with none is asked, with a warning.
func TestCarryOver(t *testing.T) {
	cfg := &Config{Template: "t", Record: "proposal", CarryOver: "refinement"}
	history := []value.Message{
		{From: "arch", Record: "refinement", Round: 1, Content: "arch refined", Output: "arch refined"},
		{From: "sec", Record: "refinement", Round: 1, Content: "sec refined"},
		{From: "arch", Record: "proposal", Round: 1, Content: "arch proposed"},
	}
	for _, tc := range []struct {
		round int
		calls string
		want  string
		warn  bool
	}{
		{1, "[arch perf sec]", "[arch:reply arch perf:reply perf sec:reply sec]", false},
		{2, "[perf]", "[arch:arch refined(carried) perf:reply perf sec:sec refined(carried)]", true},
	} {
		h := &host{scope: kit.Scope{Round: tc.round}, reply: echo, history: history}
		res, err := kit.Typed(Kind{}).Execute(context.Background(), h, node(cfg))
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(h.keys()); got != tc.calls {
			t.Errorf("round %d: calls %s, want %s", tc.round, got, tc.calls)
		}
		var got []string
		for _, m := range h.recorded {
			s := m.From + ":" + m.Content
			if m.Carried {
				s += "(carried)"
			}
			if m.Record != "proposal" {
				t.Errorf("round %d: %s recorded as %q", tc.round, m.From, m.Record)
			}
			got = append(got, s)
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("round %d: recorded %v, want %s", tc.round, got, tc.want)
		}
		if (len(h.warnings) > 0) != tc.warn {
			t.Errorf("round %d: warnings %v", tc.round, h.warnings)
		}
		if res.Calls != strings.Count(tc.calls, " ")+1 {
			t.Errorf("round %d: Calls = %d", tc.round, res.Calls)
		}
	}
	// The calling agent's prompt sees its own latest message of the record.
	h := &host{scope: kit.Scope{Round: 1}, reply: echo, history: history}
	if _, err := kit.Typed(Kind{}).Execute(context.Background(), h, node(cfg)); err != nil {
		t.Fatal(err)
	}
	for _, c := range h.calls {
		if c.Agent.ID == "arch" && !strings.Contains(c.Messages[len(c.Messages)-1].Content, `own: "arch proposed"`) {
			t.Errorf("arch's prompt does not see its own proposal: %+v", c.Messages)
		}
	}
}

// TestFailedCallFailsTheNode: one failing call fails the node with its own
// error (not the cancellation it causes in the others), and nothing is
// recorded.
func TestFailedCallFailsTheNode(t *testing.T) {
	boom := errors.New("endpoint down")
	h := &host{scope: kit.Scope{Round: 1}, reply: func(c kit.Call) (kit.Reply, error) {
		if c.Agent.ID == "perf" {
			return kit.Reply{}, boom
		}
		time.Sleep(5 * time.Millisecond)
		return kit.Reply{Content: "ok"}, nil
	}}
	_, err := kit.Typed(Kind{}).Execute(context.Background(), h, node(&Config{Template: "t", Record: "proposal"}))
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
	if len(h.recorded) != 0 {
		t.Errorf("recorded %d messages from a failed node", len(h.recorded))
	}
}

func TestRepairAndFallback(t *testing.T) {
	schema, err := spec.CompileJSONSchema("s", []byte(`{"type": "object", "required": ["score"], "properties": {"score": {"type": "integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	one := []*spec.AgentPlan{{ID: "judge"}}
	for _, tc := range []struct {
		name     string
		replies  []string
		fallback map[string]any
		output   string
		keys     string
		err      string
	}{
		{"valid", []string{`{"score": 3}`}, nil, "map[score:3]", "[judge]", ""},
		{"repaired", []string{`{"score": "high"}`, `{"score": 4}`}, nil, "map[score:4]", "[judge judge#repair1]", ""},
		{"fallback", []string{`nope`, `nope`, `still nope`}, map[string]any{"score": 0}, "map[score:0 text:still nope]", "[judge judge#repair1 judge#repair2]", ""},
		{"fails", []string{`nope`, `nope`, `nope`}, nil, "", "[judge judge#repair1 judge#repair2]", "reply is not valid json after 2 repair(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			h := &host{reply: func(c kit.Call) (kit.Reply, error) {
				mu.Lock()
				defer mu.Unlock()
				if n > 0 {
					last := c.Messages[len(c.Messages)-1]
					if last.Role != "user" || !strings.Contains(last.Content, "could not be used") || c.Messages[len(c.Messages)-2].Content != tc.replies[n-1] {
						t.Errorf("repair %d does not send back the reply and the reason: %+v", n, c.Messages)
					}
				}
				r := tc.replies[n]
				n++
				return kit.Reply{Content: r}, nil
			}}
			cfg := &Config{Template: "t", Output: Output{Format: FormatJSON, Schema: schema, Repair: 2, Fallback: tc.fallback}}
			res, err := kit.Typed(Kind{}).Execute(context.Background(), h, &spec.NodePlan{ID: "n", Agents: one, Config: cfg})
			if got := fmt.Sprint(h.keys()); got != tc.keys {
				t.Errorf("calls %s, want %s", got, tc.keys)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(res.Output); got != tc.output {
				t.Errorf("output %s, want %s", got, tc.output)
			}
			if warned := len(h.warnings) > 0; warned != (tc.fallback != nil) {
				t.Errorf("warnings %v", h.warnings)
			}
		})
	}
}

// TestToolLimit: tool calls are answered until the limit; calls beyond it
// get an error result, and the next request offers no tools.
func TestToolLimit(t *testing.T) {
	var mu sync.Mutex
	var offered []int
	h := &host{reply: func(c kit.Call) (kit.Reply, error) {
		mu.Lock()
		defer mu.Unlock()
		offered = append(offered, len(c.Tools))
		if len(c.Tools) == 0 {
			return kit.Reply{Content: "done"}, nil
		}
		return kit.Reply{ToolCalls: []kit.ToolCall{
			{ID: "a", Name: "search_history", Arguments: `{"query": "x"}`},
			{ID: "b", Name: "search_history", Arguments: `{"query": "y"}`},
			{ID: "c", Name: "read_file", Arguments: `{"path": "x"}`},
		}}, nil
	}}
	cfg := &Config{Template: "t", Tools: []string{"search_history", "read_file"}, MaxToolCalls: 4, Output: Output{Format: FormatText}}
	res, err := kit.Typed(Kind{}).Execute(context.Background(), h, &spec.NodePlan{ID: "n", Agents: []*spec.AgentPlan{{ID: "arch"}}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "done" || fmt.Sprint(offered) != "[2 2 0]" {
		t.Errorf("text %q, tools offered per request %v; want done after [2 2 0]", res.Text, offered)
	}
	if got := fmt.Sprint(h.keys()); got != "[arch arch/tool1 arch/tool2]" {
		t.Errorf("calls %s", got)
	}
	last := h.calls[len(h.calls)-1].Messages
	var results []string
	for _, m := range last {
		if m.Role == "tool" {
			results = append(results, m.ToolCallID+"="+strings.SplitN(m.Content, ":", 2)[0])
		}
	}
	// The first three: search results and read_file's error (no context
	// folder); then one more within the limit, then two past it.
	if fmt.Sprint(results) != "[a=no message contains \"x\" b=no message contains \"y\" c=error a=no message contains \"x\" b=error c=error]" {
		t.Errorf("tool results %v", results)
	}
	if !strings.Contains(last[len(last)-1].Content, "limit of 4 tool calls") {
		t.Errorf("the last result does not name the limit: %q", last[len(last)-1].Content)
	}
	if n := strings.Count(strings.Join(h.events, "\n"), "tool_call "); n != 6 {
		t.Errorf("%d tool_call events, want 6", n)
	}
}

func (h *host) Parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	return kit.Parallel(ctx, n, f)
}
