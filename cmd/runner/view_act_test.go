package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/view"
)

// TestViewStartsTheRunRunnerRunMakes: a run started from the view's form
// leaves the directory `runner run` leaves for the same spec, inputs and
// models: the same run.json, journal and result, ids and times aside.
func TestViewStartsTheRunRunnerRunMakes(t *testing.T) {
	specs, err := filepath.Abs(filepath.Join("..", "..", "examples", "protocols", "single-agent"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	cli := t.TempDir()
	code, _, stderr := invoke(t, env, "run", filepath.Join(specs, "spec.yaml"), "--offline", "-i", "question=Which is a prime?", "-i", "options=4\n7\n9", "--runs-dir", cli, "-q", "--no-cache")
	if code != exitcode.OK {
		t.Fatalf("runner run: exit %d\n%s", code, stderr)
	}
	cliDir := runDirFrom(t, stderr)

	page := t.TempDir()
	v, err := view.New(page, nodes.Registry())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	v.Hosts = view.HostsFor(ln.Addr())
	const token = "a-token-of-the-test-0123456789"
	if err := v.Act(view.Acting{Token: token, Specs: specs, Getenv: getenv, Version: Version()}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(v.Handler())
	ts.Listener = ln
	ts.Start()
	t.Cleanup(func() { ts.Close(); v.Close() })
	body, _ := json.Marshal(view.StartRequest{Spec: "spec.yaml", Inputs: map[string]string{"question": "Which is a prime?", "options": "4\n7\n9"}, Models: map[string]string{"default": "offline"}})
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/act/start", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(view.TokenHeader, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var started struct{ ID string }
	_ = json.NewDecoder(resp.Body).Decode(&started)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("start: %d", resp.StatusCode)
	}
	v.Wait()
	pageDir := filepath.Join(page, started.ID)

	for _, name := range []string{"run.json", "result.json", "journal.jsonl"} {
		a, b := comparable(t, filepath.Join(cliDir, name)), comparable(t, filepath.Join(pageDir, name))
		if a != b {
			t.Errorf("%s differs between runner run and the view, ids and times aside:\nrunner run: %s\nthe view:   %s", name, a, b)
		}
	}
}

// comparable is a run's JSON file (or JSON lines) with its ids, times,
// durations and paths of its own directory left out.
func comparable(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			// One JSON document over many lines.
			if err := json.Unmarshal(data, &v); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			lines = []string{canonical(v, dir)}
			break
		}
		lines = append(lines, canonical(v, dir))
	}
	return strings.Join(lines, "\n")
}

// varying are the keys whose values differ from run to run of the same
// launch: ids, times, durations, latencies.
var varying = map[string]bool{"run_id": true, "id": true, "created": true, "time": true, "started": true, "finished": true,
	"duration_ms": true, "latency_ms": true, "wall_ms": true, "elapsed_ms": true, "dir": true, "started_at": true, "finished_at": true}

func canonical(v any, dir string) string {
	var strip func(any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k := range x {
				if varying[k] {
					delete(x, k)
					continue
				}
				x[k] = strip(x[k])
			}
		case []any:
			for i := range x {
				x[i] = strip(x[i])
			}
		case string:
			return strings.ReplaceAll(x, filepath.Base(dir), "RUN")
		}
		return v
	}
	out, _ := json.Marshal(strip(v))
	return string(out)
}
