package view_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/view"
)

func strconvQuote(s string) string { return strconv.Quote(s) }

// statusLog records the status of every API answer a page asked for.
type statusLog struct {
	mu  sync.Mutex
	bad []string
}

func (l *statusLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &codeRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		if rec.code >= 400 && r.Method == http.MethodGet {
			l.mu.Lock()
			l.bad = append(l.bad, fmt.Sprintf("%s %d", r.URL.RequestURI(), rec.code))
			l.mu.Unlock()
		}
	})
}

func (l *statusLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.bad
	l.bad = nil
	return out
}

type codeRecorder struct {
	http.ResponseWriter
	code int
}

func (c *codeRecorder) WriteHeader(code int) {
	c.code = code
	c.ResponseWriter.WriteHeader(code)
}

func (c *codeRecorder) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// cleanBut is clean, but for errors that say want: the refusals a test
// asked for (a browser logs every refused request).
func (b *browser) cleanBut(page, want string) {
	b.t.Helper()
	b.mu.Lock()
	var keep []string
	for _, e := range b.errors {
		if !strings.Contains(e, want) {
			keep = append(keep, e)
		}
	}
	b.errors = keep
	b.mu.Unlock()
	b.clean(page)
}

// docShot writes a screenshot of the window at the size of the manual's
// pictures (960 x 1088) to $RUNNER_DOCS_SCREENSHOTS, when set: the
// pictures in docs/ are made so (see docs/view.md).
func (b *browser) docShot(name string) {
	b.t.Helper()
	dir := os.Getenv("RUNNER_DOCS_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(960, 1088)); err != nil {
		b.t.Fatal(err)
	}
	b.wait(`new Promise(r => { window.scrollTo(0, 0); requestAnimationFrame(() => requestAnimationFrame(() => r(true))); })`)
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(1360, 900)); err != nil {
		b.t.Fatal(err)
	}
}

// unlabelled lists the controls of a form that the keyboard cannot reach
// (a negative tab index, disabled) or that have no label (a <label>,
// aria-label, or a button's text).
func unlabelled(form string) string {
	return `[...document.querySelectorAll('` + form + ` textarea, ` + form + ` input, ` + form + ` select, ` + form + ` button')]
	  .filter(c => c.tabIndex < 0 || c.disabled || !((c.labels && c.labels.length) || c.getAttribute('aria-label') || (c.tagName === 'BUTTON' && c.innerText.trim())))
	  .map(c => c.outerHTML.slice(0, 80))`
}

// TestStartAndAnswerInBrowser drives the view as a user without a
// terminal: from the address runner view prints (with its token) to the
// start form of design-debate; the form's problems are said at their
// fields; the run starts on the offline model, waits for its clarifying
// questions, which are answered in the page, and finishes. Then: the
// compare page asks for nothing that is not there, and a cost chart of
// cents fills its width.
func TestStartAndAnswerInBrowser(t *testing.T) {
	b := newBrowser(t)
	root := t.TempDir()
	log := &statusLog{}
	ts, v := actingServer(t, root, designDebate(t), nil, log.wrap)

	// The address runner view prints carries the token; the page keeps it
	// and takes it out of the address bar.
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/?token="+testToken+"#/")); err != nil {
		t.Fatal(err)
	}
	b.wait(`document.querySelector('#start-link') !== null`)
	if got := eval[string](b, `location.href`); strings.Contains(got, "token") {
		t.Errorf("the token stays in the address bar: %s", got)
	}
	b.shot("act-runs")
	eval[bool](b, `(() => { document.querySelector('#start-link').click(); return true; })()`)
	b.wait(`document.body.dataset.page === 'start' && document.querySelector('#start-form #in-problem') !== null`)
	if got := eval[[]string](b, `[...document.querySelectorAll('#start-form [data-var]')].map(c => c.dataset.var + '=' + (c.type === 'checkbox' ? c.checked : c.value))`); !strings.Contains(strings.Join(got, ","), "max_rounds=3") || !strings.Contains(strings.Join(got, ","), "clarify=true") {
		t.Errorf("the vars with their defaults: %v", got)
	}
	if got := eval[string](b, `document.querySelector('#start-form').innerText`); strings.Contains(got, "OPENAI_API_KEY") || strings.Contains(got, "api_key") {
		t.Errorf("the form names a key: %s", got)
	}

	// Every control of the form is reached with the keyboard and says
	// what it is.
	if bad := eval[[]string](b, unlabelled("#start-form")); len(bad) > 0 {
		t.Errorf("controls of the start form without a label or out of the keyboard's reach: %v", bad)
	}

	// Nothing filled in: the required input is said at its field, and
	// nothing starts.
	submit := `(() => { document.querySelector('#start').click(); return true; })()`
	eval[bool](b, submit)
	b.wait(`document.querySelector('.field-error[data-field="input:problem"]').innerText === 'required'`)
	if got := eval[string](b, `document.activeElement.id`); got != "in-problem" {
		t.Errorf("the focus is on %q, not on the field in error", got)
	}
	// A budget the CLI refuses is refused at its field, in the CLI's words;
	// a context file over the limit at its own.
	eval[bool](b, `(() => { document.querySelector('#in-problem').value = 'A URL shortener for 100 requests a second'; document.querySelector('#budget').value = 'dollars=3';
	  const dt = new DataTransfer(); dt.items.add(new File([new Uint8Array(`+fmt.Sprint(view.MaxUploadFile+1)+`)], 'big.bin')); document.querySelector('#context-files').files = dt.files; return true; })()`)
	eval[bool](b, submit)
	b.wait(`document.querySelector('.field-error[data-field="budget"]').innerText.includes('is no limit') && document.querySelector('.field-error[data-field="files"]').innerText.includes('big.bin')`)
	if got := eval[string](b, `document.querySelector('.field-error[data-field="input:problem"]').innerText`); got != "" {
		t.Errorf("the fixed field still says %q", got)
	}
	b.shot("act-start-form")
	b.cleanBut("start form", "422 (Unprocessable Entity)")
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("a refused form left %d entries in the runs folder", len(entries))
	}

	eval[bool](b, `(() => { const dt = new DataTransfer(); dt.items.add(new File(['the notes say 42'], 'notes.md')); document.querySelector('#context-files').files = dt.files; return true; })()`)
	eval[bool](b, `(() => { document.querySelector('#budget').value = 'cost=0.50'; for (const e of document.querySelectorAll('.field-error')) e.textContent = ''; for (const e of document.querySelectorAll('.invalid')) e.classList.remove('invalid'); return true; })()`)
	b.docShot("view-start")

	// Fixed, on the offline model, one round: the run starts and the page
	// follows it to its questions.
	eval[bool](b, `(() => { document.querySelector('#budget').value = 'calls=200'; const r = document.querySelector('#var-max_rounds'); r.value = '1'; document.querySelector('#all-offline').click(); return true; })()`)
	eval[bool](b, submit)
	b.wait(`document.body.dataset.status === 'waiting' && document.querySelectorAll('#answer-form textarea').length === 3`)
	id := strings.TrimPrefix(eval[string](b, `location.hash`), "#/run/")
	dir := filepath.Join(root, id)
	if res, err := result.Read(dir); err != nil || res.Status != result.StatusWaiting {
		t.Fatalf("the run started from the form: %v %v", res, err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "context", "notes.md")); string(data) != "the notes say 42" {
		t.Errorf("the context file picked in the form: %q %v", data, err)
	}
	if got := eval[string](b, `document.querySelector('#answer-form').innerText`); !strings.Contains(got, "architect asks") {
		t.Errorf("the questions are not shown with who asks: %q", got)
	}
	b.shot("act-questions")
	if bad := eval[[]string](b, unlabelled("#answer-form")); len(bad) > 0 {
		t.Errorf("controls of the answer form without a label or out of the keyboard's reach: %v", bad)
	}
	b.docShot("view-answer")
	// The clarify node may ask again after the answers: answer until the
	// run finishes.
	answered := 0
	for round := 0; ; round++ {
		if round == 5 {
			t.Fatalf("the run still asks after %d rounds of answers", round)
		}
		eval[bool](b, `(() => { let i = 0; for (const t of document.querySelectorAll('#answer-form textarea')) t.value = 'Answer ' + (++i) + ': about 100 requests a second'; document.querySelector('#answer-form').dataset.sent = '1'; document.querySelector('#answer').click(); return true; })()`)
		answered++
		b.wait(`window.__viewStats.caughtUp && (document.body.dataset.status === 'completed' || (document.body.dataset.status === 'waiting' && document.querySelectorAll('#answer-form:not([data-sent]) textarea').length > 0))`)
		if eval[string](b, `document.body.dataset.status`) == "completed" {
			break
		}
	}
	// Once finished, the page offers nothing to do: no answers, no cancel.
	b.wait(`document.querySelector('#answer-form') === null && document.querySelector('#cancel') === null && document.querySelector('#actions').children.length === 0`)
	t.Logf("answered %d rounds of questions in the page", answered)
	v.Wait()
	res, err := result.Read(dir)
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("the answered run: %v %v", res, err)
	}
	journal, _ := os.ReadFile(filepath.Join(dir, "journal.jsonl"))
	if !strings.Contains(string(journal), "Answer 2: about 100 requests a second") {
		t.Error("the answers given in the page are not in the run's journal")
	}
	b.shot("act-finished")
	b.clean("answered run")

	// The list says what the run's page says.
	b.open(ts.URL+"/#/", `document.querySelectorAll('table.runs tbody tr').length === 1`)
	if got := eval[string](b, `document.querySelector('table.runs [data-col=calls]').innerText`); got != fmt.Sprint(res.Usage.Total.Calls) {
		t.Errorf("the list counts %s calls, the result %d", got, res.Usage.Total.Calls)
	}

	// Compare asks for a sweep only where there is one.
	log.take()
	b.open(ts.URL+"/#/compare?a="+id+"&b="+id, `document.querySelectorAll('.cols .msg').length > 0`)
	if bad := log.take(); len(bad) > 0 {
		t.Errorf("the compare page of two runs asked for what is not there: %v", bad)
	}
	b.clean("compare")

	// A seat a person plays: a debate of testdata/seat.yaml on the
	// offline model waits for the person's turn; the page shows the
	// prompt the agent's model would get and a box for the message; the
	// message sent goes into the next turn's history, and the run ends.
	seatPlan := runtest.LoadPlan(t, filepath.Join("..", "testdata", "seat.yaml"))
	offline, err := args.Offline(seatPlan)
	if err != nil {
		t.Fatal(err)
	}
	seatRun, seatRes := execute(t, seatPlan, runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=Tabs or spaces?"}, Models: offline}},
		Settings: runtime.Settings{RunsDir: root, Getenv: func(string) string { return "" }},
	})
	if seatRes.Status != result.StatusWaiting {
		t.Fatalf("the seat's run: %s %s", seatRes.Status, seatRes.Error)
	}
	seatID := filepath.Base(seatRun.Dir)
	b.open(ts.URL+"/#/run/"+seatID, `document.querySelector('#answer-form [data-turn] textarea') !== null`)
	if got := eval[string](b, `document.querySelector('#answer-form [data-turn]').innerText`); !strings.Contains(got, "You are You, in a debate on: Tabs or spaces?") || !strings.Contains(got, "Your message as You") {
		t.Errorf("the turn shown: %q", got)
	}
	if bad := eval[[]string](b, unlabelled("#answer-form")); len(bad) > 0 {
		t.Errorf("controls of the turn's form without a label or out of the keyboard's reach: %v", bad)
	}
	b.shot("act-seat")
	b.docShot("view-seat")
	for i, msg := range []string{"Spaces: a file reads the same everywhere.", "Tabs let each reader choose, yet spaces still win."} {
		eval[bool](b, `(() => { const t = document.querySelector('#answer-form [data-turn] textarea'); t.value = `+strconvQuote(msg)+`; document.querySelector('#answer-form').dataset.sent = '1'; document.querySelector('#answer').click(); return true; })()`)
		if i == 0 {
			// The next turn of the person shows the message in its history.
			b.wait(`window.__viewStats.caughtUp && document.querySelector('#answer-form:not([data-sent]) [data-turn]') !== null`)
			if got := eval[string](b, `document.querySelector('#answer-form [data-turn] .turn-prompt').innerText`); !strings.Contains(got, "you: "+msg) {
				t.Errorf("the next turn's history lacks the message sent: %q", got)
			}
		}
	}
	b.wait(`window.__viewStats.caughtUp && document.body.dataset.status === 'completed'`)
	v.Wait()
	if res, err := result.Read(seatRun.Dir); err != nil || res.Status != result.StatusCompleted || res.Messages[2].Content != "Tabs let each reader choose, yet spaces still win." {
		t.Fatalf("the seat's run after two turns in the page: %v %v", res, err)
	}
	b.clean("seat")

	// A chart of costs under $1 is drawn to its scale, not as slivers.
	w := eval[float64](b, `(() => { const d = Charts.stacked([{label: 'a', segments: [{value: 0.02, color: '#000', label: 'cost'}]}, {label: 'b', segments: [{value: 0.01, color: '#000', label: 'cost'}]}], {width: 300, labelWidth: 150, inside: false}); document.body.append(d); const w = +d.querySelector('rect').getAttribute('width'); d.remove(); return w; })()`)
	if w < 299 {
		t.Errorf("the largest of two costs under $1 is %.1f px of 300", w)
	}

	steerInBrowser(t, b)
}
