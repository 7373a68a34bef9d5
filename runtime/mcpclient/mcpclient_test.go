package mcpclient

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/mcptest"
	"github.com/debate-runner/runner/spec"
)

func TestHTTPServerTools(t *testing.T) {
	var calls atomic.Int32
	hs := httptest.NewServer(mcptest.Handler(mcptest.Options{OnCall: func(string) { calls.Add(1) }}, ""))
	defer hs.Close()
	servers := map[string]*spec.MCPServerPlan{"calc": {Name: "calc", URL: hs.URL, Allowed: []string{"add", "lookup", "sleep"}, Timeout: 200 * time.Millisecond}}
	var journaled []Listing
	c := New(servers, Options{Journal: func(l Listing) { journaled = append(journaled, l) }})
	defer c.Close()
	ctx := context.Background()
	defs, err := c.Definitions(ctx, []string{"calc.*"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	if got := strings.Join(names, ","); got != "calc__add,calc__lookup,calc__sleep" {
		t.Errorf("definitions %s, want the allowed tools only", got)
	}
	if len(journaled) != 1 || len(journaled[0].Tools) != 4 {
		t.Errorf("journaled %+v, want one listing of the 4 tools", journaled)
	}
	for _, tc := range []struct{ name, args, want string }{
		{"calc__add", `{"a": 1.5, "b": 2}`, "1.5 + 2 = 3.5"},
		{"calc__lookup", `{"key": "nope"}`, `error: no fact "nope"`},
		{"calc__sleep", `{"seconds": 1}`, "error: the tool took longer than 200ms"},
		{"calc__add", `[1]`, "error: arguments are not a JSON object"},
		{"calc__crash", `{}`, `error: unknown tool "calc__crash"`},
	} {
		got, err := c.Call(ctx, tc.name, tc.args)
		if err != nil || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s(%s) = %q, %v; want %q...", tc.name, tc.args, got, err, tc.want)
		}
	}
	if calls.Load() != 3 {
		t.Errorf("the server ran %d calls, want 3", calls.Load())
	}
	if _, err := c.Definitions(ctx, []string{"calc.missing"}); err == nil || !strings.Contains(err.Error(), `lists no tool "missing"`) {
		t.Errorf("an unknown tool: %v", err)
	}
}

func TestOfflineNeverStarts(t *testing.T) {
	servers := map[string]*spec.MCPServerPlan{"calc": {Name: "calc", Command: "/nonexistent/server", Timeout: time.Second}}
	known := map[string]Listing{"calc": {Server: "calc", Tools: []Tool{{Name: "add"}}}}
	c := New(servers, Options{Known: known, Offline: "a replay"})
	defs, err := c.Definitions(context.Background(), []string{"calc.add"})
	if err != nil || len(defs) != 1 || string(defs[0].Parameters) != `{"type":"object","properties":{}}` {
		t.Fatalf("definitions from the journal: %+v, %v", defs, err)
	}
	if _, err := c.Call(context.Background(), "calc__add", `{}`); err == nil || !strings.Contains(err.Error(), "a replay") {
		t.Errorf("a call offline: %v", err)
	}
}
