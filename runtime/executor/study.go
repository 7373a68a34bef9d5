package executor

import (
	"context"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/cache"
	"github.com/debate-runner/runner/runtime/durable"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/study"
)

// Study is the study a launch makes (runner study): its file, or the
// study directory to continue.
type Study struct {
	// File is the study file, or a study directory to continue.
	File string
	// Dir is the study directory (default: RunsDir/study-NAME).
	Dir, RunsDir string
	// CacheDir is the response cache (default: the user's); NoCache
	// uses none.
	CacheDir string
	NoCache  bool
	// Format is how the table is printed: md, csv or json.
	Format string
}

// studies makes a study: every spec of a study file over its dataset, a
// sweep each, here or on Temporal (when given an address, or when the
// study directory records that it was made there), continued where it
// stopped.
type studies struct{}

func (studies) Capabilities() Capabilities { return Capabilities{Records: true, Resumes: true} }

func (studies) Validate(l *Launch) error {
	if l.Study.File == "" {
		return exitcode.Errorf(exitcode.Usage, "the study executor makes a study file's sweeps: runner study FILE")
	}
	return nil
}

func (studies) Start(_ context.Context, l *Launch) (Handle, error) {
	st, dir, err := study.Open(l.Study.File, l.Study.Dir, l.Study.RunsDir, l.Registry)
	if err != nil {
		return nil, err
	}
	return &studyHandle{l: l, st: st, dir: dir}, nil
}

func (studies) Owns(dir string) (bool, error) { return study.IsStudyDir(dir), nil }

// Resume goes on with the study in dir, as runner study DIR does: with the
// default cache, on Temporal when the directory records it was made there.
func (s studies) Resume(ctx context.Context, dir string, l *Launch) (Handle, error) {
	sl := *l
	sl.Run = runtime.Options{Settings: runtime.Settings{Getenv: l.Run.Getenv, Version: l.Run.Version}}
	sl.Study = Study{File: dir, Format: "md"}
	return s.Start(ctx, &sl)
}

type studyHandle struct {
	l   *Launch
	st  *study.Study
	dir string
}

func (h *studyHandle) Dir() string { return h.dir }

func (h *studyHandle) Result() *result.Result { return nil }

func (h *studyHandle) Wait(ctx context.Context) error {
	l := h.l
	opts := l.Run
	if !l.Study.NoCache {
		st, warning, err := cache.OpenFor(l.Study.CacheDir, opts.Getenv)
		if warning != nil {
			l.Out.Tell.Warn("no response cache: " + warning.Error())
		}
		if err != nil {
			return err
		}
		if st != nil {
			opts.Cache = st
		}
	}
	so := study.Options{Run: opts, Dir: h.dir, Registry: l.Registry}
	t := l.Temporal
	if rec, ok, err := durable.ReadRecord(h.dir); err != nil {
		return exitcode.With(exitcode.Failure, err)
	} else if ok && t.Address == "" {
		// Made on Temporal: it goes on there.
		t.Address, t.Namespace, t.TaskQueue = rec.Address, rec.Namespace, rec.TaskQueue
	}
	if t.Address != "" {
		t.Heartbeat = 0
		cl, x, err := dial(ctx, t)
		if err != nil {
			return err
		}
		defer cl.Close()
		x.Study(ctx, &so, l.Out.Tell)
	}
	if !l.Out.Quiet {
		study.Tell(l.Out.Tell, &so)
	}
	rep, err := study.Run(ctx, h.st, so)
	return study.Done(ctx, l.Out.Stdout, l.Out.Tell, rep, err, h.dir, l.Study.Format)
}
