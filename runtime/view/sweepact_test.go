package view_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/view"
)

// sweepSpecs is a specs folder holding the single-agent protocol, a
// dataset of n multiple-choice items and a study of two labels of it.
func sweepSpecs(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	spec, err := os.ReadFile(filepath.Join("..", "..", "examples", "protocols", "single-agent", "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"question": "Which is %d?", "options": "%d\n%d", "expected": "A"}`, i, i, i+1))
	}
	files := map[string]string{
		"single/spec.yaml":   string(spec),
		"data/items.jsonl":   strings.Join(lines, "\n") + "\n",
		"study/study.yaml":   "version: 1\nname: tiny\ndataset: ../data/items.jsonl\nspecs:\n  - {path: ../single/spec.yaml, label: first}\n  - {path: ../single/spec.yaml, label: second}\nbaseline: first\n",
		"secret/outside.txt": "not a dataset",
	}
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// sweepState is what the sweep's page is given.
type sweepState struct {
	Running bool
	Going   bool
	Summary struct {
		Runs []struct{ Status string }
	}
}

func (s sweepState) ended() int {
	n := 0
	for _, r := range s.Summary.Runs {
		if r.Status != "pending" {
			n++
		}
	}
	return n
}

// TestSweepAndStudyFromTheView: the start form's sweep fields start a
// sweep over a dataset of the specs folder through the same executor as
// runner run --dataset, against the local OpenAI-compatible server; the
// sweep's page (its API) shows each run as it ends, one at a time while
// the server answers one call at a time, and says the sweep is running
// until it ends. A dataset outside the folder, a matrix the spec cannot
// take and a count out of range are refused at their fields, with
// nothing written. A study file of the folder starts as runner study
// does, and its page counts each sweep's runs.
func TestSweepAndStudyFromTheView(t *testing.T) {
	const items = 3
	specs := sweepSpecs(t, items)
	root := t.TempDir()
	gate := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	step := make(chan struct{})
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		select {
		case <-gate:
		case <-step:
		case <-time.After(20 * time.Second):
		}
		return llmtest.Reply{Content: "A"}
	})
	getenv := runtest.Env(srv.URL, "sk-view-test")
	ts, v := actingServer(t, root, specs, func(k string) string {
		if k == "RUNNER_CACHE_DIR" {
			return filepath.Join(root, "..", "cache")
		}
		return getenv(k)
	})
	host := strings.TrimPrefix(ts.URL, "http://")

	// The page is offered the folder's datasets and studies only.
	code, body := get(t, ts, "/api/specs")
	var listed struct {
		Datasets []string
		Studies  []view.StudyFile
	}
	if err := json.Unmarshal(body, &listed); code != http.StatusOK || err != nil {
		t.Fatalf("/api/specs: %d %v", code, err)
	}
	if strings.Join(listed.Datasets, ",") != "data/items.jsonl" || len(listed.Studies) != 1 || listed.Studies[0].Path != "study/study.yaml" {
		t.Fatalf("offered datasets %v and studies %+v", listed.Datasets, listed.Studies)
	}

	base := view.StartRequest{Spec: "single/spec.yaml", Parallel: 1}
	for _, bad := range []struct {
		field string
		req   func(*view.StartRequest)
	}{
		{"dataset", func(r *view.StartRequest) { r.Dataset = "../" + filepath.Base(specs) + "/data/items.jsonl" }},
		{"dataset", func(r *view.StartRequest) { r.Dataset = "secret/outside.txt" }},
		{"dataset", func(r *view.StartRequest) { r.Dataset = "/etc/passwd" }},
		{"dataset", func(r *view.StartRequest) { r.Dataset = "hf:someone/data" }},
		{"matrix", func(r *view.StartRequest) { r.Dataset = "data/items.jsonl"; r.Matrix = "nope=1,2" }},
		{"repeat", func(r *view.StartRequest) { r.Repeat = -2 }},
		{"parallel", func(r *view.StartRequest) { r.Dataset = "data/items.jsonl"; r.Parallel = 1000 }},
	} {
		req := base
		bad.req(&req)
		rec := act(t, v, host, "/api/act/start", req)
		if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), `"field":"`+bad.field+`"`) {
			t.Errorf("%+v: %d %s, want it refused at %s", req, rec.Code, rec.Body, bad.field)
		}
	}
	v.Wait()
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("refused sweeps left %d entries in the runs folder", len(entries))
	}

	req := base
	req.Dataset = "data/items.jsonl"
	rec := act(t, v, host, "/api/act/start", req)
	if rec.Code != http.StatusOK {
		t.Fatalf("start the sweep: %d %s", rec.Code, rec.Body)
	}
	var started struct{ ID, Kind string }
	_ = json.Unmarshal(rec.Body.Bytes(), &started)
	if started.Kind != "sweep" || !strings.HasPrefix(started.ID, "sweep-") {
		t.Fatalf("started %+v", started)
	}
	state := func() sweepState {
		code, body := get(t, ts, "/api/sweep?id="+started.ID)
		var s sweepState
		if code != http.StatusOK || json.Unmarshal(body, &s) != nil {
			return sweepState{}
		}
		return s
	}
	// One call answered at a time: the page sees the runs end one by one.
	for want := 0; want <= items; want++ {
		deadline := time.Now().Add(10 * time.Second)
		for s := state(); len(s.Summary.Runs) != items || s.ended() != want; s = state() {
			if s.ended() > want || time.Now().After(deadline) {
				t.Fatalf("the sweep's page shows %d of %d runs ended, want %d", s.ended(), len(s.Summary.Runs), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if s := state(); want < items && (!s.Running || !s.Going) {
			t.Errorf("with %d of %d runs ended the sweep is not shown running: %+v", want, items, s)
		}
		if want < items {
			step <- struct{}{}
		}
	}
	v.Wait()
	if s := state(); s.Running || s.Going {
		t.Errorf("the ended sweep is shown running")
	}
	summary, err := os.ReadFile(filepath.Join(root, started.ID, "summary.json"))
	if err != nil || !strings.Contains(string(summary), `"completed": 3`) {
		t.Fatalf("the sweep's summary: %v\n%s", err, summary)
	}

	// Another sweep, cancelled while its first call waits, then gone on
	// with from its page: it ends with every run completed.
	rec = act(t, v, host, "/api/act/start", req)
	if rec.Code != http.StatusOK {
		t.Fatalf("start the second sweep: %d %s", rec.Code, rec.Body)
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &started)
	if s := state(); !s.Going {
		t.Errorf("the second sweep is not shown as made by the view: %+v", s)
	}
	if rec := act(t, v, host, "/api/act/cancel", view.RunRequest{ID: started.ID}); rec.Code != http.StatusOK {
		t.Fatalf("cancel the sweep: %d %s", rec.Code, rec.Body)
	}
	v.Wait()
	// (Made elsewhere, a sweep whose summary is under a second old is
	// taken to be between two runs.)
	for deadline := time.Now().Add(10 * time.Second); state().Running && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if s := state(); s.Going || s.Running || s.ended() == items {
		t.Errorf("the cancelled sweep: %+v", s)
	}
	open()
	if rec := act(t, v, host, "/api/act/resume", view.RunRequest{ID: started.ID}); rec.Code != http.StatusOK {
		t.Fatalf("go on with the sweep: %d %s", rec.Code, rec.Body)
	}
	v.Wait()
	if summary, err := os.ReadFile(filepath.Join(root, started.ID, "summary.json")); err != nil || !strings.Contains(string(summary), `"completed": 3`) {
		t.Fatalf("the sweep gone on with: %v\n%s", err, summary)
	}

	// A study of the folder.
	rec = act(t, v, host, "/api/act/study", view.StudyRequest{Path: "study/study.yaml"})
	if rec.Code != http.StatusOK {
		t.Fatalf("start the study: %d %s", rec.Code, rec.Body)
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &started)
	v.Wait()
	code, body = get(t, ts, "/api/study?id="+started.ID)
	var st struct {
		Going    bool
		Progress []map[string]int
		Table    *struct{ Rows [][]string }
	}
	if err := json.Unmarshal(body, &st); code != http.StatusOK || err != nil || st.Going || st.Table == nil || len(st.Progress) != 2 || st.Progress[1]["ended"] != items {
		t.Fatalf("the study's page: %d %s", code, body)
	}
	if _, err := result.Read(filepath.Join(root, started.ID)); err == nil {
		t.Log("(a study has no result.json)")
	}
	for _, bad := range []string{"../study/study.yaml", "single/spec.yaml", "/etc/passwd"} {
		if rec := act(t, v, host, "/api/act/study", view.StudyRequest{Path: bad}); rec.Code != http.StatusUnprocessableEntity {
			t.Errorf("study %q: %d %s", bad, rec.Code, rec.Body)
		}
	}
}
