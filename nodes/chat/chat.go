// Package chat builds the chat requests of node kinds that send earlier
// turns as chat messages rather than re-stating them in one prompt: an
// agent's thread (its earlier prompts and replies as user and assistant
// turns), messages of the debate rendered as turns, and few-shot example
// pairs. Kinds (ask, converse) embed its YAML form, compile it, and build
// each call's messages with Build.
//
// A request is laid out as: system prompt, example pairs, thread turns,
// an opening user turn and the history turns, the prompt (or, with history.after_prompt, the prompt,
// the history turns and a closing user turn). Threads grow by appending, so
// each request of a thread starts with the exact messages of the one
// before it, and a provider's prompt cache can serve that part.
package chat

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
	"github.com/expr-lang/expr/vm"
	"gopkg.in/yaml.v3"
)

//go:embed schema.json
var schemaProps []byte

// Roles a history turn can take.
const (
	RoleAssistant = "assistant"
	RoleUser      = "user"
	RoleOmit      = "omit"
)

// Raw is the YAML form of a node's chat keys; kinds embed it inline.
type Raw struct {
	Thread   syntax.Str  `yaml:"thread"`
	History  *RawHistory `yaml:"history"`
	Examples yaml.Node   `yaml:"examples"`
}

// RawHistory is history: as written.
type RawHistory struct {
	Records     []syntax.Str   `yaml:"records"`
	Own         string         `yaml:"own"`
	Others      string         `yaml:"others"`
	Prefix      syntax.Str     `yaml:"prefix"`
	Latest      bool           `yaml:"latest"`
	Name        bool           `yaml:"name"`
	Merge       bool           `yaml:"merge"`
	AfterPrompt bool           `yaml:"after_prompt"`
	Closing     syntax.Str     `yaml:"closing"`
	Opening     syntax.Str     `yaml:"opening"`
	UserName    syntax.Str     `yaml:"user_name"`
	From        syntax.StrList `yaml:"from"`
	Where       syntax.Expr    `yaml:"where"`
}

// Config is a node's compiled chat keys; nil when it uses none.
type Config struct {
	// Thread names the agents' thread the node's calls continue.
	Thread   string
	History  *History
	Examples *Examples
}

// History renders visible messages as chat turns.
type History struct {
	// Records are the records whose messages become turns (all when
	// empty).
	Records []string
	// Own and Others are the roles of the agent's own messages and of
	// everyone else's: assistant, user or omit.
	Own, Others string
	// Prefix is a template rendered before each turn's text (its dot is a
	// TurnData), "" for none.
	Prefix string
	// Latest keeps only each author's latest message.
	Latest bool
	// Name sends each turn with its author's id as the message's name
	// (named turns, which some providers show the model as the speaker).
	Name bool
	// Merge joins consecutive turns of one role (the prompt included) into
	// one message, separated by a blank line.
	Merge bool
	// AfterPrompt puts the turns after the prompt, followed by a closing
	// user turn rendered from Closing ("" sends an empty one).
	AfterPrompt bool
	Closing     string
	// Opening, when set, is a user turn put before the history turns
	// (when there are any): an empty one, or rendered from the template
	// *Opening names when that is not "".
	Opening *string
	// UserName, when not "", is the name of every user turn the history
	// lays out (the opening, others' turns, the prompt, the closing); with
	// Name, assistant turns keep their authors' ids.
	UserName string
	// Neighbours keeps, of everyone else's messages, only those of the
	// agent's neighbours (its declaration's topology); Authors, when set,
	// only those of these agents.
	Neighbours bool
	Authors    []string
	// Where keeps only the messages it holds for (msg: the message,
	// agent: the agent being prompted).
	Where *spec.Program
}

// Examples are few-shot pairs put after the system prompt: from an
// expression (a var, an input) or a template, either giving a list of
// {user, assistant} pairs.
type Examples struct {
	Expr     *spec.Program
	Template string
}

// TurnData is the dot of a history prefix template.
type TurnData struct {
	// Message is the message the turn shows.
	Message value.Message
	// Name is its author's display name; Index its place among the turns
	// (1-based); Own is set for the prompted agent's own messages.
	Name  string
	Index int
	Own   bool
	// Agent is the agent being prompted.
	Agent value.AgentView
}

// WhereSample is the environment history.where adds: the message a turn
// would show and the agent being prompted.
func WhereSample() map[string]any {
	return map[string]any{"msg": value.Message{}, "agent": value.AgentView{}}
}

// Schema adds the chat keys to a kind's schema fragment.
func Schema(kind []byte) []byte {
	var frag, props map[string]any
	if err := json.Unmarshal(kind, &frag); err != nil {
		panic(fmt.Sprintf("chat: kind schema: %v", err))
	}
	if err := json.Unmarshal(schemaProps, &props); err != nil {
		panic(fmt.Sprintf("chat: schema: %v", err))
	}
	p, _ := frag["properties"].(map[string]any)
	for k, v := range props {
		p[k] = v
	}
	out, err := json.Marshal(frag)
	if err != nil {
		panic(err)
	}
	return out
}

// Compile checks a node's chat keys; nil when it uses none.
func Compile(c *spec.NodeContext, raw *Raw) *Config {
	cfg := &Config{Thread: raw.Thread.V}
	if h := raw.History; h != nil {
		hc := &History{Own: RoleAssistant, Others: RoleUser, Latest: h.Latest, Name: h.Name, Merge: h.Merge, AfterPrompt: h.AfterPrompt}
		for _, r := range h.Records {
			hc.Records = append(hc.Records, r.V)
			c.RequireRecord(r)
		}
		if h.Own != "" {
			hc.Own = h.Own
		}
		if h.Others != "" {
			hc.Others = h.Others
		}
		if h.Prefix.Set {
			hc.Prefix = c.TemplateWith(h.Prefix, TurnData{})
		}
		if h.Opening.Set {
			if h.AfterPrompt {
				c.Errorf(h.Opening.Pos, "history.opening is a user turn before the history turns, which history.after_prompt puts after the prompt: use one of them")
			}
			name := ""
			if h.Opening.V != "" {
				name = c.Template(h.Opening)
			}
			hc.Opening = &name
		}
		if h.UserName.Set {
			if h.UserName.V == "" {
				c.Errorf(h.UserName.Pos, "history.user_name is empty: give a name or remove the key")
			}
			hc.UserName = wireName(h.UserName.V)
		}
		if h.Closing.Set {
			if !h.AfterPrompt {
				c.Errorf(h.Closing.Pos, "history.closing is the user turn after the history turns: it needs history.after_prompt: true")
			}
			hc.Closing = c.Template(h.Closing)
		}
		switch {
		case len(h.From) == 1 && h.From[0].V == "neighbours":
			hc.Neighbours = true
			for _, a := range c.Node.Agents {
				if a.Neighbours == nil {
					c.Errorf(h.From[0].Pos, "history.from: neighbours: agent %q has no topology (declare topology: on a replicated agent)", a.ID)
					break
				}
			}
		case len(h.From) == 1 && h.From[0].V == "all":
		default:
			for _, f := range h.From {
				if g, ok := c.Plan().Groups[f.V]; ok {
					for _, a := range g {
						hc.Authors = append(hc.Authors, a.ID)
					}
				} else if a := c.Agent(f); a != nil {
					hc.Authors = append(hc.Authors, a.ID)
				}
			}
		}
		if !h.Where.IsZero() {
			hc.Where = c.Expr(h.Where, WhereSample(), spec.BoolResult, "history.where")
		}
		if hc.Own == RoleOmit && hc.Others == RoleOmit {
			c.Errorf(c.FieldPos("history"), "history with own: omit and others: omit shows no turns; remove it")
		}
		cfg.History = hc
	}
	switch raw.Examples.Kind {
	case 0:
	case yaml.ScalarNode:
		var e syntax.Expr
		if err := raw.Examples.Decode(&e); err == nil {
			cfg.Examples = &Examples{Expr: c.Expr(e, nil, spec.PairsResult, "examples")}
		}
	case yaml.MappingNode:
		var m struct {
			Template syntax.Str `yaml:"template"`
		}
		if err := raw.Examples.Decode(&m); err == nil && m.Template.Set {
			cfg.Examples = &Examples{Template: c.Template(m.Template)}
		}
	}
	if cfg.Thread == "" && cfg.History == nil && cfg.Examples == nil {
		return nil
	}
	return cfg
}

// Request is a call's messages and, for a thread, what to add to it once
// the reply is in.
type Request struct {
	Messages []kit.ChatMessage
	thread   kit.Thread
	prompt   string
}

// Continued says the request is a turn of a thread, which the agent's next
// turn extends.
func (r *Request) Continued() bool { return r.thread != nil }

// Done adds the turn to the agent's thread (if the node keeps one): the
// prompt as sent and the reply.
func (r *Request) Done(reply string) {
	if r.thread != nil {
		r.thread.Add(r.prompt, reply)
	}
}

// Build lays out a call's messages: system (when not ""), example pairs,
// the agent's thread, history turns and the prompt. data is the prompt
// Host is what laying out a call needs of the run: the agents' threads,
// templates and the expression environment.
type Host interface {
	kit.History
	kit.Prompter
	kit.Flow
}

// data templates (closing) are rendered with, base its PromptBase.
func Build(h Host, cfg *Config, agent *spec.AgentPlan, base *value.PromptBase, data any, system, prompt string) (*Request, error) {
	return BuildSkipping(h, cfg, agent, base, data, system, prompt, 0)
}

// BuildSkipping is Build leaving out the first skip messages of the
// agent's thread: those a summary of the conversation stands for (the
// thread itself keeps them, and goes on growing).
func BuildSkipping(h Host, cfg *Config, agent *spec.AgentPlan, base *value.PromptBase, data any, system, prompt string, skip int) (*Request, error) {
	req := &Request{}
	if system != "" {
		req.Messages = append(req.Messages, kit.ChatMessage{Role: "system", Content: system})
	}
	if cfg == nil {
		req.Messages = append(req.Messages, kit.ChatMessage{Role: "user", Content: prompt})
		return req, nil
	}
	if cfg.Examples != nil {
		pairs, err := examples(h, cfg.Examples, data)
		if err != nil {
			return nil, err
		}
		req.Messages = append(req.Messages, pairs...)
	}
	if cfg.Thread != "" {
		t := h.Thread(cfg.Thread, agent.ID)
		sent, err := t.Prompt(prompt)
		if err != nil {
			return nil, err
		}
		req.thread, req.prompt, prompt = t, sent, sent
		turns := t.Turns()
		req.Messages = append(req.Messages, turns[min(skip, len(turns)):]...)
	}
	var turns []kit.ChatMessage
	if cfg.History != nil {
		var err error
		if turns, err = historyTurns(h, cfg.History, agent, base); err != nil {
			return nil, err
		}
	}
	userName := ""
	if cfg.History != nil {
		userName = cfg.History.UserName
	}
	if cfg.History != nil && cfg.History.AfterPrompt {
		req.Messages = add(req.Messages, kit.ChatMessage{Role: "user", Content: prompt, Name: userName}, cfg.History.Merge)
		for _, t := range turns {
			req.Messages = add(req.Messages, t, cfg.History.Merge)
		}
		closing := ""
		if cfg.History.Closing != "" {
			var err error
			if closing, err = h.Render(cfg.History.Closing, data); err != nil {
				return nil, err
			}
		}
		req.Messages = add(req.Messages, kit.ChatMessage{Role: "user", Content: closing, Name: userName}, cfg.History.Merge)
		return req, nil
	}
	merge := cfg.History != nil && cfg.History.Merge
	if len(turns) > 0 && cfg.History.Opening != nil {
		opening := ""
		if *cfg.History.Opening != "" {
			var err error
			if opening, err = h.Render(*cfg.History.Opening, data); err != nil {
				return nil, err
			}
		}
		req.Messages = append(req.Messages, kit.ChatMessage{Role: "user", Content: opening, Name: userName})
	}
	for _, t := range turns {
		req.Messages = add(req.Messages, t, merge)
	}
	req.Messages = add(req.Messages, kit.ChatMessage{Role: "user", Content: prompt, Name: userName}, merge)
	return req, nil
}

// add appends m, joined to the last message when merging turns of the
// same role. The system prompt and the thread (never changed once sent)
// are not merged into.
func add(msgs []kit.ChatMessage, m kit.ChatMessage, merge bool) []kit.ChatMessage {
	if merge && len(msgs) > 0 {
		last := &msgs[len(msgs)-1]
		if last.Role == m.Role && last.Name == m.Name && last.Role != "system" {
			switch {
			case m.Content == "":
			case last.Content == "":
				last.Content = m.Content
			default:
				last.Content += "\n\n" + m.Content
			}
			return msgs
		}
	}
	return append(msgs, m)
}

// historyTurns renders the agent's visible messages of the current goal
// as turns.
func historyTurns(h Host, hc *History, agent *spec.AgentPlan, base *value.PromptBase) ([]kit.ChatMessage, error) {
	var picked []value.Message
	for _, shared := range base.History {
		m := *shared
		if m.Private || m.Goal != base.Goal.ID || m.Record == "" {
			continue
		}
		if len(hc.Records) > 0 && !contains(hc.Records, m.Record) {
			continue
		}
		if m.From != agent.ID && (hc.Neighbours && !contains(agent.Neighbours, m.From) || len(hc.Authors) > 0 && !contains(hc.Authors, m.From)) {
			continue
		}
		if hc.Where != nil {
			env := h.Env().Map()
			env["msg"], env["agent"] = m, base.Agent
			v, err := vm.Run(hc.Where.Program, env)
			if err != nil {
				return nil, fmt.Errorf("history.where (%s): %w", hc.Where.Source, spec.ConditionError(errors.New(strings.SplitN(err.Error(), "\n", 2)[0])))
			}
			if keep, _ := v.(bool); !keep {
				continue
			}
		}
		role := hc.Others
		if m.From == agent.ID {
			role = hc.Own
		}
		if role == RoleOmit {
			continue
		}
		picked = append(picked, m)
	}
	if hc.Latest {
		picked = latestPerAuthor(picked)
	}
	names := map[string]string{}
	for _, a := range base.AllAgents {
		names[a.ID] = a.Name
	}
	out := make([]kit.ChatMessage, 0, len(picked))
	for i, m := range picked {
		role := hc.Others
		if m.From == agent.ID {
			role = hc.Own
		}
		text := m.Content
		if hc.Prefix != "" {
			name := names[m.From]
			if name == "" {
				name = m.From
			}
			p, err := h.Render(hc.Prefix, &TurnData{Message: m, Name: name, Index: i + 1, Own: m.From == agent.ID, Agent: base.Agent})
			if err != nil {
				return nil, err
			}
			text = p + text
		}
		turn := kit.ChatMessage{Role: role, Content: text}
		if hc.Name {
			turn.Name = wireName(m.From)
		}
		if role == RoleUser && hc.UserName != "" {
			turn.Name = hc.UserName
		}
		out = append(out, turn)
	}
	return out, nil
}

// latestPerAuthor keeps each author's last message, in the order of those
// messages.
func latestPerAuthor(ms []value.Message) []value.Message {
	last := map[string]int{}
	for i, m := range ms {
		last[m.From] = i
	}
	var out []value.Message
	for i, m := range ms {
		if last[m.From] == i {
			out = append(out, m)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// examples evaluates a node's few-shot pairs into user and assistant turns.
func examples(h Host, ex *Examples, data any) ([]kit.ChatMessage, error) {
	var v any
	if ex.Template != "" {
		text, err := h.Render(ex.Template, data)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &v); err != nil {
			return nil, fmt.Errorf("examples: template %s must render a JSON list of {\"user\": ..., \"assistant\": ...} pairs: %w", ex.Template, err)
		}
	} else {
		out, err := vm.Run(ex.Expr.Program, h.Env().Map())
		if err != nil {
			return nil, fmt.Errorf("examples (%s): %s", ex.Expr.Source, strings.SplitN(err.Error(), "\n", 2)[0])
		}
		v = out
		if s, ok := out.(string); ok {
			if err := json.Unmarshal([]byte(s), &v); err != nil {
				return nil, fmt.Errorf("examples (%s) gave text that is not a JSON list of pairs: %w", ex.Expr.Source, err)
			}
		}
	}
	return Pairs(v)
}

// Pairs reads few-shot pairs: a list of {user, assistant} mappings or of
// [user, assistant] lists. A mapping may name its turns: name (both
// turns), user_name, assistant_name (each overriding name for its turn);
// any other key is refused rather than dropped.
func Pairs(v any) ([]kit.ChatMessage, error) {
	list, ok := v.([]any)
	if !ok {
		if v == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("examples must be a list of {user, assistant} pairs, not %T", v)
	}
	var out []kit.ChatMessage
	for i, item := range list {
		var user, assistant any
		var userName, assistantName string
		switch x := item.(type) {
		case map[string]any:
			user, assistant = x["user"], x["assistant"]
			names := map[string]string{}
			for k, val := range x {
				switch k {
				case "user", "assistant":
				case "name", "user_name", "assistant_name":
					n, ok := val.(string)
					if !ok || n == "" {
						return nil, fmt.Errorf("examples: item %d: %s must be a non-empty text", i+1, k)
					}
					names[k] = wireName(n)
				default:
					return nil, fmt.Errorf("examples: item %d has key %q; a pair's keys are user, assistant, name, user_name and assistant_name", i+1, k)
				}
			}
			userName, assistantName = names["name"], names["name"]
			if n, ok := names["user_name"]; ok {
				userName = n
			}
			if n, ok := names["assistant_name"]; ok {
				assistantName = n
			}
		case []any:
			if len(x) == 2 {
				user, assistant = x[0], x[1]
			}
		}
		u, uok := user.(string)
		a, aok := assistant.(string)
		if !uok || !aok {
			return nil, fmt.Errorf("examples: item %d is not a pair of texts {user: ..., assistant: ...}", i+1)
		}
		out = append(out, kit.ChatMessage{Role: "user", Content: u, Name: userName}, kit.ChatMessage{Role: "assistant", Content: a, Name: assistantName})
	}
	return out, nil
}

// wireName makes an author id a message name providers accept: letters,
// digits, '_' and '-', at most 64 characters.
func wireName(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}
