package mcpclient

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/mcptest"
	"github.com/debate-runner/runner/spec"
)

// TestMain serves the test MCP server over stdio when the test binary is
// started as one (see stdioPlan).
func TestMain(m *testing.M) {
	if os.Getenv("MCPCLIENT_TEST_STDIO") != "" {
		_ = mcptest.ServeStdio(context.Background(), "")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func stdioPlan(t *testing.T) *spec.MCPServerPlan {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &spec.MCPServerPlan{Name: "calc", Command: exe, Timeout: 10 * time.Second,
		Env: map[string]string{"MCPCLIENT_TEST_STDIO": "1", "MCPTEST_SAY": "${CALC_SECRET}"}}
}

// TestStdioServer: a server started over stdio answers; one that dies
// fails the call with an error naming it, its output quoted with the
// secret of its env: redacted, and later calls fail the same way.
func TestStdioServer(t *testing.T) {
	getenv := func(k string) string {
		if k == "CALC_SECRET" {
			return "hush-hush-1234"
		}
		return ""
	}
	c := New(map[string]*spec.MCPServerPlan{"calc": stdioPlan(t)}, Options{Getenv: getenv})
	defer c.Close()
	ctx := context.Background()
	start := time.Now()
	if _, err := c.Definitions(ctx, []string{"calc.add", "calc.crash"}); err != nil {
		t.Fatal(err)
	}
	started := time.Since(start)
	start = time.Now()
	const n = 50
	for i := 0; i < n; i++ {
		if got, err := c.Call(ctx, "calc__add", `{"a": 1, "b": 1}`); err != nil || got != "1 + 1 = 2" {
			t.Fatalf("add: %q, %v", got, err)
		}
	}
	t.Logf("start and list: %v; %d calls: %v each", started, n, time.Since(start)/n)
	_, err := c.Call(ctx, "calc__crash", `{}`)
	if err == nil || !strings.Contains(err.Error(), `mcp server "calc" failed while calling crash`) || !strings.Contains(err.Error(), "crashing as asked [redacted]") {
		t.Fatalf("a crash: %v", err)
	}
	if strings.Contains(err.Error(), "hush-hush") {
		t.Errorf("the error holds the secret: %v", err)
	}
	if _, err2 := c.Call(ctx, "calc__add", `{"a": 1, "b": 1}`); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("a call after the crash: %v", err2)
	}
}
