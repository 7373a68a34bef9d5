package runtime

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// ProgressMode selects how progress is shown on stderr.
type ProgressMode int

// Progress modes.
const (
	ProgressQuiet ProgressMode = iota
	ProgressPlain              // one line per node and per warning
	ProgressLive               // a status line redrawn in place (terminals)
	ProgressJSON               // every journal event as a JSON line
)

// NewProgress returns an Observer that writes progress to w.
func NewProgress(w io.Writer, mode ProgressMode) func(Notice) {
	p := &progress{w: w, mode: mode, working: map[string]int{}, start: time.Now()}
	return p.observe
}

type progress struct {
	mu       sync.Mutex
	w        io.Writer
	mode     ProgressMode
	scope    string
	node     string
	working  map[string]int
	done     int
	expected int
	tokens   int
	start    time.Time
	lineLen  int
}

func (p *progress) observe(n Notice) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.mode {
	case ProgressQuiet:
		return
	case ProgressJSON:
		if n.Event != nil {
			data, err := json.Marshal(n.Event)
			if err == nil {
				fmt.Fprintln(p.w, string(data))
			}
		}
		return
	}
	if n.Message != "" {
		p.clear()
		fmt.Fprintln(p.w, n.Message)
		p.draw()
		return
	}
	if n.Progress != nil {
		ev := n.Progress
		if ev.Started {
			p.working[ev.Agent]++
			p.expected = ev.Expected
		}
		if ev.Finished {
			if p.working[ev.Agent]--; p.working[ev.Agent] <= 0 {
				delete(p.working, ev.Agent)
			}
			p.done++
		}
		p.draw()
		return
	}
	if n.Event == nil {
		return
	}
	ev := n.Event
	// Only a few event types matter here, and model requests, responses
	// and messages carry whole prompts and replies: decode no more than
	// the line needs.
	var data map[string]any
	switch ev.Type {
	case "retry", "node_finished", "node_failed":
		_ = json.Unmarshal(ev.Data, &data)
	}
	switch ev.Type {
	case "node_started":
		var started struct {
			Node  any `json:"node"`
			Scope any `json:"scope"`
		}
		_ = json.Unmarshal(ev.Data, &started)
		p.node, _ = started.Node.(string)
		p.scope, _ = started.Scope.(string)
		p.done, p.expected = 0, 0
		p.working = map[string]int{}
		if p.mode == ProgressPlain {
			fmt.Fprintf(p.w, "%s %s: started\n", scopeLabel(p.scope), p.node)
		}
		p.draw()
	case "model_response":
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
	case "retry":
		p.clear()
		fmt.Fprintf(p.w, "retrying %s (attempt %v): %v\n", ev.Key, data["attempt"], data["error"])
		p.draw()
	case "node_finished":
		if p.mode == ProgressPlain {
			fmt.Fprintf(p.w, "%s %s: done (%v calls, %d tokens so far)\n", scopeLabel(p.scope), p.node, data["calls"], p.tokens)
		}
	case "node_failed":
		p.clear()
		fmt.Fprintf(p.w, "%s %s: failed: %v\n", scopeLabel(p.scope), p.node, data["error"])
	case "run_finished":
		p.clear()
		p.lineLen = 0
	}
}

func scopeLabel(s string) string {
	if s == "" || s == "-" {
		return "·"
	}
	return "[" + strings.ReplaceAll(s, "/", " ") + "]"
}

func (p *progress) clear() {
	if p.mode == ProgressLive && p.lineLen > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.lineLen))
		p.lineLen = 0
	}
}

func (p *progress) draw() {
	if p.mode != ProgressLive || p.node == "" {
		return
	}
	var agents []string
	for a := range p.working {
		agents = append(agents, a)
	}
	sort.Strings(agents)
	line := fmt.Sprintf("%s %s · %d/%d calls", scopeLabel(p.scope), p.node, p.done, p.expected)
	if p.expected == 0 {
		line = fmt.Sprintf("%s %s · starting", scopeLabel(p.scope), p.node)
	}
	if len(agents) > 0 {
		line += " · working: " + strings.Join(agents, ", ")
	}
	line += fmt.Sprintf(" · %d tokens · %s", p.tokens, time.Since(p.start).Round(time.Second))
	if len(line) > 120 {
		line = line[:117] + "..."
	}
	p.clear()
	fmt.Fprint(p.w, line)
	p.lineLen = len([]rune(line))
}
