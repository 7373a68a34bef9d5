package view_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime/result"
)

// press sends a key to the page as a person's keyboard does.
func (b *browser) press(key string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.KeyEvent(key)); err != nil {
		b.t.Fatal(err)
	}
}

// tabThrough presses Tab from the top of the page until the focus has
// gone round every control it can reach (at most limit presses) and
// reports the ids (or labels) of the controls of within it reached, in
// order.
func (b *browser) tabThrough(within string, limit int) []string {
	b.t.Helper()
	eval[bool](b, `(() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); return true; })()`)
	var got []string
	for i := 0; i < limit; i++ {
		b.press(kb.Tab)
		id := eval[string](b, `(() => { const a = document.activeElement; if (!a || !a.closest(`+strconvQuote(within)+`)) return ""; return a.id || a.getAttribute("aria-label") || a.innerText.trim(); })()`)
		if id != "" && (len(got) == 0 || got[len(got)-1] != id) {
			if len(got) > 0 && got[0] == id {
				break // round again
			}
			got = append(got, id)
		}
	}
	return got
}

// controls lists the ids (or labels) of the controls of within, in the
// order of the page.
func controls(b *browser, within string) []string {
	return eval[[]string](b, `[...document.querySelectorAll(`+strconvQuote(within+" textarea, "+within+" input, "+within+" select, "+within+" button, "+within+" a[href]")+`)].filter(c => c.offsetParent !== null).map(a => a.id || a.getAttribute("aria-label") || a.innerText.trim())`)
}

// steerInBrowser drives, with the keyboard where a person would, what
// the page does to runs besides starting and answering them: a run of the
// single-agent protocol against the local OpenAI-compatible server is
// started from the form, cancelled from its page while its call waits
// (it stops, resumable) and resumed from its page to its end; a sweep
// over a dataset is started from the same form and its page shows its
// runs end one by one; a study of the folder is started from the start
// page, which opens its page; a question a terminal asks as its run goes
// is answered on the run's page first, and the terminal told.
// (TestStartAndAnswerInBrowser calls it, with its browser.)
func steerInBrowser(t *testing.T, b *browser) {
	began := time.Now()
	lap := func(what string) { t.Logf("%s at %v", what, time.Since(began).Round(time.Millisecond)) }
	root := t.TempDir()
	specs := sweepSpecs(t, 3)
	hold, items := make(chan struct{}), make(chan struct{})
	var holdOnce, itemsOnce sync.Once
	release := func() { holdOnce.Do(func() { close(hold) }) }
	allItems := func() { itemsOnce.Do(func() { close(items) }) }
	t.Cleanup(release)
	t.Cleanup(allItems)
	step := make(chan struct{})
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		text := ""
		for _, m := range r.Messages {
			text += m.Content
		}
		switch {
		case strings.Contains(text, "hold"):
			select {
			case <-hold:
			case <-time.After(20 * time.Second):
			}
		case strings.Contains(text, "Which is"):
			select {
			case <-items:
			case <-step:
			case <-time.After(20 * time.Second):
			}
		}
		return llmtest.Reply{Content: "A"}
	})
	ts, v := actingServer(t, root, specs, runtest.Env(srv.URL, "sk-view-test"))
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/?token="+testToken+"#/start?spec=single/spec.yaml")); err != nil {
		t.Fatal(err)
	}
	b.wait(`document.querySelector('#start-form #in-question') !== null`)

	// The form, with the keyboard alone: Tab reaches every control of it
	// in the page's order, each says what it is, and Enter in a field
	// sends it.
	want := controls(b, "#start-form")
	if got := b.tabThrough("#start-form", 3*len(want)+10); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Tab reaches the start form's controls as\n%v\nnot in the page's order\n%v", got, want)
	}
	if bad := eval[[]string](b, unlabelled("#start-form")); len(bad) > 0 {
		t.Errorf("controls of the start form without a label or out of the keyboard's reach: %v", bad)
	}
	if bad := eval[[]string](b, unlabelled("#studies")); len(bad) > 0 {
		t.Errorf("the studies' buttons without a label: %v", bad)
	}
	eval[bool](b, `(() => { document.querySelector('#in-question').value = 'Which number is prime? hold'; document.querySelector('#in-options').value = '4\n7'; document.querySelector('#seed').focus(); return true; })()`)
	lap("tabbed")
	b.press(kb.Enter)
	b.wait(`location.hash.startsWith('#/run/') && document.querySelector('#cancel') !== null`)
	id := strings.TrimPrefix(eval[string](b, `location.hash`), "#/run/")
	dir := filepath.Join(root, id)

	// Cancel, from the keyboard: the run stops, not completed, and offers
	// to resume.
	eval[bool](b, `(() => { document.querySelector('#cancel').focus(); return true; })()`)
	b.press(kb.Enter)
	b.wait(`document.querySelector('#resume') !== null`)
	v.Wait()
	if res, err := result.Read(dir); err == nil && res.Status == result.StatusCompleted {
		t.Fatal("the cancelled run completed")
	}
	b.shot("act-cancelled")
	release()
	eval[bool](b, `(() => { document.querySelector('#resume').focus(); return true; })()`)
	b.press(kb.Enter)
	b.wait(`window.__viewStats.caughtUp && document.body.dataset.status === 'completed'`)
	v.Wait()
	if res, err := result.Read(dir); err != nil || res.Status != result.StatusCompleted || res.Outputs["answer"] != "A" {
		t.Fatalf("the run resumed from the page: %v %v", res, err)
	}
	b.clean("cancel and resume")
	lap("cancelled and resumed")

	// A sweep over the folder's dataset, from the same form: its page
	// shows each run as it ends.
	b.open(ts.URL+"/#/start?spec=single/spec.yaml", `document.querySelector('#start-form #dataset') !== null`)
	if got := eval[[]string](b, `[...document.querySelectorAll('#dataset-files option')].map(o => o.value)`); !strings.Contains(strings.Join(got, ","), "data/items.jsonl") {
		t.Errorf("the dataset's choices: %v", got)
	}
	eval[bool](b, `(() => { document.querySelector('#dataset').value = 'data/items.jsonl'; document.querySelector('#parallel').value = '1'; document.querySelector('#start').click(); return true; })()`)
	b.wait(`document.body.dataset.page === 'sweep' && document.body.dataset.pending === '3' && document.querySelector('#cancel') !== null`)
	step <- struct{}{}
	b.wait(`document.body.dataset.page === 'sweep' && document.body.dataset.pending === '2'`)
	b.docShot("view-sweep")
	allItems()
	b.wait(`document.body.dataset.page === 'sweep' && document.body.dataset.pending === '0'`)
	b.wait(`document.querySelector('#cancel') === null && document.querySelectorAll('table.runs tbody tr').length === 3`)
	v.Wait()
	b.clean("sweep")
	lap("swept")

	// A study of the folder, from the start page.
	b.open(ts.URL+"/#/start", `document.querySelector('#studies button[data-study]') !== null`)
	eval[bool](b, `(() => { document.querySelector('#studies button[data-study]').focus(); return true; })()`)
	b.press(kb.Enter)
	b.wait(`document.body.dataset.page === 'study' && document.querySelector('#study-pending, #study-chart') !== null`)
	v.Wait() // (TestSweepAndStudyFromTheView checks the study's table)
	b.clean("study")
	lap("studied")
	if code, _ := get(t, ts, "/api/runs"); code != http.StatusOK {
		t.Errorf("/api/runs: %d", code)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 3 {
		t.Errorf("the runs folder holds %d entries: want the run, the sweep and the study", len(entries))
	}

	// A run made at a terminal asks its questions there as it goes; its
	// page shows the question asked, answered here first, and the
	// terminal says so and goes on with the next.
	r, typed, said, ended := runAtTerminal(t, root)
	b.open(ts.URL+"/#/run/"+filepath.Base(r.Dir), `document.querySelector('#answer-form textarea[data-question]') !== null`)
	if got := eval[string](b, `document.querySelector('#answer-form').innerText`); !strings.Contains(got, "A terminal asks this") {
		t.Errorf("the form of a question asked at a terminal: %q", got)
	}
	first := eval[string](b, `document.querySelector('#answer-form textarea[data-question]').dataset.question`)
	eval[bool](b, `(() => { document.querySelector('#answer-form textarea[data-question]').value = 'From the page: 100 a second'; document.querySelector('#answer').click(); return true; })()`)
	// The page shows the next question the terminal asks.
	b.wait(`document.querySelector('#answer-form textarea[data-question]') !== null && document.querySelector('#answer-form textarea[data-question]').dataset.question !== ` + strconvQuote(first))
	b.clean("a question asked at a terminal")
	go func() {
		for {
			if _, err := io.WriteString(typed, "From the terminal\n"); err != nil {
				return
			}
		}
	}()
	res := <-ended
	if res == nil || res.Status != result.StatusCompleted {
		t.Fatalf("the run answered from the page and the terminal: %+v", res)
	}
	if !strings.Contains(said.String(), "(answered from the page: From the page: 100 a second)") {
		t.Errorf("the terminal did not say the page answered:\n%s", said.String())
	}
	lap("answered a terminal's question")
}
