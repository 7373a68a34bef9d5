package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/dryrun"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
)

// The published protocols under protocols/ run end to end against the
// scripted server, and each test pins what the protocol's fact sheet
// (shared/design/protocols.md) says a run sends: how many calls, the roles
// and order of every request's messages, whose text each call sees, when
// the debate stops and which answer it extracts. The expected numbers come
// from the fact sheets' formulas, not from a run.

// protocolRun is what a run of a protocol sent and gave.
type protocolRun struct {
	res *result.Result
	// reqs are the requests by call key; order the keys as they arrived.
	reqs  map[string]llmtest.Request
	order []string
}

// runProtocol runs protocols/NAME with the given inputs and --set flags;
// reply scripts the model by call key.
func runProtocol(t *testing.T, name string, inputs, sets []string, reply func(key string, r llmtest.Request) string) protocolRun {
	t.Helper()
	plan := load(t, "protocols/"+name)
	var mu sync.Mutex
	out := protocolRun{reqs: map[string]llmtest.Request{}}
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		key := r.Header.Get("X-Call-Key")
		mu.Lock()
		out.reqs[key] = r
		out.order = append(out.order, key)
		mu.Unlock()
		return llmtest.Reply{Content: reply(key, r)}
	})
	seed := int64(3)
	run, err := runtime.Start(plan, runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: inputs, Sets: sets, Seed: &seed}},
		Settings: runtime.Settings{RunsDir: filepath.Join(t.TempDir(), "runs"), Getenv: runtest.Env(srv.URL, "sk-test")},
		Seams:    runtime.Seams{Sleep: runtest.NoSleep, HTTPClient: &http.Client{Transport: keyHeader{http.DefaultTransport}}},
	})
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	res, err := run.Execute(context.Background())
	if err != nil {
		t.Fatalf("running %s: %v", name, err)
	}
	if res.Status != result.StatusCompleted {
		t.Fatalf("%s: status %s (%s)", name, res.Status, res.Error)
	}
	out.res = res
	return out
}

// roles is a request's message roles, space-separated.
func roles(r llmtest.Request) string {
	var rs []string
	for _, m := range r.Messages {
		rs = append(rs, m.Role)
	}
	return strings.Join(rs, " ")
}

// req returns the request of a call key, failing the test without it.
func (p protocolRun) req(t *testing.T, key string) llmtest.Request {
	t.Helper()
	r, ok := p.reqs[key]
	if !ok {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range p.reqs {
				if !yield(k) {
					return
				}
			}
		})
		t.Fatalf("no call %s; calls: %s", key, strings.Join(keys, ", "))
	}
	return r
}

// wantRoles checks the roles of several calls' requests.
func (p protocolRun) wantRoles(t *testing.T, want map[string]string) {
	t.Helper()
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}) {
		if got := roles(p.req(t, key)); got != want[key] {
			t.Errorf("%s: roles %q, want %q", key, got, want[key])
		}
	}
}

// wantCalls checks the number of calls.
func (p protocolRun) wantCalls(t *testing.T, n int) {
	t.Helper()
	if len(p.order) != n {
		t.Errorf("%d calls, want %d: %s", len(p.order), n, strings.Join(p.order, ", "))
	}
}

// wantOutput checks an output's value (as printed).
func (p protocolRun) wantOutput(t *testing.T, name, want string) {
	t.Helper()
	if got := fmt.Sprint(p.res.Outputs[name]); got != want {
		t.Errorf("output %s = %s, want %s", name, got, want)
	}
}

// sees checks that a message of a request contains each of texts (or, for
// a text starting with "!", does not contain the rest).
func sees(t *testing.T, what string, content string, texts ...string) {
	t.Helper()
	for _, x := range texts {
		if not, ok := strings.CutPrefix(x, "!"); ok {
			if strings.Contains(content, not) {
				t.Errorf("%s shows %q, which it must not:\n%s", what, not, content)
			}
		} else if !strings.Contains(content, x) {
			t.Errorf("%s does not show %q:\n%s", what, x, content)
		}
	}
}

// prefixOf checks that the earlier request's messages start the later one
// (a thread only appends).
func prefixOf(t *testing.T, earlier, later llmtest.Request) {
	t.Helper()
	if len(earlier.Messages) >= len(later.Messages) {
		t.Errorf("the later request has %d messages, the earlier %d", len(later.Messages), len(earlier.Messages))
		return
	}
	for i, m := range earlier.Messages {
		if l := later.Messages[i]; l.Role != m.Role || l.Content != m.Content {
			t.Errorf("message %d differs: the later request is not the earlier one continued", i)
		}
	}
}

// agentOf is the agent of a call key (node/scope/agent[~sample][#repairN]).
func agentOf(key string) string {
	a := key[strings.LastIndex(key, "/")+1:]
	a, _, _ = strings.Cut(a, "#")
	a, _, _ = strings.Cut(a, "~")
	return a
}

// roundOf is the round of a call key, 0 outside a loop.
func roundOf(key string) int {
	var n int
	if i := strings.Index(key, "round="); i >= 0 {
		_, _ = fmt.Sscanf(key[i:], "round=%d", &n)
	}
	return n
}

var (
	mcqInputs = []string{"question=Which planet of the solar system has the shortest year?", "options=Venus\nMercury\nMars\nEarth"}
	// pairInputs is a ChatEval case: the first answer is the better one.
	pairInputs = []string{"question=How do I keep cut basil fresh?", "answer1=Stems in water at room temperature.", "answer2=Keep it in the fridge."}
)

func TestProtocolDuSocietyOfMinds(t *testing.T) {
	// Round 1: 10, 12, 12; round 2: 12, 12 and a reply with no number,
	// which does not vote.
	answers := map[string]string{
		"answer/round=1/debater_1": "Step by step, I get\n10", "answer/round=1/debater_2": "So the result is 12",
		"answer/round=1/debater_3": "12.", "answer/round=2/debater_1": "After checking: 12",
		"answer/round=2/debater_2": "Still 12", "answer/round=2/debater_3": "I cannot tell.",
	}
	p := runProtocol(t, "du-society-of-minds", []string{"question=What is the result of 1+2*3+4-5*6?"}, nil,
		func(key string, _ llmtest.Request) string { return answers[key] })
	p.wantCalls(t, 3*2) // N x R
	p.wantOutput(t, "answer", "12")
	p.wantOutput(t, "answers", "[12 12 ]")
	for _, a := range []string{"debater_1", "debater_2", "debater_3"} {
		r1, r2 := p.req(t, "answer/round=1/"+a), p.req(t, "answer/round=2/"+a)
		// No system message; round 2 resends the agent's chat as turns.
		if roles(r1) != "user" || roles(r2) != "user assistant user" {
			t.Errorf("%s: roles %q then %q, want \"user\" then \"user assistant user\"", a, roles(r1), roles(r2))
			continue
		}
		prefixOf(t, r1, r2)
		if r2.Messages[1].Content != answers["answer/round=1/"+a] {
			t.Errorf("%s: round 2's assistant turn is %q, not its round-1 answer", a, r2.Messages[1].Content)
		}
		// The update turn lists the others' round-1 answers, not its own.
		var want []string
		for _, b := range []string{"debater_1", "debater_2", "debater_3"} {
			if b == a {
				want = append(want, "!"+answers["answer/round=1/"+b])
			} else {
				want = append(want, answers["answer/round=1/"+b])
			}
		}
		sees(t, a+"'s round-2 turn", r2.LastUser(), want...)
	}
}

func TestProtocolDuSingleAgent(t *testing.T) {
	// N = 1: the update turn asks the agent to check its own answer.
	p := runProtocol(t, "du-society-of-minds", []string{"question=What is the result of 1+2*3+4-5*6?"}, []string{"agents=1"},
		func(key string, _ llmtest.Request) string { return "-19" })
	p.wantCalls(t, 1*2)
	p.wantRoles(t, map[string]string{"answer/round=1/debater_1": "user", "answer/round=2/debater_1": "user assistant user"})
	sees(t, "the reflection turn", p.req(t, "answer/round=2/debater_1").LastUser(), "Check your answer")
	p.wantOutput(t, "answer", "-19")
}

func TestProtocolGoogleMAD(t *testing.T) {
	letters := map[string]string{
		"answer/round=1/debater_1": "A", "answer/round=1/debater_2": "B", "answer/round=1/debater_3": "C",
		"answer/round=2/debater_1": "B", "answer/round=2/debater_2": "C", "answer/round=2/debater_3": "B",
	}
	reply := func(key string, _ llmtest.Request) string {
		return "reply " + key + ". I choose " + letters[key]
	}
	p := runProtocol(t, "debatellm-google-mad", mcqInputs, nil, reply)
	p.wantCalls(t, 3*2) // N x R
	// One after another, in agent order, round after round.
	want := []string{"answer/round=1/debater_1", "answer/round=1/debater_2", "answer/round=1/debater_3",
		"answer/round=2/debater_1", "answer/round=2/debater_2", "answer/round=2/debater_3"}
	if !slices.Equal(p.order, want) {
		t.Errorf("calls arrived as %v, want %v", p.order, want)
	}
	for _, k := range want {
		if roles(p.req(t, k)) != "user" {
			t.Errorf("%s: roles %q, want one user message and no system message", k, roles(p.req(t, k)))
		}
	}
	sees(t, "round 1", p.req(t, want[0]).LastUser(), "Which planet", "B. Mercury", "!reply")
	// Agent 2 in round 2 sees agent 1's round-2 answer, agent 3's round-1
	// answer, and its own round-1 answer.
	sees(t, "debater_2 in round 2", p.req(t, want[4]).LastUser(),
		"Which planet", "reply answer/round=2/debater_1.", "reply answer/round=1/debater_3.", "reply answer/round=1/debater_2.",
		"!reply answer/round=1/debater_1.")
	p.wantOutput(t, "answer", "B")

	// With summaries: one more call after every round but the last, and
	// the next round shows the summary instead of the answers.
	s := runProtocol(t, "debatellm-google-mad", mcqInputs, []string{"summarize=true"}, func(key string, r llmtest.Request) string {
		if strings.HasPrefix(key, "summary/") {
			return "SUMMARY: most agents lean to B."
		}
		return reply(key, r)
	})
	s.wantCalls(t, 3*2+(2-1))
	s.wantRoles(t, map[string]string{"summary/round=1/debater_1": "user"})
	sees(t, "the summary request", s.req(t, "summary/round=1/debater_1").LastUser(),
		"reply answer/round=1/debater_1.", "reply answer/round=1/debater_2.", "reply answer/round=1/debater_3.")
	sees(t, "debater_2 in round 2 with a summary", s.req(t, "answer/round=2/debater_2").LastUser(),
		"SUMMARY: most agents lean to B.", "!reply answer/round=1/debater_2.", "!reply answer/round=2/debater_1.")
	if i, j := slices.Index(s.order, "summary/round=1/debater_1"), slices.Index(s.order, "answer/round=2/debater_1"); i < 0 || i > j {
		t.Errorf("the summary was not asked between the rounds: %v", s.order)
	}
}

func TestProtocolTsinghuaMAD(t *testing.T) {
	debater := func(key string) string { return "argument " + key + ": it is B" }
	t.Run("decided in round 1", func(t *testing.T) {
		p := runProtocol(t, "debatellm-tsinghua-mad", mcqInputs, nil, func(key string, _ llmtest.Request) string {
			if agentOf(key) == "judge" {
				return `{"preference": "yes", "supported_side": "Affirmative side", "reason": "orbit", "debate_answer": "B"}`
			}
			return debater(key)
		})
		p.wantCalls(t, 3) // 3r with r = 1
		p.wantRoles(t, map[string]string{
			"angel/round=1/angel": "user", // the debate's first call has no system message
			"devil/round=1/devil": "system user",
			"judge/round=1/judge": "system user",
		})
		sees(t, "the devil in round 1", p.req(t, "devil/round=1/devil").LastUser(), debater("angel/round=1/angel"), "Argue against")
		sees(t, "the judge in round 1", p.req(t, "judge/round=1/judge").LastUser(),
			"Affirmative side arguing: "+debater("angel/round=1/angel"), "Negative side arguing: "+debater("devil/round=1/devil"), `"debate_answer"`)
		p.wantOutput(t, "answer", "B")
	})
	t.Run("undecided", func(t *testing.T) {
		p := runProtocol(t, "debatellm-tsinghua-mad", mcqInputs, nil, func(key string, _ llmtest.Request) string {
			switch {
			case strings.HasPrefix(key, "judge_final/"):
				return `{"reason": "Mercury is closest to the Sun", "debate_answer": "B"}`
			case agentOf(key) == "judge":
				return fmt.Sprintf(`{"preference": "no", "supported_side": "", "reason": "verdict %d", "debate_answer": ""}`, roundOf(key))
			}
			return debater(key)
		})
		p.wantCalls(t, 3*3+1) // 3R + 1
		p.wantRoles(t, map[string]string{
			// Own replies as assistant turns, the opponent's as user turns
			// (the instruction merged into the last), the judge's left out;
			// the angel's chat opens with an empty user turn.
			"angel/round=2/angel":      "system user assistant user",
			"angel/round=3/angel":      "system user assistant user assistant user",
			"devil/round=2/devil":      "system user assistant user",
			"devil/round=3/devil":      "system user assistant user assistant user",
			"judge/round=2/judge":      "system user assistant user",
			"judge_last/round=3/judge": "system user assistant user assistant user",
			// The last verdict is dropped before the forced one.
			"judge_final/-/judge": "system user assistant user assistant user",
		})
		// The turns as sent, named as the original names them: "user" on
		// user turns, the author on assistant turns.
		for key, want := range map[string]string{
			"angel/round=1/angel":      "user:user",
			"angel/round=3/angel":      "system: user:user assistant:angel user:user assistant:angel user:user",
			"devil/round=3/devil":      "system: user:user assistant:devil user:user assistant:devil user:user",
			"judge_last/round=3/judge": "system: user:user assistant:judge user:user assistant:judge user:user",
		} {
			var got []string
			for _, m := range p.req(t, key).Messages {
				got = append(got, m.Role+":"+m.Name)
			}
			if strings.Join(got, " ") != want {
				t.Errorf("%s: turns %q, want %q", key, strings.Join(got, " "), want)
			}
		}
		a3 := p.req(t, "angel/round=3/angel")
		if a3.Messages[1].Content != "" || a3.Messages[2].Content != debater("angel/round=1/angel") || a3.Messages[4].Content != debater("angel/round=2/angel") {
			t.Errorf("the angel's chat does not open with an empty user turn before its own replies: %+v", a3.Messages)
		}
		sees(t, "the angel's round-3 request", strings.Join([]string{a3.Messages[3].Content, a3.Messages[5].Content}, "\n"),
			debater("devil/round=1/devil"), debater("devil/round=2/devil"), "Do you accept", "!verdict")
		f := p.req(t, "judge_final/-/judge")
		if f.Messages[4].Content != `{"preference": "no", "supported_side": "", "reason": "verdict 2", "debate_answer": ""}` {
			t.Errorf("the forced verdict's last assistant turn is %q, want the round-2 verdict", f.Messages[4].Content)
		}
		sees(t, "the forced verdict's last turn", f.LastUser(),
			"Affirmative side arguing: "+debater("angel/round=3/angel"), "Negative side arguing: "+debater("devil/round=3/devil"), "must decide now", "!verdict 3")
		p.wantOutput(t, "answer", "B")
	})
}

func TestProtocolDebateLLMChatEval(t *testing.T) {
	letter := map[string]string{"Agent_0": "C", "Agent_1": "B"}
	reply := func(key string, _ llmtest.Request) string {
		if agentOf(key) == "Summarizer" {
			return "summary " + key
		}
		return "reply " + key + ": " + letter[agentOf(key)]
	}
	// named checks that a turn is an assistant turn named after its speaker
	// holding the reply as it was.
	named := func(t *testing.T, r llmtest.Request, i int, name, key string) {
		t.Helper()
		m := r.Messages[i]
		if m.Role != "assistant" || m.Name != name || m.Content != reply(key, r) {
			t.Errorf("turn %d is %s named %q: %q; want assistant %q: %q", i, m.Role, m.Name, m.Content, name, reply(key, r))
		}
	}
	t.Run("one_by_one", func(t *testing.T) {
		p := runProtocol(t, "debatellm-chateval", mcqInputs, nil, reply)
		p.wantCalls(t, 2*3) // N x R
		p.wantRoles(t, map[string]string{
			"one_by_one/round=1/Agent_0": "system user",
			"one_by_one/round=1/Agent_1": "system assistant user",
			"one_by_one/round=2/Agent_0": "system assistant assistant user",
			"one_by_one/round=3/Agent_1": "system assistant assistant assistant assistant assistant user",
		})
		r := p.req(t, "one_by_one/round=1/Agent_1")
		named(t, r, 1, "Agent_0", "one_by_one/round=1/Agent_0")
		sees(t, "the question turn", r.LastUser(), "Which planet", "B. Mercury")
		named(t, p.req(t, "one_by_one/round=2/Agent_0"), 1, "Agent_0", "one_by_one/round=1/Agent_0") // its own, named too
		// Ties go to the first agent in the last round's order.
		p.wantOutput(t, "answer", "C")
	})
	t.Run("simultaneous_talk", func(t *testing.T) {
		p := runProtocol(t, "debatellm-chateval", mcqInputs, []string{"setting=simultaneous_talk"}, reply)
		p.wantCalls(t, 2*3)
		p.wantRoles(t, map[string]string{
			"simultaneous/round=1/Agent_1": "system user", // not Agent_0's reply of the same round
			"simultaneous/round=2/Agent_0": "system assistant assistant user",
			"simultaneous/round=3/Agent_1": "system assistant assistant assistant assistant user",
		})
		named(t, p.req(t, "simultaneous/round=2/Agent_0"), 2, "Agent_1", "simultaneous/round=1/Agent_1")
	})
	t.Run("simultaneous_talk_with_summarizer", func(t *testing.T) {
		p := runProtocol(t, "debatellm-chateval", mcqInputs, []string{"setting=simultaneous_talk_with_summarizer"}, reply)
		p.wantCalls(t, 2*3+(3-1))
		p.wantRoles(t, map[string]string{
			"with_summary/round=1/Agent_0": "system user",
			"with_summary/round=2/Agent_0": "system assistant user", // only the latest summary
			"with_summary/round=3/Agent_1": "system assistant user",
			"summarize/round=1/Summarizer": "system assistant assistant user",
			"summarize/round=2/Summarizer": "system assistant assistant assistant user", // its summary + the round's answers
		})
		named(t, p.req(t, "with_summary/round=3/Agent_1"), 1, "Summarizer", "summarize/round=2/Summarizer")
		s2 := p.req(t, "summarize/round=2/Summarizer")
		named(t, s2, 1, "Summarizer", "summarize/round=1/Summarizer")
		named(t, s2, 2, "Agent_0", "with_summary/round=2/Agent_0")
		named(t, s2, 3, "Agent_1", "with_summary/round=2/Agent_1")
	})
}

// TestProtocolDebateLLMRoundRobin: strict turns, each call showing every
// earlier reply of the debate, the same round's included, as assistant
// turns named by their speakers, then the question.
func TestProtocolDebateLLMRoundRobin(t *testing.T) {
	p := runProtocol(t, "debatellm-round-robin", mcqInputs, []string{"agents=3"}, func(key string, _ llmtest.Request) string {
		return "reply " + key + ": B"
	})
	want := []string{"answer/round=1/debater_1", "answer/round=1/debater_2", "answer/round=1/debater_3", "answer/round=2/debater_1", "answer/round=2/debater_2", "answer/round=2/debater_3"}
	if fmt.Sprint(p.order) != fmt.Sprint(want) {
		t.Errorf("calls %v, want %v (N·R in turn)", p.order, want)
	}
	for i, key := range want {
		var got, exp []string
		for _, m := range p.req(t, key).Messages {
			got = append(got, m.Role+":"+m.Name)
		}
		exp = append(exp, "system:")
		for _, earlier := range want[:i] {
			exp = append(exp, "assistant:"+agentOf(earlier))
		}
		exp = append(exp, "user:")
		if strings.Join(got, " ") != strings.Join(exp, " ") {
			t.Errorf("%s: turns %q, want %q", key, strings.Join(got, " "), strings.Join(exp, " "))
		}
		for j, earlier := range want[:i] {
			if c := p.req(t, key).Messages[1+j].Content; c != "reply "+earlier+": B" {
				t.Errorf("%s: turn %d is %q, want the reply of %s", key, j+1, c, earlier)
			}
		}
	}
	p.wantOutput(t, "answer", "B")
}

func TestProtocolEnsembleRefinement(t *testing.T) {
	reply := func(key string, _ llmtest.Request) string {
		switch key {
		case "reason/-/Reasoning_1":
			return "facts... so A"
		case "aggregate/-/er":
			return "weighing them, B"
		}
		return "reasoning " + key + " gives B"
	}
	p := runProtocol(t, "ensemble-refinement", mcqInputs, nil, reply)
	p.wantCalls(t, 3+1) // K + M
	p.wantRoles(t, map[string]string{
		"reason/-/Reasoning_1": "system user", "reason/-/Reasoning_2": "system user", "reason/-/Reasoning_3": "system user",
		"aggregate/-/er": "system assistant assistant assistant user",
	})
	agg := p.req(t, "aggregate/-/er")
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("Reasoning_%d", i)
		if m := agg.Messages[i]; m.Name != name || m.Content != reply("reason/-/"+name, agg) {
			t.Errorf("aggregation turn %d is %q: %q, want %q: %q", i, m.Name, m.Content, name, reply("reason/-/"+name, agg))
		}
	}
	if r, a := p.req(t, "reason/-/Reasoning_1").Temperature, agg.Temperature; r == nil || a == nil || *r != 0.7 || *a != 0.5 {
		t.Errorf("temperatures %v and %v, want 0.7 for reasoning and 0.5 for aggregation", r, a)
	}
	p.wantOutput(t, "answer", "B")

	// Self-consistency (M = 0): the vote of the K reasonings; few-shot
	// pairs go after the system prompt of the reasoning calls.
	sc := runProtocol(t, "ensemble-refinement", append(slices.Clone(mcqInputs), `examples=[{"user": "2+2?", "assistant": "4"}]`), []string{"k=5", "m=0"}, reply)
	sc.wantCalls(t, 5+0)
	sc.wantRoles(t, map[string]string{"reason/-/Reasoning_1": "system user assistant user", "reason/-/Reasoning_5": "system user assistant user"})
	sc.wantOutput(t, "answer", "B")
}

func TestProtocolMedprompt(t *testing.T) {
	option := regexp.MustCompile(`(?m)^([A-D])\. Mercury$`)
	orders := map[string]bool{}
	p := runProtocol(t, "medprompt", mcqInputs, nil, func(key string, r llmtest.Request) string {
		// Each call answers with the letter Mercury has in its own order.
		m := option.FindStringSubmatch(r.LastUser())
		if m == nil {
			return "no options"
		}
		return "Reasoning ... the answer is " + m[1]
	})
	p.wantCalls(t, 5) // K
	for _, k := range []string{"answer/-/solver", "answer/-/solver~2", "answer/-/solver~3", "answer/-/solver~4", "answer/-/solver~5"} {
		r := p.req(t, k)
		if roles(r) != "system user" {
			t.Errorf("%s: roles %q, want \"system user\"", k, roles(r))
		}
		var shown []string
		for _, line := range strings.Split(r.LastUser(), "\n") {
			if len(line) > 3 && line[1] == '.' && line[0] >= 'A' && line[0] <= 'D' {
				shown = append(shown, line[3:])
			}
		}
		if sorted := slices.Sorted(slices.Values(shown)); !slices.Equal(sorted, []string{"Earth", "Mars", "Mercury", "Venus"}) {
			t.Errorf("%s shows the options %v, not the four options once each", k, shown)
		}
		orders[strings.Join(shown, ",")] = true
	}
	if len(orders) < 2 {
		t.Errorf("every call showed the options in the same order: %v", orders)
	}
	// Every letter maps back to Mercury's original label.
	p.wantOutput(t, "answers", "[B B B B B]")
	p.wantOutput(t, "answer", "B")
}

func TestProtocolSPPAndSingleAgent(t *testing.T) {
	spp := runProtocol(t, "spp", mcqInputs, nil, func(string, llmtest.Request) string {
		return "Participants: AI Assistant; Astronomer\nAstronomer: A is wrong.\nFinal answer: B"
	})
	spp.wantCalls(t, 1)
	spp.wantRoles(t, map[string]string{"answer/-/solver": "user"})
	sees(t, "the SPP prompt", spp.req(t, "answer/-/solver").LastUser(), "Final answer:", "Which planet", "D. Earth")
	spp.wantOutput(t, "answer", "B")

	// The first capital letter (not the last) of the direct prompt's reply.
	single := runProtocol(t, "single-agent", mcqInputs, nil, func(string, llmtest.Request) string { return "B. Mercury, not A." })
	single.wantCalls(t, 1)
	single.wantRoles(t, map[string]string{"answer/-/solver": "user"})
	single.wantOutput(t, "answer", "B")
	fs := runProtocol(t, "single-agent", append(slices.Clone(mcqInputs), `examples=[{"user": "Q1", "assistant": "A"}, {"user": "Q2", "assistant": "C"}]`), nil,
		func(string, llmtest.Request) string { return "B" })
	fs.wantRoles(t, map[string]string{"answer/-/solver": "user assistant user assistant user"})
}

func TestProtocolMAD(t *testing.T) {
	arg := func(key string) string { return "argument " + key }
	t.Run("undecided", func(t *testing.T) {
		p := runProtocol(t, "mad", mcqInputs, nil, func(key string, _ llmtest.Request) string {
			switch {
			case strings.HasPrefix(key, "moderate/"):
				return fmt.Sprintf(`{"whether there is a preference": "No", "supported side": "", "reason": "round %d", "debate_answer": ""}`, roundOf(key))
			case strings.HasPrefix(key, "judge_candidates/"):
				return "Candidates: A, B"
			case strings.HasPrefix(key, "judge_final/"):
				return `{"Reason": "shortest orbit", "debate_answer": "B"}`
			}
			return arg(key)
		})
		p.wantCalls(t, 3*3+2) // 3 per round, + 2 judge calls
		// Every player's own chat: system, then its earlier turns.
		p.wantRoles(t, map[string]string{
			"aff/round=1/aff": "system user", "aff/round=2/aff": "system user assistant user",
			"aff/round=3/aff": "system user assistant user assistant user",
			"neg/round=1/neg": "system user", "neg/round=3/neg": "system user assistant user assistant user",
			"moderate/round=1/moderator": "system user", "moderate/round=3/moderator": "system user assistant user assistant user",
			"judge_candidates/-/judge": "system user", "judge_final/-/judge": "system user assistant user",
		})
		for _, player := range []string{"aff/round=%d/aff", "neg/round=%d/neg", "moderate/round=%d/moderator"} {
			prefixOf(t, p.req(t, fmt.Sprintf(player, 1)), p.req(t, fmt.Sprintf(player, 2)))
			prefixOf(t, p.req(t, fmt.Sprintf(player, 2)), p.req(t, fmt.Sprintf(player, 3)))
		}
		sees(t, "the affirmative's first turn", p.req(t, "aff/round=1/aff").LastUser(), "Which planet", "B. Mercury")
		sees(t, "the negative's first turn", p.req(t, "neg/round=1/neg").LastUser(), arg("aff/round=1/aff"), "You disagree")
		sees(t, "the affirmative's round-2 turn", p.req(t, "aff/round=2/aff").LastUser(), arg("neg/round=1/neg"), "Do you agree")
		sees(t, "the negative's round-2 turn", p.req(t, "neg/round=2/neg").LastUser(), arg("aff/round=2/aff"), "Do you agree")
		sees(t, "the moderator's round-2 turn", p.req(t, "moderate/round=2/moderator").LastUser(),
			arg("aff/round=2/aff"), arg("neg/round=2/neg"), "!"+arg("aff/round=1/aff"))
		// The judge: first-round answers only, then the same chat continued.
		sees(t, "the judge's first call", p.req(t, "judge_candidates/-/judge").LastUser(),
			arg("aff/round=1/aff"), arg("neg/round=1/neg"), "!round=2", "candidate answers")
		f := p.req(t, "judge_final/-/judge")
		prefixOf(t, p.req(t, "judge_candidates/-/judge"), f)
		if f.Messages[2].Content != "Candidates: A, B" {
			t.Errorf("the judge's second call does not carry its first reply: %+v", f.Messages)
		}
		p.wantOutput(t, "answer", "B")
	})
	t.Run("decided in round 1", func(t *testing.T) {
		p := runProtocol(t, "mad", mcqInputs, nil, func(key string, _ llmtest.Request) string {
			if strings.HasPrefix(key, "moderate/") {
				return `{"whether there is a preference": "Yes", "supported side": "Negative", "reason": "orbit", "debate_answer": "B"}`
			}
			return arg(key)
		})
		p.wantCalls(t, 3)
		p.wantOutput(t, "answer", "B")
	})
}

// chatevalScores are each referee's final scores (answer shown first,
// answer shown second) per order: the first answer scores 8+7 forward and
// 9+8 reversed, the second 6+7 and 5+6.
var chatevalScores = map[string]string{
	"final/goal=forward/round=2/public": "8\n6", "final/goal=forward/round=2/critic": "7\n7",
	"final/goal=reverse/round=2/public": "5\n9", "final/goal=reverse/round=2/critic": "6\n8",
}

// chatevalReply answers a ChatEval call: discussion, then the scores in
// the last round; the critic's first forward verdict has none, and is sent
// again.
func chatevalReply(key string, _ llmtest.Request) string {
	if agentOf(key) == "summarizer" {
		return "summary " + key
	}
	if key == "final/goal=forward/round=2/critic" {
		return "I need to think more."
	}
	base := strings.TrimSuffix(key, "#repair1")
	if s, ok := chatevalScores[base]; ok {
		return "reply " + key + ": my final view.\n" + s
	}
	return "reply " + key
}

func TestProtocolChatEval(t *testing.T) {
	for _, tc := range []struct {
		name string
		// calls: N x R x 2 orders (+ summaries), + 1 re-send.
		calls int
		roles map[string]string
		// summarizer: the summary call of round 2 (forward).
		summarizer bool
	}{
		{"chateval-one-by-one", 2*2*2 + 1, map[string]string{
			"talk/goal=forward/round=1/public":  "user user",
			"talk/goal=forward/round=1/critic":  "user assistant user", // sees the public's turn of the round
			"final/goal=forward/round=2/public": "user assistant assistant user",
			"final/goal=forward/round=2/critic": "user assistant assistant assistant user",
			"talk/goal=reverse/round=1/public":  "user user", // a new case: the forward discussion is not carried
		}, false},
		{"chateval-simultaneous", 2*2*2 + 1, map[string]string{
			"talk/goal=forward/round=1/public":  "user user",
			"talk/goal=forward/round=1/critic":  "user user", // both speak at once
			"final/goal=forward/round=2/public": "user assistant assistant user",
			"final/goal=forward/round=2/critic": "user assistant assistant user",
			"talk/goal=reverse/round=1/critic":  "user user",
		}, false},
		{"chateval-summarizer", (2*2+(2-1))*2 + 1, map[string]string{
			"talk/goal=forward/round=1/public":          "user user",
			"summarize/goal=forward/round=2/summarizer": "user",
			"final/goal=forward/round=2/public":         "user assistant assistant assistant user", // two turns and the summary
			"final/goal=reverse/round=2/critic":         "user assistant assistant assistant user",
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := runProtocol(t, tc.name, pairInputs, nil, chatevalReply)
			p.wantCalls(t, tc.calls)
			p.wantRoles(t, tc.roles)
			// The last round's instruction is in the prompt and again in the
			// trailing turn; before it the trailing turn is empty.
			talk := p.req(t, "talk/goal=forward/round=1/public")
			if last := talk.Messages[len(talk.Messages)-1]; last.Content != "" {
				t.Errorf("the trailing turn before the last round is %q, want empty", last.Content)
			}
			final := p.req(t, "final/goal=forward/round=2/public")
			if n := strings.Count(requestTextOfLL(final), "Now give your final evaluation."); n != 2 {
				t.Errorf("the final instruction appears %d times in the last round's request, want 2", n)
			}
			sees(t, "a named memory turn", final.Messages[1].Content, "General Public: reply talk/goal=forward/round=1/public")
			// The answers change places in the reverse order.
			fwd, rev := talk.Messages[0].Content, p.req(t, "talk/goal=reverse/round=1/public").Messages[0].Content
			if !(strings.Index(fwd, "Stems in water") < strings.Index(fwd, "fridge")) || !(strings.Index(rev, "fridge") < strings.Index(rev, "Stems in water")) {
				t.Errorf("the answer order is not swapped between the goals:\n%s\n---\n%s", fwd, rev)
			}
			// A final reply without its scores is sent again as it was.
			first, again := p.req(t, "final/goal=forward/round=2/critic"), p.req(t, "final/goal=forward/round=2/critic#repair1")
			if requestTextOfLL(first) != requestTextOfLL(again) {
				t.Errorf("the re-sent request differs from the first:\n%s\n---\n%s", requestTextOfLL(first), requestTextOfLL(again))
			}
			if tc.summarizer {
				sees(t, "the summary request", p.req(t, "summarize/goal=forward/round=2/summarizer").LastUser(),
					"[General Public] : reply talk/goal=forward/round=1/public", "[Critic] : reply talk/goal=forward/round=1/critic", "!goal=reverse")
				sees(t, "the summary in the memory", final.Messages[3].Content, "Summarizer: summary summarize/goal=forward/round=2/summarizer")
			}
			p.wantOutput(t, "answer1_total", "32")
			p.wantOutput(t, "answer2_total", "24")
			p.wantOutput(t, "winner", "1")
		})
	}
}

// requestTextOfLL is a scripted server's request as one text.
func requestTextOfLL(r llmtest.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, m.Content)
	}
	return b.String()
}

// TestProtocolCallCounts: each protocol's dry run (the worst case) makes
// the number of calls its fact sheet's formula gives at its defaults, and
// at other settings of its vars.
func TestProtocolCallCounts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sets    []string
		formula string
		calls   int
	}{
		{"du-society-of-minds", nil, "N·R = 3·2", 3 * 2},
		{"du-society-of-minds", []string{"agents=4", "rounds=3"}, "N·R = 4·3", 4 * 3},
		{"debatellm-google-mad", nil, "N·R = 3·2", 3 * 2},
		{"debatellm-google-mad", []string{"summarize=true"}, "N·R + (R−1)", 3*2 + 1},
		{"debatellm-google-mad", []string{"agents=4", "rounds=3", "summarize=true"}, "N·R + (R−1)", 4*3 + 2},
		{"debatellm-tsinghua-mad", nil, "3R + 1", 3*3 + 1},
		{"debatellm-chateval", nil, "N·R", 2 * 3},
		{"debatellm-chateval", []string{"setting=simultaneous_talk"}, "N·R", 2 * 3},
		{"debatellm-chateval", []string{"setting=simultaneous_talk_with_summarizer"}, "N·R + (R−1)", 2*3 + 2},
		{"debatellm-round-robin", nil, "N·R = 2·2", 2 * 2},
		{"debatellm-round-robin", []string{"agents=3", "rounds=3"}, "N·R = 3·3", 3 * 3},
		{"ensemble-refinement", nil, "K + M = 3 + 1", 3 + 1},
		{"ensemble-refinement", []string{"m=9"}, "K + M = 3 + 9", 3 + 9},
		{"ensemble-refinement", []string{"k=5", "m=0"}, "K + M = 5 + 0", 5},
		{"medprompt", nil, "K", 5},
		{"spp", nil, "1", 1},
		{"single-agent", nil, "1", 1},
		{"mad", nil, "3R + 2", 3*3 + 2},
		{"chateval-one-by-one", nil, "N·R·2", 2 * 2 * 2},
		{"chateval-simultaneous", nil, "N·R·2", 2 * 2 * 2},
		{"chateval-summarizer", nil, "(N·R + (R−1))·2", (2*2 + 1) * 2},
		{"mixture-of-agents", nil, "N·(L−1) + 1 = 6·2 + 1", 6*2 + 1},
		{"mixture-of-agents", []string{"panel=mixed", "layers=4"}, "N·(L−1) + 1 = 3·3 + 1", 3*3 + 1},
		{"sparse-debate", nil, "N·R = 6·3", 6 * 3},
		{"poll-jury", nil, "N = 3", 3},
		{"reconcile", nil, "N·(1+D) = 3·4", 3 * 4},
		{"reconcile", []string{"agents=a,b,c,d,e", "rounds=1"}, "N·(1+D) = 5·2", 5 * 2},
		{"poll-jury", []string{"jury=a,b,c,d,e"}, "N = 5", 5},
		{"tree-of-thought", nil, "(K+1)·(1 + B·(T−1)) = 4·(1 + 2·2)", 4 * (1 + 2*2)},
		{"tree-of-thought", []string{"thinkers=5", "breadth=3", "steps=4"}, "(K+1)·(1 + B·(T−1)) = 6·(1 + 3·3)", 6 * (1 + 3*3)},
		{"sparse-debate", []string{"models=a,b,c,d", "rounds=2"}, "N·R = 4·2", 4 * 2},
		{"sparse-debate", []string{"topology=complete"}, "N·R = 6·3", 6 * 3},
		{"selector-group-chat", nil, "2·T = 2·8 (a selection and a turn)", 2 * 8},
		{"exchange-of-thought", nil, "N·R = 3·3", 3 * 3},
		{"exchange-of-thought", []string{"paradigm=debate", "rounds=5"}, "N·R = 3·5", 3 * 5},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.name, tc.sets), func(t *testing.T) {
			plan := load(t, "protocols/"+tc.name)
			inputs := mcqInputs
			switch {
			case strings.HasPrefix(tc.name, "du-") || tc.name == "sparse-debate" || tc.name == "exchange-of-thought":
				inputs = []string{"question=What is the result of 1+2*3+4-5*6?"}
			case strings.HasPrefix(tc.name, "chateval-"):
				inputs = pairInputs
			case tc.name == "poll-jury":
				inputs = []string{"question=Which planet has the shortest year?", "reference=Mercury", "answer=Venus."}
			case tc.name == "selector-group-chat":
				inputs = []string{"task=Plan a day in Lisbon."}
			case tc.name == "tree-of-thought":
				inputs = []string{"problem=Use 4, 9, 10 and 13 to make 24."}
			case tc.name == "mixture-of-agents":
				inputs = []string{"question=Name a prime above 10."}
			}
			rep, err := dryrun.Run(plan, dryrun.Options{Given: launch.Given{Inputs: inputs, Sets: tc.sets}})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Calls != tc.calls {
				t.Errorf("the dry run plans %d calls, the fact sheet's %s gives %d", rep.Calls, tc.formula, tc.calls)
			}
		})
	}
}

// TestProtocolDatasetAgainstBaseline: du-society-of-minds and its
// single-agent baseline each run over the shipped arithmetic dataset as
// one command, scored. The scripted model gets the first answer right only
// for even results and is always right once it has seen other answers, so
// the debate must score 1 and the baseline the share of even results.
func TestProtocolDatasetAgainstBaseline(t *testing.T) {
	bin := runnerBinary(t)
	problem := regexp.MustCompile(`What is the result of (\d+)\+(\d+)\*(\d+)\+(\d+)-(\d+)\*(\d+)\?`)
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		m := problem.FindStringSubmatch(r.Messages[0].Content)
		if m == nil {
			return llmtest.Reply{Status: 400, ErrorMessage: "no problem in the first message"}
		}
		var n [6]int
		for i := range n {
			_, _ = fmt.Sscan(m[i+1], &n[i])
		}
		result := n[0] + n[1]*n[2] + n[3] - n[4]*n[5]
		if len(r.Messages) == 1 && result%2 != 0 {
			result++ // a first answer of an odd result is off by one
		}
		return llmtest.Reply{Content: fmt.Sprintf("Working it out step by step.\n%d", result)}
	})
	data, err := os.ReadFile("protocols/data/arithmetic.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	even := 0
	for _, l := range lines {
		var item struct{ Expected int }
		if err := json.Unmarshal([]byte(l), &item); err != nil {
			t.Fatal(err)
		}
		if item.Expected%2 == 0 {
			even++
		}
	}
	accuracy := func(spec string) (float64, int) {
		t.Helper()
		runs := filepath.Join(t.TempDir(), "runs")
		cmd := exec.Command(bin, "run", spec, "--dataset", "protocols/data/arithmetic.jsonl", "--runs-dir", runs, "--no-cache", "-q")
		cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY="+testKey)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s over the dataset: %v\n%s", spec, err, out)
		}
		paths, _ := filepath.Glob(filepath.Join(runs, "sweep-*", "summary.json"))
		if len(paths) != 1 {
			t.Fatalf("%s: %d sweep summaries", spec, len(paths))
		}
		raw, err := os.ReadFile(paths[0])
		if err != nil {
			t.Fatal(err)
		}
		var sum struct {
			Accuracy  *struct{ Mean float64 }
			CallsMade int `json:"calls_made"`
		}
		if err := json.Unmarshal(raw, &sum); err != nil || sum.Accuracy == nil {
			t.Fatalf("%s: no accuracy in summary.json (%v)", spec, err)
		}
		return sum.Accuracy.Mean, sum.CallsMade
	}
	debate, debateCalls := accuracy("protocols/du-society-of-minds/spec.yaml")
	baseline, baselineCalls := accuracy("protocols/du-society-of-minds/baseline.yaml")
	if debate != 1 {
		t.Errorf("the debate's accuracy is %v, want 1", debate)
	}
	if want := float64(even) / float64(len(lines)); baseline != want {
		t.Errorf("the baseline's accuracy is %v, want %v (%d of %d results are even)", baseline, want, even, len(lines))
	}
	if debateCalls != 6*len(lines) || baselineCalls != len(lines) {
		t.Errorf("%d and %d calls, want %d (N·R per question) and %d", debateCalls, baselineCalls, 6*len(lines), len(lines))
	}
}

// TestProtocolMixtureOfAgents: every proposer is called with its own model
// (the panel is a list var), layer 2 sees the whole panel's layer-1
// answers in its system message, and the aggregator sees layer 2's only.
func TestProtocolMixtureOfAgents(t *testing.T) {
	p := runProtocol(t, "mixture-of-agents", []string{"question=Name a prime above 10."}, []string{"proposers=m-a,m-b,m-c"},
		func(key string, r llmtest.Request) string {
			return fmt.Sprintf("%s says %d", r.Model, roundOf(key))
		})
	p.wantCalls(t, 3*2+1) // N x (L-1) + 1
	for i, m := range []string{"m-a", "m-b", "m-c"} {
		a := fmt.Sprintf("proposer_%d", i+1)
		r1, r2 := p.req(t, "propose/round=1/"+a), p.req(t, "propose/round=2/"+a)
		if r1.Model != m || r2.Model != m {
			t.Errorf("%s is called with %s and %s, want %s", a, r1.Model, r2.Model, m)
		}
		if roles(r1) != "user" || roles(r2) != "system user" {
			t.Errorf("%s: roles %q then %q", a, roles(r1), roles(r2))
		}
		sees(t, a+" in layer 2", r2.Messages[0].Content, "m-a says 1", "m-b says 1", "m-c says 1")
	}
	agg := p.req(t, "aggregate/-/aggregator_1")
	if agg.Model != "qwen1.5-110b-chat" {
		t.Errorf("aggregator model %s", agg.Model)
	}
	sees(t, "the aggregator", agg.Messages[0].Content, "m-a says 2", "m-c says 2", "!says 1")
	if last := p.order[len(p.order)-1]; last != "aggregate/-/aggregator_1" {
		t.Errorf("the aggregator is not called last: %v", p.order)
	}
	p.wantOutput(t, "answer", "qwen1.5-110b-chat says 0")
	// Usage is counted per model of the panel.
	for _, m := range []string{"m-a", "m-b", "m-c"} {
		if u := p.res.Usage.ByModel[m]; u.Calls != 2 {
			t.Errorf("usage of %s: %d calls, want 2", m, u.Calls)
		}
	}
}

// TestProtocolSparseDebate: on a ring of six each agent's round-r turn
// lists its two neighbours' round r-1 answers, no one else's, and its chat
// only grows.
func TestProtocolSparseDebate(t *testing.T) {
	p := runProtocol(t, "sparse-debate", []string{"question=What is the result of 1+2*3+4-5*6?"}, nil,
		func(key string, _ llmtest.Request) string {
			return fmt.Sprintf("%s in round %d says %d", agentOf(key), roundOf(key), 10+roundOf(key))
		})
	p.wantCalls(t, 6*3) // N x R
	p.wantOutput(t, "answer", "13")
	for i := 1; i <= 6; i++ {
		a := fmt.Sprintf("debater_%d", i)
		prev, next := fmt.Sprintf("debater_%d", (i+4)%6+1), fmt.Sprintf("debater_%d", i%6+1)
		for r := 2; r <= 3; r++ {
			req := p.req(t, fmt.Sprintf("answer/round=%d/%s", r, a))
			if got, want := roles(req), strings.TrimSpace(strings.Repeat("user assistant ", r-1)+"user"); got != want {
				t.Errorf("%s round %d: roles %q, want %q", a, r, got, want)
			}
			turn := req.Messages[len(req.Messages)-1].Content
			texts := []string{fmt.Sprintf("%s in round %d", prev, r-1), fmt.Sprintf("%s in round %d", next, r-1), "!" + a + " in"}
			for j := 1; j <= 6; j++ {
				if o := fmt.Sprintf("debater_%d", j); o != prev && o != next {
					texts = append(texts, "!"+o+" in")
				}
			}
			sees(t, fmt.Sprintf("%s's round-%d turn", a, r), turn, texts...)
		}
		prefixOf(t, p.req(t, "answer/round=2/"+a), p.req(t, "answer/round=3/"+a))
	}
}

// TestProtocolPoLLJury: one call per juror, each with its own model and
// none seeing another's verdict; the majority verdict wins.
func TestProtocolPoLLJury(t *testing.T) {
	verdict := map[string]string{"command-r": "Correct.", "gpt-3.5-turbo-0125": "incorrect", "claude-3-haiku-20240307": "correct"}
	p := runProtocol(t, "poll-jury", []string{"question=Which planet has the shortest year?", "reference=Mercury", "answer=Mercury."}, nil,
		func(_ string, r llmtest.Request) string { return verdict[r.Model] })
	p.wantCalls(t, 3) // N
	for i, m := range []string{"command-r", "gpt-3.5-turbo-0125", "claude-3-haiku-20240307"} {
		r := p.req(t, fmt.Sprintf("judge/-/judge_%d", i+1))
		if r.Model != m || roles(r) != "user" {
			t.Errorf("judge_%d: model %s, roles %q", i+1, r.Model, roles(r))
		}
		sees(t, "a juror", r.Messages[0].Content, "Reference answer: Mercury", "!Correct.", "!incorrect\n")
	}
	p.wantOutput(t, "verdict", "correct")
}

// TestProtocolReConcile: each agent is called with its own model; round 2
// shows round 1's answers of the whole table grouped by option with their
// confidences; with no agreement every round runs, and a sure agent
// outweighs two unsure ones.
func TestProtocolReConcile(t *testing.T) {
	reply := map[string]string{
		"m-a": `{"reasoning": "Venus is hot.", "answer": "A", "confidence": 0.7}`,
		"m-b": `{"reasoning": "Mercury orbits fastest.", "answer": "B", "confidence": 1.0}`,
		"m-c": `{"reasoning": "Venus is near.", "answer": "A", "confidence": 0.6}`,
	}
	p := runProtocol(t, "reconcile", mcqInputs, []string{"agents=m-a,m-b,m-c"},
		func(_ string, r llmtest.Request) string { return reply[r.Model] })
	p.wantCalls(t, 3*(1+3)) // N x (1 + D): never unanimous
	for i, m := range []string{"m-a", "m-b", "m-c"} {
		for r := 1; r <= 4; r++ {
			if got := p.req(t, fmt.Sprintf("answer/round=%d/participant_%d", r, i+1)).Model; got != m {
				t.Errorf("participant_%d round %d: model %s, want %s", i+1, r, got, m)
			}
		}
	}
	r1 := p.req(t, "answer/round=1/participant_3").Messages
	sees(t, "a round-1 prompt", r1[len(r1)-1].Content, "Mercury", "!round-table", "!Venus is hot")
	r2 := p.req(t, "answer/round=2/participant_3").Messages
	sees(t, "a round-2 prompt", r2[len(r2)-1].Content, "Option A:", "participant_1 (confidence 0.7): Venus is hot.", "you (confidence 0.6): Venus is near.", "Option B:", "participant_2 (confidence 1): Mercury")
	// Rounds run in order: no round-2 call before every round-1 call.
	for i, k := range p.order {
		if roundOf(k) != i/3+1 {
			t.Errorf("call %d is %s", i, k)
		}
	}
	p.wantOutput(t, "answer", "B") // 1.0 against 0.3 + 0.1
}

// TestProtocolSelectorGroupChat: before each turn the selector is asked
// alone (one user message: the task, the roles, the candidates without
// the last speaker, the conversation as "name: text"); the chosen speaker
// gets its system message, the task, every earlier message as a turn
// named by its author (its own as assistant, the others' as user) and a
// closing user turn; TERMINATE ends the chat.
func TestProtocolSelectorGroupChat(t *testing.T) {
	picks := []string{"planner", "Researcher", "the critic", "planner"}
	p := runProtocol(t, "selector-group-chat", []string{"task=Plan a day in Lisbon."}, nil,
		func(key string, r llmtest.Request) string {
			var turn int
			_, _ = fmt.Sscanf(key[strings.Index(key, "/t")+2:], "%d", &turn)
			if strings.Contains(key, "-select/") {
				return picks[turn-1]
			}
			if turn == 4 {
				return "Done. TERMINATE"
			}
			return fmt.Sprintf("%s at turn %d", agentOf(key), turn)
		})
	p.wantCalls(t, 2*4)
	want := []string{"chat/-/t1-select/manager", "chat/-/t1/planner", "chat/-/t2-select/manager", "chat/-/t2/researcher",
		"chat/-/t3-select/manager", "chat/-/t3/critic", "chat/-/t4-select/manager", "chat/-/t4/planner"}
	if !slices.Equal(p.order, want) {
		t.Errorf("calls in order %v, want %v", p.order, want)
	}
	sel := p.req(t, "chat/-/t3-select/manager")
	if roles(sel) != "user" {
		t.Errorf("the selector's roles: %s", roles(sel))
	}
	sees(t, "the third selection", sel.Messages[0].Content, "Plan a day in Lisbon.", "- critic: who checks",
		"planner: planner at turn 1\nresearcher: researcher at turn 2", "from: planner, critic.")
	last := p.req(t, "chat/-/t4/planner")
	if got := roles(p.req(t, "chat/-/t1/planner")); got != "system user" {
		t.Errorf("the first turn's roles %q, want the system message and the task", got)
	}
	if got := roles(last); got != "system user assistant user user user" {
		t.Errorf("the planner's last request: roles %q", got)
	}
	var names []string
	for _, m := range last.Messages[2:5] {
		names = append(names, m.Name)
	}
	if !slices.Equal(names, []string{"planner", "researcher", "critic"}) {
		t.Errorf("turn names %v", names)
	}
	sees(t, "the planner's system message", last.Messages[0].Content, "write TERMINATE")
	sees(t, "the planner's task turn", last.Messages[1].Content, "Plan a day in Lisbon.")
	p.wantOutput(t, "ended_by", "until")
	p.wantOutput(t, "answer", "Done. TERMINATE")
	if u := p.res.Usage.ByAgent["manager"]; u.Calls != 4 {
		t.Errorf("the selector's usage: %d calls, want 4", u.Calls)
	}
}

// TestProtocolExchangeOfThought: on the relay each agent's round-2 turn
// shows the round-1 answer of the agent before it on the ring and no one
// else's; its chat only grows; an agent that settles is not asked again.
func TestProtocolExchangeOfThought(t *testing.T) {
	p := runProtocol(t, "exchange-of-thought", []string{"question=What is the result of 1+2*3+4-5*6?"}, nil,
		func(key string, _ llmtest.Request) string {
			if agentOf(key) == "node_1" {
				return fmt.Sprintf("node_1 in round %d keeps 10", roundOf(key))
			}
			return fmt.Sprintf("%s in round %d says %d", agentOf(key), roundOf(key), 10+roundOf(key))
		})
	p.wantCalls(t, 3+3+2) // node_1 settles in round 2
	before := map[string]string{"node_1": "node_3", "node_2": "node_1", "node_3": "node_2"}
	for a, heard := range before {
		req := p.req(t, "answer/round=2/"+a)
		if got := roles(req); got != "user assistant user" {
			t.Errorf("%s round 2: roles %q", a, got)
		}
		texts := []string{heard + " in round 1"}
		for o := range before {
			if o != heard {
				texts = append(texts, "!"+o+" in round 1")
			}
		}
		sees(t, a+"'s round-2 turn", req.Messages[2].Content, texts...)
	}
	if _, asked := p.reqs["answer/round=3/node_1"]; asked {
		t.Error("node_1 was asked again after its answer settled")
	}
	prefixOf(t, p.req(t, "answer/round=2/node_2"), p.req(t, "answer/round=3/node_2"))
}
