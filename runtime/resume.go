package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/rundir"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/spec"
)

// ErrCompleted is returned when resuming a run that already completed.
var ErrCompleted = errors.New("the run already completed; nothing to resume")

// Resume reopens a run directory to continue a run that was killed, failed
// or is waiting for answers. The flow is executed again from the start, but
// every model call whose response is in the journal is served from it, so
// nothing is asked twice and the result is the one an uninterrupted run
// would have produced.
func Resume(dir string, reg *spec.Registry, opts Options) (*Run, error) {
	m, err := rundir.ReadManifest(dir)
	if info, serr := os.Stat(dir); errors.Is(err, fs.ErrNotExist) || serr != nil || !info.IsDir() {
		if err == nil {
			err = serr
		}
		if err == nil {
			err = errors.New("not a directory")
		}
		return nil, &FlagError{Flag: "RUN_DIR", Err: fmt.Errorf("%s is not a run directory: %w", dir, args.UnwrapPathError(err))}
	}
	if err != nil {
		return nil, err
	}
	source, err := os.ReadFile(filepath.Join(dir, "spec.yaml"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	// Compile under the original path so template folders next to the spec
	// are found again.
	plan, diags := spec.CompileWith(m.SpecPath, source, reg, spec.Overrides{Vars: normalizeNumbers(m.Vars), Models: m.ModelOverrides})
	if diags.HasErrors() {
		return nil, fmt.Errorf("the spec saved in %s no longer compiles:\n%s", dir, diags.Format())
	}
	events, err := journal.Read(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	recorded := map[string]kit.Reply{}
	already := map[string]int{}
	for _, ev := range events {
		already[ev.Type+"\x00"+ev.Key]++
		switch ev.Type {
		case "model_response":
			var rep kit.Reply
			if err := json.Unmarshal(ev.Data, &rep); err != nil {
				return nil, fmt.Errorf("journal event %d: %w", ev.Seq, err)
			}
			recorded[ev.Key] = rep
		case "run_finished":
			var fin struct {
				Status string `json:"status"`
			}
			_ = json.Unmarshal(ev.Data, &fin)
			if fin.Status == StatusCompleted {
				return nil, ErrCompleted
			}
		}
	}
	opts.RunsDir = filepath.Dir(dir)
	r := newRun(plan, opts)
	r.ID, r.Dir = m.RunID, dir
	r.inputs, r.vars, r.seed = m.Inputs, m.Vars, m.Seed
	r.inputs = normalizeNumbers(r.inputs)
	r.vars = normalizeNumbers(r.vars)
	r.manifest = m
	r.recorded = recorded
	r.already = already
	sent, err := threadPrompts(events)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	r.threads.sent = sent
	for d := range plan.TemplateSources {
		if old, ok := m.TemplateSources[d]; ok && old.Digest != plan.TemplateSources[d].Digest {
			r.warnings = append(r.warnings, fmt.Sprintf("template %s changed since the run started; replies already recorded are kept", d))
		}
	}
	if err := r.connect(); err != nil {
		return nil, err
	}
	r.chain = r.buildChain()
	lock, err := rundir.TakeLock(dir)
	if err != nil {
		return nil, err
	}
	r.lock = lock
	j, err := journal.OpenAppendWith(filepath.Join(dir, "journal.jsonl"), journal.Options{Redact: journal.NewRedactor(r.secrets...)})
	if err != nil {
		return nil, err
	}
	r.journal = j
	if err := r.event("run_resumed", "", map[string]any{"recorded_calls": len(recorded), "truncated_bytes": j.Truncated()}); err != nil {
		return nil, err
	}
	return r, nil
}

// normalizeNumbers turns JSON numbers that are whole back into ints, as the
// spec typed them.
func normalizeNumbers(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if f, ok := v.(float64); ok && f == float64(int(f)) {
			out[k] = int(f)
			continue
		}
		out[k] = v
	}
	return out
}
