package answers

import (
	"context"
	"io"

	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/spec/value"
)

// Given are a command's answers (run, resume): those of the answers file
// when one is given (a problem with it is the flag's), else, when stdin is
// a terminal (atTerminal), a prompt that asks each question there.
func Given(file string, stdin io.Reader, stderr io.Writer, atTerminal bool) (map[string]string, func(context.Context, value.Question) (string, error), error) {
	if file != "" {
		a, err := Read(file)
		if err != nil {
			return nil, nil, &args.FlagError{Flag: "--answers", Err: args.UnwrapPathError(err)}
		}
		return a, nil, nil
	}
	if atTerminal {
		return nil, Terminal(stdin, stderr), nil
	}
	return nil, nil, nil
}
