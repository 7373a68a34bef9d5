package event

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// onDisk is the journal format: the type of each line of journal.jsonl
// in runs already recorded. Resume and replay find events by these
// strings, so a constant may be added but none of these may change.
var onDisk = map[Type]string{
	RunStarted: "run_started", RunResumed: "run_resumed", RunFinished: "run_finished",
	Error: "error", BudgetExceeded: "budget_exceeded", Warning: "warning",
	NodeStarted: "node_started", NodeFinished: "node_finished", NodeFailed: "node_failed",
	LoopEnded: "loop_ended", ForeachItem: "foreach_item",
	ModelRequest: "model_request", ModelResponse: "model_response", ModelError: "model_error",
	Retry: "retry", Message: "message", ThreadTurn: "thread_turn", ToolCall: "tool_call", MCPTools: "mcp_tools",
	Answer: "answer", Summary: "summary",
	Output: "output", Fallback: "fallback", Absent: "absent", Repair: "repair", Rejected: "rejected",
	NoVerdict: "no_verdict", Interjection: "interjection", Watch: "watch",
	ConversationEnded: "conversation_ended", SpeakerSelected: "speaker_selected", Waiting: "waiting",
}

func TestNamesAreTheJournalFormat(t *testing.T) {
	for typ, want := range onDisk {
		if string(typ) != want {
			t.Errorf("event type %q is written as %q in recorded journals", typ, want)
		}
	}
	// Every constant of the package is pinned above, and no two share a
	// string.
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "event.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			name := v.Names[0].Name
			text, err := strconv.Unquote(v.Values[0].(*ast.BasicLit).Value)
			if err != nil {
				t.Fatal(err)
			}
			if other, dup := seen[text]; dup {
				t.Errorf("%s and %s are both %q", name, other, text)
			}
			seen[text] = name
			if _, ok := onDisk[Type(text)]; !ok {
				t.Errorf("%s (%q) is not pinned in onDisk", name, text)
			}
		}
	}
	if len(seen) != len(onDisk) {
		t.Errorf("event.go declares %d types, onDisk pins %d", len(seen), len(onDisk))
	}
}
