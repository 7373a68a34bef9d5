package view_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/study"
	"github.com/debate-runner/runner/runtime/view"
)

// studySolvers answer the reasoning debate right with a chance set by the
// model (a draw from a hash of the request, so the same request gets the
// same answer): a study of two models whose accuracies differ.
var studySolvers = map[string]uint32{"m-sharp": 80, "m-rough": 55}

func studySolver(r llmtest.Request) llmtest.Reply {
	q := regexp.MustCompile(`What is the result of ([0-9+*\- ]+)\?`).FindStringSubmatch(r.LastUser())
	if q == nil {
		return llmtest.Reply{Content: `\boxed{0}`}
	}
	v := arith(q[1])
	h := fnv.New32a()
	fmt.Fprintf(h, "%s|%s|%s", r.Model, r.Messages[0].Content, r.LastUser())
	if h.Sum32()%100 >= studySolvers[r.Model] {
		v += 1 + int(h.Sum32()%3)
	}
	return llmtest.Reply{Content: fmt.Sprintf("So the answer is \\boxed{%d}.", v)}
}

// makeStudy runs a study of the reasoning debate and its baseline with two
// models over the reasoning dataset into root/study-reasoning.
func makeStudy(t testing.TB, root string) string {
	t.Helper()
	ex, err := filepath.Abs("../../examples/reasoning-debate")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "study.yaml")
	src := fmt.Sprintf(`version: 1
name: reasoning
dataset: %s
specs:
  - {path: %s, label: single-agent}
  - {path: %s, label: debate}
baseline: single-agent
models: [m-sharp, m-rough]
resamples: 2000
`, filepath.Join(ex, "dataset.jsonl"), filepath.Join(ex, "baseline.yaml"), filepath.Join(ex, "spec.yaml"))
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := study.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := study.Prepare(f, nodes.Registry())
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t, studySolver)
	dir := study.DefaultDir(root, f)
	if _, err := study.Run(context.Background(), st, study.Options{Run: options(root, srv), Dir: dir, Registry: nodes.Registry()}); err != nil {
		t.Fatalf("study: %v", err)
	}
	return filepath.Base(dir)
}

// studyPage is what /api/study answers.
type studyPage struct {
	Table struct {
		Header []string   `json:"header"`
		Rows   [][]string `json:"rows"`
	} `json:"table"`
	Report   study.Report `json:"report"`
	Chart    string       `json:"chart"`
	SweepIDs []string     `json:"sweep_ids"`
	Files    []string     `json:"files"`
}

var markRE = regexp.MustCompile(`<g class="mark (accuracy|difference)" data-mean="([^"]*)" data-low="([^"]*)" data-high="([^"]*)"(?: data-p-holm="([^"]*)")?>`)

// TestStudyPageAgrees: the study's page (its table and its chart's marks),
// results.csv and results.json say the same numbers, row by row; the
// study is listed, and its sweeps and their runs open by nested ids.
func TestStudyPageAgrees(t *testing.T) {
	root := t.TempDir()
	id := makeStudy(t, root)
	ts := serve(t, root)

	code, body := get(t, ts, "/api/runs")
	if code != 200 || !strings.Contains(string(body), `"studies":[{"id":"`+id+`"`) {
		t.Fatalf("the list lacks the study: %d %s", code, body)
	}
	code, body = get(t, ts, "/api/study?id="+id)
	if code != 200 {
		t.Fatalf("/api/study: %d %s", code, body)
	}
	var page studyPage
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, id)
	onDisk, err := study.ReadReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	code, csvData := get(t, ts, "/api/study/file?id="+id+"&name=results.csv")
	if disk, _ := os.ReadFile(filepath.Join(dir, "results.csv")); code != 200 || string(csvData) != string(disk) {
		t.Fatalf("results.csv served: %d, differs from the file: %v", code, string(csvData) != string(disk))
	}
	recs, err := csv.NewReader(strings.NewReader(string(csvData))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	rows := recs[1:]
	if len(rows) != 4 || len(page.Table.Rows) != 4 || len(page.Report.Rows) != 4 || len(onDisk.Rows) != 4 {
		t.Fatalf("rows: csv %d, page %d, page's report %d, results.json %d; want 4", len(rows), len(page.Table.Rows), len(page.Report.Rows), len(onDisk.Rows))
	}
	marks := markRE.FindAllStringSubmatch(page.Chart, -1)
	var accMarks, diffMarks [][]string
	for _, m := range marks {
		if m[1] == "accuracy" {
			accMarks = append(accMarks, m)
		} else {
			diffMarks = append(diffMarks, m)
		}
	}
	if len(accMarks) != 4 || len(diffMarks) != 2 {
		t.Fatalf("chart: %d accuracy marks, %d difference marks; want 4 and 2:\n%s", len(accMarks), len(diffMarks), page.Chart)
	}
	f3 := func(s string) string {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return fmt.Sprintf("%.3f", x)
	}
	sawDifference := false
	d := 0
	for i, rec := range rows {
		cells := page.Table.Rows[i]
		js := onDisk.Rows[i]
		if rec[col["protocol"]] != cells[0] || rec[col["model"]] != cells[1] || js.Protocol != cells[0] || js.Model != cells[1] {
			t.Errorf("row %d names: csv %s/%s, page %s/%s, json %s/%s", i, rec[col["protocol"]], rec[col["model"]], cells[0], cells[1], js.Protocol, js.Model)
		}
		if rec[col["n"]] != cells[2] || strconv.Itoa(js.N) != cells[2] {
			t.Errorf("row %d n: csv %s, page %s, json %d", i, rec[col["n"]], cells[2], js.N)
		}
		acc := fmt.Sprintf("%s (%s–%s)", f3(rec[col["accuracy"]]), f3(rec[col["accuracy_low"]]), f3(rec[col["accuracy_high"]]))
		if cells[3] != acc || fmt.Sprintf("%.3f (%.3f–%.3f)", js.Accuracy.Mean, js.Accuracy.Low, js.Accuracy.High) != acc {
			t.Errorf("row %d accuracy: page %q, csv %q, json %+v", i, cells[3], acc, js.Accuracy)
		}
		// The chart's mark carries the CSV's numbers exactly.
		if m := accMarks[i]; m[2] != rec[col["accuracy"]] || m[3] != rec[col["accuracy_low"]] || m[4] != rec[col["accuracy_high"]] {
			t.Errorf("row %d accuracy mark %v, csv %v", i, m[2:5], rec[col["accuracy"]:col["accuracy_high"]+1])
		}
		if rec[col["baseline"]] == "true" {
			if cells[4] != "baseline" {
				t.Errorf("row %d is the baseline; the page says %q", i, cells[4])
			}
			continue
		}
		diff := fmt.Sprintf("%+.3f (%+.3f to %+.3f)", must(t, rec[col["difference"]]), must(t, rec[col["difference_low"]]), must(t, rec[col["difference_high"]]))
		if cells[4] != diff || fmt.Sprintf("%+.3f (%+.3f to %+.3f)", js.Difference.Estimate, js.Difference.Low, js.Difference.High) != diff {
			t.Errorf("row %d difference: page %q, csv %q, json %+v", i, cells[4], diff, js.Difference)
		}
		m := diffMarks[d]
		d++
		if m[2] != rec[col["difference"]] || m[3] != rec[col["difference_low"]] || m[4] != rec[col["difference_high"]] || m[5] != rec[col["p_holm"]] {
			t.Errorf("row %d difference mark %v, csv %v p_holm %s", i, m[2:6], rec[col["difference"]:col["difference_high"]+1], rec[col["p_holm"]])
		}
		if js.PHolm == nil || strconv.FormatFloat(*js.PHolm, 'g', -1, 64) != rec[col["p_holm"]] {
			t.Errorf("row %d p (Holm): json %v, csv %s", i, js.PHolm, rec[col["p_holm"]])
		}
		p := must(t, rec[col["p_holm"]])
		if want := fmt.Sprintf("%.3f", p); p >= 0.001 && cells[5] != want {
			t.Errorf("row %d p (Holm): page %q, csv %s", i, cells[5], want)
		}
		if cells[6] != rec[col["calls"]] || cells[7] != rec[col["sent_calls"]] || cells[8] != rec[col["tokens"]] || cells[11] != rec[col["inconclusive"]] {
			t.Errorf("row %d calls/sent/tokens/inconclusive: page %v, csv %v", i, []string{cells[6], cells[7], cells[8], cells[11]},
				[]string{rec[col["calls"]], rec[col["sent_calls"]], rec[col["tokens"]], rec[col["inconclusive"]]})
		}
		sawDifference = sawDifference || must(t, rec[col["difference"]]) != 0
	}
	if !sawDifference {
		t.Error("no protocol differs from the baseline: the fixture compares nothing")
	}

	// A cell's sweep, and a run of it, open by their nested ids.
	if page.SweepIDs[0] == "" {
		t.Fatal("no sweep id for the first cell")
	}
	code, body = get(t, ts, "/api/sweep?id="+page.SweepIDs[0])
	if code != 200 {
		t.Fatalf("/api/sweep?id=%s: %d %s", page.SweepIDs[0], code, body)
	}
	var sw struct {
		RunIDs []string `json:"run_ids"`
	}
	if err := json.Unmarshal(body, &sw); err != nil || len(sw.RunIDs) == 0 {
		t.Fatalf("sweep: %v %s", err, body)
	}
	if code, body := get(t, ts, "/api/run?id="+sw.RunIDs[0]); code != 200 {
		t.Fatalf("/api/run?id=%s: %d %s", sw.RunIDs[0], code, body)
	}
	// Three parts only under a study; study files only by name.
	sweepName := strings.Split(page.SweepIDs[0], "/")[1]
	for _, bad := range []string{"/api/sweep?id=" + sweepName + "/x", "/api/run?id=x/" + page.SweepIDs[0], "/api/study?id=" + page.SweepIDs[0], "/api/study/file?id=" + id + "/" + sweepName + "&name=summary.json", "/api/study/file?id=" + id + "&name=../" + id + "/study.json"} {
		if code, _ := get(t, ts, bad); code != 404 {
			t.Errorf("%s: %d, want 404", bad, code)
		}
	}

	// A study that has not written its report yet: its cells and the
	// sweeps started so far, no table.
	pending := filepath.Join(root, "study-pending")
	if err := os.Mkdir(pending, 0o755); err != nil {
		t.Fatal(err)
	}
	rec, err := os.ReadFile(filepath.Join(dir, "study.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pending, "study.json"), rec, 0o644); err != nil {
		t.Fatal(err)
	}
	code, body = get(t, ts, "/api/study?id=study-pending")
	var pend struct {
		State  study.State     `json:"state"`
		Report json.RawMessage `json:"report"`
		Chart  string          `json:"chart"`
	}
	if err := json.Unmarshal(body, &pend); code != 200 || err != nil || pend.Report != nil || pend.Chart != "" || pend.State.Finished || len(pend.State.Cells) != 4 {
		t.Errorf("a study without its report: %d %v %s", code, err, body)
	}

	// runner view on the study directory (or one of its sweeps) opens its page.
	r, pg, err := view.PageOf(dir)
	if err != nil || pg != "/study/"+id || r != root {
		t.Errorf("PageOf(study) = %s %s %v", r, pg, err)
	}
	if _, pg, _ := view.PageOf(filepath.Join(dir, sweepName)); pg != "/sweep/"+page.SweepIDs[0] {
		t.Errorf("PageOf(study's sweep) = %s", pg)
	}
}

func must(t *testing.T, s string) float64 {
	t.Helper()
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return x
}

// TestStudyPageInBrowser loads a study's page in headless Chromium: the
// chart is drawn (a mark per row with its interval), the table has a row
// per protocol and model, and the list of runs links to the study.
func TestStudyPageInBrowser(t *testing.T) {
	root := t.TempDir()
	id := makeStudy(t, root)
	b := newBrowser(t)
	ts := serve(t, root)
	base := ts.URL + "/#"

	b.open(base+"/", `document.querySelector('table.studies a') !== null`)
	if href := eval[string](b, `document.querySelector('table.studies a').getAttribute('href')`); href != "#/study/"+id {
		t.Errorf("the list links the study as %q", href)
	}
	if got := eval[string](b, `document.querySelector('main').innerText`); !strings.Contains(got, "No runs outside the studies above") {
		t.Errorf("the list says nothing of the studies' runs: %q", got)
	}
	b.shot("runs-with-study")
	b.clean("runs with a study")

	ready := `document.querySelectorAll('#study-chart svg .mark').length > 0`
	b.open(base+"/study/"+id, ready)
	if n := eval[int](b, `document.querySelectorAll('#study-chart svg .mark.accuracy').length`); n != 4 {
		t.Errorf("%d accuracy marks, want 4", n)
	}
	if n := eval[int](b, `document.querySelectorAll('#study-chart svg .mark.difference').length`); n != 2 {
		t.Errorf("%d difference marks, want 2", n)
	}
	// Drawn, not just present: every interval has a width on the page.
	if w := eval[float64](b, `Math.min(...[...document.querySelectorAll('#study-chart svg .mark line.ci')].map(l => l.getBoundingClientRect().width))`); !(w > 0) {
		t.Errorf("an interval is %v px wide", w)
	}
	if w := eval[float64](b, `document.querySelector('#study-chart svg').getBoundingClientRect().width`); w < 400 {
		t.Errorf("the chart is %v px wide", w)
	}
	if n := eval[int](b, `document.querySelectorAll('table.study tbody tr').length`); n != 4 {
		t.Errorf("%d table rows, want 4", n)
	}
	text := eval[string](b, `document.querySelector('main').textContent`)
	for _, want := range []string{"Study reasoning", "single-agent", "debate", "m-sharp", "m-rough", "p (Holm)", "results.csv"} {
		if !strings.Contains(text, want) {
			t.Errorf("the study page lacks %q", want)
		}
	}
	// Accuracy by round: a point per round of each row whose spec loops,
	// and the rounds' flips in a table of a row per round.
	rep, err := study.ReadReport(filepath.Join(root, id))
	if err != nil {
		t.Fatal(err)
	}
	points, rounds := 0, 0
	for _, row := range rep.Rows {
		rounds += len(row.Rounds)
		for _, rd := range row.Rounds {
			if rd.Accuracy != nil {
				points++
			}
		}
	}
	if points == 0 {
		t.Fatal("no row of the study has per-round accuracy: the chart is not checked")
	}
	if n := eval[int](b, `document.querySelectorAll('#study-rounds svg circle').length`); n != points {
		t.Errorf("the rounds chart has %d points, want %d", n, points)
	}
	if n := eval[int](b, `document.querySelectorAll('#study-rounds table.rounds tbody tr').length`); n != rounds {
		t.Errorf("the rounds table has %d rows, want %d", n, rounds)
	}
	b.shot("study")
	b.look("study", ready)
	b.clean("study")

	// A sweep of the study opens from its table, with the study in the crumbs.
	b.open(base+"/study/"+id, ready)
	href := eval[string](b, `[...document.querySelectorAll('table.study tbody a')].find(a => a.textContent === 'debate').getAttribute('href')`)
	b.open(base+strings.TrimPrefix(href, "#"), `document.querySelector('#chart-accuracy svg') !== null`)
	if got := eval[string](b, `document.querySelector('header').innerText`); !strings.Contains(got, id) {
		t.Errorf("the sweep's crumbs do not name its study: %q", got)
	}
	// The debate's sweep plots its accuracy and its agents' by round.
	var debate *study.Row
	for i := range rep.Rows {
		if strings.HasSuffix(href, rep.Rows[i].Sweep) {
			debate = &rep.Rows[i]
		}
	}
	if debate == nil || len(debate.Rounds) == 0 {
		t.Fatalf("the link %s is no debate row with rounds", href)
	}
	if n := eval[int](b, `document.querySelectorAll('#chart-rounds svg circle').length`); n != 2*len(debate.Rounds) {
		t.Errorf("the sweep's rounds chart has %d points, want %d (accuracy and agents' accuracy per round)", n, 2*len(debate.Rounds))
	}
	b.clean("a sweep of the study")
	// One of its runs plots its score by round on its charts tab.
	run := eval[string](b, `document.querySelector('table.runs a.runid').getAttribute('href')`)
	b.open(base+strings.TrimPrefix(run, "#")+"?tab=charts", `document.querySelector('#chart-rounds svg') !== null`)
	if n := eval[int](b, `document.querySelectorAll('#chart-rounds svg circle').length`); n != 2*len(debate.Rounds) {
		t.Errorf("the run's rounds chart has %d points, want %d", n, 2*len(debate.Rounds))
	}
	b.clean("a run of the study, charts")
}
