package view_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/callview"
	"github.com/debate-runner/runner/runtime/spectest"
)

// widths are the window widths every page is looked at and kept at.
var widths = []int64{1280, 1900}

// resize sets the window's width (the height stays 900).
func (b *browser) resize(w int64) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(w, 900)); err != nil {
		b.t.Fatalf("resize to %d: %v", w, err)
	}
}

// clipped lists what a page cuts off: an element whose content is wider
// than its box though neither it nor a box around it scrolls (text cut
// with an ellipsis on purpose aside), and elements that reach past the
// window's right edge outside a scrolling box.
const clippedJS = `(() => {
  const out = [];
  const vw = document.documentElement.clientWidth;
  const scrolls = e => { for (let p = e; p && p !== document.body; p = p.parentElement) { const o = getComputedStyle(p).overflowX; if (o === "auto" || o === "scroll") return true; } return false; };
  const name = e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (typeof e.className === "string" && e.className ? "." + e.className.trim().split(/\s+/).join(".") : "");
  for (const e of document.querySelectorAll("main *, header *")) {
    if (e.closest("svg") && e.tagName.toLowerCase() !== "svg") continue;
    const cs = getComputedStyle(e);
    if (cs.display === "none" || cs.visibility === "hidden" || cs.position === "sticky") continue;
    if (e.closest("details:not([open])") && e.tagName.toLowerCase() !== "details" && e.tagName.toLowerCase() !== "summary") continue;
    const r = e.getBoundingClientRect();
    if (!r.width) continue;
    if (e.clientWidth && e.scrollWidth > e.clientWidth + 1 && cs.textOverflow !== "ellipsis" && !scrolls(e)) out.push(name(e) + " content " + e.scrollWidth + " px in a box of " + e.clientWidth);
    else if (r.right > vw + 1 && !scrolls(e)) out.push(name(e) + " reaches " + Math.round(r.right) + " px in a window of " + vw);
    if (out.length >= 6) break;
  }
  return out;
})()`

// look screenshots the page at every width and fails on what it clips.
// ready is waited for after each resize.
func (b *browser) look(name, ready string) {
	b.t.Helper()
	for _, w := range widths {
		b.resize(w)
		b.wait(ready)
		// Let the page lay out at the new width.
		b.wait(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`)
		b.shot(fmt.Sprintf("%s-%d", name, w))
		if bad := eval[[]string](b, clippedJS); len(bad) > 0 {
			b.t.Errorf("%s at %d px clips: %s", name, w, strings.Join(bad, "; "))
		}
		if w >= 1900 {
			// With room to spare no table hides columns behind a
			// sideways scroll.
			if wide := eval[[]string](b, `[...document.querySelectorAll('main .tablewrap')].filter(d => d.offsetParent && !d.closest('.outputs, .body') && d.scrollWidth > d.clientWidth + 1).map(d => d.querySelector('th') ? d.querySelector('th').parentElement.innerText.replace(/\s+/g, ' ').slice(0, 60) : '?')`); len(wide) > 0 {
				b.t.Errorf("%s at %d px: tables wider than their cards: %v", name, w, wide)
			}
		}
	}
	b.resize(1360)
}

// keptExample runs an example's spec test with its scripted replies and
// keeps the run directories under a runs folder the view serves.
func keptExample(t *testing.T, example, pattern string) (root string, runs []string) {
	t.Helper()
	root = t.TempDir()
	files := []string{filepath.Join("../../examples", example, "spec.test.yaml")}
	var opts spectest.Options
	opts.Registry, opts.RunsDir, opts.Parallel = nodes.Registry(), root, 1
	if pattern != "" {
		opts.Run = regexp.MustCompile(pattern)
	}
	for _, f := range spectest.Run(context.Background(), files, opts) {
		if f.Err != nil {
			t.Fatalf("%s: %v", f.Path, f.Err)
		}
		for _, c := range f.Cases {
			if !c.Passed {
				t.Fatalf("%s: case %s failed: %v", f.Path, c.Name, c.Failures)
			}
			rel, err := filepath.Rel(root, c.RunDir)
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, filepath.ToSlash(rel))
		}
	}
	if len(runs) == 0 {
		t.Fatalf("%s: no case ran", example)
	}
	return root, runs
}

// TestCallPageInBrowser opens the design debate's runs (its spec test's
// scripted replies, kept) in the view: the flow fits its panel, a node of
// the flow lists its calls, every call of the run opens on its page with
// the messages it sent, its reply and its parsed output, a repaired
// reply's page names the repair, and the transcript links each message to
// its call. Every page is kept at 1,280 and 1,900 px and checked for
// clipping.
func TestCallPageInBrowser(t *testing.T) {
	root, runs := keptExample(t, "design-debate", "a_confident_judge|is_repaired")
	b := newBrowser(t)
	ts := serve(t, root)
	base := ts.URL + "/#"
	var confident, repaired string
	for _, r := range runs {
		if strings.Contains(r, "confident") {
			confident = r
		} else {
			repaired = r
		}
	}
	run, err := callview.Read(filepath.Join(root, filepath.FromSlash(confident)))
	if err != nil {
		t.Fatal(err)
	}

	ready := `window.__viewStats.caughtUp && document.body.dataset.status === 'completed'`
	b.open(base+"/run/"+confident, ready)
	// The flow fits: every node is inside the flow's panel.
	outside := eval[[]string](b, `(() => { const box = document.querySelector('.flowbox').getBoundingClientRect();
	  return [...document.querySelectorAll('svg.flow [data-node]')].filter(g => { const r = g.getBoundingClientRect(); return r.right > box.right + 1 || r.left < box.left - 1 || r.bottom > box.bottom + 1 || r.top < box.top - 1; }).map(g => g.getAttribute('data-node')); })()`)
	if len(outside) > 0 {
		t.Errorf("flow nodes outside the panel: %v", outside)
	}
	if n := eval[int](b, `document.querySelectorAll('svg.flow [data-node=synthesize]').length`); n != 1 {
		t.Errorf("synthesize is not in the flow")
	}
	// Outputs: the lists of the synthesis render as tables or lists, not JSON text.
	b.look("example-run", ready)
	// The transcript links a message to its call.
	link := eval[string](b, `(document.querySelector('#transcript a.calllink') || {}).href || ''`)
	if link == "" {
		t.Fatal("no message of the transcript links to its call")
	}

	// A node of the flow lists its calls.
	eval[bool](b, `(() => { document.querySelector('svg.flow [data-node=critique]').dispatchEvent(new MouseEvent('click', {bubbles: true})); return true; })()`)
	b.wait(`location.hash.includes('node=critique') && document.querySelectorAll('#pane tbody tr').length === 6`)
	b.look("example-calls-critique", `document.querySelectorAll('#pane tbody tr').length === 6`)

	// The header and the Calls tab count the same calls.
	b.open(base+"/run/"+confident+"?tab=calls", ready)
	header := eval[string](b, `[...document.querySelectorAll('.stat')].find(s => s.innerText.toLowerCase().includes('calls')).querySelector('b').innerText`)
	tab := eval[string](b, `document.querySelector('#tab-calls .n').innerText`)
	rows := eval[int](b, `document.querySelectorAll('#pane tbody tr').length`)
	if header != tab || header != fmt.Sprint(len(run.Calls)) || rows != len(run.Calls) {
		t.Errorf("calls: header %s, tab %s, %d rows; the journal has %d", header, tab, rows, len(run.Calls))
	}

	// Every call opens on its page.
	hrefs := eval[[]string](b, `[...document.querySelectorAll('#pane tbody tr a.callkey')].map(a => a.getAttribute('href'))`)
	for i, c := range run.Calls {
		b.open(ts.URL+"/"+hrefs[i], `document.body.dataset.page === 'call' && document.querySelector('#call-messages') !== null`)
		if got := eval[string](b, `document.querySelector('h1 .callkey').innerText`); got != c.Key {
			t.Errorf("call %d: the page shows %q, want %q", i+1, got, c.Key)
		}
		if n := eval[int](b, `document.querySelectorAll('#call-messages .cmsg').length`); n != len(c.Messages) || n == 0 {
			t.Errorf("%s: %d messages on the page, the journal has %d", c.Key, n, len(c.Messages))
		}
		texts := eval[string](b, `document.querySelector('#call-messages').innerText`)
		for _, m := range c.Messages {
			first := strings.TrimSpace(strings.SplitN(strings.TrimSpace(m.Text), "\n", 2)[0])
			if first == "" || !strings.Contains(texts, first) {
				t.Errorf("%s: the %s message's text (%q) is not shown", c.Key, m.Role, first)
			}
		}
		if got := eval[string](b, `document.querySelector('#call-reply').innerText`); !strings.Contains(got, strings.TrimSpace(strings.SplitN(c.Reply, "\n", 2)[0])) {
			t.Errorf("%s: the reply is not shown: %q", c.Key, got)
		}
		if len(c.Output) > 0 && eval[int](b, `document.querySelectorAll('#call-output table, #call-output pre, #call-output .body').length`) == 0 {
			t.Errorf("%s: the parsed output is not shown", c.Key)
		}
		stats := eval[string](b, `document.querySelector('#call-stats').innerText`)
		if !strings.Contains(stats, "network") || !strings.Contains(stats, fmt.Sprint(c.PromptTokens)) {
			t.Errorf("%s: source and tokens are not shown: %q", c.Key, stats)
		}
		if c.Key == "synthesize/-/judge" {
			// A parsed JSON output is a table of its fields.
			if got := eval[string](b, `document.querySelector('#call-output table') ? document.querySelector('#call-output table').innerText : ''`); !strings.Contains(got, "tradeoffs") || !strings.Contains(got, "eventual consistency of click counts") {
				t.Errorf("the synthesis's parsed output is not a table of its fields: %q", got)
			}
			b.look("call-synthesize", `document.body.dataset.page === 'call'`)
		}
		b.clean("call " + c.Key)
	}

	// A reply the parser refused: its page says why and links the repair.
	key := "evaluate/round=1/judge"
	b.open(base+"/call?"+url.Values{"run": {repaired}, "key": {key}}.Encode(), `document.querySelector('#call-repairs') !== null`)
	got := eval[string](b, `document.querySelector('#call-repairs').innerText`)
	if !strings.Contains(got, "not valid JSON") || !strings.Contains(got, key+"#repair1") {
		t.Errorf("the repair is not explained: %q", got)
	}
	b.look("call-repaired", `document.querySelector('#call-repairs') !== null`)
	eval[bool](b, `(() => { document.querySelector('#call-repairs a').click(); return true; })()`)
	b.wait(`document.querySelector('h1 .callkey') && document.querySelector('h1 .callkey').innerText.endsWith('#repair1')`)
	if got := eval[string](b, `document.querySelector('#call-about').innerText`); !strings.Contains(got, "repair of") {
		t.Errorf("the repair's page does not say what it repairs: %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('#call-messages .cmsg').length`); n != 4 {
		t.Errorf("the repair sent %d messages, want 4 (the request, the refused reply, the repair prompt)", n)
	}
	b.clean("repaired call")
	t.Logf("%d calls of the design debate opened on their pages; screenshots in %s", len(run.Calls), b.shots)
}
