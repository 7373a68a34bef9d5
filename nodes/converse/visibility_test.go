package converse_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/nodes/converse"
	"github.com/debate-runner/runner/spec"
)

// whisperTo is whom each hiring-panel member whispers to, written the way
// the member addresses them: by first name in capitals (with an accent), by
// id, by full name in lower case and by full name.
var whisperTo = map[string][2]string{
	"priya": {"tomas", "TOMÁS"},
	"tomas": {"grace", "grace"},
	"grace": {"lena", "lena hoffmann"},
	"lena":  {"priya", "Priya Raman"},
}

// hiringVerdict is the verdict each member gives on every goal.
var hiringVerdict = map[string]string{"priya": "GOOD_FIT", "tomas": "ADEQUATE", "grace": "GOOD_FIT", "lena": "POOR_FIT"}

// hiringScript plays the hiring panel: on each goal a member first whispers
// (with a private thought), then speaks publicly with a verdict, then
// withdraws. Every text is unique, so a prompt containing it proves the
// message was shown to that agent.
func hiringScript() func(c call) string {
	var mu sync.Mutex
	spoken := map[string]int{}
	return func(c call) string {
		mu.Lock()
		k := spoken[c.Goal+"/"+c.Speaker] + 1
		spoken[c.Goal+"/"+c.Speaker] = k
		mu.Unlock()
		private := fmt.Sprintf("PRIVATE-%s-%s-%d", c.Goal, c.Speaker, k)
		switch k {
		case 1:
			to := whisperTo[c.Speaker]
			return turn{To: to[1], Whisper: true, Private: private,
				Content: fmt.Sprintf("WHISPER-%s-%s-%s", c.Goal, c.Speaker, to[0]), Withdrawn: "false"}.String()
		case 2:
			return turn{To: "All", Private: private, Content: fmt.Sprintf("PUBLIC-%s-%s", c.Goal, c.Speaker),
				Verdict: hiringVerdict[c.Speaker], Reasoning: "REASON-" + c.Goal + "-" + c.Speaker, Withdrawn: "false"}.String()
		default:
			return turn{Content: fmt.Sprintf("DONE-%s-%s", c.Goal, c.Speaker), Withdrawn: "true"}.String()
		}
	}
}

func runHiringPanel(t *testing.T, seed int64) outcome {
	t.Helper()
	plan := loadPlan(t, hiringPanel)
	return execute(t, plan, scripted(t, plan, hiringScript()), flags{Seed: seed, Inputs: []string{"resume=Jane Doe, ten years of Go."}}).must(t)
}

// TestVisibility proves on the real hiring-panel spec that a whisper reaches
// the prompts of its sender and its target only, and a private thought only
// its author's later prompts: every request of every other agent is
// searched for the texts.
func TestVisibility(t *testing.T) {
	o := runHiringPanel(t, 7)
	calls := o.calls()
	whispers := 0
	private := 0
	for _, m := range o.res.Messages {
		if !m.Whisper && !m.Private {
			continue
		}
		if m.Whisper {
			whispers++
			if want := whisperTo[m.From][0]; m.To != want {
				t.Errorf("whisper of %s went to %q, want %q (addressed as %q)", m.From, m.To, want, whisperTo[m.From][1])
			}
		} else {
			private++
		}
		seenBy := map[string]int{}
		for _, c := range calls {
			if !strings.Contains(c.User, m.Content) && !strings.Contains(c.System, m.Content) {
				continue
			}
			seenBy[c.Speaker]++
			allowed := c.Speaker == m.From || m.Whisper && c.Speaker == m.To
			if !allowed {
				t.Errorf("%s %q (from %s to %q) is in the prompt of %s (request %d)", m.Record, m.Content, m.From, m.To, c.Speaker, c.N)
			}
		}
		// The positive side: those who may see it do, once they speak again
		// on the same goal, so the negative check above is not vacuous.
		for _, who := range []string{m.From, m.To} {
			if who == "" || m.Private && who != m.From {
				continue
			}
			later := 0
			for _, c := range calls {
				if c.Speaker == who && c.Goal == m.Goal && c.Turn > m.Turn {
					later++
				}
			}
			if later > 0 && seenBy[who] == 0 {
				t.Errorf("%s %q never reached %s's %d later prompt(s)", m.Record, m.Content, who, later)
			}
		}
	}
	// Four members whisper and think privately twice per goal.
	if whispers != 12 || private != 24 {
		t.Errorf("%d whispers and %d private thoughts recorded, want 12 and 24", whispers, private)
	}
	// A whisper is marked as one in the target's prompt.
	marked := false
	for _, c := range calls {
		if c.Speaker == "tomas" && strings.Contains(c.User, "(whisper: only you and Priya Raman can see this)") {
			marked = true
		}
	}
	if !marked {
		t.Error("no prompt of tomas marks priya's whisper as a whisper")
	}
}

// TestResolveAgent checks addressee matching: by id, by name and by a unique
// word of the name, ignoring case and accents' case; ambiguous or unknown
// names are errors that list the participants.
func TestResolveAgent(t *testing.T) {
	agents := []*spec.AgentPlan{
		{ID: "tomas", Name: "Tomás Ortega"},
		{ID: "priya", Name: "Priya Raman"},
		{ID: "dr_chen", Name: "Dr. Alex Chen"},
		{ID: "maya", Name: "Maya Chen"},
	}
	tests := []struct {
		name, want, err string
	}{
		{"tomas", "tomas", ""},
		{"TOMAS", "tomas", ""},
		{"Tomás Ortega", "tomas", ""},
		{"tomás ortega", "tomas", ""},
		{"TOMÁS", "tomas", ""},
		{"@priya", "priya", ""},
		{" Priya ", "priya", ""},
		{"priya raman", "priya", ""},
		{"dr. alex chen", "dr_chen", ""},
		{"Alex", "dr_chen", ""},
		{"Chen", "", "names nobody"}, // two Chens: ambiguous
		{"Dr", "dr_chen", ""},
		{"Tomas Ortega", "", "names nobody"}, // no accent: a different name
		{"Bob", "", "Tomás Ortega, Priya Raman, Dr. Alex Chen, Maya Chen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := converse.ResolveAgent(tt.name, agents)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ResolveAgent(%q) = %q, %v; want error containing %q", tt.name, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ResolveAgent(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
			}
		})
	}
}
