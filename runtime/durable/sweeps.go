package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/spec"
)

// Sweeps makes sweeps on Temporal for a command that makes several of them
// and continues them after a kill (runner study): each sweep is submitted
// as a sweep workflow and recorded here as it goes (Executor.StartSweep),
// and a sweep continued later follows the runs its workflow went on making
// meanwhile, asking no call again.
type Sweeps struct {
	X        Executor
	Registry *spec.Registry
}

// Start submits the sweep so describes for plan and sets so.Start (and the
// context snapshot the runs' file tools answer from), so that
// sweep.Sweep(ctx, plan, so) records the workers' runs. The sweep
// directory records the sweep workflow (RecordFile) before its first run.
func (s Sweeps) Start(ctx context.Context, plan *spec.Plan, so *sweep.Options) error {
	if len(plan.MCPServers) > 0 {
		return exitcode.With(exitcode.Usage, errors.New("--temporal: runs on Temporal do not serve the tools of mcp_servers yet; run this study without --temporal"))
	}
	bundle, err := NewBundle(plan, s.Registry, so.Run.ContextDir)
	if err != nil {
		return exitcode.With(exitcode.Failure, err)
	}
	so.Run.ContextSnapshot = bundle.Context
	id, start, err := s.X.StartSweep(ctx, plan, bundle, *so)
	if err != nil {
		return err
	}
	onStart := so.OnStart
	var recErr error
	so.OnStart = func(dir string, total int) {
		recErr = WriteRecord(dir, s.X.record(id, ""))
		if onStart != nil {
			onStart(dir, total)
		}
	}
	so.Start = func(index int, plan *spec.Plan, opts runtime.Options) (*runtime.Run, error) {
		if recErr != nil {
			return nil, recErr
		}
		return start(index, plan, opts)
	}
	return nil
}

// Resume returns how the runs of the sweep in dir, made on Temporal, are
// continued (sweep.ResumeOptions.Resume and Start): a run recorded here is
// followed again (Executor.Resume: failed calls are tried again), and a run
// not started here yet follows the run the sweep workflow made of it. A
// sweep directory that names no workflow (a sweep killed before its first
// run) submits those runs one by one.
func (s Sweeps) Resume(ctx context.Context, dir string) (sweep.ResumeOptions, error) {
	var ro sweep.ResumeOptions
	rec, ok, err := ReadRecord(dir)
	if err != nil {
		return ro, err
	}
	if !ok {
		// A run's record names its sweep.
		runs, _ := filepath.Glob(filepath.Join(dir, "*", RecordFile))
		for _, r := range runs {
			if rr, ok, err := ReadRecord(filepath.Dir(r)); err == nil && ok && rr.Sweep != "" {
				rec, ok = Record{WorkflowID: rr.Sweep}, true
				break
			}
		}
	}
	snap, err := sweepContext(dir)
	if err != nil {
		return ro, err
	}
	ro.Resume = func(run string, reg *spec.Registry, opts runtime.Options) (*runtime.Run, error) {
		rr, found, err := ReadRecord(run)
		if err != nil {
			return nil, err
		}
		if !found {
			// Killed between its start and its record: made locally.
			return runtime.Resume(run, reg, opts)
		}
		return s.X.Resume(ctx, run, rr, reg, opts)
	}
	ro.Start = func(index int, plan *spec.Plan, opts runtime.Options) (*runtime.Run, error) {
		if ok {
			opts.ContextSnapshot = snap
			return s.X.startChild(ctx, rec.WorkflowID, index, plan, opts, snap, nil)
		}
		bundle, err := NewBundle(plan, s.Registry, opts.ContextDir)
		if err != nil {
			return nil, err
		}
		opts.ContextSnapshot = bundle.Context
		r, _, err := s.X.StartRun(ctx, plan, bundle, opts)
		return r, err
	}
	return ro, nil
}

// sweepContext reads the context snapshot a sweep directory holds (nil:
// none).
func sweepContext(dir string) (*tools.Snapshot, error) {
	data, err := os.ReadFile(filepath.Join(dir, ContextFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var snap tools.Snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ContextFile), err)
	}
	return &snap, nil
}
