package converse_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/dryrun"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/view"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/draw"
)

const selectorSpec = "testdata/selector.yaml"

var selectTurn = regexp.MustCompile(`^SELECT TURN=(\d+)`)

// selection is a request to the selector, as the tests read it.
type selection struct {
	Turn     int
	Prompt   string // the first user message
	Feedback string // the last user message of a repair ("" for a first ask)
	Roles    string
}

// selectorHandler answers the selector with pick and the speakers with a
// plain message; it keeps every selector request.
func selectorHandler(t *testing.T, plan *spec.Plan, pick func(s selection) string, log *[]selection, mu *sync.Mutex) llmtest.Handler {
	turns := scripted(t, plan, plain)
	return func(r llmtest.Request) llmtest.Reply {
		var users []string
		var roles []string
		for _, m := range r.Messages {
			roles = append(roles, m.Role)
			if m.Role == "user" {
				users = append(users, m.Content)
			}
		}
		if len(users) == 0 || !selectTurn.MatchString(users[0]) {
			return turns(r)
		}
		s := selection{Prompt: users[0], Roles: strings.Join(roles, " ")}
		fmt.Sscanf(selectTurn.FindStringSubmatch(users[0])[1], "%d", &s.Turn)
		if len(users) > 1 {
			s.Feedback = users[len(users)-1]
		}
		mu.Lock()
		*log = append(*log, s)
		mu.Unlock()
		return llmtest.Reply{Content: pick(s)}
	}
}

func selectorRun(t *testing.T, plan *spec.Plan, pick func(s selection) string) (outcome, []selection) {
	t.Helper()
	var log []selection
	var mu sync.Mutex
	o := execute(t, plan, selectorHandler(t, plan, pick, &log, &mu), flags{Seed: 1})
	return o, log
}

// TestSelectorChoosesSpeakers: before every turn the selector is asked,
// sees the conversation so far and the candidates (everyone but the last
// speaker), and its reply, however a person would write a name, decides
// who speaks.
func TestSelectorChoosesSpeakers(t *testing.T) {
	plan := loadPlan(t, selectorSpec)
	replies := []string{"Ben", "  **cat.** ", "`Dan`", "I think debater Ann should go next."}
	o, log := selectorRun(t, plan, func(s selection) string { return replies[s.Turn-1] })
	o.must(t)
	if got := strings.Join(o.speakers("talk"), " "); got != "b c d a" {
		t.Errorf("speakers %q, want b c d a", got)
	}
	if o.srv.Count() != 8 || len(log) != 4 {
		t.Errorf("%d calls, %d to the selector; want 4 selections and 4 turns", o.srv.Count(), len(log))
	}
	if !strings.Contains(log[0].Prompt, "LAST= CANDIDATES=a:Ann,b:Ben,c:Cat,d:Dan,") {
		t.Errorf("first selection: %s", log[0].Prompt)
	}
	if p := log[2].Prompt; !strings.Contains(p, "LAST=c CANDIDATES=a:Ann,b:Ben,d:Dan,") || !strings.Contains(p, "b: b speaks at turn 1 | c: c speaks at turn 2") {
		t.Errorf("third selection does not show the candidates and the conversation so far: %s", p)
	}
	// Selections and turns alternate: the selector of turn n sees turn n-1.
	for i, c := range o.calls() {
		if (c.Speaker == "") != (i%2 == 0) {
			t.Errorf("request %d is out of order: %s", c.N, c.User)
		}
	}
	sel := o.eventsOf("speaker_selected")
	if len(sel) != 4 || !strings.HasSuffix(sel[1].Key, "/t2-select/mod") || !strings.Contains(string(sel[1].Data), `"speaker":"c"`) {
		t.Errorf("speaker_selected events: %+v", sel)
	}
	if u := o.res.Usage.ByAgent["mod"]; u.Calls != 4 {
		t.Errorf("the selector's usage counts %d calls, want 4", u.Calls)
	}
	if got := o.res.Outputs["ended_by"]; got != "max_turns" {
		t.Errorf("ended by %v", got)
	}
}

// TestSelectorRepairs: a reply naming no one, two participants, or the
// last speaker is asked again in the same chat with the reason; the valid
// answer decides.
func TestSelectorRepairs(t *testing.T) {
	plan := variant(t, selectorSpec, "max_turns: 4", "max_turns: 2")
	o, log := selectorRun(t, plan, func(s selection) string {
		switch {
		case s.Turn == 1 && s.Feedback == "":
			return "Let the quietest one speak."
		case s.Turn == 1 && strings.Contains(s.Feedback, "names none"):
			return "Ann or Ben"
		case s.Turn == 1:
			return "Ann"
		case s.Feedback == "":
			return "ann"
		}
		return "Ben"
	})
	o.must(t)
	if got := strings.Join(o.speakers("talk"), " "); got != "a b" {
		t.Errorf("speakers %q, want a b", got)
	}
	if len(log) != 5 {
		t.Fatalf("%d selector requests, want 3 for turn 1 and 2 for turn 2", len(log))
	}
	if log[2].Roles != "user assistant user assistant user" {
		t.Errorf("the second repair's roles: %s", log[2].Roles)
	}
	for i, want := range map[int]string{
		1: "your reply names none of the participants who may speak next; reply with exactly one of: a, b, c, d",
		2: "your reply names a and b: name exactly one of a, b, c, d",
		4: "a has just spoken and may not speak twice in a row; choose one of b, c, d",
	} {
		if log[i].Feedback != want {
			t.Errorf("selector request %d's feedback %q, want %q", i+1, log[i].Feedback, want)
		}
	}
	var rejected []string
	for _, r := range o.res.Rejections {
		rejected = append(rejected, r.Agent+" "+r.Content)
	}
	if got := strings.Join(rejected, ", "); got != "mod Let the quietest one speak., mod Ann or Ben, mod ann" {
		t.Errorf("rejections in result.json: %s", got)
	}
	if reps := o.eventsOf("repair"); len(reps) != 3 || !strings.HasSuffix(reps[1].Key, "/t1-select/mod#repair1") {
		t.Errorf("repair events: %+v", reps)
	}
}

// TestSelectorFallback: a selector that never names a candidate fails the
// run by default, naming node, turn, selector and reason; fallback:
// round_robin goes on, with a warning.
func TestSelectorFallback(t *testing.T) {
	never := func(selection) string { return "nobody in particular" }
	o, log := selectorRun(t, loadPlan(t, selectorSpec), never)
	if o.err == nil || !strings.Contains(o.err.Error(), `node "talk", turn 1: the selector mod's choice of speaker was rejected 3 time(s), last because: your reply names none`) {
		t.Errorf("err = %v", o.err)
	}
	if len(log) != 3 || o.srv.Count() != 3 {
		t.Errorf("%d selector requests of %d, want 3 (one and two repairs)", len(log), o.srv.Count())
	}
	plan := variant(t, selectorSpec, "template: pick", "template: pick\n      fallback: round_robin\n      repair: 0")
	o, _ = selectorRun(t, plan, never)
	o.must(t)
	if got := strings.Join(o.speakers("talk"), " "); got != "a b c d" {
		t.Errorf("speakers %q, want a b c d", got)
	}
	if w := strings.Join(o.res.Warnings, "\n"); !strings.Contains(w, "a speaks, chosen by speaker.fallback: round_robin") {
		t.Errorf("warnings: %s", w)
	}
}

// TestSelectorEnds: with end set, the selector ends the conversation by
// replying it; candidates and the end word are in its prompt.
func TestSelectorEnds(t *testing.T) {
	plan := variant(t, selectorSpec, "template: pick", "template: pick\n      end: DONE")
	o, log := selectorRun(t, plan, func(s selection) string {
		if s.Turn == 3 {
			return "done."
		}
		return []string{"", "Cat", "Dan"}[s.Turn]
	})
	o.must(t)
	if got := strings.Join(o.speakers("talk"), " "); got != "c d" {
		t.Errorf("speakers %q, want c d", got)
	}
	if len(log) != 3 || !strings.Contains(log[0].Prompt, "END=DONE") {
		t.Errorf("%d selections; first: %v", len(log), log)
	}
	if out := o.res.Outputs; out["ended_by"] != "selector" || fmt.Sprint(out["turns"]) != "2" {
		t.Errorf("outputs %v", out)
	}
}

// TestSelectorValidate: validate names the selector's mistakes with their
// positions.
func TestSelectorValidate(t *testing.T) {
	text, err := os.ReadFile(selectorSpec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ old, new, want string }{
		{"selector: mod", "selector: mood", `selector.yaml:22:17: error: node "talk": unknown agent "mood" (did you mean "mod"?)`},
		{"      template: pick\n", "", `selector.yaml:22:7: error: node "talk": speaker.selector needs a template: the prompt that asks mod who speaks next`},
		{"template: pick\n", "template: pick\n      fallback: guess\n", `selector.yaml:24:17: error: nodes.talk.speaker.fallback: "guess" is not one of fail, previous, round_robin`},
		{"template: pick\n", "template: nope\n", `selector.yaml:23:17: error: unknown template "nope"`},
		{"{{.Last}}", "{{.Lats}}", `Lats`},
		{"template: pick\n", "template: pick\n      end: c\n", `selector.yaml:24:12: error: node "talk": speaker.end "c" names the participant c`},
		{"template: pick\n", "template: pick\n      end: '?!'\n", `speaker.end "?!" has no word in it`},
		{"template: pick\n", "template: pick\n      end: ann\n", `speaker.end "ann" names the participant a`},
		{"  mod: {name: Moderator}", "  mod: {name: Moderator, replicas: 2}", `selector.yaml:22:17: error: node "talk": speaker.selector names 2 agents (mod is replicated): name one of them, such as mod_1`},
	} {
		src := strings.Replace(string(text), tc.old, tc.new, 1)
		_, diags := spec.Compile("selector.yaml", []byte(src), nodes.Registry())
		if got := diags.Format(); !diags.HasErrors() || !strings.Contains(got, tc.want) {
			t.Errorf("with %q for %q, validate says:\n%s\nwant %q", tc.new, tc.old, got, tc.want)
		}
	}
}

// TestSelectorResume: a run stopped by a failing endpoint in the middle of
// a conversation, resumed, asks no recorded call again (selections
// included) and ends as an uninterrupted run does.
func TestSelectorResume(t *testing.T) {
	plan := loadPlan(t, selectorSpec)
	pick := func(s selection) string {
		if s.Turn == 2 && s.Feedback == "" {
			return "nobody"
		}
		return []string{"", "Ben", "Cat", "Dan", "Ann"}[s.Turn]
	}
	whole, _ := selectorRun(t, plan, pick)
	whole.must(t)
	if whole.srv.Count() != 9 {
		t.Fatalf("%d calls, want 4 turns, 4 selections and a repair", whole.srv.Count())
	}
	for _, failAt := range []int{3, 4, 6} {
		var log []selection
		var mu sync.Mutex
		good := selectorHandler(t, plan, pick, &log, &mu)
		o, res, before := failThenResume(t, plan, good, failAt)
		if got, want := o.srv.Count()-before, 9-(failAt-1); got != want {
			t.Errorf("fail at %d: the resumed run made %d calls, want %d", failAt, got, want)
		}
		var speakers []string
		for _, m := range res.Messages {
			if m.Record == "message" {
				speakers = append(speakers, m.From)
			}
		}
		if got := strings.Join(speakers, " "); got != "b c d a" {
			t.Errorf("fail at %d: speakers %q after resume", failAt, got)
		}
	}
}

// TestSelectorDryRun: the worst case counts a selection and a turn for
// every turn up to max_turns, and every repair of both in its upper bound.
func TestSelectorDryRun(t *testing.T) {
	plan := variant(t, selectorSpec, "max_turns: 4", "max_turns: 7")
	rep, err := dryrun.Run(plan, dryrun.Options{Given: launch.Given{}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Calls != 2*7 {
		t.Errorf("the dry run plans %d calls, want 2 x max_turns = 14", rep.Calls)
	}
	// Selections repair twice, turns three times (the defaults).
	if want := 7*(1+2) + 7*(1+3); rep.UpperBound != want {
		t.Errorf("upper bound %d, want %d", rep.UpperBound, want)
	}
	if len(rep.Nodes) != 1 || !strings.Contains(rep.Nodes[0].Detail, "each speaker chosen by mod") {
		t.Errorf("nodes: %+v", rep.Nodes)
	}
	// Two participants: after the first turn only the other may speak,
	// so the selector is asked once.
	plan = variant(t, selectorSpec, "max_turns: 4", "max_turns: 7", "agents: [a, b, c, d]", "agents: [a, b]")
	if rep, err = dryrun.Run(plan, dryrun.Options{Given: launch.Given{}}); err != nil {
		t.Fatal(err)
	}
	if rep.Calls != 7+1 || !strings.Contains(rep.Nodes[0].Detail, "the first speaker chosen by mod") {
		t.Errorf("two participants: the dry run plans %d calls (want max_turns + 1 = 8): %s", rep.Calls, rep.Nodes[0].Detail)
	}
}

// TestSelectorDrawn: the graph draws the selector beside its conversation.
func TestSelectorDrawn(t *testing.T) {
	plan := variant(t, selectorSpec, "template: pick", "template: pick\n      end: DONE")
	for name, text := range map[string]string{"mermaid": draw.Mermaid(plan), "dot": draw.Dot(plan), "view": view.FlowSVG(plan)} {
		if !strings.Contains(text, "also calls:") || !strings.Contains(text, "mod chooses each speaker (pick), may end it with DONE") {
			t.Errorf("the %s graph does not show the selector:\n%s", name, text)
		}
	}
}
