// Package value is the run-time data model: the values that prompts and
// expressions see (messages, node results, agents, goals, verdicts, prompt
// data) and the helpers templates call on them. The spec compiler checks
// templates and expressions against these types; the runtime and the node
// kinds fill them. It imports nothing of the module.
package value

// This file defines the values that prompts (text/template) and expressions
// (expr) see at run time. The compiler checks templates and expressions
// against these types, and the runtime fills them, so a field that does not
// exist here is a validation error rather than a "<no value>" in a prompt.

// AgentView is what a template sees of an agent.
type AgentView struct {
	ID      string         `json:"id" expr:"id"`
	Name    string         `json:"name" expr:"name"`
	Role    string         `json:"role,omitempty" expr:"role"`
	Model   string         `json:"model,omitempty" expr:"model"`
	Persona Persona        `json:"persona" expr:"persona"`
	Vars    map[string]any `json:"vars,omitempty" expr:"vars"`
	// Index is the agent's place (1-based) in its replicated declaration,
	// Group that declaration's id (0 and "" when it is not replicated).
	Index int    `json:"index,omitempty" expr:"index"`
	Group string `json:"group,omitempty" expr:"group"`
	// Neighbours are the ids of the agents it hears by its declaration's
	// topology (none without one).
	Neighbours []string `json:"neighbours,omitempty" expr:"neighbours"`
}

// GoalView is the goal a foreach over goals is on.
type GoalView struct {
	ID          string         `json:"id" expr:"id"`
	Description string         `json:"description" expr:"description"`
	Index       int            `json:"index" expr:"index"` // 1-based
	Count       int            `json:"count" expr:"count"`
	Vars        map[string]any `json:"vars,omitempty" expr:"vars"`
}

// Message is one recorded contribution of a run: a proposal, a critique, a
// turn of a conversation, an interjection.
type Message struct {
	ID    string `json:"id" expr:"id"`
	Node  string `json:"node" expr:"node"`
	Round int    `json:"round,omitempty" expr:"round"`
	Goal  string `json:"goal,omitempty" expr:"goal"`
	// Loops are every enclosing loop's iteration and foreach's item
	// number (1-based) when it was recorded, by the loop's name (its as:
	// round, goal, item...): Round is only the innermost loop's.
	Loops map[string]int `json:"loops,omitempty" expr:"loops"`
	Turn  int            `json:"turn,omitempty" expr:"turn"`
	From  string         `json:"from" expr:"from"`
	// To is the addressee's agent id; empty means everyone.
	To string `json:"to,omitempty" expr:"to"`
	// Whisper messages are visible to their sender and addressee only.
	Whisper bool `json:"whisper,omitempty" expr:"whisper"`
	// Private messages are visible to their sender only.
	Private bool   `json:"private,omitempty" expr:"private"`
	Record  string `json:"record,omitempty" expr:"record"`
	Content string `json:"content" expr:"content"`
	// Output is the parsed reply (json, tags, regex), when the node parses.
	Output any `json:"output,omitempty" expr:"output"`
	// Fields are the tags of a tag-formatted reply.
	Fields    map[string]string `json:"fields,omitempty" expr:"fields"`
	Verdict   string            `json:"verdict,omitempty" expr:"verdict"`
	Reasoning string            `json:"reasoning,omitempty" expr:"reasoning"`
	Withdrawn bool              `json:"withdrawn,omitempty" expr:"withdrawn"`
	// Carried marks a message copied from an earlier one without a model call.
	Carried bool `json:"carried,omitempty" expr:"carried"`
	// Fallback marks a message whose output is the node's fallback: the
	// reply could not be read even after its repairs.
	Fallback bool `json:"fallback,omitempty" expr:"fallback"`
	// Forced marks a verdict given because the conversation made its
	// author decide (an interjection with force_verdict).
	Forced bool `json:"forced,omitempty" expr:"forced"`
	// ChoiceMap maps the option labels a call showed (shuffled choices:) to
	// the options' original labels; the output is already mapped back.
	ChoiceMap map[string]string `json:"choice_map,omitempty" expr:"choice_map"`
}

// NodeResult is what a finished node leaves for later nodes, templates and
// expressions (nodes.ID.output).
type NodeResult struct {
	// Output is the parsed output of the node's last call (or its text).
	Output any `json:"output" expr:"output"`
	// Outputs holds the latest parsed output per agent id.
	Outputs map[string]any `json:"outputs,omitempty" expr:"outputs"`
	// Text is the raw text of the node's last reply.
	Text     string    `json:"text,omitempty" expr:"text"`
	Messages []Message `json:"-" expr:"messages"`
	Calls    int       `json:"calls" expr:"calls"`
	// Ran is true for a node that ran (in this scope, for a concurrent
	// foreach's iterations): the zero result a template's index .Nodes
	// gives for a node that did not run has it false.
	Ran bool `json:"-" expr:"ran"`
	// Absent are the agents a node left out because their call failed
	// after its retries or their reply stayed unusable after its repairs
	// (an ask node's min_answers): they have no message and no output.
	Absent []Absence `json:"absent,omitempty" expr:"absent"`
}

// Absence is an agent a node completed without.
type Absence struct {
	// Agent is the agent's id, Key the call key (within the node
	// execution) of the call that failed or gave the last unusable reply.
	Agent string `json:"agent" expr:"agent"`
	Key   string `json:"key" expr:"key"`
	// Reason says why, as the warning did.
	Reason string `json:"reason" expr:"reason"`
}

// Participant is an agent's standing in a conversation.
type Participant struct {
	ID        string `json:"id" expr:"id"`
	Name      string `json:"name" expr:"name"`
	Turns     int    `json:"turns" expr:"turns"`
	Verdict   string `json:"verdict,omitempty" expr:"verdict"`
	Reasoning string `json:"reasoning,omitempty" expr:"reasoning"`
	Withdrawn bool   `json:"withdrawn" expr:"withdrawn"`
}

// VerdictView describes the verdicts a conversation asks for.
type VerdictView struct {
	Set       string   `json:"set"`
	Options   []string `json:"options"`
	Reasoning bool     `json:"reasoning"`
}

// Question is a clarifying question and, once given, its answer.
type Question struct {
	ID       string `json:"id" yaml:"id" expr:"id"`
	Agent    string `json:"agent" yaml:"agent" expr:"agent"`
	Question string `json:"question" yaml:"question" expr:"question"`
	Answer   string `json:"answer,omitempty" yaml:"answer,omitempty" expr:"answer"`
}

// PromptBase is what every prompt template sees, whatever the kind: each
// kind's prompt data embeds it and adds the fields of its own (ask adds
// .Target and .Own, converse .Turn and .Participants, ...), and templates
// are checked against the kind's type, so a field another kind has is a
// validation error rather than an empty string in a prompt.
type PromptBase struct {
	Agent AgentView
	// Agents are the agents of the node being run, in declaration order.
	Agents []AgentView
	// AllAgents are every agent of the spec, in declaration order.
	AllAgents []AgentView
	// Round is the innermost loop counter (1-based), 0 outside loops.
	Round int
	// Loop holds every loop and foreach variable in scope by its 'as' name.
	Loop map[string]any `tmplkeys:"loop"`
	// Loops holds every enclosing loop's iteration and foreach's item
	// number (1-based) by the same names, as messages carry them.
	Loops map[string]int `tmplkeys:"loops"`
	// Item is the element of the innermost foreach.
	Item   any
	Goal   GoalView
	Inputs map[string]any        `tmplkeys:"inputs"`
	Vars   map[string]any        `tmplkeys:"vars"`
	Nodes  map[string]NodeResult `tmplkeys:"nodes"`
	// History is every earlier message this agent may see, oldest first.
	// Its messages are shared with the run and other prompts: read them,
	// never change them.
	History []*Message
	// Inbox is the messages addressed to this agent in the current round
	// and goal.
	Inbox []*Message
}

// promptBase lets BaseOf find the PromptBase a kind's prompt data embeds.
// It is unexported, so templates cannot call it.
func (b *PromptBase) promptBase() *PromptBase { return b }

// BaseOf returns the PromptBase that prompt data (a pointer to a kind's
// PromptData, which embeds it) holds, or nil.
func BaseOf(data any) *PromptBase {
	if h, ok := data.(interface{ promptBase() *PromptBase }); ok {
		return h.promptBase()
	}
	return nil
}

// JudgeData is the dot of a judged score's template (score.judge).
type JudgeData struct {
	Inputs map[string]any `tmplkeys:"inputs"`
	Vars   map[string]any `tmplkeys:"vars"`
	// Outputs are the run's outputs by name.
	Outputs map[string]any
	// Expected is the dataset line's expected value (nil without one);
	// HasExpected says there is one.
	Expected    any
	HasExpected bool
	// Criterion is what the judge grades, Levels the rubric's levels,
	// lowest first.
	Criterion string
	Levels    []JudgeLevel
}

// JudgeLevel is one level of a judge's rubric.
type JudgeLevel struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// SummaryData is the dot of the history.summarize template.
type SummaryData struct {
	PromptBase
	// Text is the history to condense.
	Text string
	// MaxChars is the length the summary must stay under.
	MaxChars int
	// Chars is the length of Text.
	Chars int
	// Extra holds max_chars and chars again, under the names templates of
	// earlier versions read them by.
	Extra map[string]any `tmplkeys:"summary_extra"`
}

// GoalVerdicts are the verdicts given in one node during one goal: each
// agent's latest verdict, and how many agents chose each option. Nodes are
// kept apart so that, e.g., a moderation panel watching a debate does not
// count among the debaters.
type GoalVerdicts struct {
	Goal     string             `json:"goal" expr:"goal"`
	Node     string             `json:"node" expr:"node"`
	Verdicts []AgentVerdict     `json:"verdicts" expr:"verdicts"`
	Counts   map[string]int     `json:"counts" expr:"counts"`
	Percent  map[string]float64 `json:"percent" expr:"percent"`
}

// AgentVerdict is an agent's final verdict on a goal.
type AgentVerdict struct {
	Agent     string `json:"agent" expr:"agent"`
	Verdict   string `json:"verdict" expr:"verdict"`
	Reasoning string `json:"reasoning,omitempty" expr:"reasoning"`
	Withdrawn bool   `json:"withdrawn" expr:"withdrawn"`
	// Forced is set when the verdict was forced (force_verdict).
	Forced bool `json:"forced,omitempty" expr:"forced"`
}

// ConcludedSample is the environment a spec's concluded: condition adds to
// the run's: the outputs, the names of the outputs whose values came from a
// fallback or a forced verdict, and the ids of the goals that reached no
// conclusion.
func ConcludedSample() map[string]any {
	return map[string]any{"outputs": map[string]any{}, "fallback_outputs": []string{}, "inconclusive_goals": []string{}}
}

// GoalConcludedSample is the environment a goal's concluded: condition adds
// to the run's (where goal is the goal): every agent's final verdict on it
// (in the nodes the goal runs, not in watchers, whose verdicts are about
// the conversation) and the most common of them ("" when none was given).
func GoalConcludedSample() map[string]any {
	return map[string]any{"final_verdicts": []AgentVerdict{}, "consensus": ""}
}

// Persona describes a character for persona-driven debates.
type Persona struct {
	Title         string `yaml:"title" json:"title,omitempty"`
	Expertise     string `yaml:"expertise" json:"expertise,omitempty"`
	Personality   string `yaml:"personality" json:"personality,omitempty"`
	SpeakingStyle string `yaml:"speaking_style" json:"speaking_style,omitempty"`
	Background    string `yaml:"background" json:"background,omitempty"`
}
