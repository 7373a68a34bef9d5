package executor

import (
	"context"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/dryrun"
	"github.com/debate-runner/runner/runtime/result"
)

// dry plans a run without calling a model (--dry-run): the engine's dry
// mode, and its report printed.
type dry struct{}

func (dry) Capabilities() Capabilities { return Capabilities{} }

func (dry) Validate(l *Launch) error {
	if l.Sweep.Sweeping() || l.Run.ReplayFrom != "" {
		return exitcode.Errorf(exitcode.Usage, "--dry-run plans one run; it cannot be combined with --matrix, --repeat, --dataset or --replay")
	}
	return nil
}

func (dry) Start(_ context.Context, l *Launch) (Handle, error) { return dryHandle{l}, nil }

func (dry) Owns(string) (bool, error) { return false, nil }

func (dry) Resume(context.Context, string, *Launch) (Handle, error) {
	return nil, exitcode.Errorf(exitcode.Usage, "a dry run leaves nothing to resume")
}

// dryHandle is a dry run, made as it is waited for. Required inputs not
// given stand as placeholders.
type dryHandle struct{ l *Launch }

func (dryHandle) Dir() string { return "" }

func (dryHandle) Result() *result.Result { return nil }

func (h dryHandle) Wait(context.Context) error {
	l := h.l
	rep, err := dryrun.Run(l.Plan, dryrun.Options{Given: l.Run.Given, Placeholders: true, AllPrompts: l.AllPrompts})
	if err != nil {
		return err
	}
	return rep.Print(l.Out.Stdout, l.Out.JSON, l.Out.Quiet)
}
