package examples_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/mdtext"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/internal/shared"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/launch"
	runresult "github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
	"gopkg.in/yaml.v3"
)

// Helpers for the software-design tests: variants of the design-debate spec
// made by editing its YAML, runs against an llmtest server, and telling
// which call of the debate a request is from the prompt alone (the
// software-design templates render distinctive headings).

// designAgent is an agent of a spec variant.
type designAgent struct {
	id, name, role string
	tools          []string
}

// specEdit changes the top-level mapping of a spec.
type specEdit func(t *testing.T, root *yaml.Node)

// designSpec writes a variant of examples/design-debate/spec.yaml to a
// fresh directory and returns its path.
func designSpec(t *testing.T, edits ...specEdit) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("design-debate", "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	for _, e := range edits {
		e(t, root)
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// yamlKey returns the value of key in a mapping node, or nil.
func yamlKey(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// yamlPath follows keys through nested mappings.
func yamlPath(t *testing.T, m *yaml.Node, keys ...string) *yaml.Node {
	t.Helper()
	for _, k := range keys {
		next := yamlKey(m, k)
		if next == nil {
			t.Fatalf("spec has no %s", strings.Join(keys, "."))
		}
		m = next
	}
	return m
}

// setYAML sets key of a mapping to the YAML value text, adding the key if
// needed.
func setYAML(t *testing.T, m *yaml.Node, key, text string) {
	t.Helper()
	var v yaml.Node
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("setting %s: %v", key, err)
	}
	value := v.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = value
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, value)
}

func deleteYAML(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// withAgents replaces the debating agents (the judge stays) and puts them
// on every debate node.
func withAgents(agents ...designAgent) specEdit {
	return func(t *testing.T, root *yaml.Node) {
		var b strings.Builder
		var ids []string
		for _, a := range agents {
			ids = append(ids, a.id)
			b.WriteString(a.id + ": {name: \"" + a.name + "\", role: " + a.role + ", system: system")
			if len(a.tools) > 0 {
				b.WriteString(", tools: [" + strings.Join(a.tools, ", ") + "]")
			}
			b.WriteString("}\n")
		}
		b.WriteString("judge: {name: Technical Judge, role: judge, model: judge, system: system}\n")
		setYAML(t, root, "agents", b.String())
		list := "[" + strings.Join(ids, ", ") + "]"
		for _, n := range []string{"clarify", "propose", "critique", "refine"} {
			if node := yamlKey(yamlPath(t, root, "nodes"), n); node != nil {
				setYAML(t, node, "agents", list)
			}
		}
	}
}

// withoutClarify drops the clarify node: the debate starts with proposals.
func withoutClarify() specEdit {
	return func(t *testing.T, root *yaml.Node) {
		setYAML(t, yamlPath(t, root, "vars"), "clarify", "false")
	}
}

// withSummaries sets history summaries to start over overChars characters,
// measured as measure says (the default, bytes, when not given).
func withSummaries(overChars, maxChars int, measure ...string) specEdit {
	m := ""
	if len(measure) > 0 {
		m = ", measure: " + measure[0]
	}
	return func(t *testing.T, root *yaml.Node) {
		setYAML(t, yamlPath(t, root, "history"), "summarize",
			"{over_chars: "+itoa(overChars)+", max_chars: "+itoa(maxChars)+", template: software-design/summarize, records: [proposal, refinement], when: vars.summaries"+m+"}")
	}
}

// withBreakpoints sets prompt_cache: breakpoints on the debaters' and the
// judge's models.
func withBreakpoints() specEdit {
	return func(t *testing.T, root *yaml.Node) {
		models := yamlPath(t, root, "models")
		setYAML(t, models, "default", "{model: gpt-4o-mini, temperature: 0.5, prompt_cache: breakpoints}")
		setYAML(t, models, "judge", "{model: gpt-4o, temperature: 0.2, prompt_cache: breakpoints}")
	}
}

// withoutSummaries drops history summaries.
func withoutSummaries() specEdit {
	return func(t *testing.T, root *yaml.Node) { deleteYAML(root, "history") }
}

// withNodeField sets a field of a node.
func withNodeField(node, key, text string) specEdit {
	return func(t *testing.T, root *yaml.Node) {
		setYAML(t, yamlPath(t, root, "nodes", node), key, text)
	}
}

func itoa(n int) string {
	b, _ := yaml.Marshal(n)
	return strings.TrimSpace(string(b))
}

// loadVariant compiles a spec variant; warnings (a single agent's critique
// node makes no calls) are fine, errors are not.
func loadVariant(t *testing.T, path string) *spec.Plan {
	t.Helper()
	plan, diags := spec.Load(path, nodes.Registry())
	if diags.HasErrors() {
		t.Fatalf("the spec variant does not compile:\n%s", diags.Format())
	}
	return plan
}

// serverEnv points the default endpoint at srv.
func serverEnv(srv *llmtest.Server) func(string) string {
	return func(k string) string {
		switch k {
		case "OPENAI_BASE_URL":
			return srv.URL
		case "OPENAI_API_KEY":
			return testKey
		}
		return ""
	}
}

// noSleep makes retries immediate.
var noSleep = runtest.NoSleep

// startDesign starts a run of a spec variant against srv; opts may set
// inputs, vars, answers and the like.
func startDesign(t *testing.T, path string, srv *llmtest.Server, opts runtime.Options) *runtime.Run {
	t.Helper()
	plan := loadVariant(t, path)
	if opts.RunsDir == "" {
		opts.RunsDir = t.TempDir()
	}
	opts.Getenv = serverEnv(srv)
	if opts.Seed == nil {
		seed := int64(3)
		opts.Seed = &seed
	}
	r, err := runtime.Start(plan, opts)
	if err != nil {
		t.Fatalf("starting the run: %v", err)
	}
	return r
}

// journalEvents reads a run's journal.
func journalEvents(t *testing.T, dir string) []journal.Event {
	t.Helper()
	evs, err := journal.Read(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func countEvents(evs []journal.Event, typ event.Type) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// designCall is what a request of a software-design debate is, read from
// its prompts.
type designCall struct {
	phase  string // clarify, propose, critique, refine, evaluate, synthesize, summary, judge-summary, or "" when unknown
	agent  string // spec agent id, "" when unknown
	target string // critique: the author of the proposal under review
	prompt string // the node's prompt (first user message)
	system string
}

var (
	systemName  = regexp.MustCompile(`^You are ([^,\n]+),`)
	roleName    = regexp.MustCompile(`(?m)^## Your role\nYou are ([^,\n]+),`)
	summaryName = regexp.MustCompile(`from your perspective as ([^\n]+)\.\n`)
	authorLine  = regexp.MustCompile(`(?m)^Author: (.+?)(?: \([^()\n]*\))?$`)
	roundInKey  = regexp.MustCompile(`round=(\d+)`)
	runLine     = regexp.MustCompile(`(?m)^run: (.+)$`)
)

// classify reads which call a request is. byName maps agent names to spec
// ids; judge is the judge's id.
func classify(r llmtest.Request, byName map[string]string, judge string) designCall {
	var c designCall
	for _, m := range r.Messages {
		if m.Role == "system" && c.system == "" {
			c.system = m.Content
		}
		if m.Role == "user" {
			c.prompt = m.Content
			break
		}
	}
	if m := systemName.FindStringSubmatch(c.system); m != nil {
		c.agent = byName[m[1]]
	} else if m := roleName.FindStringSubmatch(c.prompt); m != nil {
		// The cached layout: one system prompt for all, the agent's role
		// in the prompt.
		c.agent = byName[m[1]]
	}
	p := c.prompt
	switch {
	case strings.HasPrefix(p, "Below is your history in this design debate"):
		c.phase = "summary"
		if m := summaryName.FindStringSubmatch(p); m != nil {
			c.agent = byName[m[1]]
		}
	case strings.HasPrefix(p, "Below is the record of a software design debate"):
		c.phase, c.agent = "judge-summary", judge
	case strings.Contains(p, `To ask nothing, reply: {"questions": []}`):
		c.phase = "clarify"
	case strings.Contains(p, "\n## Proposal under review\n"):
		c.phase = "critique"
		if m := authorLine.FindStringSubmatch(p[strings.Index(p, "\n## Proposal under review\n"):]); m != nil {
			c.target = byName[m[1]]
		}
	case strings.Contains(p, "\n## Critiques you received"):
		c.phase = "refine"
	case strings.Contains(p, "\nPropose a design that solves this problem"):
		c.phase = "propose"
	case strings.Contains(p, `"solution_markdown"`), strings.Contains(p, "Write the design in Markdown"):
		c.phase = "synthesize"
	case strings.Contains(p, `{"confidence": 0, "reason"`):
		c.phase = "evaluate"
	}
	return c
}

// Recorded debates of the original TypeScript tool (in ../shared beside the
// checkout, see its README): the tests replay them through the
// design-debate spec, or skip when ../shared is absent unless it is
// required (see internal/shared).
const dialecticDir = "data/dialectic"

type dlContribution struct {
	AgentID  string `json:"agentId"`
	Type     string `json:"type"` // proposal, critique, refinement
	Content  string `json:"content"`
	Target   string `json:"targetAgentId"`
	Metadata struct {
		LatencyMs int64 `json:"latencyMs"`
	} `json:"metadata"`
}

type dlSummary struct {
	AgentID  string `json:"agentId"`
	Summary  string `json:"summary"`
	Metadata struct {
		BeforeChars int   `json:"beforeChars"`
		AfterChars  int   `json:"afterChars"`
		LatencyMs   int64 `json:"latencyMs"`
	} `json:"metadata"`
}

type dlRound struct {
	RoundNumber   int                  `json:"roundNumber"`
	Contributions []dlContribution     `json:"contributions"`
	Summaries     map[string]dlSummary `json:"summaries"`
}

type dlState struct {
	Rounds         []dlRound `json:"rounds"`
	Clarifications []struct {
		AgentID string `json:"agentId"`
		Items   []struct {
			ID       string `json:"id"`
			Question string `json:"question"`
			Answer   string `json:"answer"`
		} `json:"items"`
	} `json:"clarifications"`
	JudgeSummary  *dlSummary `json:"judgeSummary"`
	FinalSolution struct {
		Description     string   `json:"description"`
		Tradeoffs       []string `json:"tradeoffs"`
		Recommendations []string `json:"recommendations"`
		Confidence      int      `json:"confidence"`
	} `json:"finalSolution"`
}

type dlConfig struct {
	Agents []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Role string `json:"role"`
	} `json:"agents"`
	Debate struct {
		Summarization struct {
			Threshold int `json:"threshold"`
			MaxLength int `json:"maxLength"`
		} `json:"summarization"`
	} `json:"debate"`
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// phaseNode is the design-debate node that makes a contribution type.
var phaseNode = map[string]string{"proposal": "propose", "critique": "critique", "refinement": "refine"}

// specID is the spec agent id of a recorded agent id ("agent-architect").
func specID(recorded string) string { return strings.TrimPrefix(recorded, "agent-") }

// contribKey names one contribution: node, round, author, target.
func contribKey(node string, round int, from, to string) string {
	return fmt.Sprintf("%s/%d/%s>%s", node, round, from, to)
}

// replayer answers a design-debate run with a recording's contributions,
// keyed by (agent, phase, round, target), and notes every call made and
// every prompt that lacks what it should show.
type replayer struct {
	rec      *dlState
	byName   map[string]string
	judge    string
	contribs map[string]string // contribKey -> content
	sums     map[string]string // "round/agent" -> summary
	agents   int
	// cached: the run lays its prompts out with cached_layout (the agent's
	// own proposal is under "Under discussion").
	cached bool

	mu       sync.Mutex
	count    map[string]int // phase/agent>target -> calls so far
	refines  map[string]int // agent -> refine calls so far
	made     map[string]int // phase/round -> calls
	problems []string
}

func newReplayer(rec *dlState, byName map[string]string, agents int) *replayer {
	p := &replayer{rec: rec, byName: byName, judge: "judge", agents: agents,
		contribs: map[string]string{}, sums: map[string]string{},
		count: map[string]int{}, refines: map[string]int{}, made: map[string]int{}}
	for _, r := range rec.Rounds {
		for _, c := range r.Contributions {
			p.contribs[contribKey(phaseNode[c.Type], r.RoundNumber, specID(c.AgentID), specID(c.Target))] = c.Content
		}
		for id, s := range r.Summaries {
			p.sums[fmt.Sprintf("%d/%s", r.RoundNumber, specID(id))] = strings.TrimSpace(s.Summary)
		}
	}
	return p
}

// want is the calls per phase/round the recording implies: its model calls
// (a proposal in round 2 or later was carried over without one), plus one
// follow-up clarify call per agent that asks nothing new (the spec allows
// two clarify iterations; the recording has no follow-up questions).
func (p *replayer) want() map[string]int {
	w := map[string]int{"synthesize": 1}
	for _, r := range p.rec.Rounds {
		for _, c := range r.Contributions {
			if c.Type == "proposal" && r.RoundNumber > 1 {
				continue
			}
			w[fmt.Sprintf("%s/%d", phaseNode[c.Type], r.RoundNumber)]++
		}
		if len(r.Summaries) > 0 {
			w[fmt.Sprintf("summary/%d", r.RoundNumber)] += len(r.Summaries)
		}
	}
	if p.rec.JudgeSummary != nil {
		w["summary/final"] = 1
	}
	if len(p.rec.Clarifications) > 0 {
		w["clarify/1"] = p.agents
		w["clarify/2"] = p.agents // follow-up: nothing new to ask
	}
	return w
}

func (p *replayer) problem(format string, args ...any) {
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
}

func (p *replayer) handle(r llmtest.Request) llmtest.Reply {
	c := classify(r, p.byName, p.judge)
	p.mu.Lock()
	defer p.mu.Unlock()
	refuse := func(format string, args ...any) llmtest.Reply {
		p.problem(format, args...)
		return llmtest.Reply{Status: http.StatusBadRequest, ErrorMessage: fmt.Sprintf(format, args...)}
	}
	if c.agent == "" {
		return refuse("request %d: cannot tell the agent (phase %q)", r.N, c.phase)
	}
	switch c.phase {
	case "clarify":
		k := "clarify/" + c.agent
		p.count[k]++
		iter := p.count[k]
		p.made[fmt.Sprintf("clarify/%d", iter)]++
		if iter > 1 {
			if !strings.Contains(c.prompt, "## Questions already asked") {
				p.problem("follow-up clarify prompt of %s does not show the questions already asked", c.agent)
			}
			return llmtest.Reply{Content: `{"questions": []}`}
		}
		var qs []map[string]string
		for _, cl := range p.rec.Clarifications {
			if specID(cl.AgentID) == c.agent {
				for _, it := range cl.Items {
					qs = append(qs, map[string]string{"question": it.Question})
				}
			}
		}
		data, _ := json.Marshal(map[string]any{"questions": qs})
		return llmtest.Reply{Content: string(data)}
	case "propose", "critique", "refine":
		k := c.phase + "/" + c.agent + ">" + c.target
		p.count[k]++
		round := p.count[k]
		if c.phase == "refine" {
			p.refines[c.agent] = round
		}
		p.made[fmt.Sprintf("%s/%d", c.phase, round)]++
		content, ok := p.contribs[contribKey(c.phase, round, c.agent, c.target)]
		if !ok {
			return refuse("%s by %s (target %q) in round %d: the recording has no such call", c.phase, c.agent, c.target, round)
		}
		switch c.phase {
		case "propose":
			if len(p.rec.Clarifications) > 0 && !strings.Contains(c.prompt, "## Clarifications from the user") {
				p.problem("round %d proposal prompt of %s does not show the clarifications", round, c.agent)
			}
		case "critique":
			if want := p.contribs[contribKey("propose", round, c.target, "")]; !strings.Contains(c.prompt, want) {
				p.problem("round %d critique prompt of %s does not show %s's proposal of that round", round, c.agent, c.target)
			}
		case "refine":
			mine := "## Your current proposal\n"
			if p.cached {
				mine = "\n## Under discussion\n\n### "
				for name, id := range p.byName {
					if id == c.agent {
						mine = "\n## Under discussion\n\n### " + name + "\n"
					}
				}
			}
			if want := p.contribs[contribKey("propose", round, c.agent, "")]; !strings.Contains(c.prompt, mine+want) {
				p.problem("round %d refine prompt of %s does not show its proposal of that round", round, c.agent)
			}
			for key, crit := range p.contribs {
				if strings.HasPrefix(key, fmt.Sprintf("critique/%d/", round)) && strings.HasSuffix(key, ">"+c.agent) && !strings.Contains(c.prompt, crit) {
					p.problem("round %d refine prompt of %s lacks the critique %s", round, c.agent, key)
				}
			}
			if sum, ok := p.sums[fmt.Sprintf("%d/%s", round, c.agent)]; ok && !strings.Contains(c.prompt, "## Your notes from the debate so far\n"+sum) {
				p.problem("round %d refine prompt of %s does not use its summary", round, c.agent)
			}
		}
		return llmtest.Reply{Content: content}
	case "summary":
		// An agent's summary is made before its first call of a round, so
		// the refinements it has made tell the round.
		round := p.refines[c.agent] + 1
		p.made[fmt.Sprintf("summary/%d", round)]++
		sum, ok := p.sums[fmt.Sprintf("%d/%s", round, c.agent)]
		if !ok {
			return refuse("summary of %s in round %d: the recording has none", c.agent, round)
		}
		return llmtest.Reply{Content: sum}
	case "judge-summary":
		p.made["summary/final"]++
		if p.rec.JudgeSummary == nil {
			return refuse("judge summary: the recording has none")
		}
		return llmtest.Reply{Content: p.rec.JudgeSummary.Summary}
	case "synthesize":
		p.made["synthesize"]++
		if js := p.rec.JudgeSummary; js != nil && !strings.Contains(c.prompt, "## Summary of the debate\n"+strings.TrimSpace(js.Summary)) {
			p.problem("the synthesis prompt does not use the judge's summary")
		}
		fs := p.rec.FinalSolution
		if !strings.Contains(c.prompt, `"solution_markdown"`) {
			// synthesis: text, as the original: the reply is the solution.
			return llmtest.Reply{Content: fs.Description}
		}
		data, _ := json.Marshal(map[string]any{
			"solution_markdown": fs.Description, "tradeoffs": orEmpty(fs.Tradeoffs), "recommendations": orEmpty(fs.Recommendations),
			"unmet_requirements": []string{}, "open_questions": []string{}, "confidence": fs.Confidence,
		})
		return llmtest.Reply{Content: string(data)}
	}
	return refuse("request %d: unexpected %q call by %s", r.N, c.phase, c.agent)
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// schedule sums the recording's latencies three ways: every call one after
// the other; the original tool's schedule (summaries one agent after
// another, proposals and refinements concurrently, critiques one after
// another); and the critical path of the spec's schedule, where every call
// of a node runs at once and an agent's summary precedes its first call of
// the round (its critiques, or its refinement when it critiques nobody).
// The synthesis has no recorded latency and is left out of all three.
func schedule(rec *dlState) (serial, original, ours int64) {
	for _, r := range rec.Rounds {
		var maxProp, maxRef, sumCrit, critPhase, refPhase, sumSums int64
		crit := map[string]int64{} // agent -> its longest critique
		for _, c := range r.Contributions {
			l := c.Metadata.LatencyMs
			serial += l
			switch c.Type {
			case "proposal":
				maxProp = max(maxProp, l)
			case "critique":
				sumCrit += l
				crit[c.AgentID] = max(crit[c.AgentID], l)
			case "refinement":
				maxRef = max(maxRef, l)
			}
		}
		for id, s := range r.Summaries {
			serial += s.Metadata.LatencyMs
			sumSums += s.Metadata.LatencyMs
			if _, ok := crit[id]; ok {
				critPhase = max(critPhase, s.Metadata.LatencyMs+crit[id])
			}
		}
		for _, c := range r.Contributions {
			switch c.Type {
			case "critique":
				critPhase = max(critPhase, crit[c.AgentID]+r.Summaries[c.AgentID].Metadata.LatencyMs)
			case "refinement":
				l := c.Metadata.LatencyMs
				if _, critiques := crit[c.AgentID]; !critiques {
					l += r.Summaries[c.AgentID].Metadata.LatencyMs
				}
				refPhase = max(refPhase, l)
			}
		}
		original += sumSums + maxProp + sumCrit + maxRef
		ours += maxProp + critPhase + refPhase
	}
	if js := rec.JudgeSummary; js != nil {
		serial += js.Metadata.LatencyMs
		original += js.Metadata.LatencyMs
		ours += js.Metadata.LatencyMs
	}
	return serial, original, ours
}

// TestDesignDebateReplaysRecordings runs the design-debate spec, with fixed
// rounds, against recorded debates of the original tool: every request is
// answered with the recorded contribution for its agent, phase, round and
// target. The run must make exactly the recording's calls, record every
// contribution where the recording has it, summarise where it summarised,
// and produce its final solution.
func TestDesignDebateReplaysRecordings(t *testing.T) {
	dir := shared.Dir(t, dialecticDir)
	recordings := []struct{ file, config, problem string }{
		{"kata1/architect-only-solution_2-rounds.json", "kata1/debate-config-kata1.json", "kata1/kata1.md"},
		{"kata1/architect-perf-solution_2-rounds.json", "kata1/debate-config-kata1.json", "kata1/kata1.md"},
		{"kata2/rounds_test/all_agents_1R_no_clarify.json", "kata2/debate-config.json", "kata2/kata2.md"},
		{"kata2/rounds_test/all_agents_2R_no_clarify.json", "kata2/debate-config.json", "kata2/kata2.md"},
		{"kata2/rounds_test/all_agents_3R_no_clarify.json", "kata2/debate-config.json", "kata2/kata2.md"},
		{"kata2/only_architect/all_agents_2R_no_clarify.json", "kata2/only_architect/debate-config.json", "kata2/kata2.md"},
		{"kata2/summary_length_test/all_sum-length-1250_clarify.json", "kata2/summary_length_test/debate-config-sum-t-1250.json", "kata2/kata2.md"},
	}
	for _, rc := range recordings {
		t.Run(strings.TrimSuffix(rc.file, ".json"), func(t *testing.T) {
			t.Parallel()
			replayRecording(t, filepath.Join(dir, rc.file), filepath.Join(dir, rc.config), filepath.Join(dir, rc.problem))
		})
	}
}

func replayRecording(t *testing.T, file, configFile, problem string) {
	replayRecordingIn(t, file, configFile, problem, false)
}

// replayRecordingIn replays a recording in the original layout or the
// cached one, and returns the run's usage; the server's prompt cache
// follows OpenAI's rules (see TestDesignDebatePromptCache).
func replayRecordingIn(t *testing.T, file, configFile, problem string, cached bool) runresult.UsageReport {
	return replayRecordingCache(t, file, configFile, problem, cached, false)
}

// replayRecordingCache is replayRecordingIn, with breakpoints on the
// models (prompt_cache: breakpoints) and the local server's prompt cache
// following Anthropic's rules rather than OpenAI's.
func replayRecordingCache(t *testing.T, file, configFile, problem string, cached, breakpoints bool) runresult.UsageReport {
	var rec dlState
	readJSONFile(t, file, &rec)
	var cfg dlConfig
	readJSONFile(t, configFile, &cfg)
	agents, byName := recordingAgents(t, &rec, &cfg)
	edits := []specEdit{withAgents(agents...)}
	// The spec's own switches make it the original: no clarification when
	// the recording has none, no summaries when it made none, and the
	// judge's synthesis taken as free text.
	sets := []string{fmt.Sprintf("max_rounds=%d", len(rec.Rounds)), "early_stop=false", "synthesis=text"}
	if len(rec.Clarifications) == 0 {
		sets = append(sets, "clarify=false")
	}
	summaries := rec.JudgeSummary != nil
	for _, r := range rec.Rounds {
		summaries = summaries || len(r.Summaries) > 0
	}
	if summaries {
		s := cfg.Debate.Summarization
		edits = append(edits, withSummaries(s.Threshold, s.MaxLength, "chars"))
	} else {
		sets = append(sets, "summaries=false")
	}

	if cached {
		sets = append(sets, "cached_layout=true")
	}
	p := newReplayer(&rec, byName, len(agents))
	p.cached = cached
	pc := &llmtest.PromptCache{MinTokens: 1024, Step: 128, Settled: true}
	if breakpoints {
		edits = append(edits, withBreakpoints())
		pc = &llmtest.PromptCache{MinTokens: 1024, Settled: true, Breakpoints: true}
	}
	srv := llmtest.New(t, pc.Wrap(func(r llmtest.Request) llmtest.Reply {
		// As long as a call is being answered its prompt is not cached:
		// the calls of a node, in flight together, do not serve each other.
		rep := p.handle(r)
		rep.Delay = 100 * time.Millisecond
		return rep
	}))
	run := startDesign(t, designSpec(t, edits...), srv, runtime.Options{
		Launch: launch.Launch{Given: launch.Given{Inputs: []string{"problem=@" + problem}, Sets: sets}, Answers: recordingAnswers(t, &rec)},
	})
	res, err := run.Execute(context.Background())
	if err != nil || res.Status != runresult.StatusCompleted {
		t.Fatalf("run: status %s, error %v; problems: %v", res.Status, err, p.problems)
	}
	for _, pr := range p.problems {
		t.Error(pr)
	}
	made, recorded := checkReplayCalls(t, p, srv)
	checkContributions(t, &rec, res)
	checkSummaries(t, &rec, p, res, journalEvents(t, run.Dir))
	checkClarifications(t, &rec, res)

	// The final solution is the recording's.
	fs := rec.FinalSolution
	if res.Outputs["solution"] != fs.Description {
		t.Errorf("solution differs from the recorded finalSolution.description")
	}
	if fmt.Sprint(res.Outputs["confidence"]) != fmt.Sprint(fs.Confidence) {
		t.Errorf("confidence = %v, want %d", res.Outputs["confidence"], fs.Confidence)
	}

	// report.md and report.html show every word of every contribution,
	// and leave the summaries (private to their agents) out.
	st := mdtext.CheckReport(t, run.Dir, res)
	t.Logf("report.md %d bytes, report.html %d bytes: every word of %d messages (%d words) shown", st.MarkdownBytes, st.HTMLBytes, st.Messages, st.Words)

	u := res.Usage.Total
	t.Logf("%s: prompt prefix: %.3f of %d prompt tokens repeat the start of the same agent's previous request", filepath.Base(file), u.PrefixShare, u.PromptTokens)

	serial, original, ours := schedule(&rec)
	if !(ours <= original && original <= serial) {
		t.Errorf("schedule: serial %d ms, original %d ms, ours %d ms: not in order", serial, original, ours)
	}
	if cached || breakpoints {
		return res.Usage
	}
	t.Logf("%d agents, %d rounds: %d calls made, %d recorded (+%d follow-up clarify calls that asked nothing); "+
		"recorded latency %.0f s one by one, %.0f s as the original tool scheduled them, %.0f s on our critical path: %.2fx faster than serial, %.2fx faster than the original",
		len(agents), len(rec.Rounds), made, recorded, p.want()["clarify/2"],
		float64(serial)/1000, float64(original)/1000, float64(ours)/1000, float64(serial)/float64(ours), float64(original)/float64(ours))
	return res.Usage
}

// recordingAgents returns the recording's debating agents (sorted by id,
// named as in its config) and the spec id of every agent name.
func recordingAgents(t *testing.T, rec *dlState, cfg *dlConfig) ([]designAgent, map[string]string) {
	t.Helper()
	var agents []designAgent
	byName := map[string]string{"Technical Judge": "judge"}
	seen := map[string]bool{}
	for _, r := range rec.Rounds {
		for _, c := range r.Contributions {
			if seen[c.AgentID] {
				continue
			}
			seen[c.AgentID] = true
			a := designAgent{id: specID(c.AgentID)}
			for _, ca := range cfg.Agents {
				if ca.ID == c.AgentID {
					a.name, a.role = ca.Name, ca.Role
				}
			}
			if a.name == "" {
				t.Fatalf("agent %s is not in the recording's config", c.AgentID)
			}
			agents = append(agents, a)
			byName[a.name] = a.id
		}
	}
	sort.Slice(agents, func(i, j int) bool { return agents[i].id < agents[j].id })
	return agents, byName
}

// recordingAnswers writes the recording's answers as an answers file and
// reads it back. Our question ids are <agent>.q<N> in the order asked; an
// answer the recording skipped ("NA") is left empty.
func recordingAnswers(t *testing.T, rec *dlState) map[string]string {
	t.Helper()
	var b strings.Builder
	for _, cl := range rec.Clarifications {
		for i, it := range cl.Items {
			ans := it.Answer
			if ans == "NA" {
				ans = ""
			}
			q, _ := json.Marshal(ans)
			fmt.Fprintf(&b, "%s.q%d: %s\n", specID(cl.AgentID), i+1, q)
		}
	}
	path := filepath.Join(t.TempDir(), "answers.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	answers, err := runtime.ReadAnswers(path)
	if err != nil {
		t.Fatal(err)
	}
	return answers
}

// checkReplayCalls compares the calls made per phase and round with the
// recording's, and returns how many were made and recorded.
func checkReplayCalls(t *testing.T, p *replayer, srv *llmtest.Server) (made, recorded int) {
	t.Helper()
	want := p.want()
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range p.made {
		keys[k] = true
	}
	for k := range keys {
		if k != "clarify/2" {
			recorded += want[k]
		}
		made += p.made[k]
		if p.made[k] != want[k] {
			t.Errorf("%s: %d calls, the recording made %d", k, p.made[k], want[k])
		}
	}
	if srv.Count() != made {
		t.Errorf("the server saw %d requests, the replayer counted %d", srv.Count(), made)
	}
	return made, recorded
}

// checkContributions: every contribution is recorded where the recording
// has it (node, round, author, target, content); round 2+ proposals are
// carried over.
func checkContributions(t *testing.T, rec *dlState, res *runresult.Result) {
	t.Helper()
	got := map[string]value.Message{}
	for _, m := range res.Messages {
		switch m.Node {
		case "propose", "critique", "refine":
			if m.Record == "summary" {
				continue
			}
			k := contribKey(m.Node, m.Round, m.From, m.To)
			if _, dup := got[k]; dup {
				t.Errorf("two messages for %s", k)
			}
			got[k] = m
		}
	}
	contributions := 0
	for _, r := range rec.Rounds {
		for _, c := range r.Contributions {
			contributions++
			k := contribKey(phaseNode[c.Type], r.RoundNumber, specID(c.AgentID), specID(c.Target))
			m, ok := got[k]
			switch {
			case !ok:
				t.Errorf("no message for the recorded %s", k)
			case m.Content != c.Content:
				t.Errorf("%s: content differs from the recording", k)
			case m.Record != c.Type:
				t.Errorf("%s: record %q, want %q", k, m.Record, c.Type)
			case c.Type == "proposal" && r.RoundNumber > 1 && (!m.Carried || c.Metadata.LatencyMs != 0):
				t.Errorf("%s: carried = %v (recorded latency %d ms), want a carried-over proposal", k, m.Carried, c.Metadata.LatencyMs)
			}
		}
	}
	if len(got) != contributions {
		t.Errorf("%d debate messages, the recording has %d contributions", len(got), contributions)
	}
}

// checkSummaries: summaries are recorded and journaled where the recording
// has them, with its text; it returns them by "round/agent" ("final/judge"
// for the judge's).
func checkSummaries(t *testing.T, rec *dlState, p *replayer, res *runresult.Result, evs []journal.Event) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, m := range res.Messages {
		if m.Record == "summary" {
			k := fmt.Sprintf("%d/%s", m.Round, m.From)
			if m.Round == 0 {
				k = "final/" + m.From
			}
			got[k] = m.Content
		}
	}
	want := map[string]string{}
	for k, v := range p.sums {
		want[k] = v
	}
	if js := rec.JudgeSummary; js != nil {
		want["final/judge"] = strings.TrimSpace(js.Summary)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("summaries recorded for %v, want %v", sortedMapKeys(got), sortedMapKeys(want))
	}
	if n := countEvents(evs, "summary"); n != len(want) {
		t.Errorf("%d summary events in the journal, want %d", n, len(want))
	}
	// What was condensed has the original's size: an agent's own proposals
	// and refinements, and for the judge the final round's (records:
	// [proposal, refinement]), within 5%: the headers around the messages
	// are not the original's.
	var sizes []string
	for _, ev := range evs {
		if ev.Type != "summary" {
			continue
		}
		var d struct {
			Agent  string `json:"agent"`
			Before int    `json:"before_chars"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		round, recorded := "final", 0
		if m := roundInKey.FindStringSubmatch(ev.Key); m != nil {
			round = m[1]
			for _, r := range rec.Rounds {
				if fmt.Sprint(r.RoundNumber) == round {
					recorded = r.Summaries["agent-"+d.Agent].Metadata.BeforeChars
				}
			}
		} else if rec.JudgeSummary != nil {
			recorded = rec.JudgeSummary.Metadata.BeforeChars
		}
		sizes = append(sizes, fmt.Sprintf("%s/%s %d (recorded %d)", round, d.Agent, d.Before, recorded))
		if diff := d.Before - recorded; recorded > 0 && (diff < 0 || diff > recorded/20) {
			t.Errorf("%s/%s: %d characters summarised, the original measured %d", round, d.Agent, d.Before, recorded)
		}
	}
	if len(sizes) > 0 {
		t.Logf("characters summarised: %s", strings.Join(sizes, ", "))
	}
	return want
}

// checkClarifications: every recorded question and answer reached the run
// under our question ids.
func checkClarifications(t *testing.T, rec *dlState, res *runresult.Result) {
	t.Helper()
	for _, cl := range rec.Clarifications {
		var out []any
		for _, m := range res.Messages {
			if m.Record == "clarification" && m.From == specID(cl.AgentID) {
				out, _ = m.Output.([]any)
			}
		}
		if len(out) != len(cl.Items) {
			t.Errorf("%s: %d clarifications recorded, want %d", cl.AgentID, len(out), len(cl.Items))
			continue
		}
		for i, it := range cl.Items {
			q := out[i].(map[string]any)
			if q["id"] != fmt.Sprintf("%s.q%d", specID(cl.AgentID), i+1) || q["question"] != it.Question || q["answer"] != it.Answer {
				t.Errorf("%s %s: got %v", cl.AgentID, it.ID, q)
			}
		}
	}
}

func sortedMapKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// scriptedCall is one request a scripted debate answered.
type scriptedCall struct {
	designCall
	round int // 0 for the final synthesis and its summary
	req   llmtest.Request
}

// scripted answers a design-debate run with short made-up contributions
// that name their author, phase and round, so tests can follow them
// through prompts; override may answer a call differently.
type scripted struct {
	byName   map[string]string
	override func(c scriptedCall) (llmtest.Reply, bool)

	mu    sync.Mutex
	count map[string]int
	calls []scriptedCall
}

func newScripted(plan *spec.Plan) *scripted {
	s := &scripted{byName: map[string]string{}, count: map[string]int{}}
	for _, a := range plan.Agents {
		s.byName[a.Name] = a.ID
	}
	return s
}

func (s *scripted) handle(r llmtest.Request) llmtest.Reply {
	c := scriptedCall{designCall: classify(r, s.byName, "judge"), req: r}
	s.mu.Lock()
	next := func(k string) int {
		// A tool loop's follow-up requests and repairs continue the call
		// they belong to.
		if len(r.Messages) <= 2 {
			s.count[k]++
		}
		return s.count[k]
	}
	switch c.phase {
	case "clarify", "propose", "critique", "refine", "evaluate":
		c.round = next(c.phase + "/" + c.agent + ">" + c.target)
	case "summary":
		c.round = s.count["refine/"+c.agent+">"] + 1
	case "judge-summary":
		if done := s.count["evaluate/judge>"]; done < s.count["refines"] {
			c.round = done + 1
		}
	}
	if c.phase == "refine" && len(r.Messages) <= 2 {
		s.count["refines"] = max(s.count["refines"], c.round)
	}
	s.calls = append(s.calls, c)
	override := s.override
	s.mu.Unlock()
	if override != nil {
		if rep, ok := override(c); ok {
			return rep
		}
	}
	const filler = " It keeps the booking path on one PostgreSQL primary and the reminders on a queue."
	switch c.phase {
	case "clarify":
		return llmtest.Reply{Content: `{"questions": []}`}
	case "propose":
		return llmtest.Reply{Content: fmt.Sprintf("PROPOSAL of %s in round %d.%s", c.agent, c.round, filler)}
	case "critique":
		return llmtest.Reply{Content: fmt.Sprintf("CRITIQUE by %s of %s in round %d.%s", c.agent, c.target, c.round, filler)}
	case "refine":
		return llmtest.Reply{Content: fmt.Sprintf("REFINEMENT of %s in round %d.%s", c.agent, c.round, filler)}
	case "summary":
		return llmtest.Reply{Content: fmt.Sprintf("SUMMARY of %s in round %d", c.agent, c.round)}
	case "judge-summary":
		return llmtest.Reply{Content: fmt.Sprintf("JUDGE-SUMMARY of round %d", c.round)}
	case "evaluate":
		return llmtest.Reply{Content: `{"confidence": 50, "reason": "the proposals still disagree"}`}
	case "synthesize":
		return llmtest.Reply{Content: `{"solution_markdown": "SOLUTION", "tradeoffs": ["one database"], "recommendations": ["pilot"], "unmet_requirements": [], "open_questions": [], "confidence": 80}`}
	}
	return llmtest.Reply{Status: http.StatusBadRequest, ErrorMessage: "unknown call: " + c.prompt}
}

// find returns the calls of a phase (and agent, when not "").
func (s *scripted) find(phase, agent string) []scriptedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []scriptedCall
	for _, c := range s.calls {
		if c.phase == phase && (agent == "" || c.agent == agent) {
			out = append(out, c)
		}
	}
	return out
}

// startScripted starts a run of a spec variant answered by a scripted
// debate.
func startScripted(t *testing.T, path string, opts runtime.Options, override func(c scriptedCall) (llmtest.Reply, bool)) (*runtime.Run, *scripted, *llmtest.Server) {
	t.Helper()
	s := newScripted(loadVariant(t, path))
	s.override = override
	srv := llmtest.New(t, s.handle)
	if len(opts.Inputs) == 0 {
		opts.Inputs = []string{"problem=@design-debate/problem.md"}
	}
	return startDesign(t, path, srv, opts), s, srv
}

// TestDesignDebateSummaries: with a low threshold each agent's history is
// summarised once per round from round 2 (round 1 has no earlier history),
// by one call, journaled, and used in its prompts; a failing summary call
// falls back to the full history with a warning; the judge summarises the
// latest round before it rates the refinements and before it synthesises,
// even though its own ratings are all it wrote.
func TestDesignDebateSummaries(t *testing.T) {
	path := designSpec(t, withoutClarify(), withSummaries(200, 100))
	run, s, _ := startScripted(t, path, runtime.Options{Launch: launch.Launch{Given: launch.Given{Sets: []string{"max_rounds=2"}}}}, func(c scriptedCall) (llmtest.Reply, bool) {
		if c.phase == "summary" && c.agent == "security" {
			return llmtest.Reply{Status: http.StatusBadRequest, ErrorMessage: "context too long"}, true
		}
		return llmtest.Reply{}, false
	})
	res, err := run.Execute(context.Background())
	if err != nil {
		t.Fatalf("run: %v", err)
	}

	// One summary call per agent and round, none in round 1.
	calls := map[string]int{}
	for _, c := range append(s.find("summary", ""), s.find("judge-summary", "")...) {
		calls[fmt.Sprintf("%s/%d", c.agent, c.round)]++
		if c.phase == "summary" && (strings.Contains(c.prompt, fmt.Sprintf("round %d]", c.round)) || !strings.Contains(c.prompt, "round 1]")) {
			t.Errorf("the round %d summary of %s does not cover exactly the earlier rounds:\n%s", c.round, c.agent, c.prompt)
		}
	}
	want := map[string]int{"architect/2": 1, "performance/2": 1, "security/2": 1, "judge/1": 1, "judge/2": 1, "judge/0": 1}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("summary calls %v, want %v", calls, want)
	}

	// Used in prompts, except the one that failed.
	for _, c := range s.find("refine", "") {
		has := strings.Contains(c.prompt, "## Your notes from the debate so far\n")
		wantNotes := c.round == 2 && c.agent != "security"
		if has != wantNotes || wantNotes && !strings.Contains(c.prompt, fmt.Sprintf("SUMMARY of %s in round 2", c.agent)) {
			t.Errorf("round %d refine prompt of %s: shows a summary = %v, want %v", c.round, c.agent, has, wantNotes)
		}
		if c.agent == "security" && c.round == 2 && !strings.Contains(c.prompt, "CRITIQUE by architect of security in round 2") {
			t.Errorf("without its summary, security's refine prompt lacks the full critiques:\n%s", c.prompt)
		}
	}
	for _, c := range s.find("evaluate", "judge") {
		if !strings.Contains(c.prompt, fmt.Sprintf("## Summary of the debate so far\nJUDGE-SUMMARY of round %d", c.round)) {
			t.Errorf("the round %d rating prompt does not use the judge's summary", c.round)
		}
	}
	syn := s.find("synthesize", "judge")
	if len(syn) != 1 || !strings.Contains(syn[0].prompt, "## Summary of the debate\nJUDGE-SUMMARY of round 0") {
		t.Errorf("the synthesis prompt does not use the judge's final summary")
	}
	if js := s.find("judge-summary", ""); len(js) != 3 || len(syn) == 1 && js[2].req.N > syn[0].req.N {
		t.Errorf("the judge did not summarise before synthesising")
	}

	// A warning for the failed one; journaled and recorded, privately, for
	// the others.
	warned := false
	for _, w := range res.Warnings {
		warned = warned || strings.Contains(w, "summary of security's history failed")
	}
	if !warned {
		t.Errorf("no warning about the failed summary: %v", res.Warnings)
	}
	if n := countEvents(journalEvents(t, run.Dir), "summary"); n != 5 {
		t.Errorf("%d summary events, want 5", n)
	}
	var recorded []string
	for _, m := range res.Messages {
		if m.Record == "summary" {
			if !m.Private {
				t.Errorf("summary %s is not private", m.ID)
			}
			recorded = append(recorded, fmt.Sprintf("%s/%d", m.From, m.Round))
		}
	}
	sort.Strings(recorded)
	if fmt.Sprint(recorded) != "[architect/2 judge/0 judge/1 judge/2 performance/2]" {
		t.Errorf("summaries recorded: %v", recorded)
	}
}

// TestDesignDebateCritiqueFailure: a critique call that fails after its
// retries fails the run visibly, naming the call (the CLI exits 3 on a
// runtime.EndpointError), and records no partial critique round; once the
// endpoint recovers, resuming completes the run without repeating a call
// whose response was journaled.
func TestDesignDebateCritiqueFailure(t *testing.T) {
	path := designSpec(t, withoutClarify(), withoutSummaries())
	var broken atomic.Bool
	broken.Store(true)
	opts := runtime.Options{
		Launch: launch.Launch{Given: launch.Given{Sets: []string{"max_rounds=2", "early_stop=false"}}},
		Seams:  runtime.Seams{Sleep: noSleep},
	}
	run, s, srv := startScripted(t, path, opts, func(c scriptedCall) (llmtest.Reply, bool) {
		if broken.Load() && c.phase == "critique" && c.agent == "performance" && c.target == "security" {
			return llmtest.Reply{Status: http.StatusServiceUnavailable, ErrorMessage: "overloaded"}, true
		}
		return llmtest.Reply{}, false
	})
	res, err := run.Execute(context.Background())
	var ee *calls.EndpointError
	if !errors.As(err, &ee) {
		t.Fatalf("error %v (%T), want a calls.EndpointError", err, err)
	}
	const key = "critique/round=1/performance>security"
	if ee.Key != key || res.Status != runresult.StatusFailed || !strings.Contains(res.Error, key) {
		t.Errorf("failure names %q, status %s, error %q; want the call %s", ee.Key, res.Status, res.Error, key)
	}
	var onDisk runresult.Result
	readJSONFile(t, filepath.Join(run.Dir, "result.json"), &onDisk)
	if onDisk.Status != runresult.StatusFailed || !strings.Contains(onDisk.Error, key) {
		t.Errorf("result.json: status %s, error %q", onDisk.Status, onDisk.Error)
	}
	if n := len(s.find("critique", "performance")); n < 2 {
		t.Errorf("the failing critique was tried %d times, want it retried", n)
	}
	if n := len(s.find("refine", "")); n != 0 {
		t.Errorf("the run went on to %d refinements after a critique failed", n)
	}
	for _, m := range res.Messages {
		if m.Node == "critique" {
			t.Errorf("a critique was recorded from a failed critique round: %s>%s", m.From, m.To)
		}
	}
	evs := journalEvents(t, run.Dir)
	journaled := countEvents(evs, "model_response")
	failed := false
	for _, ev := range evs {
		failed = failed || ev.Type == "node_failed" && strings.HasPrefix(ev.Key, "critique/round=1")
	}
	if !failed {
		t.Error("the journal has no node_failed event for the critique node")
	}

	broken.Store(false)
	before := srv.Count()
	resumed, err := runtime.Resume(run.Dir, nodes.Registry(), runtime.Options{Settings: runtime.Settings{Getenv: serverEnv(srv)}, Seams: runtime.Seams{Sleep: noSleep}})
	if err != nil {
		t.Fatal(err)
	}
	res, err = resumed.Execute(context.Background())
	if err != nil || res.Status != runresult.StatusCompleted {
		t.Fatalf("resumed run: status %s, error %v", res.Status, err)
	}
	// 3 proposals, 2 x (6 critiques + 3 refinements), 1 synthesis.
	const total = 3 + 2*(6+3) + 1
	if made := srv.Count() - before; made != total-journaled {
		t.Errorf("the resumed run made %d calls, want %d (%d of %d were journaled)", made, total-journaled, journaled, total)
	}
	if n := len(s.find("propose", "")); n != 3 {
		t.Errorf("%d proposal calls over both attempts, want 3", n)
	}
	critiques := 0
	for _, m := range res.Messages {
		if m.Node == "critique" {
			critiques++
		}
	}
	if critiques != 12 {
		t.Errorf("%d critiques after resuming, want 12", critiques)
	}
}

// TestDesignDebateClarifyWaits: with no answers and no terminal the run
// stops waiting (the CLI exits 5 on runtime.ErrWaiting) and writes
// questions.yaml; resuming with answers continues without repeating a
// clarify call, an empty answer means "NA", and follow-up questions are
// asked until nobody has a new one or max_iterations is reached.
func TestDesignDebateClarifyWaits(t *testing.T) {
	path := designSpec(t, withoutSummaries())
	asks := map[string][]string{ // agent/iteration -> questions
		"architect/1":   {"How many clinics go live first?", "Is there a budget cap?"},
		"performance/1": {"What is the peak booking rate?"},
		"architect/2":   {"How many clinics go live first?", "Which SMS provider do the clinics use?"},
	}
	run, s, srv := startScripted(t, path, runtime.Options{
		Launch: launch.Launch{Given: launch.Given{Sets: []string{"max_rounds=1", "early_stop=false"}}},
	}, func(c scriptedCall) (llmtest.Reply, bool) {
		if c.phase != "clarify" {
			return llmtest.Reply{}, false
		}
		var qs []map[string]string
		for _, q := range asks[fmt.Sprintf("%s/%d", c.agent, c.round)] {
			qs = append(qs, map[string]string{"question": q})
		}
		data, _ := json.Marshal(map[string]any{"questions": qs})
		return llmtest.Reply{Content: string(data)}, true
	})
	res, err := run.Execute(context.Background())
	if !errors.Is(err, kit.ErrWaiting) || res.Status != runresult.StatusWaiting {
		t.Fatalf("status %s, error %v; want waiting", res.Status, err)
	}
	questions := filepath.Join(run.Dir, "questions.yaml")
	open := readQuestions(t, questions)
	if fmt.Sprint(open) != "map[architect.q1: architect.q2: performance.q1:]" {
		t.Fatalf("questions.yaml asks %v", open)
	}
	if n := len(s.find("propose", "")); n != 0 {
		t.Fatalf("%d proposals were asked for before the questions were answered", n)
	}

	// Answer in the file, as a person would; architect.q2 is left empty.
	answer := func(answers map[string]string) map[string]string {
		t.Helper()
		data, err := os.ReadFile(questions)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for id, a := range answers {
			text = strings.Replace(text, id+`: ""`, id+`: "`+a+`"`, 1)
		}
		if err := os.WriteFile(questions, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := runtime.ReadAnswers(questions)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	resume := func(answers map[string]string) (*runresult.Result, error) {
		t.Helper()
		r, err := runtime.Resume(run.Dir, nodes.Registry(), runtime.Options{
			Launch:   launch.Launch{Answers: answers},
			Settings: runtime.Settings{Getenv: serverEnv(srv)},
		})
		if err != nil {
			t.Fatal(err)
		}
		return r.Execute(context.Background())
	}
	res, err = resume(answer(map[string]string{"architect.q1": "Three clinics in one region", "performance.q1": "2,000 a minute"}))
	if !errors.Is(err, kit.ErrWaiting) {
		t.Fatalf("status %s, error %v; want waiting for the follow-up question", res.Status, err)
	}
	open = readQuestions(t, questions)
	if open["architect.q3"] != "" || open["architect.q1"] != "Three clinics in one region" || len(open) != 4 {
		t.Fatalf("questions.yaml after the follow-up: %v; want architect.q3 open and the earlier answers kept", open)
	}

	res, err = resume(answer(map[string]string{"architect.q3": "A national provider"}))
	if err != nil || res.Status != runresult.StatusCompleted {
		t.Fatalf("status %s, error %v", res.Status, err)
	}
	// Each clarify call was made once: 3 agents x 2 iterations (the
	// second asks for follow-ups); max_iterations 2 ends it although the
	// architect still asked something new.
	if n := len(s.find("clarify", "")); n != 6 {
		t.Errorf("%d clarify calls, want 6", n)
	}
	var got []string
	for _, m := range res.Messages {
		if m.Record == "clarification" {
			for _, q := range m.Output.([]any) {
				q := q.(map[string]any)
				got = append(got, fmt.Sprintf("%s=%s", q["id"], q["answer"]))
			}
		}
	}
	want := "[architect.q1=Three clinics in one region architect.q2=NA performance.q1=2,000 a minute architect.q3=A national provider]"
	if fmt.Sprint(got) != want {
		t.Errorf("clarifications %v, want %s", got, want)
	}
	for _, c := range s.find("propose", "") {
		if !strings.Contains(c.prompt, "A: Three clinics in one region") || !strings.Contains(c.prompt, "A: A national provider") || strings.Contains(c.prompt, "budget cap") {
			t.Errorf("the proposal prompt of %s does not show exactly the answered questions:\n%s", c.agent, c.prompt)
		}
	}
}

// readQuestions reads questions.yaml as id -> answer.
func readQuestions(t *testing.T, path string) map[string]string {
	t.Helper()
	got, err := runtime.ReadAnswers(path)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestDesignDebateTools: an agent with tools gets tool calls answered
// within the context directory (no "..", absolute paths or symbolic links
// out of it), an unknown tool or bad arguments come back to the model as
// an error result, the per-call limit stops further calls, and the tool
// calls are in result.json and report.md. A context file's text is in the
// prompts under "Extra context".
func TestDesignDebateTools(t *testing.T) {
	tmp := t.TempDir()
	ctxDir := filepath.Join(tmp, "ctx")
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ctxDir, "notes.md"), "NOTES: the clinics already send SMS through one provider.")
	write(filepath.Join(ctxDir, "sub", "rooms.csv"), "room,device\n")
	outside := filepath.Join(tmp, "outside.txt")
	write(outside, "TOP-SECRET")
	for link, target := range map[string]string{"link-out.txt": "../outside.txt", "link-in.txt": "notes.md"} {
		if err := os.Symlink(target, filepath.Join(ctxDir, link)); err != nil {
			t.Skipf("symbolic links unavailable: %v", err)
		}
	}
	contextFile := filepath.Join(tmp, "context.md")
	write(contextFile, "CONTEXT-FILE: the group already runs a Keycloak for staff logins.")

	path := designSpec(t, withoutClarify(), withoutSummaries(),
		withAgents(
			designAgent{id: "architect", name: "System Architect", role: "architect", tools: []string{"search_history", "read_file", "list_files"}},
			designAgent{id: "security", name: "Security Specialist", role: "security"}),
		withNodeField("refine", "max_tool_calls", "9"))
	call := func(id, name, args string) kit.ToolCall {
		return kit.ToolCall{ID: id, Name: name, Arguments: args}
	}
	run, s, _ := startScripted(t, path, runtime.Options{
		Launch: launch.Launch{Given: launch.Given{Inputs: []string{"problem=@design-debate/problem.md", "context=@" + contextFile}, Sets: []string{"max_rounds=1", "early_stop=false"}}, ContextDir: ctxDir},
	}, func(c scriptedCall) (llmtest.Reply, bool) {
		if c.phase != "refine" || c.agent != "architect" {
			return llmtest.Reply{}, false
		}
		switch {
		case len(c.req.Messages) == 2:
			return llmtest.Reply{ToolCalls: []kit.ToolCall{
				call("c1", "list_files", `{}`),
				call("c2", "read_file", `{"path": "notes.md"}`),
				call("c3", "read_file", `{"path": "../outside.txt"}`),
				call("c4", "read_file", fmt.Sprintf(`{"path": %q}`, outside)),
				call("c5", "read_file", `{"path": "link-out.txt"}`),
				call("c6", "delete_file", `{"path": "notes.md"}`),
				call("c7", "read_file", `{"path": `),
			}}, true
		case len(c.req.Tools) > 0:
			return llmtest.Reply{ToolCalls: []kit.ToolCall{
				call("c8", "search_history", `{"query": "critique by security"}`),
				call("c9", "read_file", `{"path": "link-in.txt"}`),
				call("c10", "list_files", `{"path": "sub"}`),
			}}, true
		}
		return llmtest.Reply{Content: "REFINEMENT of architect with what the notes say."}, true
	})
	res, err := run.Execute(context.Background())
	if err != nil {
		t.Fatalf("run: %v", err)
	}

	steps := s.find("refine", "architect")
	if len(steps) != 3 {
		t.Fatalf("the architect's refinement took %d requests, want 3 (tools, tools, answer)", len(steps))
	}
	var names []string
	for _, tl := range steps[0].req.Tools {
		names = append(names, tl.Name)
	}
	if fmt.Sprint(names) != "[search_history read_file list_files]" {
		t.Errorf("tools offered: %v", names)
	}
	if len(steps[2].req.Tools) != 0 {
		t.Errorf("tools are still offered after the limit of 9 calls was used up")
	}
	results := map[string]string{}
	for _, m := range steps[2].req.Messages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m.Content
		}
	}
	for id, want := range map[string]string{
		"c1":  "link-out.txt (link)\nnotes.md\nsub/",
		"c2":  "NOTES: the clinics already send SMS",
		"c3":  "leaves the context directory",
		"c4":  "is an absolute path",
		"c5":  "leaves the context directory",
		"c6":  `unknown tool "delete_file"`,
		"c7":  "arguments are not a JSON object",
		"c8":  "CRITIQUE by security of architect in round 1",
		"c9":  "NOTES: the clinics already send SMS",
		"c10": "limit of 9 tool calls",
	} {
		if !strings.Contains(results[id], want) {
			t.Errorf("tool call %s: result %q, want it to contain %q", id, results[id], want)
		}
		if strings.Contains(results[id], "TOP-SECRET") {
			t.Errorf("tool call %s read a file outside the context directory", id)
		}
	}
	for _, id := range []string{"c3", "c4", "c5", "c6", "c7", "c10"} {
		if !strings.HasPrefix(results[id], "error: ") {
			t.Errorf("tool call %s: %q is not an error result", id, results[id])
		}
	}
	for _, c := range append(s.find("propose", ""), s.find("critique", "")...) {
		if offered := len(c.req.Tools) > 0; offered != (c.agent == "architect") {
			t.Errorf("%s call of %s: tools offered = %v", c.phase, c.agent, offered)
		}
	}

	if len(res.ToolCalls) != 10 {
		t.Errorf("result.json lists %d tool calls, want 10", len(res.ToolCalls))
	}
	for _, tc := range res.ToolCalls {
		if tc.Agent != "architect" || !strings.HasPrefix(tc.Key, "refine/round=1/architect") {
			t.Errorf("tool call %+v", tc)
		}
	}
	report, err := os.ReadFile(filepath.Join(run.Dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), "## Tool calls") || strings.Count(string(report), "| read_file |") != 6 {
		t.Errorf("report.md does not list the tool calls:\n%s", report)
	}

	for _, phase := range []string{"propose", "critique", "refine", "synthesize"} {
		for _, c := range s.find(phase, "") {
			if !strings.Contains(c.prompt, "## Extra context\nCONTEXT-FILE: the group already runs a Keycloak") {
				t.Errorf("the %s prompt of %s lacks the context file under Extra context", phase, c.agent)
			}
		}
	}
}

// TestDesignEval runs the evaluation spec over two finished design-debate
// runs, appending a CSV row for each (as runner run --csv does). Scores out
// of 1-10 are clamped, null scores and an evaluator whose reply never fits
// the schema are left out of the means (the latter absent, with a warning,
// after its repairs), and a criterion nobody scored is null.
func TestDesignEval(t *testing.T) {
	// A finished debate of our own, and the sample the README uses.
	debate, _, _ := startScripted(t, designSpec(t, withoutClarify(), withoutSummaries()),
		runtime.Options{
			Launch: launch.Launch{Given: launch.Given{Sets: []string{"max_rounds=1", "early_stop=false"}}},
		}, nil)
	if _, err := debate.Execute(context.Background()); err != nil {
		t.Fatalf("design debate: %v", err)
	}
	results := []string{filepath.Join(debate.Dir, "result.json"), filepath.Join("design-eval", "sample-result.json")}

	grades := func(scores map[string]any) string {
		out := map[string]any{}
		for _, c := range []string{"functional_completeness", "performance_scalability", "security", "maintainability",
			"regulatory_compliance", "testability", "requirements_fulfillment", "overall"} {
			v, ok := scores[c]
			if !ok {
				v = 7
			}
			out[c] = map[string]any{"score": v, "reason": "because"}
		}
		data, _ := json.Marshal(out)
		return string(data)
	}
	var mu sync.Mutex
	var prompts []string
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		mu.Lock()
		prompts = append(prompts, r.Messages[1].Content)
		mu.Unlock()
		system := r.Messages[0].Content
		switch {
		case strings.HasPrefix(system, "You are Evaluator 1,"):
			return llmtest.Reply{Content: grades(map[string]any{"functional_completeness": 8, "security": 12, "testability": 0, "regulatory_compliance": nil})}
		case strings.HasPrefix(system, "You are Evaluator 2,") && len(r.Messages) == 2:
			return llmtest.Reply{Content: grades(map[string]any{"functional_completeness": "six"})}
		case strings.HasPrefix(system, "You are Evaluator 2,"):
			return llmtest.Reply{Content: grades(map[string]any{"functional_completeness": 6, "security": 6, "testability": 6, "regulatory_compliance": nil})}
		}
		return llmtest.Reply{Content: "I would rather not grade this."}
	})
	plan := load(t, "design-eval")
	csvPath := filepath.Join(t.TempDir(), "scores.csv")
	for _, result := range results {
		run, err := runtime.Start(plan, runtime.Options{
			Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"problem=@design-debate/problem.md", "run=@" + result}}},
			Settings: runtime.Settings{RunsDir: t.TempDir(), Getenv: serverEnv(srv)},
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := run.Execute(context.Background())
		if err != nil {
			t.Fatalf("evaluating %s: %v", result, err)
		}
		want := map[string]any{
			"functional_completeness": 7.0, "performance_scalability": 7.0, "security": 8.0, "maintainability": 7.0,
			"regulatory_compliance": nil, "testability": 3.5, "requirements_fulfillment": 7.0, "overall": 7.0,
		}
		if !reflect.DeepEqual(res.Outputs, want) {
			t.Errorf("%s: outputs %v, want %v", result, res.Outputs, want)
		}
		warned := false
		for _, w := range res.Warnings {
			warned = warned || strings.Contains(w, `agent "evaluator3" is left out`)
		}
		if !warned {
			t.Errorf("no warning for the evaluator whose reply never fit: %v", res.Warnings)
		}
		if err := runresult.AppendCSV(csvPath, res); err != nil {
			t.Fatal(err)
		}
	}

	// Every evaluator saw the problem and the whole result it grades; the
	// invalid reply was sent back with the schema error.
	repaired := 0
	for _, p := range prompts {
		if !strings.Contains(p, "Appointment booking for a network of clinics") {
			t.Errorf("an evaluation prompt lacks the problem")
		}
	}
	for _, result := range results {
		text, err := os.ReadFile(result)
		if err != nil {
			t.Fatal(err)
		}
		// The prompt shows the run's outputs (not its messages), as JSON.
		var rec struct {
			Outputs  map[string]any  `json:"outputs"`
			Messages json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(text, &rec); err != nil {
			t.Fatal(err)
		}
		shown, err := json.MarshalIndent(rec.Outputs, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range prompts {
			if strings.Contains(p, "<result>\n"+string(shown)+"\n</result>") {
				n++
			}
			if len(rec.Messages) > 2 && strings.Contains(p, `"messages"`) {
				t.Errorf("an evaluation prompt shows the run's messages, which cost tokens and are not graded")
			}
		}
		// Evaluators 1 and 2 once each plus 2's repair, evaluator 3 and its two repairs.
		if n != 6 {
			t.Errorf("%d prompts show %s, want 6", n, result)
		}
	}
	for _, r := range srv.Requests() {
		if len(r.Messages) > 2 && strings.HasPrefix(r.Messages[0].Content, "You are Evaluator 2,") {
			repaired++
			if !strings.Contains(r.LastUser(), "functional_completeness") {
				t.Errorf("the repair prompt does not say what was wrong:\n%s", r.LastUser())
			}
		}
	}
	if repaired != 2 {
		t.Errorf("%d repair requests for evaluator 2, want 2 (one per run)", repaired)
	}

	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("the CSV has %d lines, want a header and two rows", len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, row := range rows[1:] {
		if row[col["spec"]] != "design-eval" || row[col["testability"]] != "3.5" || row[col["security"]] != "8" || row[col["regulatory_compliance"]] != "" {
			t.Errorf("CSV row %v (columns %v)", row, rows[0])
		}
	}
	if rows[1][col["run_id"]] == rows[2][col["run_id"]] {
		t.Error("both CSV rows have the same run id")
	}
}

// TestDesignDebateCLI drives the real runner binary through what the tests
// above do in process: a run waiting for answers exits 5 and is resumed
// with --answers; a critique that keeps failing exits 3 and is resumed once
// the endpoint recovers; --context FILE and --context DIR; --csv over two
// evaluations.
func TestDesignDebateCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the runner binary; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "runner")
	if out, err := exec.Command(goTool, "build", "-o", bin, "../cmd/runner").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	problem, err := filepath.Abs(filepath.Join("design-debate", "problem.md"))
	if err != nil {
		t.Fatal(err)
	}
	// runner runs the binary; it returns the exit code, stdout, stderr and
	// the run directory it reported.
	runner := func(srv *llmtest.Server, args ...string) (code int, stdout, stderr, dir string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY="+testKey)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if m := runLine.FindStringSubmatch(errb.String()); m != nil {
			dir = m[1]
		}
		return code, out.String(), errb.String(), dir
	}
	fixed := []string{"--set", "max_rounds=1", "--set", "early_stop=false", "--runs-dir", filepath.Join(tmp, "runs"), "-q"}

	t.Run("clarify waits, exit 5, resume --answers", func(t *testing.T) {
		path := designSpec(t, withoutSummaries())
		s := newScripted(loadVariant(t, path))
		s.override = func(c scriptedCall) (llmtest.Reply, bool) {
			if c.phase == "clarify" && c.agent == "security" && c.round == 1 {
				return llmtest.Reply{Content: `{"questions": [{"question": "Who may read the audit log?"}]}`}, true
			}
			return llmtest.Reply{}, false
		}
		srv := llmtest.New(t, s.handle)
		code, _, stderr, dir := runner(srv, append([]string{"run", path, "--input", "problem=@" + problem}, fixed...)...)
		if code != 5 || dir == "" || !strings.Contains(stderr, "waiting for answers") {
			t.Fatalf("exit %d, want 5; stderr:\n%s", code, stderr)
		}
		questions := filepath.Join(dir, "questions.yaml")
		data, err := os.ReadFile(questions)
		if err != nil || !strings.Contains(string(data), "# security asks: Who may read the audit log?\nsecurity.q1: \"\"") {
			t.Fatalf("questions.yaml: %v\n%s", err, data)
		}
		answered := strings.Replace(string(data), `security.q1: ""`, `security.q1: "Only the data protection officer"`, 1)
		if err := os.WriteFile(questions, []byte(answered), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr, _ := runner(srv, "resume", dir, "--answers", questions, "-q")
		if code != 0 || strings.TrimSpace(stdout) != "SOLUTION" {
			t.Fatalf("resume: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
		}
		if n := len(s.find("clarify", "")); n != 6 {
			t.Errorf("%d clarify calls over both commands, want 6 (3 agents, a follow-up each, none repeated)", n)
		}
		for _, c := range s.find("propose", "") {
			if !strings.Contains(c.prompt, "A: Only the data protection officer") {
				t.Errorf("the proposal prompt of %s lacks the answer", c.agent)
			}
		}
	})

	t.Run("critique fails, exit 3, resume", func(t *testing.T) {
		path := designSpec(t, withoutClarify(), withoutSummaries(), func(t *testing.T, root *yaml.Node) {
			setYAML(t, root, "defaults", "{max_retries: 1}")
		})
		s := newScripted(loadVariant(t, path))
		var broken atomic.Bool
		broken.Store(true)
		s.override = func(c scriptedCall) (llmtest.Reply, bool) {
			if broken.Load() && c.phase == "critique" && c.agent == "architect" && c.target == "performance" {
				return llmtest.Reply{Status: http.StatusInternalServerError, ErrorMessage: "upstream crashed", RetryAfter: "0"}, true
			}
			return llmtest.Reply{}, false
		}
		srv := llmtest.New(t, s.handle)
		code, _, stderr, dir := runner(srv, append([]string{"run", path, "--input", "problem=@" + problem}, fixed...)...)
		if code != 3 || !strings.Contains(stderr, "critique/round=1/architect>performance") {
			t.Fatalf("exit %d, want 3 naming the call; stderr:\n%s", code, stderr)
		}
		broken.Store(false)
		code, stdout, stderr, _ := runner(srv, "resume", dir, "-q")
		if code != 0 || strings.TrimSpace(stdout) != "SOLUTION" {
			t.Fatalf("resume: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
		}
		if n := len(s.find("propose", "")); n != 3 {
			t.Errorf("%d proposal calls, want 3 (none repeated by resume)", n)
		}
	})

	t.Run("context file and folder", func(t *testing.T) {
		ctxDir := filepath.Join(t.TempDir(), "ctx")
		if err := os.MkdirAll(ctxDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ctxDir, "notes.md"), []byte("NOTES-IN-FOLDER"), 0o644); err != nil {
			t.Fatal(err)
		}
		ctxFile := filepath.Join(t.TempDir(), "context.md")
		if err := os.WriteFile(ctxFile, []byte("CONTEXT-FROM-FILE"), 0o644); err != nil {
			t.Fatal(err)
		}
		path := designSpec(t, withoutClarify(), withoutSummaries(), withAgents(
			designAgent{id: "architect", name: "System Architect", role: "architect", tools: []string{"read_file"}},
			designAgent{id: "security", name: "Security Specialist", role: "security"}))
		s := newScripted(loadVariant(t, path))
		s.override = func(c scriptedCall) (llmtest.Reply, bool) {
			if c.phase == "propose" && c.agent == "architect" && len(c.req.Messages) == 2 {
				return llmtest.Reply{ToolCalls: []kit.ToolCall{{ID: "t1", Name: "read_file", Arguments: `{"path": "notes.md"}`}}}, true
			}
			return llmtest.Reply{}, false
		}
		srv := llmtest.New(t, s.handle)
		for _, ctx := range []string{ctxFile, ctxDir} {
			code, _, stderr, _ := runner(srv, append([]string{"run", path, "--input", "problem=@" + problem, "--context", ctx}, fixed...)...)
			if code != 0 {
				t.Fatalf("--context %s: exit %d; stderr:\n%s", ctx, code, stderr)
			}
		}
		// Each run's architect proposal is two requests: the tool call and
		// the answer after its result.
		var got []string
		for _, c := range s.find("propose", "architect") {
			if strings.Contains(c.prompt, "## Extra context\nCONTEXT-FROM-FILE") {
				got = append(got, "context")
			}
			for _, m := range c.req.Messages {
				if m.Role == "tool" {
					got = append(got, m.Content)
				}
			}
		}
		want := "[context context error: no context directory was given to this run (--context DIR) NOTES-IN-FOLDER]"
		if fmt.Sprint(got) != want {
			t.Errorf("what the architect's proposal requests saw: %v\nwant %s", got, want)
		}
	})

	t.Run("evaluation --csv", func(t *testing.T) {
		srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
			return llmtest.Reply{Content: `{"functional_completeness": {"score": 9}, "performance_scalability": {"score": 8}, "security": {"score": 7}, "maintainability": {"score": 6}, "regulatory_compliance": {"score": 5}, "testability": {"score": 4}, "requirements_fulfillment": {"score": 3}, "overall": {"score": 2}}`}
		})
		sample, err := filepath.Abs(filepath.Join("design-eval", "sample-result.json"))
		if err != nil {
			t.Fatal(err)
		}
		scores := filepath.Join(t.TempDir(), "scores.csv")
		for i := 0; i < 2; i++ {
			code, stdout, stderr, _ := runner(srv, "run", filepath.Join("design-eval", "spec.yaml"), "--input", "problem=@"+problem,
				"--input", "run=@"+sample, "--csv", scores, "--runs-dir", filepath.Join(tmp, "runs"), "-q")
			if code != 0 || strings.TrimSpace(stdout) != "9" {
				t.Fatalf("exit %d, stdout %q (the first output, functional_completeness); stderr:\n%s", code, stdout, stderr)
			}
		}
		f, err := os.Open(scores)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		if err != nil || len(rows) != 3 {
			t.Fatalf("scores.csv: %d lines (%v), want a header and two rows", len(rows), err)
		}
		for _, row := range rows[1:] {
			got := map[string]string{}
			for i, h := range rows[0] {
				got[h] = row[i]
			}
			if got["functional_completeness"] != "9" || got["requirements_fulfillment"] != "3" || got["overall"] != "2" || got["status"] != "completed" {
				t.Errorf("scores.csv row %v", got)
			}
		}
	})
}
