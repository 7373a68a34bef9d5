// Package exitcode names runner's exit codes (README's "Exit codes" table)
// and lets an error carry the code the CLI exits with: each error type
// that stands for one of these outcomes has an ExitCode method, and the
// CLI asks the error (Of) instead of switching over types. It imports
// nothing of the module, so the runtime, the node kinds and the CLI can
// all use it.
package exitcode

import (
	"errors"
	"fmt"
)

// The exit codes. A new code is one line here, a row of docs/exit-codes.md's table
// and a word in `runner --help`.
const (
	OK          = 0
	Failure     = 1 // anything without a code of its own
	Usage       = 2 // a command line the CLI cannot use
	Endpoint    = 3 // a model endpoint still failed after its retries
	InvalidSpec = 4 // a spec that does not compile; nothing was run
	Waiting     = 5 // a run waits for answers to clarifying questions
	Budget      = 6 // a run stopped at its budget
	Gate        = 7 // a CI gate failed (--fail-under, compare --baseline)
	// Inconclusive is a run (or a run of a sweep) that finished without
	// reaching its purpose; its outputs are written.
	Inconclusive = 8
)

// Error is an error that knows the code the CLI exits with.
type Error interface {
	error
	ExitCode() int
}

// Of is the exit code of err: OK for nil, the code of the first error in
// its chain that has one (so a wrapper can override the code of what it
// wraps), Failure when none has.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var e Error
	if errors.As(err, &e) {
		return e.ExitCode()
	}
	return Failure
}

// With gives err the exit code code; nil stays nil.
func With(code int, err error) error {
	if err == nil {
		return nil
	}
	return &coded{code: code, err: err}
}

// New is an error with the text msg and the exit code code, for sentinel
// errors compared with errors.Is.
func New(code int, msg string) error {
	return &coded{code: code, err: errors.New(msg)}
}

// Errorf is fmt.Errorf with the exit code code.
func Errorf(code int, format string, args ...any) error {
	return With(code, fmt.Errorf(format, args...))
}

type coded struct {
	code int
	err  error
}

func (e *coded) Error() string { return e.err.Error() }
func (e *coded) Unwrap() error { return e.err }
func (e *coded) ExitCode() int { return e.code }
