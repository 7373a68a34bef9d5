package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/spec"
)

// A run records everything it was given besides its spec, so that a
// resume or a replay sees the same: the answers to clarifying questions
// (run.json for those given up front, "answer" events for each one used),
// the context folder (run.json) and what each tool call read from it
// ("tool_call" events, with a digest of each file), the dataset line and
// expected value, its place in a sweep, and the template libraries the
// spec uses, copied by content into the run directory.

// librariesDir is the folder of a run directory that holds its copies of
// the template libraries.
const librariesDir = "libraries"

// saveLibraries queues on files copies of the files of the libraries plan
// used, in dir, each with put (files.Stage or files.Replace), and returns
// where each goes, by the name the spec gives the library.
func saveLibraries(dir string, plan *spec.Plan, files *rundir.Batch, put func(path string, data []byte)) (map[string]string, error) {
	if len(plan.Libraries) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	files.Folder(filepath.Join(dir, librariesDir))
	for _, lib := range plan.Libraries {
		rel := librariesDir + "/" + lib.Name
		full := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(full, 0o755); err != nil {
			return nil, fmt.Errorf("saving template library %s: %w", lib.Use, err)
		}
		for name, data := range lib.Files {
			put(filepath.Join(full, name), data)
		}
		out[lib.Use] = rel
	}
	return out, nil
}

// savedLibraries are a run's copies of its libraries, for compiling its
// spec as it started; nil for a run that saved none (an older runner's).
func savedLibraries(dir string, m result.Manifest) map[string]fs.FS {
	if len(m.Libraries) == 0 {
		return nil
	}
	out := map[string]fs.FS{}
	for use, rel := range m.Libraries {
		out[use] = os.DirFS(filepath.Join(dir, filepath.FromSlash(rel)))
	}
	return out
}

// RunTool implements kit.Host: a tool result journaled before (by the run
// itself, or by the recording being replayed) is served as it was, with a
// warning for each context file that changed since; otherwise the tool
// runs and its result is journaled.
func (h *host) RunTool(ctx context.Context, key, agent string, tc kit.ToolCall, run func(context.Context) kit.ToolResult) (string, error) {
	r := h.run
	full := h.prefix + "/" + key
	for _, book := range []*toolBook{r.tools, r.replayTools} {
		rec, ok := book.next(full, tc)
		if !ok {
			continue
		}
		r.checkContextFiles(rec.Files)
		rec.Source = book.source
		h.journalTool(full, rec)
		_ = r.toolBudget(h.node.ID, full, false)
		return rec.Result, nil
	}
	if err := r.toolBudget(h.node.ID, full, true); err != nil {
		return "", err
	}
	res := run(ctx)
	if res.Err != nil {
		return "", res.Err
	}
	h.journalTool(full, toolRecord{Agent: agent, Tool: tc.Name, ID: tc.ID, Arguments: tc.Arguments, Result: res.Text, Files: res.Files})
	return res.Text, nil
}

// toolBudget counts a tool call of node against max_tool_calls (the run's
// and the node's): one served from a journal or recording always counts;
// one to run is refused, with a budget error, when a limit is reached.
func (r *Run) toolBudget(node, key string, live bool) error {
	r.toolMu.Lock()
	defer r.toolMu.Unlock()
	if r.toolCount == nil {
		r.toolCount = map[string]int{}
	}
	if live && r.budget != nil {
		if l := r.budget.MaxToolCalls; l != nil && r.toolCount[""] >= *l {
			return &calls.BudgetError{Key: key, Scope: "run", Limit: "max_tool_calls", Max: float64(*l), Spent: float64(r.toolCount[""]), Next: 1}
		}
		if l := r.budget.Nodes[node].MaxToolCalls; l != nil && r.toolCount[node] >= *l {
			return &calls.BudgetError{Key: key, Scope: "node " + node, Limit: "max_tool_calls", Max: float64(*l), Spent: float64(r.toolCount[node]), Next: 1}
		}
	}
	r.toolCount[""]++
	r.toolCount[node]++
	return nil
}

func (h *host) journalTool(key string, t toolRecord) {
	files := make([]result.FileRead, len(t.Files))
	for i, f := range t.Files {
		files[i] = result.FileRead{Path: f.Path, SHA256: f.SHA256, Size: f.Size}
	}
	h.run.noteToolCall(result.ToolCallInfo{Key: key, Agent: t.Agent, Tool: t.Tool, Arguments: t.Arguments, Result: t.Result, Files: files})
	_ = h.run.event(event.ToolCall, key, t)
}

// checkContextFiles warns about context files that changed since a tool
// read them: the run keeps what was read then.
func (r *Run) checkContextFiles(files []kit.FileRead) {
	dir := r.opts.ContextDir
	if dir == "" {
		return
	}
	for _, f := range files {
		now, err := tools.Digest(dir, f.Path)
		switch {
		case err != nil:
			r.warnOnce("context:"+f.Path, "context file %s cannot be read any more (%v); the run keeps what a tool read from it before", f.Path, err)
		case now.SHA256 != f.SHA256:
			r.warnOnce("context:"+f.Path, "context file %s changed since a tool read it; the run keeps what was read then", f.Path)
		}
	}
}

// mergeAnswers gives a resumed run its answers: those given when it
// started, then those of --answers now, then those its journal says were
// used, which win (the calls after them were made with them).
func mergeAnswers(layers ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, l := range layers {
		for k, v := range l {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// absPath is p made absolute, or p when that fails.
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// budgetStop says whether err stopped the run at its budget.
func budgetStop(err error) bool {
	var be *calls.BudgetError
	return errors.As(err, &be)
}

// newBudget is the call path's budget for the manifest's, nil for none.
func newBudget(b *spec.BudgetPlan) *calls.Budget {
	if b == nil || b.Empty() {
		return nil
	}
	return &calls.Budget{BudgetPlan: *b}
}
