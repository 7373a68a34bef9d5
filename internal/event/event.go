// Package event names the types of the events a run journals. The names
// are the journal's on-disk format (the "type" of each line of
// journal.jsonl): recorded runs resume and replay by them, so a name here
// never changes. The runtime, the node kinds and the readers of journals
// (progress, the view, spec tests, resume) all use these constants; the
// package imports nothing, so every layer can.
package event

// Type is the type of a journal event.
type Type string

// The run's own milestones.
const (
	RunStarted     Type = "run_started"
	RunResumed     Type = "run_resumed"
	RunFinished    Type = "run_finished"
	Error          Type = "error"           // the run failed
	BudgetExceeded Type = "budget_exceeded" // the run stopped at its budget
	Warning        Type = "warning"
)

// The flow.
const (
	NodeStarted  Type = "node_started"
	NodeFinished Type = "node_finished"
	NodeFailed   Type = "node_failed"
	LoopEnded    Type = "loop_ended"
	ForeachItem  Type = "foreach_item"
)

// Model calls and what they leave.
const (
	ModelRequest  Type = "model_request"
	ModelResponse Type = "model_response"
	ModelError    Type = "model_error"
	Retry         Type = "retry"
	Message       Type = "message"
	ThreadTurn    Type = "thread_turn"
	ToolCall      Type = "tool_call"
	MCPTools      Type = "mcp_tools" // the tools an MCP server listed
	Answer        Type = "answer"    // a person's answer to a clarifying question
	Summary       Type = "summary"
)

// Events the node kinds journal (kit.Host.Event).
const (
	Output            Type = "output"
	Fallback          Type = "fallback"
	Repair            Type = "repair"
	Rejected          Type = "rejected"
	NoVerdict         Type = "no_verdict"
	Interjection      Type = "interjection"
	Watch             Type = "watch"
	ConversationEnded Type = "conversation_ended"
	Waiting           Type = "waiting"
	// Absent is an agent a node completed without (ask's min_answers).
	Absent Type = "absent"
	// SpeakerSelected is a conversation's selector choosing who speaks.
	SpeakerSelected Type = "speaker_selected"
)
