package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/result"
)

// A resume replays a run's journal: every journaled reply serves its call
// again. A run that failed on what the journal holds (a reply still invalid
// after its repairs, an output expression that fails on the journaled
// messages) would therefore fail the same way on every resume, without
// asking a model: resuming it as it is is a dead end.
//
// The rule, read from the journal alone: the run's last attempt (since its
// last run_started or run_resumed event) finished with status failed and
// an error event of kind "failure" (not an interruption, an endpoint that
// gave up, or a replay that lacked a call), its records were written, and
// every model call the attempt made was answered: no model_error, no
// model_request left without its model_response (a call cancelled in
// flight is one a resume makes, so that resume can make progress). Such a
// run is refused (exit 2) unless something feeds it anew: --spec with a
// spec other than the run's, or --resample, which asks the failed node's
// calls afresh.

// ErrInterrupted is a run stopped by a signal (Ctrl-C); it can be resumed.
var ErrInterrupted = errors.New("interrupted")

// Kinds of the error event that ends a failed attempt.
const (
	failInterrupted   = "interrupted"
	failEndpoint      = "endpoint"
	failReplayMissing = "replay_missing"
	failFailure       = "failure"
)

// failureKind classifies a run's error for its journal: a "failure" is one
// the journal replays (a resume would meet it again), the others depend on
// what is outside the journal.
func failureKind(err error) string {
	var ee *calls.EndpointError
	var me *calls.MissingError
	switch {
	case errors.Is(err, ErrInterrupted), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return failInterrupted
	case errors.As(err, &ee):
		return failEndpoint
	case errors.As(err, &me):
		return failReplayMissing
	}
	return failFailure
}

// attempt is what the journal says of a run's last attempt.
type attempt struct {
	status    string // of its run_finished event; "" when it never finished
	finishErr string // its records could not be written
	err, kind string // its error event
	// node and prefix are the first node that failed in the attempt and
	// its occurrence (node/scope, the start of its call keys), nodeErr why.
	node, prefix, nodeErr string
	// unanswered are its calls without a reply; modelErrors its failed
	// calls.
	unanswered  map[string]bool
	modelErrors int
}

// note reads one journal event into the attempt it belongs to.
func (a *attempt) note(ev journal.Event) {
	switch ev.Type {
	case event.RunStarted, event.RunResumed:
		*a = attempt{unanswered: map[string]bool{}}
	case event.ModelRequest:
		a.unanswered[ev.Key] = true
	case event.ModelResponse:
		delete(a.unanswered, ev.Key)
	case event.ModelError:
		delete(a.unanswered, ev.Key)
		a.modelErrors++
	case event.Error:
		var e struct {
			Error string `json:"error"`
			Kind  string `json:"kind"`
		}
		_ = json.Unmarshal(ev.Data, &e)
		a.err, a.kind = e.Error, e.Kind
		if a.kind == "" {
			// Journals from before kinds were written.
			switch {
			case e.Error == ErrInterrupted.Error():
				a.kind = failInterrupted
			case strings.Contains(e.Error, "the recording has no response for call"):
				a.kind = failReplayMissing
			default:
				a.kind = failFailure
			}
		}
	case event.NodeFailed:
		if a.node == "" {
			var e struct {
				Node  string `json:"node"`
				Error string `json:"error"`
			}
			_ = json.Unmarshal(ev.Data, &e)
			a.node, a.prefix, a.nodeErr = e.Node, ev.Key, e.Error
		}
	case event.RunFinished:
		var fin struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		}
		_ = json.Unmarshal(ev.Data, &fin)
		a.status, a.finishErr = fin.Status, fin.Error
	}
}

// replays reports whether the attempt failed on nothing but what the
// journal holds, so that a resume as it is would fail the same way.
func (a *attempt) replays() bool {
	return a.status == result.StatusFailed && a.finishErr == "" && a.err != "" && a.kind == failFailure &&
		len(a.unanswered) == 0 && a.modelErrors == 0
}

// StuckError is a run that a resume as it is cannot move on: it failed on
// what its journal holds. The CLI exits 2 with its advice.
type StuckError struct {
	Dir string
	// Err is the failure, as journaled; Node the node that failed ("" when
	// the failure is not a node's: an output, a condition of the flow).
	Err, Node string
	// Fallback says that Calls are calls whose replies gave way to a
	// fallback output, not calls of the node that failed.
	Fallback bool
	// Calls are the journaled calls the failure rests on, which --resample
	// asks afresh (none: the failure rests on no reply of its own).
	Calls []string
	// Resamples is how many times these calls were asked afresh already.
	Resamples int
	// RunID and Result are the run's and what its failed attempt wrote
	// (nil when result.json cannot be read), for a sweep to report it.
	RunID  string
	Result *result.Result
}

// Short says in one line why the run was not resumed and what to give.
func (e *StuckError) Short() string {
	if len(e.Calls) > 0 {
		return "resuming it as it is would fail the same way; resume it with --resample or --spec FIXED.yaml"
	}
	return "resuming it as it is would fail the same way; resume it with --spec FIXED.yaml"
}

func (e *StuckError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s failed on what its journal holds, so resuming it as it is would fail the same way without asking a model; nothing was resumed.\n", e.Dir)
	fmt.Fprintf(&b, "It failed with: %s\n", e.Err)
	b.WriteString(e.Advice())
	return b.String()
}

// Advice names the ways out of the dead end: a fixed spec, and asking the
// failed calls afresh when the failure rests on replies.
func (e *StuckError) Advice() string {
	var b strings.Builder
	b.WriteString("To go on:\n")
	if len(e.Calls) > 0 {
		what := fmt.Sprintf("ask the journaled call(s) of node %q it failed on afresh, as a new sample: %s; every other journaled call is still served from the journal", e.Node, strings.Join(e.Calls, ", "))
		if e.Fallback {
			what = fmt.Sprintf("ask afresh, as a new sample, the journaled call(s) whose replies gave way to a fallback output, which the failure may rest on: %s; every other journaled call is still served from the journal", strings.Join(e.Calls, ", "))
		}
		if e.Resamples > 0 {
			what += fmt.Sprintf(" (already asked afresh %d time(s); a model at temperature 0 may well answer the same again)", e.Resamples)
		}
		fmt.Fprintf(&b, "  runner resume %s --resample\n      %s\n", e.Dir, what)
	}
	fix := "a corrected expression"
	switch {
	case e.Fallback:
		fix = "an expression that allows for the fallback output, or a clearer prompt and more repairs for its node"
	case len(e.Calls) > 0:
		fix = "a clearer prompt or format, more repairs, a fallback"
	case e.Node != "":
		fix = fmt.Sprintf("node %q's template or settings corrected", e.Node)
	}
	fmt.Fprintf(&b, "  runner resume %s --spec FIXED.yaml\n      continue with a fixed spec (%s); calls whose request it leaves unchanged are served from the journal", e.Dir, fix)
	return b.String()
}

// ExitCode is 2: the resume as asked is a usage the run cannot take.
func (e *StuckError) ExitCode() int { return exitcode.Usage }
