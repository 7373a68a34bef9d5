package examples_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/nodes/ask"
	"github.com/debate-runner/runner/nodes/clarify"
	"github.com/debate-runner/runner/nodes/converse"
	"github.com/debate-runner/runner/spec"
	"github.com/expr-lang/expr"
)

// examples returns the example folders (names) that hold a spec.yaml.
func examples(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("*/spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Dir(p))
	}
	sort.Strings(out)
	return out
}

func load(t *testing.T, name string) *spec.Plan {
	t.Helper()
	plan, diags := spec.Load(filepath.Join(name, "spec.yaml"), nodes.Registry())
	if len(diags) > 0 {
		t.Fatalf("%s/spec.yaml must validate with no errors and no warnings:\n%s", name, diags.Format())
	}
	return plan
}

func TestExamplesValidate(t *testing.T) {
	names := examples(t)
	for _, want := range []string{"design-debate", "hiring-panel", "proposal-review", "reasoning-debate", "research-review"} {
		if !contains(names, want) {
			t.Errorf("example %s is missing (found %v)", want, names)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			load(t, name)
			data, err := os.ReadFile(filepath.Join(name, "spec.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			const header = "# yaml-language-server: $schema=../../schemas/spec.schema.json\n"
			if !strings.HasPrefix(string(data), header) {
				t.Errorf("%s/spec.yaml must start with %q so editors find the schema", name, strings.TrimSpace(header))
			}
			if _, err := os.Stat(filepath.Join(name, "../../schemas/spec.schema.json")); err != nil {
				t.Errorf("the schema the header points at is missing: %v", err)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// readmeInputs reads the --input and --set flags of the `runner run`
// commands in an example's README. Values given as @FILE are read from the
// file (paths are relative to the repository root, as the README shows).
var (
	inputFlag = regexp.MustCompile(`--input ([A-Za-z_][A-Za-z0-9_-]*)=(?:@(\S+)|"([^"]*)"|(\S+))`)
	setFlag   = regexp.MustCompile(`--set ([A-Za-z_][A-Za-z0-9_-]*)=`)
)

type readme struct {
	text   string
	inputs map[string]string // name -> value
	files  map[string]string // name -> file the value came from
	sets   []string
}

func readReadme(t *testing.T, name string) (readme, bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(name, "README.md"))
	if os.IsNotExist(err) {
		return readme{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	r := readme{text: string(data), inputs: map[string]string{}, files: map[string]string{}}
	for _, m := range inputFlag.FindAllStringSubmatch(r.text, -1) {
		switch {
		case m[2] != "":
			r.files[m[1]] = m[2]
			if !strings.HasPrefix(m[2], "examples/") {
				continue // an illustration such as @notes.md, not a shipped file
			}
			content, err := os.ReadFile(filepath.Join("..", m[2]))
			if err != nil {
				t.Errorf("%s/README.md gives --input %s=@%s, but the file cannot be read: %v", name, m[1], m[2], err)
				continue
			}
			r.inputs[m[1]] = string(content)
		case m[3] != "":
			r.inputs[m[1]] = m[3]
		default:
			r.inputs[m[1]] = m[4]
		}
	}
	for _, m := range setFlag.FindAllStringSubmatch(r.text, -1) {
		r.sets = append(r.sets, m[1])
	}
	return r, true
}

func TestExampleReadmes(t *testing.T) {
	for _, name := range []string{"design-debate", "hiring-panel", "proposal-review", "research-review"} {
		if _, ok := readReadme(t, name); !ok {
			t.Errorf("example %s has no README.md", name)
		}
	}
	for _, name := range examples(t) {
		r, ok := readReadme(t, name)
		if !ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			plan := load(t, name)
			run := "runner run examples/" + name + "/spec.yaml"
			if !strings.Contains(r.text, run) {
				t.Errorf("README.md does not show how to run the example (%q)", run)
			}
			declared := map[string]*spec.InputPlan{}
			for _, in := range plan.Inputs {
				declared[in.Name] = in
			}
			for in := range r.files {
				if declared[in] == nil {
					t.Errorf("README.md gives --input %s, which the spec does not declare", in)
				}
			}
			for in := range r.inputs {
				if declared[in] == nil {
					t.Errorf("README.md gives --input %s, which the spec does not declare", in)
				}
			}
			for _, in := range plan.Inputs {
				if _, given := r.inputs[in.Name]; in.Required && !given {
					t.Errorf("README.md does not give the required input %s from a sample file", in.Name)
				}
			}
			vars := map[string]bool{}
			for _, v := range plan.Vars {
				vars[v.Name] = true
			}
			for _, v := range r.sets {
				if !vars[v] {
					t.Errorf("README.md sets --set %s, which the spec does not declare", v)
				}
			}
		})
	}
}

// promptBase is the prompt data every call of an example starts from: the
// sample inputs of its README (or the defaults), the vars, and a history
// with one message of every record the spec declares.
func promptBase(t *testing.T, name string, plan *spec.Plan, node *spec.NodePlan, agent *spec.AgentPlan) spec.PromptBase {
	t.Helper()
	r, _ := readReadme(t, name)
	inputs := map[string]any{}
	for _, in := range plan.Inputs {
		switch v, ok := r.inputs[in.Name]; {
		case ok:
			inputs[in.Name] = v
		case in.HasDefault:
			inputs[in.Name] = in.Default
		case in.Required:
			inputs[in.Name] = "sample " + in.Name
		}
	}
	vars := map[string]any{}
	for _, v := range plan.Vars {
		vars[v.Name] = v.Default
	}
	d := spec.PromptBase{
		Agent: agent.View(), Round: 2, Inputs: inputs, Vars: vars, Nodes: map[string]spec.NodeResult{},
		Loop: map[string]any{},
	}
	if node != nil {
		for _, a := range node.Agents {
			d.Agents = append(d.Agents, a.View())
		}
	}
	if len(plan.Goals) > 0 {
		d.Goal = plan.Goals[0]
	}
	for round := 1; round <= 2; round++ {
		for _, a := range plan.Agents {
			for _, rec := range []string{"proposal", "critique", "refinement", "answer", "message"} {
				m := spec.Message{Round: round, Goal: d.Goal.ID, Turn: round, From: a.ID, Record: rec, Content: fmt.Sprintf("%s %s of round %d", a.ID, rec, round)}
				if rec == "critique" && a.ID != agent.ID {
					m.To = agent.ID
				}
				d.History = append(d.History, m)
			}
		}
	}
	return d
}

type rendering struct {
	what     string
	template string
	data     any
	// inputs are the inputs the data holds.
	inputs map[string]any
}

// renderings lists every template an example's run would render, with the
// data the node kind gives it.
func renderings(t *testing.T, name string, plan *spec.Plan) []rendering {
	t.Helper()
	var out []rendering
	system := func(node *spec.NodePlan, nodeSystem string, a *spec.AgentPlan, d any) {
		if s := nodeSystem; s != "" {
			out = append(out, rendering{node.ID + " system", s, d, nil})
		} else if a.System != "" {
			out = append(out, rendering{node.ID + " system of " + a.ID, a.System, d, nil})
		}
	}
	for _, id := range plan.NodeOrder {
		node := plan.Nodes[id]
		for _, a := range node.Agents {
			base := promptBase(t, name, plan, node, a)
			switch cfg := node.Config.(type) {
			case *ask.Config:
				d := &ask.PromptData{PromptBase: base}
				if cfg.Each != nil {
					for _, o := range node.Agents {
						if o.ID != a.ID {
							d.Target = spec.Message{Round: 2, From: o.ID, Record: cfg.Each.Record, Content: "the proposal of " + o.ID}
							break
						}
					}
				}
				d.Own = spec.Message{Round: 1, From: a.ID, Record: cfg.Record, Content: "own " + cfg.Record}
				out = append(out, rendering{id + " for " + a.ID, cfg.Template, d, base.Inputs})
				system(node, cfg.System, a, d)
			case *clarify.Config:
				d := &clarify.PromptData{PromptBase: base}
				d.MaxQuestions = cfg.MaxQuestions
				d.Questions = []spec.Question{{ID: "q1", Agent: a.ID, Question: "How many users?", Answer: "About 1000."}, {ID: "q2", Agent: a.ID, Question: "Budget?", Answer: "NA"}}
				out = append(out, rendering{id + " for " + a.ID, cfg.Template, d, base.Inputs})
				system(node, cfg.System, a, d)
			case *converse.Config:
				d := &converse.PromptData{PromptBase: base}
				for _, p := range node.Agents {
					d.Participants = append(d.Participants, spec.Participant{ID: p.ID, Name: p.Name, Turns: 1})
				}
				d.Participants[0].Verdict = cfg.Options[0]
				for _, p := range node.Agents[1:] {
					d.Undecided = append(d.Undecided, p.ID)
				}
				d.Verdict = spec.VerdictView{Set: cfg.VerdictSet, Options: cfg.Options, Reasoning: cfg.Reasoning}
				d.Turn, d.MaxTurns = 5, cfg.MaxTurns
				d.Feedback = "the previous reply had no <Content>"
				out = append(out, rendering{id + " turn of " + a.ID, cfg.Template, d, base.Inputs})
				system(node, cfg.System, a, d)
				if a != node.Agents[0] {
					continue
				}
				tk := *d
				tk.Agent = spec.AgentView{ID: converse.TimeKeeper, Name: "Time Keeper"}
				tk.Feedback = ""
				for _, ij := range cfg.Interject {
					out = append(out, rendering{id + " interjection", ij.Template, &tk, nil})
				}
				for _, w := range cfg.Watch {
					watcher := plan.Nodes[w.Node].Config.(*converse.Config)
					for _, opt := range watcher.Options {
						wd := &converse.WatchData{PromptData: tk, Decision: opt, Text: opt}
						wd.Agent = spec.AgentView{ID: w.Node, Name: w.Node}
						out = append(out, rendering{id + " watch " + opt, w.Template, wd, nil})
					}
				}
			default:
				t.Fatalf("node %s: unexpected config %T", id, node.Config)
			}
		}
	}
	if s := plan.Summarize; s != nil {
		for _, a := range plan.Agents {
			d := &spec.SummaryData{PromptBase: promptBase(t, name, plan, nil, a), Text: "a long history", MaxChars: s.MaxChars, Chars: 9000}
			d.Extra = map[string]any{"max_chars": s.MaxChars, "chars": 9000}
			out = append(out, rendering{"summary of " + a.ID, s.Template, d, nil})
		}
	}
	return out
}

// TestExamplePromptsRender renders every prompt each example's run would
// render (missingkey=error, as the runtime does), so a template that checks
// statically but fails on real data is caught before a run.
func TestExamplePromptsRender(t *testing.T) {
	for _, name := range examples(t) {
		t.Run(name, func(t *testing.T) {
			plan := load(t, name)
			for _, a := range plan.Agents {
				if a.System != "" && plan.Templates.Lookup(a.System) == nil {
					t.Errorf("agent %s: system template %q does not exist", a.ID, a.System)
				}
			}
			rs := renderings(t, name, plan)
			if len(rs) == 0 {
				t.Fatal("no templates to render")
			}
			for _, r := range rs {
				var b strings.Builder
				if err := plan.Templates.ExecuteTemplate(&b, r.template, &r.data); err != nil {
					t.Errorf("%s: %s: %v", r.what, r.template, err)
					continue
				}
				out := b.String()
				if strings.TrimSpace(out) == "" || strings.Contains(out, "<no value>") {
					t.Errorf("%s: %s rendered %q", r.what, r.template, out)
				}
				// A prompt about the case must carry the case: every
				// required input the README gives shows up in the turn
				// and task prompts.
				if strings.Contains(r.what, "system") || strings.Contains(r.what, "interjection") || strings.Contains(r.what, "watch") || strings.Contains(r.what, "summary") {
					continue
				}
				for _, in := range plan.Inputs {
					if name == "design-eval" && in.Name == "run" {
						// The evaluation shows a run's outputs, not its whole record.
						if !strings.Contains(out, `"solution"`) {
							t.Errorf("%s: %s does not show the run's solution", r.what, r.template)
						}
						continue
					}
					if v, ok := r.inputs[in.Name].(string); ok && in.Required && !strings.Contains(out, strings.TrimSpace(v)) {
						t.Errorf("%s: %s does not show input %s", r.what, r.template, in.Name)
					}
				}
			}
		})
	}
}

// runOutputs evaluates an example's outputs over a finished run's state.
func runOutputs(t *testing.T, plan *spec.Plan, env *spec.Env) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, o := range plan.Outputs {
		v, err := expr.Run(o.Program.Program, env.Map())
		if err != nil {
			t.Fatalf("output %s: %v", o.Name, err)
		}
		out[o.Name] = v
	}
	return out
}

func TestChainOfDebateOutputs(t *testing.T) {
	for _, tc := range []struct{ name, node string }{
		{"hiring-panel", "panel"},
		{"research-review", "board"},
		{"proposal-review", "committee"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := load(t, tc.name)
			agents := plan.Nodes[tc.node].Agents
			a, b, c := agents[0].ID, agents[1].ID, agents[2].ID
			opts := plan.Nodes[tc.node].Config.(*converse.Config).Options
			g1, g2 := plan.Goals[0].ID, plan.Goals[1].ID
			msgs := []spec.Message{
				{Node: tc.node, Goal: g1, Turn: 1, From: a, Record: "message", Verdict: opts[0], Reasoning: "a1"},
				{Node: tc.node, Goal: g1, Turn: 2, From: b, Record: "message", Verdict: opts[1], Reasoning: "b1"},
				{Node: tc.node, Goal: g1, Turn: 3, From: a, Record: "message", Verdict: opts[1], Reasoning: "a2"}, // a changes its mind
				{Node: tc.node, Goal: g1, Turn: 4, From: c, Record: "message"},
				{Node: tc.node, Goal: g2, Turn: 1, From: c, Record: "message", Verdict: opts[2], Reasoning: "c1"},
				{Node: "moderation", Goal: g2, From: "x", Record: "message", Verdict: "NO_ACTION"},
				{Node: tc.node, Goal: g2, From: "moderation", Record: "watch", Turn: 8, Content: "stay on topic"},
			}
			got := runOutputs(t, plan, &spec.Env{Goals: plan.Goals, Verdicts: plan.Verdicts, Messages: msgs})
			// fmt prints maps sorted by key, so equal values print equally.
			want := fmt.Sprint([]any{
				map[string]any{"goal": g1, "consensus": opts[1], "verdicts": []any{
					map[string]any{"agent": b, "verdict": opts[1], "reasoning": "b1"},
					map[string]any{"agent": a, "verdict": opts[1], "reasoning": "a2"},
				}},
				map[string]any{"goal": g2, "consensus": opts[2], "verdicts": []any{
					map[string]any{"agent": c, "verdict": opts[2], "reasoning": "c1"},
				}},
				map[string]any{"goal": plan.Goals[2].ID, "consensus": nil, "verdicts": []any{}},
			})
			if s := fmt.Sprint(got["verdicts"]); s != want {
				t.Errorf("verdicts = %s\nwant       %s", s, want)
			}
			if tc.name == "research-review" {
				want := fmt.Sprintf("[map[goal:%s message:stay on topic turn:8]]", g2)
				if s := fmt.Sprint(got["interventions"]); s != want {
					t.Errorf("interventions = %s, want %s", s, want)
				}
			}
		})
	}
}

func TestDesignDebateOutputsAndLoop(t *testing.T) {
	plan := load(t, "design-debate")
	var loop *spec.FlowStep
	for _, s := range plan.Flow {
		if s.Kind == spec.StepLoop {
			loop = s
		}
	}
	if loop == nil || loop.Until == nil || loop.MaxExpr == nil {
		t.Fatal("design-debate must loop with max and until")
	}
	vars := map[string]any{}
	for _, v := range plan.Vars {
		vars[v.Name] = v.Default
	}
	for _, tc := range []struct {
		name   string
		output any
		stop   bool
	}{
		{"confident", map[string]any{"confidence": float64(90), "reason": "converged"}, true},
		{"at the threshold", map[string]any{"confidence": float64(85)}, true},
		{"not yet", map[string]any{"confidence": float64(60)}, false},
		{"fallback", map[string]any{"confidence": 0, "reason": "unreadable", "text": "???"}, false},
	} {
		env := &spec.Env{Vars: vars, Nodes: map[string]spec.NodeResult{"evaluate": {Output: tc.output}}}
		v, err := expr.Run(loop.Until.Program, env.Map())
		if err != nil {
			t.Fatalf("%s: until: %v", tc.name, err)
		}
		if v != tc.stop {
			t.Errorf("%s: until = %v, want %v", tc.name, v, tc.stop)
		}
	}
	if v, err := expr.Run(loop.MaxExpr.Program, (&spec.Env{Vars: vars}).Map()); err != nil || v != 3 {
		t.Errorf("max = %v (%v), want 3", v, err)
	}

	parsed := map[string]any{
		"solution_markdown": "# Design", "confidence": float64(35),
		"unmet_requirements": []any{"offline schedule"}, "tradeoffs": []any{"t"},
		"recommendations": []any{"r"}, "open_questions": []any{},
	}
	got := runOutputs(t, plan, &spec.Env{Nodes: map[string]spec.NodeResult{"synthesize": {Output: parsed}}})
	if got["solution"] != "# Design" || got["confidence"] != float64(35) || fmt.Sprint(got["unmet_requirements"]) != "[offline schedule]" {
		t.Errorf("outputs = %v", got)
	}
	// After a fallback the solution is the judge's raw reply.
	fallback := map[string]any{"confidence": 0, "text": "raw reply", "tradeoffs": []any{}}
	got = runOutputs(t, plan, &spec.Env{Nodes: map[string]spec.NodeResult{"synthesize": {Output: fallback}}})
	if got["solution"] != "raw reply" || got["confidence"] != 0 {
		t.Errorf("fallback outputs = %v", got)
	}
}

func TestReasoningDebateOutputs(t *testing.T) {
	plan := load(t, "reasoning-debate")
	msgs := []spec.Message{
		{Round: 1, From: "a", Record: "answer", Output: "3"},
		{Round: 1, From: "b", Record: "answer", Output: "4"},
		{Round: 1, From: "c", Record: "answer", Output: "5"},
		{Round: 2, From: "a", Record: "answer", Output: "4"},
		{Round: 2, From: "b", Record: "answer", Output: "4"},
		{Round: 2, From: "c", Record: "answer", Output: "5"},
	}
	got := runOutputs(t, plan, &spec.Env{Messages: msgs})
	if got["answer"] != "4" {
		t.Errorf("answer = %v, want 4 (majority of the last answers)", got["answer"])
	}
}
