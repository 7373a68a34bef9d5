package view_test

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/view"
	"github.com/debate-runner/runner/spec"
)

func serve(t testing.TB, root string) *httptest.Server {
	t.Helper()
	v, err := view.New(root, nodes.Registry())
	if err != nil {
		t.Fatal(err)
	}
	v.Poll = 50 * time.Millisecond
	ts := httptest.NewServer(v.Handler())
	t.Cleanup(func() {
		// Event streams last as long as their clients: end them first.
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts
}

func get(t testing.TB, ts *httptest.Server, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

// TestServesNothingOutside: whatever the id or file name, the view serves
// files of run directories inside its folder only, and only reads.
func TestServesNothingOutside(t *testing.T) {
	f := makeFixtures(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "run.json")
	if err := os.WriteFile(secret, []byte(`{"run_id":"SECRET"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A link in the runs folder to a folder outside it.
	if err := os.Symlink(outside, filepath.Join(f.root, "escape")); err != nil {
		t.Fatal(err)
	}
	// A run whose report is a link to a file outside.
	_ = os.Remove(filepath.Join(f.root, f.failed, "report.md"))
	if err := os.Symlink(secret, filepath.Join(f.root, f.failed, "report.md")); err != nil {
		t.Fatal(err)
	}
	ts := serve(t, f.root)
	for _, path := range []string{
		"/api/run?id=" + url.QueryEscape("../"+filepath.Base(outside)),
		"/api/run?id=" + url.QueryEscape(outside),
		"/api/run?id=escape",
		"/api/run?id=" + url.QueryEscape(f.panel+"/.."),
		"/api/run?id=" + url.QueryEscape(".."),
		"/api/events?id=escape",
		"/api/file?id=escape&name=run.json",
		"/api/file?id=" + f.panel + "&name=" + url.QueryEscape("../"+f.judged+"/run.json"),
		"/api/file?id=" + f.panel + "&name=.lock",
		"/api/file?id=" + f.failed + "&name=report.md",
		"/api/sweep?id=" + url.QueryEscape(f.sweep+"/.."),
		"/assets/../view.go",
		"/api/file?id=" + f.panel + "&name=" + url.QueryEscape(secret),
	} {
		code, body := get(t, ts, path)
		if code == http.StatusOK || strings.Contains(string(body), "SECRET") {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
	if code, body := get(t, ts, "/api/file?id="+f.panel+"&name=report.html"); code != http.StatusOK || !strings.Contains(string(body), "<svg") {
		t.Errorf("report.html of a run: %d", code)
	}
	resp, err := http.Post(ts.URL+"/api/runs", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}

	// Asked by another name than its own address, it refuses (a page of
	// another site pointing its name at 127.0.0.1).
	v, _ := view.New(f.root, nodes.Registry())
	v.Hosts = []string{"127.0.0.1:8642"}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/api/runs", nil)
	req.Host = "evil.example:8642"
	v.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("a request for host evil.example: %d", rec.Code)
	}
	req.Host = "127.0.0.1:8642"
	rec = httptest.NewRecorder()
	v.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("a request for its own host: %d", rec.Code)
	}
}

// TestRunsAndSweepsList: every run (sweeps' too) with its status, usage
// and first output; the sweep with its accuracy.
func TestRunsAndSweepsList(t *testing.T) {
	f := makeFixtures(t)
	ts := serve(t, f.root)
	code, body := get(t, ts, "/api/runs")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var list struct {
		Runs   []view.RunInfo
		Sweeps []view.SweepInfo
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	byID := map[string]view.RunInfo{}
	for _, r := range list.Runs {
		byID[r.ID] = r
	}
	want := map[string]string{f.panel: "completed", f.judged: "completed", f.failed: "failed", f.killed: "incomplete"}
	for id, status := range want {
		if byID[id].Status != status {
			t.Errorf("run %s: status %q, want %q", id, byID[id].Status, status)
		}
	}
	if p := byID[f.panel]; p.Goals != 3 || p.Calls != f.panelRes.Usage.Total.Calls || !strings.Contains(p.FirstOutput, "technical_assessment") {
		t.Errorf("the panel's line: %+v", p)
	}
	if j := byID[f.judged]; !j.Priced || j.Cost <= 0 || j.Rounds != 3 {
		t.Errorf("the judged run's line: %+v", j)
	}
	// The panel's models have no price in its spec: its cost is at the
	// built-in list prices, and the list says so (the page marks it *).
	if p, j := byID[f.panel], byID[f.judged]; p.BuiltinPrices != spec.BuiltinPricesDate || j.BuiltinPrices != "" {
		t.Errorf("built-in prices: the panel's line says %q, the judged run's %q; want %q and none", p.BuiltinPrices, j.BuiltinPrices, spec.BuiltinPricesDate)
	}
	inSweep := 0
	for _, r := range list.Runs {
		if r.Sweep == f.sweep && strings.HasPrefix(r.ID, f.sweep+"/") && r.Status == "completed" && r.Score != nil {
			inSweep++
		}
	}
	if inSweep != 20 { // 10 dataset lines × rounds=1,2
		t.Errorf("%d runs of the sweep listed, want 20", inSweep)
	}
	sweeps := map[string]view.SweepInfo{}
	for _, sw := range list.Sweeps {
		sweeps[sw.ID] = sw
	}
	if sw := sweeps[f.sweep]; len(list.Sweeps) != 2 || sw.Runs != 20 || len(sw.Accuracy) == 0 || sweeps[f.baseline].Runs != 10 {
		t.Errorf("sweeps: %+v", list.Sweeps)
	}
	code, body = get(t, ts, "/api/sweep?id="+f.sweep)
	if code != http.StatusOK || !strings.Contains(string(body), `"by_combination"`) {
		t.Errorf("the sweep: %d %s", code, body)
	}
	listTellsARunAsItsPageDoes(t, f, ts)
}

// readEvents reads server-sent events until stop says so.
func readEvents(t testing.TB, body io.Reader, each func(name string, data []byte) bool) {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if !each(name, []byte(strings.TrimPrefix(line, "data: "))) {
				return
			}
			name = ""
		}
	}
}

// TestEventsOfAFinishedRun: the stream holds every journal event the page
// uses, with every message's text resolved (the journal refers to replies
// by digest) and rendered, equal to result.json's messages.
func TestEventsOfAFinishedRun(t *testing.T) {
	f := makeFixtures(t)
	ts := serve(t, f.root)
	for _, tc := range []struct {
		id  string
		res *result.Result
	}{{f.panel, f.panelRes}, {f.judged, f.judgedRes}} {
		resp, err := http.Get(ts.URL + "/api/events?id=" + tc.id)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []view.Message
		types := map[string]int{}
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
			types[ev.Type]++
			if ev.Type == "message" {
				var m view.Message
				if err := json.Unmarshal(ev.Data, &m); err != nil {
					t.Fatal(err)
				}
				msgs = append(msgs, m)
			}
			return true
		})
		resp.Body.Close()
		if len(msgs) != len(tc.res.Messages) {
			t.Fatalf("%s: %d messages streamed, result.json has %d", tc.id, len(msgs), len(tc.res.Messages))
		}
		for i, m := range msgs {
			want := tc.res.Messages[i]
			if m.Content != want.Content || m.From != want.From || m.Verdict != want.Verdict || m.Private != want.Private {
				t.Errorf("%s message %d: %+v, result.json has %+v", tc.id, i, m.Message, want)
			}
			if want.Content != "" && m.HTML == "" {
				t.Errorf("%s message %d has no HTML", tc.id, i)
			}
		}
		if types["model_response"] != tc.res.Usage.Total.Calls {
			t.Errorf("%s: %d responses streamed, %d calls in the result", tc.id, types["model_response"], tc.res.Usage.Total.Calls)
		}
		t.Logf("%s: %d events: %v", tc.id, sum(types), types)
	}
	// The judge's outputs come through for its confidence chart, though the
	// journal's messages leave them to the output events.
	resp, err := http.Get(ts.URL + "/api/events?id=" + f.judged)
	if err != nil {
		t.Fatal(err)
	}
	var confidences []float64
	readEvents(t, resp.Body, func(name string, data []byte) bool {
		var ev struct {
			Type string
			Data view.Message
		}
		_ = json.Unmarshal(data, &ev)
		if o, ok := ev.Data.Output.(map[string]any); ok && ev.Type == "message" {
			confidences = append(confidences, o["confidence"].(float64))
		}
		return name != "caught_up"
	})
	resp.Body.Close()
	if len(confidences) != 3 || confidences[2] != 91 {
		t.Errorf("confidences %v, want 55, 72, 91", confidences)
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestEventsFollowALiveRun follows a hiring panel as it runs: events come
// as the journal grows, a reconnect resumes after the last event seen, and
// the delay from an event's journaling to its arrival is logged.
func TestEventsFollowALiveRun(t *testing.T) {
	root := t.TempDir()
	r, done := liveHiring(t, root, 40*time.Millisecond, "Jane Doe")
	ts := serve(t, root)
	id := filepath.Base(r.Dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/api/events?id="+id, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var lags []time.Duration
	caughtUp := false
	var lastSeq int64
	live := 0
	half := false
	readEvents(t, resp.Body, func(name string, data []byte) bool {
		if name == "caught_up" {
			caughtUp = true
			return true
		}
		var ev view.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Seq <= lastSeq {
			t.Errorf("seq %d after %d", ev.Seq, lastSeq)
		}
		lastSeq = ev.Seq
		if caughtUp {
			lags = append(lags, time.Since(ev.Time))
			live++
		}
		if live == 40 && !half {
			half = true
			return false // reconnect below
		}
		return ev.Type != "run_finished"
	})
	resp.Body.Close()
	if !half {
		t.Fatalf("the run ended before 40 live events (%d)", live)
	}
	// Reconnect as a browser does, with the last event's id.
	req, _ = http.NewRequestWithContext(ctx, "GET", ts.URL+"/api/events?id="+id, nil)
	req.Header.Set("Last-Event-ID", itoa(lastSeq))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := int64(0)
	readEvents(t, resp.Body, func(name string, data []byte) bool {
		if name == "caught_up" {
			caughtUp = true
			return true
		}
		var ev view.Event
		_ = json.Unmarshal(data, &ev)
		if first == 0 {
			first = ev.Seq
		}
		lags = append(lags, time.Since(ev.Time))
		lastSeq = ev.Seq
		return ev.Type != "run_finished"
	})
	resp.Body.Close()
	res := <-done
	if res.Status != result.StatusCompleted {
		t.Fatalf("run: %s %s", res.Status, res.Error)
	}
	evs, err := journal.Read(filepath.Join(r.Dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if first <= 0 || lastSeq != evs[len(evs)-1].Seq {
		t.Errorf("after reconnecting: first seq %d, last %d; the journal ends at %d", first, lastSeq, evs[len(evs)-1].Seq)
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	t.Logf("SSE delay from journal to client over %d live events: median %v, 95th percentile %v, max %v (poll interval 50ms)",
		len(lags), lags[len(lags)/2].Round(time.Millisecond), lags[len(lags)*95/100].Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestFlowSVG: the flow of every example is well-formed SVG with every
// node, watchers included, marked for the page.
func TestFlowSVG(t *testing.T) {
	paths, _ := filepath.Glob("../../examples/*/spec.yaml")
	if len(paths) < 5 {
		t.Fatalf("%d examples", len(paths))
	}
	for _, path := range paths {
		plan, diags := spec.Load(path, nodes.Registry())
		if diags.HasErrors() {
			t.Fatal(diags.Format())
		}
		svg := view.FlowSVG(plan)
		dec := xml.NewDecoder(strings.NewReader(svg))
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: not well-formed: %v\n%s", path, err, svg)
			}
		}
		for _, id := range plan.NodeOrder {
			if !strings.Contains(svg, `data-node="`+id+`"`) {
				t.Errorf("%s: node %s is not drawn", path, id)
			}
		}
		if os.Getenv("RUNNER_TEST_ARTIFACTS") != "" {
			name := filepath.Base(filepath.Dir(path))
			if err := os.WriteFile(filepath.Join(artifacts(t), "flow-"+name+".svg"), []byte(svg), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
