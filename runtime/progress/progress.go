// Package progress shows what a run is doing, on a terminal or in a log:
// a line per node started and finished, retries, warnings and failures, or
// one live status line redrawn in place, or every journal event as a JSON
// line. The engine only reports notices (runtime.Notice); the command
// chooses how they are shown.
package progress

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime"
)

// Mode selects how progress is shown.
type Mode int

// Progress modes.
const (
	Quiet Mode = iota
	Plain      // one line per node and per warning
	Live       // a status line redrawn in place (terminals)
	JSON       // every journal event as a JSON line, nothing else
)

// DefaultWidth is the width of a live line when the terminal's is unknown.
const DefaultWidth = 80

// Options tune a progress display.
type Options struct {
	// Width returns the terminal's width in columns, asked before every
	// redraw of the live line so that a resized terminal is followed; nil
	// or a result below 1 means DefaultWidth.
	Width func() int
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// New returns an observer for runtime.Options.Observer that shows progress
// on w in the given mode.
func New(w io.Writer, mode Mode, opts Options) func(runtime.Notice) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	p := &display{w: w, mode: mode, opts: opts, start: opts.Now(), calls: map[string]*calls{}, retrying: map[string]*retrying{}}
	return p.observe
}

// Line writes one JSON line that is no journal event (the run directory,
// where calls came from, the error a command ended with), so that --json
// output stays JSON from its first line to its last: {"type": ..., "data":
// ...}, without the seq that journal events have.
func Line(w io.Writer, typ string, data any) {
	b, err := json.Marshal(struct {
		Type string `json:"type"`
		Data any    `json:"data"`
	}{typ, data})
	if err != nil {
		b, _ = json.Marshal(map[string]string{"type": typ, "error": err.Error()})
	}
	lineMu.Lock()
	defer lineMu.Unlock()
	fmt.Fprintln(w, string(b))
}

// lineMu keeps whole the lines that a command's goroutines tell at once
// (a sweep's runs ending while its batches report), and their writer safe
// when it is no file (a buffer in tests, a pipe's writer).
var lineMu sync.Mutex

// calls counts a node's model calls as they are requested: first asks,
// repairs (a reply re-asked after it did not parse) and tool round trips
// (the model called again with a tool's result) alike.
type calls struct {
	all, repairs, tools int
}

// active is a node being run; watchers run inside the node that watches.
type active struct {
	node, scope string
	working     map[string]int // agent -> calls in flight
	done        int
	expected    int
}

type display struct {
	mu      sync.Mutex
	w       io.Writer
	mode    Mode
	opts    Options
	start   time.Time
	stack   []*active
	calls   map[string]*calls // by node id
	tokens  int
	lineLen int // runes of the live line on screen, 0 when none
	// retrying are the calls whose attempts failed and that have not
	// ended yet, by call key, in the order their first retry came.
	retrying  map[string]*retrying
	retryKeys []string
}

// retrying is a call being retried: how many attempts failed so far and
// the last one's error. The journal keeps every retry; the display says
// the first (plain) or keeps one updating count (live), then one line
// when the call ends.
type retrying struct {
	n       int
	lastErr string
}

func (p *display) observe(n runtime.Notice) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.mode {
	case Quiet:
		return
	case JSON:
		if n.Event != nil {
			if data, err := json.Marshal(n.Event); err == nil {
				fmt.Fprintln(p.w, string(data))
			}
		}
		// Warnings are journal events too; nothing else is printed, so
		// every line is JSON.
		return
	}
	switch {
	case n.Message != "":
		p.clear()
		fmt.Fprintln(p.w, n.Message)
		p.draw()
	case n.Progress != nil:
		p.progress(n)
	case n.Event != nil:
		p.event(n)
	}
}

// progress follows calls in flight for the live line.
func (p *display) progress(n runtime.Notice) {
	ev := n.Progress
	a := p.top()
	if a == nil || a.node != ev.Node {
		// A resumed run does not repeat the start of the node it stopped
		// in; its progress names it.
		a = p.push(ev.Node, n.Scope)
	}
	if ev.Started {
		a.working[ev.Agent]++
		a.expected = ev.Expected
	}
	if ev.Finished {
		if a.working[ev.Agent]--; a.working[ev.Agent] <= 0 {
			delete(a.working, ev.Agent)
		}
		a.done++
	}
	p.draw()
}

// event handles a journal event. Only a few types matter here, and model
// requests, responses and messages carry prompts and replies: nothing is
// decoded beyond what the line needs.
func (p *display) event(n runtime.Notice) {
	ev := n.Event
	switch ev.Type {
	case event.NodeStarted:
		var d struct {
			Node  string `json:"node"`
			Scope string `json:"scope"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		node, scope := splitKey(ev.Key)
		if d.Node == "" {
			d.Node = node
		}
		if d.Scope == "" {
			d.Scope = scope
		}
		p.push(d.Node, d.Scope)
		p.calls[d.Node] = &calls{}
		if p.mode == Plain {
			fmt.Fprintf(p.w, "%s %s: started\n", scopeLabel(d.Scope), d.Node)
		}
		p.draw()
	case event.ModelRequest:
		var d struct {
			Node string `json:"node"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		c := p.calls[d.Node]
		if c == nil {
			c = &calls{}
			p.calls[d.Node] = c
		}
		c.all++
		_, call, _ := strings.Cut(ev.Key, "/")
		switch {
		case kit.IsRepair(call):
			c.repairs++
		case strings.Contains(call, "/tool"):
			c.tools++
		}
	case event.ModelError:
		p.endRetries(ev.Key, "then it failed")
		p.draw()
	case event.ModelResponse:
		p.endRetries(ev.Key, "then it was answered")
		var usage struct {
			PromptTokens     any `json:"prompt_tokens"`
			CompletionTokens any `json:"completion_tokens"`
		}
		_ = json.Unmarshal(ev.Data, &usage)
		if v, ok := usage.PromptTokens.(float64); ok {
			p.tokens += int(v)
		}
		if v, ok := usage.CompletionTokens.(float64); ok {
			p.tokens += int(v)
		}
		p.draw()
	case event.Retry:
		var d map[string]any
		_ = json.Unmarshal(ev.Data, &d)
		r := p.retrying[ev.Key]
		if r == nil {
			r = &retrying{}
			p.retrying[ev.Key] = r
			p.retryKeys = append(p.retryKeys, ev.Key)
		}
		r.n++
		r.lastErr = fmt.Sprint(d["error"])
		if p.mode == Plain && r.n == 1 {
			// Later retries of the call are counted, and said once it ends.
			wait := ""
			if ms, ok := d["wait_ms"].(float64); ok {
				wait = " in " + (time.Duration(ms) * time.Millisecond).String()
			}
			fmt.Fprintf(p.w, "retrying %s%s (attempt %v failed): %v\n", ev.Key, wait, d["attempt"], d["error"])
		}
		p.draw()
	case event.NodeFinished, event.NodeFailed:
		var d struct {
			Node  string `json:"node"`
			Error any    `json:"error"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		node, scope := splitKey(ev.Key)
		if d.Node != "" {
			node = d.Node
		}
		p.pop(node)
		c := p.calls[node]
		delete(p.calls, node)
		for _, k := range append([]string(nil), p.retryKeys...) {
			if strings.HasPrefix(k, node+"/") {
				p.endRetries(k, stopped)
			}
		}
		p.clear()
		if ev.Type == event.NodeFailed && fmt.Sprint(d.Error) == context.Canceled.Error() {
			// Ctrl-C or a stop: the run says so once, with how to resume.
			fmt.Fprintf(p.w, "%s %s: stopped\n", scopeLabel(scope), node)
		} else if ev.Type == event.NodeFailed {
			fmt.Fprintf(p.w, "%s %s: failed: %v\n", scopeLabel(scope), node, d.Error)
		} else if p.mode == Plain {
			fmt.Fprintf(p.w, "%s %s: done (%s, %d tokens so far)\n", scopeLabel(scope), node, c.describe(), p.tokens)
		}
		p.draw()
	case event.RunFinished:
		for _, k := range append([]string(nil), p.retryKeys...) {
			p.endRetries(k, stopped)
		}
		p.clear()
		p.stack = nil
	}
}

// stopped ends a retried call that neither failed nor was answered: its
// node ended first (another call of it failed), or the run did.
const stopped = "then it was stopped"

// endRetries says, once, how a retried call ended: in plain mode when it
// was retried more than once (the first retry had its line), on a
// terminal always (the retries were only counted on the live line).
func (p *display) endRetries(key, end string) {
	r := p.retrying[key]
	if r == nil {
		return
	}
	delete(p.retrying, key)
	p.retryKeys = slices.DeleteFunc(p.retryKeys, func(k string) bool { return k == key })
	if p.mode == Plain && r.n < 2 {
		return
	}
	p.clear()
	fmt.Fprintf(p.w, "%s: %s, %s (last error: %s)\n", key, plural(r.n, "retry"), end, r.lastErr)
}

// retrySummary is the live line's part on the calls being retried: the
// count of failed attempts so far and the last error.
func (p *display) retrySummary() string {
	switch len(p.retryKeys) {
	case 0:
		return ""
	case 1:
		k := p.retryKeys[0]
		r := p.retrying[k]
		return fmt.Sprintf("retrying %s (%s): %s", k, plural(r.n, "failed attempt"), r.lastErr)
	}
	n := 0
	var last string
	for _, k := range p.retryKeys {
		n += p.retrying[k].n
		last = p.retrying[k].lastErr
	}
	return fmt.Sprintf("retrying %d calls (%s): %s", len(p.retryKeys), plural(n, "failed attempt"), last)
}

// describe says how many calls a node made, naming repairs and tool round
// trips among them.
func (c *calls) describe() string {
	if c == nil {
		return "0 calls"
	}
	s := plural(c.all, "call")
	var incl []string
	if c.repairs > 0 {
		incl = append(incl, plural(c.repairs, "repair"))
	}
	if c.tools > 0 {
		incl = append(incl, plural(c.tools, "tool round trip"))
	}
	if len(incl) > 0 {
		s += " incl. " + strings.Join(incl, " and ")
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if what == "retry" {
		return fmt.Sprintf("%d retries", n)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// splitKey splits a node's event key, NODE/SCOPE, into its parts.
func splitKey(key string) (node, scope string) {
	node, scope, _ = strings.Cut(key, "/")
	return node, scope
}

func (p *display) top() *active {
	if len(p.stack) == 0 {
		return nil
	}
	return p.stack[len(p.stack)-1]
}

func (p *display) push(node, scope string) *active {
	a := &active{node: node, scope: scope, working: map[string]int{}}
	p.stack = append(p.stack, a)
	return a
}

// pop ends the innermost run of node (and anything started inside it).
func (p *display) pop(node string) {
	for i := len(p.stack) - 1; i >= 0; i-- {
		if p.stack[i].node == node {
			p.stack = p.stack[:i]
			return
		}
	}
}

func scopeLabel(s string) string {
	if s == "" || s == "-" {
		return "·"
	}
	return "[" + strings.ReplaceAll(s, "/", " ") + "]"
}

// clear removes the live line, if one is shown.
func (p *display) clear() {
	if p.mode == Live && p.lineLen > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.lineLen))
		p.lineLen = 0
	}
}

func (p *display) width() int {
	if p.opts.Width != nil {
		if w := p.opts.Width(); w > 0 {
			return w
		}
	}
	return DefaultWidth
}

// draw shows the live line. It stays shorter than the terminal is wide: a
// line that wrapped could not be taken back by a carriage return, and every
// redraw would leave its first part behind. When it does not fit, it gives
// up detail in order: the names of the agents at work (their number stays),
// the scope before the node's name, the elapsed time, the tokens.
func (p *display) draw() {
	a := p.top()
	if p.mode != Live || a == nil {
		return
	}
	count := fmt.Sprintf("%d/%d calls", a.done, a.expected)
	if a.expected == 0 {
		count = "starting"
	}
	agents := make([]string, 0, len(a.working))
	for name := range a.working {
		agents = append(agents, name)
	}
	sort.Strings(agents)
	working, busy := "", ""
	if len(agents) > 0 {
		working = "working: " + strings.Join(agents, ", ")
		busy = fmt.Sprintf("%d working", len(agents))
	}
	tokens := fmt.Sprintf("%d tokens", p.tokens)
	elapsed := p.opts.Now().Sub(p.start).Round(time.Second).String()
	room := p.width() - 1
	join := func(parts ...string) string {
		var kept []string
		for _, s := range parts {
			if s != "" {
				kept = append(kept, s)
			}
		}
		return strings.Join(kept, " · ")
	}
	retry := p.retrySummary()
	label := scopeLabel(a.scope)
	line := join(label+" "+a.node, count, retry, working, tokens, elapsed)
	if utf8.RuneCountInString(line) > room {
		line = join(label+" "+a.node, count, retry, busy, tokens, elapsed)
	}
	// The node's name goes first, so that a cut takes the scope; it keeps
	// at least a dozen characters while there is detail left to drop.
	head := a.node
	if label != "·" {
		head += " " + label
	}
	least := min(utf8.RuneCountInString(a.node), 12)
	for _, rest := range [][]string{{count, retry, busy, tokens, elapsed}, {count, retry, busy, tokens}, {count, retry, busy}, {count, retry}, {count}} {
		if utf8.RuneCountInString(line) <= room {
			break
		}
		tail := join(rest...)
		n := room - utf8.RuneCountInString(tail) - 3
		if n < least && len(rest) > 1 {
			continue
		}
		line = join(fit(head, n), tail)
	}
	line = fit(line, room)
	p.clear()
	fmt.Fprint(p.w, line)
	p.lineLen = utf8.RuneCountInString(line)
}

// fit cuts s to at most n runes, marking the cut with an ellipsis.
func fit(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	if n == 1 {
		return "…"
	}
	return string(r[:n-1]) + "…"
}
