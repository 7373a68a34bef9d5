package progress

import (
	"bytes"
	"testing"

	"github.com/debate-runner/runner/spec/syntax"
)

// TestTellerTextOrJSON: a Teller says text, or under JSON the same as a
// JSON line of its type and data; warnings and diagnostics alike.
func TestTellerTextOrJSON(t *testing.T) {
	diags := syntax.Diagnostics{{File: "s.yaml", Pos: syntax.Pos{Line: 2, Col: 3}, Severity: syntax.Error, Message: "bad"}}
	var text, lines bytes.Buffer
	for _, tl := range []Teller{{W: &text}, {W: &lines, JSON: true}} {
		tl.Say("run_dir", map[string]string{"dir": "runs/x"}, "run: runs/x")
		tl.Warn("careful")
		tl.Diagnostics(diags)
	}
	wantText := "run: runs/x\nrunner: warning: careful\n" + diags.Format()
	if text.String() != wantText {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), wantText)
	}
	wantLines := `{"type":"run_dir","data":{"dir":"runs/x"}}
{"type":"warning","data":{"message":"careful"}}
`
	if got := lines.String(); len(got) < len(wantLines) || got[:len(wantLines)] != wantLines || !bytes.Contains(lines.Bytes(), []byte(`{"type":"diagnostic","data":{`)) {
		t.Errorf("JSON lines:\n%s\nwant them to start with:\n%s and end with a diagnostic line", got, wantLines)
	}
}
