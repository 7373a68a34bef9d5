package examples_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/nodes"
	asknode "github.com/debate-runner/runner/nodes/ask"
	"github.com/debate-runner/runner/nodes/converse"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/dryrun"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/spec"
	"github.com/expr-lang/expr"
)

// examples returns the example folders (names) that hold a spec.yaml: the
// examples, and the published protocols under protocols/ (named
// protocols/NAME).
func examples(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("*/spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	protocols, err := filepath.Glob("protocols/*/spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, protocols...)
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
			// The schema is at the repository root, as many folders up as
			// the example is deep below it.
			schema := strings.Repeat("../", strings.Count(filepath.ToSlash(name), "/")+2) + "schemas/spec.schema.json"
			header := "# yaml-language-server: $schema=" + schema + "\n"
			if !strings.HasPrefix(string(data), header) {
				t.Errorf("%s/spec.yaml must start with %q so editors find the schema", name, strings.TrimSpace(header))
			}
			if _, err := os.Stat(filepath.Join(name, schema)); err != nil {
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

func readReadme(t testing.TB, name string) (readme, bool) {
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
// TestExamplePromptsRender renders every prompt each example's run would
// send, through the engine itself (a dry run renders them all, with
// missingkey=error as a run does), so a template that checks statically
// but fails or renders empty on a run's data is caught before a run; and a
// prompt about the case carries the case: every required input the README
// gives shows in the task prompts (checkPromptsRender).
//
// TestDryRunIsTheRun checks the prompts of its own dry run, which measures
// histories by the stand-ins as they are; the two dry runs differ only in
// when history summaries start, so this test renders again only the
// examples that summarise (rendering the long converse examples twice was
// most of this package's time under -race).
func TestExamplePromptsRender(t *testing.T) {
	for _, name := range examples(t) {
		t.Run(name, func(t *testing.T) {
			plan := load(t, name)
			if plan.Summarize == nil {
				t.Skip("no summaries: its prompts are those TestDryRunIsTheRun renders and checks")
			}
			r, _ := readReadme(t, name)
			var inputs []string
			for k, v := range r.inputs {
				inputs = append(inputs, k+"="+v)
			}
			rep, err := dryrun.Run(plan, dryrun.Options{Given: launch.Given{Inputs: inputs}, AllPrompts: true})
			if err != nil {
				t.Fatal(err)
			}
			checkPromptsRender(t, name, plan, r, rep.Prompts, rep.Notes)
		})
	}
}

// checkPromptsRender checks the prompts of a dry run that kept them all:
// none renders empty or "<no value>", and each task prompt shows every
// required input the README gives.
func checkPromptsRender(t *testing.T, name string, plan *spec.Plan, r readme, prompts []dryrun.Prompt, notes []string) {
	t.Helper()
	if len(prompts) == 0 {
		t.Fatal("no prompts rendered")
	}
	for _, note := range notes {
		if strings.Contains(note, "did not finish") || strings.Contains(note, "cannot be") {
			t.Errorf("dry run: %s", note)
		}
	}
	for _, p := range prompts {
		for i, m := range p.Messages {
			if strings.TrimSpace(m.Content) == "" && i == len(p.Messages)-1 && emptyClosing(plan, p.Node) {
				continue // ChatEval's trailing user turn, empty before the last round
			}
			if strings.TrimSpace(m.Content) == "" && i <= 1 && m.Role == "user" && emptyOpening(plan, p.Node) {
				continue // tsinghua MAD's opening user turn, empty on purpose
			}
			if strings.TrimSpace(m.Content) == "" || strings.Contains(m.Content, "<no value>") {
				t.Errorf("%s: %s message rendered %q", p.Key, m.Role, m.Content)
			}
		}
		if strings.Contains(p.Key, "/summary/") || (name == "protocols/chateval-summarizer" && p.Node == "summarize") {
			continue // summaries condense the discussion, not the case
		}
		for _, in := range plan.Inputs {
			if name == "design-eval" && in.Name == "run" {
				// The evaluation shows a run's outputs, not its whole record.
				if !strings.Contains(p.User, `"solution"`) {
					t.Errorf("%s does not show the run's solution", p.Key)
				}
				continue
			}
			if v := r.inputs[in.Name]; in.Required && v != "" && !shows(p.Messages, v) {
				t.Errorf("%s does not show input %s", p.Key, in.Name)
			}
		}
	}
}

// shows reports whether a request carries an input's value: in one of its
// messages (a thread or the system prompt may carry the case rather than
// the last prompt), whole, or line by line when the prompt shows each line
// of it (options shown as "A. text", one per line).
func shows(msgs []kit.ChatMessage, value string) bool {
	text := requestText(msgs)
	if strings.Contains(text, strings.TrimSpace(value)) {
		return true
	}
	for _, line := range strings.Split(value, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.Contains(text, line) {
			return false
		}
	}
	return strings.Contains(value, "\n")
}

// emptyClosing reports whether a node's requests end with a closing user
// turn that is empty on purpose (history.after_prompt without a closing
// template).
func emptyClosing(plan *spec.Plan, node string) bool {
	n := plan.Nodes[node]
	if n == nil {
		return false
	}
	if cfg, ok := n.Config.(*converse.Config); ok {
		// The selector group chat's speakers: the task opens the
		// conversation's turns, and the prompt after them is empty.
		return cfg.Chat != nil && cfg.Chat.History != nil && cfg.Chat.History.Opening != nil && *cfg.Chat.History.Opening != ""
	}
	cfg, ok := n.Config.(*asknode.Config)
	return ok && cfg.Chat != nil && cfg.Chat.History != nil && cfg.Chat.History.AfterPrompt && cfg.Chat.History.Closing == ""
}

// emptyOpening reports whether a node's history turns are preceded by a
// user turn that is empty on purpose (history.opening: "").
func emptyOpening(plan *spec.Plan, node string) bool {
	n := plan.Nodes[node]
	if n == nil {
		return false
	}
	cfg, ok := n.Config.(*asknode.Config)
	return ok && cfg.Chat != nil && cfg.Chat.History != nil && cfg.Chat.History.Opening != nil && *cfg.Chat.History.Opening == ""
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
			msgs := []value.Message{
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
		env := &spec.Env{Vars: vars, Nodes: map[string]value.NodeResult{"evaluate": {Output: tc.output}}}
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
	got := runOutputs(t, plan, &spec.Env{Nodes: map[string]value.NodeResult{"synthesize": {Output: parsed}}})
	if got["solution"] != "# Design" || got["confidence"] != float64(35) || fmt.Sprint(got["unmet_requirements"]) != "[offline schedule]" {
		t.Errorf("outputs = %v", got)
	}
	// After a fallback the solution is the judge's raw reply.
	fallback := map[string]any{"confidence": 0, "text": "raw reply", "tradeoffs": []any{}}
	got = runOutputs(t, plan, &spec.Env{Nodes: map[string]value.NodeResult{"synthesize": {Output: fallback}}})
	if got["solution"] != "raw reply" || got["confidence"] != 0 {
		t.Errorf("fallback outputs = %v", got)
	}
}

func TestReasoningDebateOutputs(t *testing.T) {
	plan := load(t, "reasoning-debate")
	msgs := []value.Message{
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
