// Package converse is the node kind for a turn-based conversation among
// agents (personas), with whispers, verdicts and a time keeper.
package converse

import (
	_ "embed"
	"fmt"
	"math"
	"sync"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/nodes/chat"
	"github.com/debate-runner/runner/spec"
	"gopkg.in/yaml.v3"
)

//go:embed schema.json
var schema []byte

// Kind is the converse node kind.
type Kind struct{}

// Name implements spec.Kind.
func (Kind) Name() string { return "converse" }

// Description implements spec.Kind.
func (Kind) Description() string {
	return "A turn-based conversation: one speaker per turn, whispers, verdicts, interjections, until a condition holds."
}

// Schema implements spec.Kind: the kind's keys and the chat keys (thread,
// history, examples).
func (Kind) Schema() []byte { return fullSchema() }

// fullSchema is built on first use, not at every start of the binary.
var fullSchema = sync.OnceValue(func() []byte { return chat.Schema(schema) })

// Speaker selection strategies.
const (
	SpeakerRoundRobin  = "round_robin"
	SpeakerRandom      = "random"
	SpeakerLeastSpoken = "least_spoken"
	SpeakerExpr        = "expr"
)

// Config is a compiled converse node.
type Config struct {
	Speaker        string
	SpeakerExpr    *spec.Program
	ReplyToWhisper float64
	Model          *spec.ModelPlan
	System         string
	Format         string
	Template       string
	VerdictSet     string
	Options        []string
	Reasoning      bool
	Repair         int
	// FailUndecided fails the run when a participant still gives no
	// verdict after being made to (verdict.undecided: fail); by default
	// its message is recorded without one, with a warning.
	FailUndecided bool
	Rules         []Rule
	Until         *spec.Program
	// While is checked before each turn: the conversation ends when it
	// does not hold (ended_by: while). Break is checked after every
	// message posted (turns, time keeper and watcher posts): the
	// conversation ends when it holds (ended_by: break).
	While, Break *spec.Program
	MaxTurns     int
	Interject    []Interject
	Watch        []Watch
	// Chat says how turns send earlier turns (nil: system and prompt).
	Chat *chat.Config
	// Tools the speakers may call (with the agents' own), up to
	// MaxToolCalls per turn.
	Tools        []string
	MaxToolCalls int
	// Summarize gives turn prompts the speaker's history summary when the
	// spec asks for summaries.
	Summarize bool
	// Thread, when set (summarize: given as a mapping), is the
	// conversation's own summaries, in place of history.summarize: see
	// spec.SummarizePlan.Thread.
	Thread *spec.SummarizePlan
	// Select is the selector when Speaker is SpeakerSelect.
	Select *Select
}

// AsksVerdicts implements spec.VerdictAsker: a conversation with verdict
// options asks its participants for verdicts.
func (c *Config) AsksVerdicts() bool { return len(c.Options) > 0 }

// TurnBound implements kit.TurnBounded: a dry run cut short in a
// conversation extrapolates its turns to max_turns.
func (c *Config) TurnBound() int { return c.MaxTurns }

// Rule is an extra check on a message.
type Rule struct {
	Check   *spec.Program
	Message string
}

// Interject posts a templated message without a model call.
type Interject struct {
	Every        int
	When         *spec.Program
	Template     string
	ForceVerdict bool
	// AtStart posts the rule before the first turn too (turn 0).
	AtStart bool
}

// Watch runs another node every N turns.
type Watch struct {
	// Every runs the watcher every N turns; EveryMessages once N messages
	// (turns, time keeper posts, watchers' posts) were posted since it
	// last ran.
	Every, EveryMessages int
	Node                 string
	Template             string
	// Silent are decisions that post nothing (e.g. NO_ACTION).
	Silent []string
}

// PromptData is the dot of a conversation's turn prompts and system
// templates, and of its time keeper's interjections.
type PromptData struct {
	value.PromptBase
	// Summary is the agent's history summary, when history.summarize
	// applied.
	Summary string
	// Verdict is the verdict set the conversation asks for.
	Verdict value.VerdictView
	// Turn is the turn being asked for (for an interjection: the turn just
	// taken), MaxTurns the cap.
	Turn, MaxTurns int
	Participants   []value.Participant
	// Undecided are the ids of participants without a verdict.
	Undecided []string
	// Feedback explains why the speaker's previous message was rejected.
	Feedback string
}

// WatchData is the dot of a watch entry's template: the conversation's
// data, and the watcher's decision.
type WatchData struct {
	PromptData
	// Decision is the verdict (or output) most of the watcher's agents
	// agreed on; Text is the same, under its earlier name.
	Decision string
	Text     string
	// Reasons are the reasonings the watcher's agents gave with the
	// decision, in agent order (join them: {{join " | " .Reasons}}).
	Reasons []string
}

// PromptData implements spec.Kind.
func (Kind) PromptData() any { return PromptData{} }

//go:embed example.yaml
var example string

// Example implements spec.Kind.
func (Kind) Example() string { return example }

// OutputType is the type of a conversation's output (nodes.ID.output).
var OutputType = spec.ObjectOf(
	spec.Field{Name: "turns", Type: spec.TypeInt},
	spec.Field{Name: "ended_by", Type: spec.TypeString},
	spec.Field{Name: "verdicts", Type: spec.ListOf(spec.ObjectOf(
		spec.Field{Name: "agent", Type: spec.TypeString},
		spec.Field{Name: "verdict", Type: spec.TypeString},
		spec.Field{Name: "reasoning", Type: spec.TypeString},
		spec.Field{Name: "withdrawn", Type: spec.TypeBool},
		spec.Field{Name: "turns", Type: spec.TypeInt},
	))},
	spec.Field{Name: "counts", Type: spec.MapOf(spec.TypeInt)},
	spec.Field{Name: "goal", Type: spec.TypeString},
)

// ParticipantsSample is the environment a converse expression sees beyond
// the flow's, with values that fix the types.
func ParticipantsSample() map[string]any {
	return map[string]any{
		"participants": []value.Participant{},
		"turn":         0,
		"max_turns":    0,
		"undecided":    []string{},
		"speakers":     []string{},
		"last":         value.Message{},
		"transcript":   []value.Message{},
	}
}

// RuleSample adds the message under check.
func RuleSample() map[string]any {
	m := ParticipantsSample()
	m["msg"] = value.Message{}
	return m
}

type rawConfig struct {
	chat.Raw       `yaml:",inline"`
	Tools          []string    `yaml:"tools"`
	MaxToolCalls   syntax.Expr `yaml:"max_tool_calls"`
	Summarize      yaml.Node   `yaml:"summarize"`
	Speaker        yaml.Node   `yaml:"speaker"`
	ReplyToWhisper *float64    `yaml:"reply_to_whisper"`
	Model          syntax.Str  `yaml:"model"`
	System         syntax.Str  `yaml:"system"`
	Message        struct {
		Format   string     `yaml:"format"`
		Template syntax.Str `yaml:"template"`
	} `yaml:"message"`
	Verdict *struct {
		Options   yaml.Node   `yaml:"options"`
		Reasoning string      `yaml:"reasoning"`
		Repair    syntax.Expr `yaml:"repair"`
		Undecided string      `yaml:"undecided"`
		Rules     []struct {
			Check   syntax.Expr `yaml:"check"`
			Message string      `yaml:"message"`
		} `yaml:"rules"`
	} `yaml:"verdict"`
	Until     syntax.Expr `yaml:"until"`
	While     syntax.Expr `yaml:"while"`
	Break     syntax.Expr `yaml:"break"`
	MaxTurns  syntax.Expr `yaml:"max_turns"`
	Interject []struct {
		Every        syntax.Expr `yaml:"every"`
		When         syntax.Expr `yaml:"when"`
		Template     syntax.Str  `yaml:"template"`
		ForceVerdict bool        `yaml:"force_verdict"`
		AtStart      bool        `yaml:"at_start"`
	} `yaml:"interject"`
	Watch []struct {
		Every         syntax.Expr `yaml:"every"`
		EveryMessages syntax.Expr `yaml:"every_messages"`
		Node          syntax.Str  `yaml:"node"`
		Template      syntax.Str  `yaml:"template"`
		Silent        []string    `yaml:"silent"`
	} `yaml:"watch"`
}

// Compile implements kit.Def.
func (Kind) Compile(c *spec.NodeContext, raw *rawConfig) *Config {
	cfg := &Config{
		Speaker:        SpeakerLeastSpoken,
		ReplyToWhisper: 0.8,
		Model:          c.Model(raw.Model),
		Format:         "tags",
		Template:       c.Template(raw.Message.Template),
		Reasoning:      true,
		Repair:         3,
		MaxTurns:       60,
	}
	if raw.System.Set {
		cfg.System = c.Template(raw.System)
	} else {
		for _, a := range c.Node.Agents {
			c.AgentSystem(a)
		}
	}
	if len(c.Node.Agents) < 2 && c.Field("agents") != nil && len(c.Node.Agents) > 0 {
		c.Warnf(c.FieldPos("agents"), "a conversation with one agent is a monologue")
	}
	if len(c.Node.Agents) == 0 && c.Field("agents") == nil {
		c.Errorf(c.Decl.Pos, "has no agents: add agents: [ID, ...]")
	}
	ids := make([]string, len(c.Node.Agents))
	for i, a := range c.Node.Agents {
		c.AgentModel(a, cfg.Model)
		ids[i] = a.ID
	}
	switch raw.Speaker.Kind {
	case yaml.ScalarNode:
		cfg.Speaker = raw.Speaker.Value
	case yaml.MappingNode:
		compileSpeaker(c, &raw.Speaker, cfg, ids)
	}
	if raw.ReplyToWhisper != nil {
		cfg.ReplyToWhisper = *raw.ReplyToWhisper
	}
	if raw.Message.Format != "" {
		cfg.Format = raw.Message.Format
	}
	if v := raw.Verdict; v != nil {
		switch v.Options.Kind {
		case yaml.ScalarNode:
			cfg.VerdictSet, cfg.Options = c.VerdictSet(syntax.Str{V: v.Options.Value, Pos: syntax.Pos{Line: v.Options.Line, Col: v.Options.Column}, Set: true})
		case yaml.SequenceNode:
			_ = v.Options.Decode(&cfg.Options)
			cfg.VerdictSet = "inline"
		}
		cfg.Reasoning = v.Reasoning != "optional"
		cfg.Repair = c.Count(v.Repair, "verdict.repair", 0, 10, cfg.Repair)
		cfg.FailUndecided = v.Undecided == "fail"
		for _, r := range v.Rules {
			if p := c.Expr(r.Check, RuleSample(), spec.BoolResult, "verdict rule"); p != nil {
				cfg.Rules = append(cfg.Rules, Rule{Check: p, Message: r.Message})
			}
		}
	}
	cfg.Until = c.Expr(raw.Until, ParticipantsSample(), spec.BoolResult, "until")
	cfg.While = c.Expr(raw.While, ParticipantsSample(), spec.BoolResult, "while")
	cfg.Break = c.Expr(raw.Break, ParticipantsSample(), spec.BoolResult, "break")
	cfg.MaxTurns = c.Count(raw.MaxTurns, "max_turns", 1, math.MaxInt32, cfg.MaxTurns)
	for _, in := range raw.Interject {
		ij := Interject{Every: c.Count(in.Every, "interject every", 1, math.MaxInt32, 0), Template: c.Template(in.Template), ForceVerdict: in.ForceVerdict, AtStart: in.AtStart}
		ij.When = c.Expr(in.When, ParticipantsSample(), spec.BoolResult, "interject when")
		if in.Every.IsZero() && in.When.IsZero() && !in.AtStart {
			c.Errorf(in.Template.Pos, "interject needs every: N, when: CONDITION or at_start: true")
		}
		cfg.Interject = append(cfg.Interject, ij)
	}
	for _, w := range raw.Watch {
		id := c.RunsNode(w.Node, "watch")
		if w.Every.IsZero() == w.EveryMessages.IsZero() {
			c.Errorf(w.Node.Pos, "watch needs one of every: N (turns) or every_messages: N")
		}
		every, everyMessages := c.Count(w.Every, "watch every", 1, math.MaxInt32, 0), c.Count(w.EveryMessages, "watch every_messages", 1, math.MaxInt32, 0)
		cfg.Watch = append(cfg.Watch, Watch{Every: every, EveryMessages: everyMessages, Node: id, Template: c.TemplateWith(w.Template, WatchData{}), Silent: w.Silent})
	}
	compileExtras(c, raw, cfg)
	if raw.Until.IsZero() && raw.Verdict == nil && raw.While.IsZero() && raw.Break.IsZero() {
		c.Warnf(c.Decl.Pos, "no verdict and no until: the conversation runs max_turns (%d) turns", cfg.MaxTurns)
	}
	c.SetOutput(OutputType, spec.TypeString)
	return cfg
}

// Detail implements kit.DetailOf.
func (Kind) Detail(n *spec.NodePlan, cfg *Config) string {
	d := fmt.Sprintf("%d participants, up to %d turns", len(n.Agents), cfg.MaxTurns)
	switch sel := cfg.Select; {
	case sel == nil || sel.Agent == nil:
	case len(n.Agents) <= 2 && !sel.Repeat && sel.End == "":
		// After the first turn only the other one may speak.
		d += fmt.Sprintf(", the first speaker chosen by %s", sel.Agent.ID)
	default:
		d += fmt.Sprintf(", each speaker chosen by %s (a call per turn)", sel.Agent.ID)
	}
	if sp := cfg.Thread; sp != nil {
		over := fmt.Sprintf("%d characters", sp.OverChars)
		if sp.OverTokens > 0 {
			over = fmt.Sprintf("%d tokens", sp.OverTokens)
		}
		d += fmt.Sprintf(", a summary before a turn whose unsummarised messages pass %s", over)
	}
	return d
}
