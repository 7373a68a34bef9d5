package runtime

import (
	"errors"
	"text/template"
)

// isRenderError reports whether err is a template that failed to render
// (a missing key, an index out of range): the dry run stops on it, as the
// run would, rather than noting it and going on to report a worst case
// the run never reaches.
func isRenderError(err error) bool {
	var ee template.ExecError
	return errors.As(err, &ee)
}
