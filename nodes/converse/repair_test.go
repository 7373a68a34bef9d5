package converse_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	mdreport "github.com/debate-runner/runner/runtime/report"
	"github.com/debate-runner/runner/runtime/result"
)

const panelSpec = "testdata/panel.yaml"

// decideAndWithdraw is a valid last word.
func decideAndWithdraw(c call) string {
	return turn{Content: "I am done, " + c.Speaker, Verdict: "YES", Reasoning: "it holds up", Withdrawn: "true"}.String()
}

// TestRejectedMessageIsRepaired: a reply that breaks the rules is not
// recorded as a turn; the speaker is asked again with the reason in the
// prompt, and the repaired reply becomes the turn.
func TestRejectedMessageIsRepaired(t *testing.T) {
	plan := loadPlan(t, panelSpec)
	const bad = "BAD-REPLY-TEXT"
	o := execute(t, plan, scripted(t, plan, func(c call) string {
		if c.Speaker == "bo" && c.Goal == "first" && !c.Repair {
			return turn{Content: bad, Verdict: "HIRE", Reasoning: "r", Withdrawn: "true"}.String()
		}
		return decideAndWithdraw(c)
	}), flags{Seed: 1}).must(t)

	if got := strings.Join(o.speakers("panel"), " "); got != "ana bo cy ana bo cy" {
		t.Errorf("turns by %s, want one per member per goal", got)
	}
	for _, m := range o.res.Messages {
		if strings.Contains(m.Content, bad) {
			t.Errorf("the rejected reply was recorded: %+v", m)
		}
	}
	var repair *call
	for _, c := range o.calls() {
		if strings.Contains(c.User, bad) {
			t.Errorf("the rejected reply reached %s's prompt (request %d)", c.Speaker, c.N)
		}
		if c.Repair {
			if repair != nil {
				t.Errorf("a second repair: request %d", c.N)
			}
			repair = &c
		}
	}
	if repair == nil {
		t.Fatal("the speaker was not asked again")
	}
	if repair.Speaker != "bo" || repair.Turn != 2 {
		t.Errorf("repair asked %s at turn %d, want bo at turn 2", repair.Speaker, repair.Turn)
	}
	for _, want := range []string{"## Your previous reply was rejected", `"HIRE" is not a valid verdict: use exactly one of YES, NO, MAYBE`} {
		if !strings.Contains(repair.User, want) {
			t.Errorf("repair prompt lacks %q:\n%s", want, repair.User)
		}
	}
	if o.srv.Count() != 7 {
		t.Errorf("%d calls, want 6 turns and 1 repair", o.srv.Count())
	}
	rej := o.eventsOf("rejected")
	if len(rej) != 1 || !strings.HasSuffix(rej[0].Key, "panel/goal=first/t2/bo") || !strings.Contains(string(rej[0].Data), "not a valid verdict") {
		t.Errorf("rejected events: %+v", rej)
	}
}

// TestRepairsExhausted: after `repair` rejections the run fails visibly,
// naming node, goal, turn, speaker and reason, in the error, result.json and
// report.md.
func TestRepairsExhausted(t *testing.T) {
	plan := loadPlan(t, panelSpec) // repair: 2
	o := execute(t, plan, scripted(t, plan, func(c call) string {
		if c.Speaker == "bo" {
			return turn{Content: "I say yes", Verdict: "YES"}.String()
		}
		return turn{Content: "hm"}.String()
	}), flags{Seed: 1})
	const want = `node "panel" (goal first), turn 2: bo's message was rejected 3 time(s), last because: a verdict needs its reasons in <VerdictReasoning>`
	if o.err == nil || !strings.Contains(o.err.Error(), want) {
		t.Fatalf("err = %v, want it to contain %q", o.err, want)
	}
	if o.res.Status != result.StatusFailed || !strings.Contains(o.res.Error, want) {
		t.Errorf("result status %q, error %q", o.res.Status, o.res.Error)
	}
	var onDisk result.Result
	if err := json.Unmarshal([]byte(o.readFile(t, "result.json")), &onDisk); err != nil {
		t.Fatal(err)
	}
	if onDisk.Status != result.StatusFailed || !strings.Contains(onDisk.Error, want) {
		t.Errorf("result.json: status %q, error %q", onDisk.Status, onDisk.Error)
	}
	// The report escapes the tag in the reason, so that renderers show it.
	if report := o.readFile(t, "report.md"); !strings.Contains(report, "Status: **failed**") || !strings.Contains(report, mdreport.Inline(want)) {
		t.Errorf("report.md does not show the failure:\n%s", report)
	}
	if n := o.srv.Count(); n != 4 {
		t.Errorf("%d calls, want ana's turn and bo's 3 attempts", n)
	}
	if got := o.speakers("panel"); len(got) != 1 {
		t.Errorf("recorded turns by %v, want ana's only", got)
	}
	if n := len(o.eventsOf("rejected")); n != 3 {
		t.Errorf("%d rejected events, want 3", n)
	}
}

// TestRules: verdict rules are expressions over the message; each failing
// rule's message is fed back, and a repaired message passes.
func TestRules(t *testing.T) {
	plan := variant(t, panelSpec, "      repair: 2\n", `      repair: 2
      rules:
        - check: 'msg.verdict != "NO" || len(msg.reasoning) >= 20'
          message: a NO needs at least 20 characters of reasoning
        - check: '!msg.whisper || msg.to != "cy"'
          message: nobody whispers to cy
        - check: 'msg.turn == turn + 1 && len(participants) == 3'
          message: rules see the turn being checked and the participants
`)
	var mu sync.Mutex
	tries := map[string]int{}
	o := execute(t, plan, scripted(t, plan, func(c call) string {
		mu.Lock()
		tries[c.Goal+c.Speaker]++
		n := tries[c.Goal+c.Speaker]
		mu.Unlock()
		switch {
		case c.Speaker == "ana" && c.Goal == "first" && n == 1:
			return turn{To: "cy", Whisper: true, Content: "psst", Verdict: "NO", Reasoning: "short", Withdrawn: "true"}.String()
		case c.Speaker == "ana" && c.Goal == "first" && n == 2:
			return turn{To: "cy", Whisper: true, Content: "psst", Verdict: "NO", Reasoning: "twenty characters or more", Withdrawn: "true"}.String()
		}
		return turn{Content: "fine", Verdict: "NO", Reasoning: "a long enough reasoning here", Withdrawn: "true"}.String()
	}), flags{Seed: 1}).must(t)
	var fb []string
	for _, c := range o.calls() {
		if c.Repair {
			fb = append(fb, c.User)
		}
	}
	if len(fb) != 2 {
		t.Fatalf("%d repairs, want 2", len(fb))
	}
	if !strings.Contains(fb[0], "a NO needs at least 20 characters of reasoning; nobody whispers to cy") {
		t.Errorf("first repair lacks both rule messages:\n%s", fb[0])
	}
	if strings.Contains(fb[1], "20 characters") || !strings.Contains(fb[1], "nobody whispers to cy") {
		t.Errorf("second repair should name only the rule still broken:\n%s", fb[1])
	}
	if !strings.Contains(o.res.Messages[0].Content, "fine") || o.res.Messages[0].From != "ana" || o.res.Messages[0].Whisper {
		t.Errorf("ana's turn is %+v, want the public repair", o.res.Messages[0])
	}
}
