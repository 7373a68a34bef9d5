package view_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/debate-runner/runner/runtime/result"
)

// The browser tests drive headless Chromium. .ci/run installs it and sets
// RUNNER_REQUIRE_BROWSER, so that there a missing browser fails the tests;
// elsewhere they are skipped without one. Screenshots of every page go to
// $RUNNER_TEST_ARTIFACTS (default: runner-test-artifacts in the temporary
// folder).

// chromium finds the browser.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("RUNNER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("RUNNER_REQUIRE_BROWSER") != "" {
		t.Fatal("no Chromium found (install it: apt-get install chromium), and RUNNER_REQUIRE_BROWSER is set")
	}
	t.Skip("no Chromium found; install it (apt-get install chromium) to run the browser tests")
	return ""
}

func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("RUNNER_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "runner-test-artifacts")
	}
	dir = filepath.Join(dir, "view")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser is a headless Chromium tab that records what the pages write to
// the console as errors.
type browser struct {
	t      *testing.T
	ctx    context.Context
	mu     sync.Mutex
	errors []string
	shots  string
	loads  int
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	b := &browser{t: t, shots: artifacts(t)}
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1360, 900),
	)
	t.Cleanup(cancel)
	ctx, cancelTab := chromedp.NewContext(alloc, chromedp.WithListener(func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *cdpruntime.EventConsoleAPICalled:
			if e.Type == cdpruntime.ConsoleAPICalledTypeError || e.Type == cdpruntime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				msg = "console.error: " + strings.Join(parts, " ")
			}
		case *cdpruntime.EventExceptionThrown:
			msg = "exception: " + e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				msg = "log: " + e.Entry.Text + " " + e.Entry.URL
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.errors = append(b.errors, msg)
			b.mu.Unlock()
		}
	}))
	t.Cleanup(cancelTab)
	// Start the browser now, on a context without a deadline (its life).
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	b.ctx = ctx
	return b
}

// open loads a page and waits until ready (a JavaScript expression) holds;
// it returns how long that took.
func (b *browser) open(url, ready string) time.Duration {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	// A query of its own makes every page load afresh, rather than be
	// routed to within the page before (only the part after # changes).
	b.loads++
	if i := strings.Index(url, "/#"); i >= 0 {
		url = url[:i] + "/?load=" + strconv.Itoa(b.loads) + url[i+1:]
	} else {
		url += "&load=" + strconv.Itoa(b.loads)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		b.t.Fatalf("%s: %v", url, err)
	}
	b.wait(ready)
	// From the navigation's start (the page's own clock) to ready.
	return time.Duration(eval[float64](b, `performance.now()`) * float64(time.Millisecond))
}

// wait waits until a JavaScript expression holds.
func (b *browser) wait(expr string) {
	b.t.Helper()
	deadline := time.Now().Add(25 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, time.Until(deadline)+5*time.Second)
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
		cancel()
		if err == nil {
			return
		}
		// A page that navigates (a hash route drawn anew) drops the
		// JavaScript context the poll ran in; poll again in the new one.
		if strings.Contains(err.Error(), "Cannot find context with specified id") && time.Now().Before(deadline) {
			continue
		}
		dctx, dcancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer dcancel()
		text, _ := chromedp.Run(dctx, chromedp.Evaluate[string](`document.body.innerText.slice(0, 2000)`))
		b.t.Fatalf("waiting for %s: %v\npage:\n%s", expr, err, text)
	}
}

// eval evaluates a JavaScript expression.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// shot writes a screenshot of the whole page.
func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// clean fails the test on console errors since the last call.
func (b *browser) clean(page string) {
	b.t.Helper()
	b.mu.Lock()
	errs := b.errors
	b.errors = nil
	b.mu.Unlock()
	for _, e := range errs {
		b.t.Errorf("%s: %s", page, e)
	}
}

// TestPagesInBrowser loads every page of the view over the fixture runs in
// headless Chromium: each must load without a console error and show what
// it is for; a screenshot of each is kept.
func TestPagesInBrowser(t *testing.T) {
	f := makeFixtures(t)
	b := newBrowser(t)
	ts := serve(t, f.root)
	base := ts.URL + "/#"
	publicPanel, whispers, privatePanel := 0, 0, 0
	for _, m := range f.panelRes.Messages {
		if m.Private {
			privatePanel++
			continue
		}
		publicPanel++
		if m.Whisper {
			whispers++
		}
	}
	sweepRuns, _ := filepath.Glob(filepath.Join(f.root, f.sweep, "*", "run.json"))
	sort.Strings(sweepRuns)
	runA := f.sweep + "/" + filepath.Base(filepath.Dir(sweepRuns[0]))
	runB := f.sweep + "/" + filepath.Base(filepath.Dir(sweepRuns[len(sweepRuns)-1]))

	type page struct {
		name, path, ready string
		check             func()
	}
	msgs := `document.querySelectorAll('#transcript .msg:not(.rejected)').length`
	pages := []page{
		{"runs", "/", `document.querySelectorAll('table.runs tbody tr').length >= 34`, func() {
			if n := eval[int](b, `document.querySelectorAll('table.runs tbody tr').length`); n != 34 {
				t.Errorf("runs: %d rows, want 34 (4 runs, 20 of the sweep, 10 of the baseline)", n)
			}
			// A failed run's error is in its own column, not under its status.
			row := fmt.Sprintf(`[...document.querySelectorAll('table.runs tbody tr')].find(tr => tr.querySelector('a.runid').title === %q)`, f.failed)
			if got := eval[string](b, row+`.querySelector('[data-col=output]').innerText`); !strings.Contains(got, "model not found") {
				t.Errorf("the failed run's error is not in the output column: %q", got)
			}
			if got := eval[string](b, row+`.querySelector('[data-col=status]').innerText`); strings.TrimSpace(got) != "failed" {
				t.Errorf("the failed run's status cell says %q", got)
			}
			// Columns can be hidden, and the choice is kept.
			cols := `document.querySelectorAll('table.runs thead th').length`
			all := eval[int](b, cols)
			eval[bool](b, `(() => { document.querySelector('#columns').open = true; document.querySelector('#columns input[data-col=tokens]').click(); return true; })()`)
			if n := eval[int](b, cols); n != all-1 {
				t.Errorf("hiding the tokens column leaves %d of %d columns", n, all)
			}
			b.open(base+"/", `document.querySelectorAll('table.runs tbody tr').length >= 34`)
			if n := eval[int](b, cols); n != all-1 {
				t.Errorf("after a reload, %d of %d columns", n, all)
			}
			eval[bool](b, `(() => { document.querySelector('#columns input[data-col=tokens]').click(); document.querySelector('#columns').open = false; return true; })()`)
			if n := eval[int](b, cols); n != all {
				t.Errorf("showing the tokens column again: %d of %d columns", n, all)
			}
		}},
		{"runs-filtered", "/?spec=hiring-panel&status=completed", `document.querySelectorAll('table.runs tbody tr').length === 1`, nil},
		{"run-transcript", "/run/" + f.panel, fmt.Sprintf(`document.body.dataset.status === 'completed' && %s === %d`, msgs, publicPanel), func() {
			if n := eval[int](b, `document.querySelectorAll('#transcript .msg.whisper').length`); n != whispers {
				t.Errorf("%d whispers marked, want %d", n, whispers)
			}
			if n := eval[int](b, `document.querySelectorAll('#transcript .msg.private').length`); n != 0 {
				t.Errorf("%d private thoughts shown before they are asked for", n)
			}
			if got := eval[string](b, `document.querySelector('#transcript .msg.rejected').innerText`); !strings.Contains(got, "MAYBE_LATER") || !strings.Contains(got, "not a valid verdict") {
				t.Errorf("the rejected reply is not shown with its reasons: %q", got)
			}
			if got := eval[string](b, `document.querySelector('#transcript').innerText`); !strings.Contains(got, "the resume lists <Go> and <Kafka> work") {
				t.Errorf("tag-like text is lost from the transcript")
			}
			if n := eval[int](b, `document.querySelectorAll('.goalhead').length`); n != 3 {
				t.Errorf("%d goals in the transcript, want 3", n)
			}
			if n := eval[int](b, `document.querySelectorAll('svg.flow .flow-node.done[data-node=panel]').length`); n != 1 {
				t.Errorf("the finished node is not marked done in the flow")
			}
		}},
		{"run-private", "/run/" + f.panel, `document.body.dataset.status === 'completed'`, func() {
			eval[bool](b, `(() => { const c = document.getElementById('show-private'); c.click(); return c.checked; })()`)
			b.wait(fmt.Sprintf(`document.querySelectorAll('#transcript .msg.private').length === %d`, privatePanel))
		}},
		{"run-call-rejected", "/run/" + f.panel, `document.body.dataset.status === 'completed'`, func() {
			// The rejected reply links to its call, whose page says why
			// and links the call that asked again.
			eval[bool](b, `(() => { document.querySelector('#transcript .msg.rejected a.calllink').click(); return true; })()`)
			b.wait(`document.body.dataset.page === 'call' && document.querySelector('#call-rejections') !== null`)
			got := eval[string](b, `document.querySelector('#call-rejections').innerText`)
			if !strings.Contains(got, "not a valid verdict") || !strings.Contains(got, "#repair1") {
				t.Errorf("the rejected call's page: %q", got)
			}
			if got := eval[string](b, `document.querySelector('#call-reply').innerText`); !strings.Contains(got, "MAYBE_LATER") {
				t.Errorf("the rejected reply is not on its call's page: %q", got)
			}
		}},
		{"run-verdicts", "/run/" + f.panel + "?tab=verdicts", `document.querySelectorAll('.verdict-group').length === 3`, nil},
		{"run-charts", "/run/" + f.panel + "?tab=charts", `document.querySelector('#chart-timeline svg') !== null && document.body.dataset.status === 'completed'`, func() {
			if n := eval[int](b, `document.querySelectorAll('#chart-verdicts svg rect').length`); n < 3 {
				t.Errorf("the verdict chart has %d bars", n)
			}
			// result.json's dynamics, a row per goal (the panel has 3).
			if n := eval[int](b, `document.querySelectorAll('#dynamics tbody tr').length`); n != 3 {
				t.Errorf("the dynamics table has %d rows, want one per goal", n)
			}
		}},
		{"run-usage", "/run/" + f.panel + "?tab=usage", `document.querySelectorAll('#pane table').length === 4`, nil},
		{"judged-transcript", "/run/" + f.judged, `document.body.dataset.status === 'completed' && document.querySelectorAll('#transcript .msg').length > 5`, nil},
		{"judged-charts", "/run/" + f.judged + "?tab=charts", `document.querySelectorAll('#chart-confidence svg circle').length === 3`, func() {
			if got := eval[string](b, `document.querySelector('#chart-timeline .note').innerText`); !strings.Contains(got, "1 retry") {
				t.Errorf("the timeline does not show the retry: %q", got)
			}
		}},
		{"judged-calls", "/run/" + f.judged + "?tab=calls", `document.querySelectorAll('#pane tbody tr').length === 12`, nil},
		{"judged-call-retried", "/call?" + url.Values{"run": {f.judged}, "key": {"propose/round=1/ada"}}.Encode(), `document.body.dataset.page === 'call'`, func() {
			if got := eval[string](b, `(document.querySelector('#call-retries') || {}).innerText || ''`); !strings.Contains(got, "attempt 1") {
				t.Errorf("the retry is not shown: %q", got)
			}
			if got := eval[string](b, `document.querySelector('#call-reply').innerText`); !strings.Contains(got, "calls ") {
				t.Errorf("the reply's tool call is not shown: %q", got)
			}
			if got := eval[string](b, `document.querySelector('#call-messages').innerText`); !strings.Contains(got, "did not log its prompts") {
				t.Errorf("the page does not say the prompts were not logged: %q", got)
			}
			if got := eval[string](b, `(document.querySelector('#call-tools') || {}).innerText || ''`); got == "" {
				t.Errorf("the tool the reply asked for is not shown")
			}
		}},
		{"judged-call-tool", "/call?" + url.Values{"run": {f.judged}, "key": {"propose/round=1/ada/tool1"}}.Encode(), `document.body.dataset.page === 'call'`, func() {
			roles := eval[[]string](b, `[...document.querySelectorAll('#call-messages .cmsg')].map(m => m.dataset.role)`)
			if strings.Join(roles, ",") != "user,assistant,tool" {
				t.Errorf("the tool round sent %v, want the prompt, the assistant's tool call and the tool's result", roles)
			}
			if got := eval[string](b, `document.querySelector('#call-messages .cmsg[data-role=tool]').innerText`); !strings.Contains(got, "answers tool call") || !strings.Contains(got, "found by its digest") {
				t.Errorf("the tool's result does not say which call it answers, or is not shown: %q", got)
			}
			// The proposal parsed from the last tool round's reply.
			if got := eval[string](b, `document.querySelector('#call-output').innerText`); !strings.Contains(got, "A queue in front of sandboxed graders") {
				t.Errorf("the tool round's parsed output is not shown: %q", got)
			}
			if got := eval[string](b, `document.querySelector('#call-messages .cmsg[data-role=assistant]').innerText`); !strings.Contains(got, "calls ") {
				t.Errorf("the assistant's tool call is not shown: %q", got)
			}
		}},
		{"judged-questions", "/run/" + f.judged + "?tab=clarify", `document.querySelectorAll('#pane tbody tr').length === 4`, func() {
			if got := eval[string](b, `document.querySelector('#pane').innerText`); !strings.Contains(got, "How many <submissions> per hour at peak?") || !strings.Contains(got, "About 3,000") {
				t.Errorf("questions and answers: %q", got)
			}
		}},
		{"judged-tools", "/run/" + f.judged + "?tab=tools", `document.querySelectorAll('#pane tbody tr').length === 1`, nil},
		{"judged-outputs", "/run/" + f.judged + "?tab=outputs", `document.querySelectorAll('#pane .outputs .out').length === 2`, nil},
		{"failed", "/run/" + f.failed, `document.body.dataset.status === 'failed'`, func() {
			if got := eval[string](b, `document.querySelector('.now').innerText`); !strings.Contains(got, "model not found") {
				t.Errorf("the failure is not said: %q", got)
			}
		}},
		{"killed", "/run/" + f.killed, `document.body.dataset.status === 'incomplete' && document.querySelectorAll('#transcript .msg').length > 0`, nil},
		{"sweep", "/sweep/" + f.sweep, `document.querySelector('#chart-accuracy svg') !== null`, func() {
			if n := eval[int](b, `document.querySelectorAll('#chart-accuracy svg circle').length`); n != 3 {
				t.Errorf("accuracy chart: %d intervals, want 3 (all, rounds=1, rounds=2)", n)
			}
		}},
		{"compare-sweeps", "/compare?a=" + f.sweep + "&b=" + f.baseline, `document.querySelector('#sweep-items') !== null`, func() {
			text := eval[string](b, `document.querySelector('main').innerText`)
			for _, want := range []string{"Compare two sweeps", "accuracy (95% CI)", "reasoning-debate", "reasoning-baseline", "runs (n)", "calls"} {
				if !strings.Contains(text, want) {
					t.Errorf("compare sweeps lacks %q", want)
				}
			}
			// 10 dataset lines; the debate ran each twice (rounds=1,2),
			// the baseline once: items pair by line and matrix values.
			if n := eval[int](b, `document.querySelectorAll('#sweep-items tbody tr').length`); n != 20 {
				t.Errorf("compare sweeps: %d items, want 20", n)
			}
			// The matrix sweep's cells are tallied apart, never mixed.
			if got := eval[string](b, `[...document.querySelectorAll('#sweep-tally li')].map(li => li.innerText).join('|')`); !strings.Contains(got, "A rounds=1: Of 10 pairs scored in both") || !strings.Contains(got, "A rounds=2: Of 10 pairs scored in both") {
				t.Errorf("the tally of items by cell: %q", got)
			}
		}},
		{"compare", "/compare?a=" + runA + "&b=" + runB, `document.querySelectorAll('.cols .msg').length > 0`, func() {
			if n := eval[int](b, `document.querySelectorAll('.diff td.differs').length`); n == 0 {
				t.Errorf("compare marks no difference between two runs of a sweep")
			}
			// The runs answer different questions: their outputs differ.
			if got := eval[string](b, `[...document.querySelectorAll('.diff tr')].filter(tr => tr.querySelector('td.differs')).map(tr => tr.firstChild.innerText).join('|')`); !strings.Contains(got, "output answer") {
				t.Errorf("compare does not mark the outputs that differ: %q", got)
			}
		}},
	}
	for _, p := range pages {
		ready := p.ready
		if strings.HasPrefix(p.path, "/run/") {
			ready = "window.__viewStats.caughtUp && " + ready
		}
		d := b.open(base+p.path, ready)
		if p.check != nil {
			p.check()
		}
		b.shot(p.name)
		if p.name == "run-transcript" {
			b.docShot("view") // README's picture
		}
		if p.name == "run-call-rejected" {
			ready = `document.body.dataset.page === 'call'`
		}
		if p.name != "run-private" {
			// At 1,280 and 1,900 px too, checked for clipping.
			b.look(p.name, ready)
		}
		if p.name == "runs" {
			// At either width no row of the list grows tall (cells
			// squeezed to a few characters a line).
			for _, w := range widths {
				b.resize(w)
				b.wait(`document.querySelectorAll('table.runs tbody tr').length >= 34`)
				if h := eval[float64](b, `Math.max(...[...document.querySelectorAll('table.runs tbody tr')].map(tr => tr.getBoundingClientRect().height))`); h > 80 {
					t.Errorf("at %d px a row of the runs list is %.0f px high", w, h)
				}
				// Every column fits the window: the list does not scroll sideways.
				if over := eval[float64](b, `document.querySelector('table.runs').scrollWidth - document.querySelector('table.runs').parentElement.clientWidth`); over > 0 {
					t.Errorf("at %d px the runs list is %.0f px wider than its card", w, over)
				}
			}
			// At 1,900 px every column of the list is in the window.
			b.resize(1900)
			b.wait(`document.querySelectorAll('table.runs tbody tr').length >= 34`)
			if out := eval[[]string](b, `[...document.querySelectorAll('table.runs thead th')].filter(th => th.getBoundingClientRect().right > document.documentElement.clientWidth).map(th => th.innerText)`); len(out) > 0 {
				t.Errorf("at 1,900 px these columns of the runs list are outside the window: %v", out)
			}
			b.resize(1360)
		}
		b.clean(p.name)
		t.Logf("page %-18s loaded and drawn in %4d ms", p.name, d.Milliseconds())
	}
	// report.html opens on its own (served as the view serves it: no
	// script, nothing fetched) with its charts drawn.
	d := b.open(ts.URL+"/api/file?id="+f.panel+"&name=report.html", `document.querySelectorAll('svg').length === 3`)
	b.shot("report-html")
	b.clean("report.html")
	t.Logf("page %-18s loaded and drawn in %4d ms", "report.html", d.Milliseconds())
	t.Logf("screenshots in %s", b.shots)
}

// TestLiveRunInBrowser opens a run's page as the run starts and watches it:
// messages must appear while the run goes, the running node must be marked
// in the flow, and the page must end with every message of the result.
func TestLiveRunInBrowser(t *testing.T) {
	b := newBrowser(t)
	root := t.TempDir()
	r, done := liveHiring(t, root, 120*time.Millisecond, "Jane Doe: ten years of Go.")
	ts := serve(t, root)
	id := filepath.Base(r.Dir)
	b.open(ts.URL+"/#/run/"+id, `window.__viewStats && window.__viewStats.caughtUp`)
	running := `document.body.dataset.status === 'running'`
	if !eval[bool](b, running) {
		t.Fatalf("the page of a run that has just started says %q", eval[string](b, `document.body.dataset.status`))
	}
	// Watch it grow while the run goes.
	var seen []int
	marked, inFlight := false, false
	for i := 0; i < 400; i++ {
		n := eval[int](b, `document.querySelectorAll('#transcript .msg').length`)
		if len(seen) == 0 || n != seen[len(seen)-1] {
			seen = append(seen, n)
		}
		marked = marked || eval[bool](b, `document.querySelectorAll('svg.flow .flow-node.running').length > 0`)
		// The header and the Calls tab count the same calls (answered,
		// and in flight) at every moment.
		counts := eval[[]string](b, `(() => { const st = [...document.querySelectorAll('.stat')].find(s => s.querySelector('span').innerText.toLowerCase() === 'calls'); const tab = document.querySelector('#tab-calls .n');
		  return [st ? st.querySelector('b').innerText.match(/\d+/g).join(" ") : "", tab ? tab.innerText.match(/\d+/g).join(" ") : ""]; })()`)
		if counts[0] != counts[1] {
			t.Errorf("the header counts calls %q, the Calls tab %q", counts[0], counts[1])
		}
		if strings.Contains(counts[0], " ") {
			inFlight = true
		}
		if len(seen) == 4 {
			b.shot("live-running")
		}
		if !eval[bool](b, running) {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	res := <-done
	if res.Status != result.StatusCompleted {
		t.Fatalf("run: %s %s", res.Status, res.Error)
	}
	if len(seen) < 5 {
		t.Errorf("the transcript grew in %d steps while the run went (%v); it did not follow the run", len(seen), seen)
	}
	if !marked {
		t.Error("the running node was never marked in the flow")
	}
	if !inFlight {
		t.Error("no call was ever shown in flight")
	}
	public := 0
	for _, m := range res.Messages {
		if !m.Private {
			public++
		}
	}
	b.wait(fmt.Sprintf(`document.body.dataset.status === 'completed' && document.querySelectorAll('#transcript .msg:not(.rejected)').length === %d`, public))
	b.shot("live-finished")
	b.clean("live run")
	type viewStats struct {
		Live   int
		Lags   []float64
		MaxLag float64
	}
	st := eval[viewStats](b, `window.__viewStats`)
	if st.Live == 0 {
		t.Fatal("no event arrived live")
	}
	sort.Float64s(st.Lags)
	t.Logf("live run: the transcript grew in %d steps; %d events shown live; delay from journal to page: median %.0f ms, 95th percentile %.0f ms, max %.0f ms",
		len(seen), st.Live, st.Lags[len(st.Lags)/2], st.Lags[len(st.Lags)*95/100], st.MaxLag)
}
