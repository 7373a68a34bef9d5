package examples_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
)

// These tests run the examples end to end through the runtime against a
// local OpenAI-compatible server whose "model" answers from what the prompt
// asks for. They prove the examples' prompts, parsers, loops and outputs
// fit together, not just that they validate.

const testKey = "sk-examples-test-key"

// runExample runs an example with the inputs its README gives.
func runExample(t *testing.T, name string, h llmtest.Handler) (*result.Result, *llmtest.Server) {
	t.Helper()
	res, srv := runExampleToEnd(t, name, h)
	if res.Status != result.StatusCompleted {
		t.Fatalf("%s: status %s (%s)", name, res.Status, res.Conclusion.Summary())
	}
	return res, srv
}

// runExampleToEnd is runExample for a run that may end inconclusive.
func runExampleToEnd(t *testing.T, name string, h llmtest.Handler) (*result.Result, *llmtest.Server) {
	t.Helper()
	plan := load(t, name)
	srv := llmtest.New(t, h)
	r, _ := readReadme(t, name)
	var inputs []string
	for k, v := range r.inputs {
		inputs = append(inputs, k+"="+v)
	}
	seed := int64(7)
	run, err := runtime.Start(plan, runtime.Options{
		Launch: launch.Launch{Given: launch.Given{Inputs: inputs, Seed: &seed}},
		Settings: runtime.Settings{RunsDir: t.TempDir(), Getenv: func(k string) string {
			switch k {
			case "OPENAI_BASE_URL":
				return srv.URL
			case "OPENAI_API_KEY":
				return testKey
			}
			return ""
		}},
	})
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	res, err := run.Execute(context.Background())
	if err != nil {
		t.Fatalf("running %s: %v", name, err)
	}
	if !result.Finished(res.Status) {
		t.Fatalf("%s: status %s (%s)", name, res.Status, res.Error)
	}
	for _, req := range srv.Requests() {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "<no value>") {
				t.Errorf("request %d has <no value> in its %s message", req.N, m.Role)
			}
		}
		if len(req.Messages) == 0 || req.Messages[0].Role != "system" || !strings.HasPrefix(req.Messages[0].Content, "You are ") {
			t.Errorf("request %d has no agent system prompt", req.N)
		}
	}
	return res, srv
}

func TestDesignDebateRuns(t *testing.T) {
	var mu sync.Mutex
	evaluations := 0
	res, srv := runExample(t, "design-debate", func(r llmtest.Request) llmtest.Reply {
		task := r.Messages[1].Content // the node's prompt; later user messages are repairs
		repair := len(r.Messages) > 2
		switch {
		case strings.Contains(task, `{"questions": []}`):
			return llmtest.Reply{Content: `{"questions": []}`}
		case strings.Contains(task, `{"confidence": 0, "reason"`):
			mu.Lock()
			evaluations++
			n := evaluations
			mu.Unlock()
			if n == 1 {
				return llmtest.Reply{Content: `{"confidence": 60, "reason": "security and performance still disagree"}`}
			}
			return llmtest.Reply{Content: `{"confidence": 90, "reason": "converged"}`}
		case strings.Contains(task, `"solution_markdown"`):
			// The first reply breaks the cap on confidence; the repair
			// carries the schema error and the second reply obeys it.
			confidence := 80
			if repair {
				confidence = 35
			}
			return llmtest.Reply{Content: fmt.Sprintf(`{"solution_markdown": "# Booking platform", "tradeoffs": ["cost"], "recommendations": ["pilot"], "unmet_requirements": ["offline schedule"], "open_questions": [], "confidence": %d}`, confidence)}
		case strings.Contains(task, "## Proposal under review"):
			return llmtest.Reply{Content: "Critique: the slot lock needs a timeout."}
		case strings.Contains(task, "## Critiques you received"):
			return llmtest.Reply{Content: "Refined design with slot lock timeouts."}
		default:
			return llmtest.Reply{Content: "Design: a modular monolith on PostgreSQL."}
		}
	})
	if got := res.Outputs["solution"]; got != "# Booking platform" {
		t.Errorf("solution = %v", got)
	}
	if got := fmt.Sprint(res.Outputs["confidence"]); got != "35" {
		t.Errorf("confidence = %v, want 35 (capped: a major requirement is unmet)", got)
	}
	// clarify 3; round 1: propose 3, critique 6, refine 3, evaluate 1;
	// round 2: proposals carried over, critique 6, refine 3, evaluate 1
	// (confidence 90 ends the loop); synthesize 1 plus 1 repair.
	if n := srv.Count(); n != 3+13+10+2 {
		t.Errorf("%d model calls, want 28", n)
	}
	carried := 0
	for _, m := range res.Messages {
		if m.Record == "proposal" && m.Round == 2 {
			if !m.Carried || m.Content != "Refined design with slot lock timeouts." {
				t.Errorf("round 2 proposal of %s is not the carried refinement: %+v", m.From, m)
			}
			carried++
		}
	}
	if carried != 3 {
		t.Errorf("%d carried proposals in round 2, want 3", carried)
	}
	// The critiques an agent received reach its refine prompt, and the
	// clarify prompt reaches each agent once.
	refines := 0
	for _, req := range srv.Requests() {
		if p := req.LastUser(); strings.Contains(p, "## Critiques you received") {
			refines++
			if strings.Count(p, "Critique: the slot lock needs a timeout.") != 2 {
				t.Errorf("a refine prompt does not show both critiques:\n%s", p)
			}
		}
	}
	if refines != 6 {
		t.Errorf("%d refine prompts, want 6", refines)
	}
}

var (
	verdictLine = regexp.MustCompile(`<Verdict>([A-Z_]+(?: \| [A-Z_]+)*)</Verdict>`)
	turnLine    = regexp.MustCompile(`\(turn (\d+) of at most`)
)

// panelist answers a turn prompt: it gives the verdict at index pick of the
// options and withdraws once the turn reaches withdrawAt.
func panelist(p string, pick, withdrawAt int) string {
	opts := strings.Split(verdictLine.FindStringSubmatch(p)[1], " | ")
	turn := 0
	if m := turnLine.FindStringSubmatch(p); m != nil {
		turn, _ = strconv.Atoi(m[1])
	}
	return fmt.Sprintf("<SpeakingTo>All</SpeakingTo><Whisper>false</Whisper><PrivateThoughts>PRIVATE-NOTE</PrivateThoughts>"+
		"<Content>My view at turn %d.</Content><Verdict>%s</Verdict><VerdictReasoning>Evidence at turn %d.</VerdictReasoning><Withdrawn>%v</Withdrawn>",
		turn, opts[pick], turn, turn >= withdrawAt)
}

func TestHiringPanelRuns(t *testing.T) {
	var mu sync.Mutex
	rejected := false
	res, srv := runExample(t, "hiring-panel", func(r llmtest.Request) llmtest.Reply {
		p := r.LastUser()
		mu.Lock()
		defer mu.Unlock()
		if !rejected {
			rejected = true
			return llmtest.Reply{Content: "<Content>Hmm.</Content><Verdict>MAYBE</Verdict><VerdictReasoning>r</VerdictReasoning>"}
		}
		return llmtest.Reply{Content: panelist(p, 1, 0)}
	})
	plan := load(t, "hiring-panel")
	verdicts, _ := res.Outputs["verdicts"].([]any)
	if len(verdicts) != len(plan.Goals) {
		t.Fatalf("verdicts = %v, want one entry per goal", res.Outputs["verdicts"])
	}
	for i, v := range verdicts {
		g := v.(map[string]any)
		if g["goal"] != plan.Goals[i].ID || g["consensus"] != "GOOD_FIT" {
			t.Errorf("goal %d: %v", i, g)
		}
		if members, _ := g["verdicts"].([]any); len(members) != len(plan.Nodes["panel"].Agents) {
			t.Errorf("goal %d has %d verdicts, want one per member: %v", i, len(members), g)
		}
	}
	repaired := false
	for _, req := range srv.Requests() {
		if strings.Contains(req.LastUser(), `"MAYBE" is not a valid verdict`) {
			repaired = true
		}
	}
	if !repaired {
		t.Error("the rejected reply was not sent back with the reason")
	}
}

func TestResearchReviewRunsWithModeration(t *testing.T) {
	res, srv := runExample(t, "research-review", func(r llmtest.Request) llmtest.Reply {
		p := r.LastUser()
		if strings.Contains(p, "## The debate you are moderating") {
			return llmtest.Reply{Content: "<SpeakingTo>All</SpeakingTo><Content>MODERATOR-ASSESSMENT</Content>" +
				"<Verdict>GENTLE_REDIRECT</Verdict><VerdictReasoning>Cite the paper's tables.</VerdictReasoning><Withdrawn>true</Withdrawn>"}
		}
		return llmtest.Reply{Content: panelist(p, 2, 9)}
	})
	plan := load(t, "research-review")
	interventions, _ := res.Outputs["interventions"].([]any)
	if len(interventions) != len(plan.Goals) {
		t.Fatalf("interventions = %v, want one per goal", res.Outputs["interventions"])
	}
	for i, iv := range interventions {
		m := iv.(map[string]any)
		if m["goal"] != plan.Goals[i].ID || !strings.Contains(fmt.Sprint(m["message"]), "GENTLE_REDIRECT.\nCite the paper's tables.") {
			t.Errorf("intervention %d = %v", i, m)
		}
	}
	for _, v := range res.Outputs["verdicts"].([]any) {
		if g := v.(map[string]any); g["consensus"] != "INCREMENTAL" {
			t.Errorf("goal %v: consensus %v, want INCREMENTAL", g["goal"], g["consensus"])
		}
	}
	// After the moderators spoke, the board sees their decision but not
	// their deliberation; private notes reach only their author.
	sawDecision := false
	for _, req := range srv.Requests() {
		p := req.LastUser()
		if strings.Contains(p, "## The debate you are moderating") {
			if strings.Contains(p, "PRIVATE-NOTE") {
				t.Errorf("a moderator saw a board member's private note:\n%s", p)
			}
			continue
		}
		if strings.Contains(p, "MODERATOR-ASSESSMENT") {
			t.Errorf("a board member saw the moderators' deliberation:\n%s", p)
		}
		if strings.Contains(p, "Moderators to everyone") && strings.Contains(p, "Cite the paper's tables.") {
			sawDecision = true
		}
	}
	if !sawDecision {
		t.Error("no board prompt showed the moderators' decision")
	}
	var msgs []value.Message
	for _, m := range res.Messages {
		if m.Record == "interjection" {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) == 0 || !strings.HasPrefix(msgs[0].Content, "Time keeper, turn 4:") {
		t.Errorf("no time keeper reminder at turn 4: %+v", msgs)
	}
}
