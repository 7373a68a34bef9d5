package progress

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime"
	runcalls "github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/result"
)

// Outcome tells how an executed run ended (res and err are what
// r.Execute returned): its first output on stdout when it finished, its
// directory, and, when it did not complete, what to do next: answer its
// questions, raise its budget, fix what its journal would fail on again,
// or resume it. The error it returns carries the run's exit code and has
// the run's secrets redacted; one the user has been told about already
// has an empty text. Nothing it writes holds the run's secrets.
func Outcome(t Teller, stdout io.Writer, r *runtime.Run, res *result.Result, err error) error {
	if res != nil && len(res.OutputOrder) > 0 && result.Finished(res.Status) {
		fmt.Fprintln(stdout, formatOutput(res.Outputs[res.OutputOrder[0]]))
	}
	if err != nil && r.Dir == "" {
		// Its folder was never set up (see runtime.Settings.EarlyCalls):
		// there is nothing to show or resume.
		return redactedError{fmt.Errorf("%w (nothing of the run was kept)", err), r}
	}
	t.Say("run_dir", map[string]string{"dir": r.Dir}, "run: "+r.Dir)
	if err != nil {
		if errors.Is(err, kit.ErrWaiting) {
			questions := filepath.Join(r.Dir, "questions.yaml")
			resume := fmt.Sprintf("runner resume %s --answers %s", r.Dir, questions)
			t.Say("waiting", map[string]string{"questions": questions, "resume": resume},
				fmt.Sprintf("waiting for answers: edit %s, then run: %s", questions, resume))
			return told{err}
		}
		var be *runcalls.BudgetError
		if errors.As(err, &be) {
			resume := fmt.Sprintf("runner resume %s %s", r.Dir, be.Flag())
			t.Say("budget_exceeded", map[string]string{"error": r.Redact(err.Error()), "resume": resume},
				fmt.Sprintf("runner: %s\nthe run stopped at its budget; to go on, raise it: %s", r.Redact(err.Error()), resume))
			return told{err}
		}
		// A failure the journal would serve again is not advised to be
		// resumed as it is: that resume would fail the same way.
		if stuck := runtime.Stuck(r.Dir); stuck != nil {
			return redactedError{fmt.Errorf("%w\nresuming the run as it is would fail the same way: it failed on what its journal holds.\n%s", err, stuck.Advice()), r}
		}
		return redactedError{fmt.Errorf("%w (resume with: runner resume %s)", err, r.Dir), r}
	}
	if res != nil && res.Status == result.StatusInconclusive {
		why := r.Redact(res.Conclusion.Summary())
		t.Say("inconclusive", map[string]any{"conclusion": res.Conclusion},
			fmt.Sprintf("runner: inconclusive: the run finished without reaching its purpose: %s (outputs written to %s)", why, filepath.Join(r.Dir, "result.json")))
		return exitcode.With(exitcode.Inconclusive, errors.New(""))
	}
	return nil
}

// Calls says where the calls of a run came from when not all went to the
// model (unless quiet).
func Calls(t Teller, r *runtime.Run, quiet bool) {
	cc := r.CallCounts()
	if quiet || cc.Total() == cc.Network {
		return
	}
	t.Say("calls", cc, cc.String())
}

// formatOutput is an output as printed on stdout: a string as it is,
// another value as indented JSON.
func formatOutput(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// redactedError is an error whose text has the run's secrets redacted.
type redactedError struct {
	err error
	run *runtime.Run
}

func (e redactedError) Error() string { return e.run.Redact(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }

// told is an error the user has been told about already: it prints
// nothing more, and the CLI exits with the code of the error it holds.
type told struct{ err error }

func (told) Error() string   { return "" }
func (e told) Unwrap() error { return e.err }

// NotResumed tells why runtime.Resume did not resume a run: the
// diagnostics of a spec it compiled again (then the error says the run
// was not resumed, with the spec's exit code); other errors are returned
// as they are.
func NotResumed(t Teller, err error) error {
	var se *runtime.SpecError
	if errors.As(err, &se) {
		t.Diagnostics(se.Diags)
		return exitcode.With(se.ExitCode(), fmt.Errorf("%s is invalid; the run was not resumed", se.Path))
	}
	return err
}
