package progress

import (
	"fmt"
	"io"

	"github.com/debate-runner/runner/spec/syntax"
)

// Teller writes what a command tells its user on stderr besides a run's
// progress (the run directory, warnings, where calls came from, a gate's
// verdict): a line of text, or under --json the same as a JSON line of a
// type and data (Line), so that --json output stays JSON throughout.
type Teller struct {
	W    io.Writer
	JSON bool
}

// Say writes text, or under JSON a line of type typ with data.
func (t Teller) Say(typ string, data any, text string) {
	if t.JSON {
		Line(t.W, typ, data)
		return
	}
	lineMu.Lock()
	defer lineMu.Unlock()
	fmt.Fprintln(t.W, text)
}

// Warn says msg as a warning.
func (t Teller) Warn(msg string) {
	t.Say("warning", map[string]string{"message": msg}, "runner: warning: "+msg)
}

// Diagnostics writes a spec's diagnostics: as text, or under JSON one
// JSON line each.
func (t Teller) Diagnostics(diags syntax.Diagnostics) {
	if !t.JSON {
		lineMu.Lock()
		defer lineMu.Unlock()
		fmt.Fprint(t.W, diags.Format())
		return
	}
	for _, d := range diags {
		Line(t.W, "diagnostic", d)
	}
}
