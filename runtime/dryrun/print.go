package dryrun

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/debate-runner/runner/internal/exitcode"
)

// Print prints the report as runner run --dry-run does: indented JSON,
// or the text of Write (with the prompts unless quiet).
func (r *Report) Print(w io.Writer, asJSON, quiet bool) error {
	if !asJSON {
		r.Write(w, !quiet)
		return nil
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return exitcode.With(exitcode.Failure, err)
	}
	fmt.Fprintln(w, string(data))
	return nil
}
