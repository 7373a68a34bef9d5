package templates_test

import (
	"strings"
	"testing"
	"text/template"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// allLibraries compiles a spec that loads every embedded library and
// returns its template set, exactly as the runtime will execute it
// (missingkey=error, the spec's template functions).
func allLibraries(t *testing.T, define string) *template.Template {
	t.Helper()
	src := `version: 1
name: render
inputs:
  problem: {required: true}
  context: {default: ""}
  question: {required: true}
templates:
  use: [software-design, chain-of-debate, reasoning]
` + define + `
agents: {a: {name: A}}
nodes: {n: {kind: ask, agents: [a], template: reasoning/answer}}
flow: [n]
`
	plan, diags := spec.Compile("render.yaml", []byte(src), nodes.Registry())
	if diags.HasErrors() {
		t.Fatalf("compile: %s", diags.Format())
	}
	return plan.Templates
}

var (
	architect = value.AgentView{ID: "arch", Name: "System Architect", Role: "architect"}
	security  = value.AgentView{ID: "sec", Name: "Security Specialist", Role: "security"}
	judge     = value.AgentView{ID: "judge", Name: "Technical Judge", Role: "judge"}
	chen      = value.AgentView{ID: "chen", Name: "Dr. Chen", Persona: value.Persona{Title: "Technical Lead", Expertise: "databases", Personality: "exacting", SpeakingStyle: "terse"}}
	marcus    = value.AgentView{ID: "marcus", Name: "Marcus", Persona: value.Persona{Title: "Manager"}}
	ruiz      = value.AgentView{ID: "ruiz", Name: "Ana Ruiz"}
)

// designData is a prompt of a software-design debate in round 2.
func designData(agent value.AgentView) promptData {
	return promptData{
		Agent:  agent,
		Agents: []value.AgentView{architect, security, judge},
		Round:  2,
		Inputs: map[string]any{"problem": "Build a ticket booking system.", "context": "", "question": "2+2?"},
		Vars:   map[string]any{},
		Nodes:  map[string]value.NodeResult{},
		History: []*value.Message{
			{Round: 1, From: "arch", Record: "proposal", Content: "ARCH-PROPOSAL-1"},
			{Round: 1, From: "sec", Record: "proposal", Content: "SEC-PROPOSAL-1"},
			{Round: 1, From: "sec", To: "arch", Record: "critique", Content: "SEC-CRITIQUES-ARCH-1"},
			{Round: 1, From: "arch", Record: "refinement", Content: "ARCH-REFINEMENT-1"},
			{Round: 1, From: "sec", Record: "refinement", Content: "SEC-REFINEMENT-1"},
			{Round: 2, From: "arch", Record: "proposal", Content: "ARCH-PROPOSAL-2", Carried: true},
			{Round: 2, From: "sec", Record: "proposal", Content: "SEC-PROPOSAL-2", Carried: true},
			{Round: 2, From: "sec", To: "arch", Record: "critique", Content: "SEC-CRITIQUES-ARCH-2"},
			{Round: 2, From: "arch", Record: "refinement", Content: "ARCH-REFINEMENT-2"},
		},
		Extra: map[string]any{},
	}
}

// panelData is a turn prompt of a goal-chained panel on its second goal,
// recorded the way the converse node records: turns (record message) with
// their private thoughts as separate private messages, time keeper
// interjections, a moderator's turn from a watcher node and the decision the
// watcher posted.
func panelData(agent value.AgentView) promptData {
	return promptData{
		Agent:  agent,
		Agents: []value.AgentView{chen, marcus, ruiz},
		Goal:   value.GoalView{ID: "culture", Description: "Assess team fit", Index: 2, Count: 3},
		Inputs: map[string]any{"problem": "P", "context": "", "question": "Q"},
		Vars:   map[string]any{},
		History: []*value.Message{
			{Goal: "skills", Turn: 3, From: "chen", Record: "message", Content: "Strong SQL.", Verdict: "GOOD_FIT", Reasoning: "r", Withdrawn: true},
			{Goal: "skills", Turn: 4, From: "adler", Record: "message", Content: "old moderation", Verdict: "NO_ACTION", Reasoning: "fine"},
			{Goal: "culture", Turn: 1, From: "timekeeper", Record: "interjection", Content: "TIMEKEEPER-REMINDER"},
			{Goal: "culture", Turn: 2, From: "marcus", Record: "message", Content: "MARCUS-PUBLIC"},
			{Goal: "culture", Turn: 3, From: "chen", To: "marcus", Whisper: true, Record: "message", Content: "CHEN-WHISPER"},
			{Goal: "culture", Turn: 3, From: "chen", Private: true, Record: "private", Content: "CHEN-PRIVATE"},
			{Goal: "culture", Turn: 4, From: "ruiz", Record: "message", Content: "RUIZ-VERDICT", Verdict: "ADEQUATE", Reasoning: "fine"},
			{Goal: "culture", Turn: 1, From: "adler", Record: "message", Content: "ADLER-MODERATES", Verdict: "GENTLE_REDIRECT", Reasoning: "Stay on the resume."},
			{Goal: "culture", Turn: 4, From: "moderation", Record: "watch", Content: "WATCH-POST"},
		},
		Participants: []value.Participant{
			{ID: "chen", Name: "Dr. Chen", Turns: 1},
			{ID: "marcus", Name: "Marcus", Turns: 1},
			{ID: "ruiz", Name: "Ana Ruiz", Turns: 1, Verdict: "ADEQUATE"},
		},
		Undecided: []string{"chen", "marcus"},
		Verdict:   value.VerdictView{Set: "hiring", Options: []string{"EXCELLENT_FIT", "GOOD_FIT", "ADEQUATE", "POOR_FIT", "REJECT"}, Reasoning: true},
		Turn:      5,
		MaxTurns:  60,
	}
}

// moderationData is the prompt of moderator adler in a watcher node run
// after turn 4 of the panel above.
func moderationData() promptData {
	d := panelData(value.AgentView{ID: "adler", Name: "Ruth Adler"})
	d.Agents = []value.AgentView{{ID: "adler", Name: "Ruth Adler"}, {ID: "mensah", Name: "Kwame Mensah"}}
	d.Participants = []value.Participant{{ID: "adler", Name: "Ruth Adler"}, {ID: "mensah", Name: "Kwame Mensah"}}
	// What the runtime shows a moderator: no whispers or private notes of
	// others.
	var visible []*value.Message
	for _, m := range d.History[:len(d.History)-2] {
		if !m.Whisper && !m.Private {
			visible = append(visible, m)
		}
	}
	d.History = append(visible,
		&value.Message{Goal: "culture", Turn: 1, From: "adler", Private: true, Record: "private", Content: "ADLER-PRIVATE"},
		&value.Message{Goal: "culture", Turn: 1, From: "adler", Record: "message", Content: "ADLER-NOW", Verdict: "GENTLE_REDIRECT", Reasoning: "x"},
	)
	d.Verdict = value.VerdictView{Options: []string{"NO_ACTION", "GENTLE_REDIRECT"}, Reasoning: true}
	d.Undecided = []string{"mensah"}
	return d
}

func render(t *testing.T, set *template.Template, name string, data promptData) string {
	t.Helper()
	var b strings.Builder
	if err := set.ExecuteTemplate(&b, name, data); err != nil {
		t.Fatalf("executing %s: %v", name, err)
	}
	out := b.String()
	if strings.Contains(out, "<no value>") {
		t.Fatalf("%s rendered <no value>:\n%s", name, out)
	}
	return out
}

func TestRender(t *testing.T) {
	set := allLibraries(t, "")
	tests := []struct {
		name     string
		template string
		data     func() promptData
		want     []string
		wantNot  []string
	}{
		{
			name: "system architect", template: "software-design/system",
			data: func() promptData { return designData(architect) },
			want: []string{"You are System Architect", "as the system architect.", "Be concrete"},
		},
		{
			name: "system judge", template: "software-design/system",
			data: func() promptData { return designData(judge) },
			want: []string{"impartial technical judge"}, wantNot: []string{"How to work in this debate"},
		},
		{
			name: "system other role", template: "software-design/system",
			data: func() promptData {
				return designData(value.AgentView{ID: "ux", Name: "UX Lead", Role: "ux"})
			},
			want: []string{"as the ux specialist."},
		},
		{
			name: "system no role", template: "software-design/system",
			data: func() promptData { return designData(value.AgentView{ID: "x", Name: "X"}) },
			want: []string{"as the specialist."},
		},
		{
			name: "problem without context", template: "software-design/problem",
			data: func() promptData { return designData(architect) },
			want: []string{"## Problem\nBuild a ticket booking system."}, wantNot: []string{"Extra context"},
		},
		{
			name: "problem with context", template: "software-design/problem",
			data: func() promptData {
				d := designData(architect)
				d.Inputs["context"] = "Must run on-premises."
				return d
			},
			want: []string{"## Extra context\nMust run on-premises."},
		},
		{
			name: "propose round 1", template: "software-design/propose",
			data: func() promptData {
				d := designData(architect)
				d.Round, d.History = 1, nil
				return d
			},
			want:    []string{"## Problem", "## Your task", "**Components**"},
			wantNot: []string{"previous round", "Clarifications"},
		},
		{
			name: "propose with clarifications and own proposal", template: "software-design/propose",
			data: func() promptData {
				d := designData(architect)
				d.Own = value.Message{From: "arch", Content: "OWN-PREVIOUS"}
				// As a clarify node records them: one message per agent.
				d.History = append([]*value.Message{
					{From: "sec", Record: "clarification", Output: []any{map[string]any{"id": "sec.q1", "question": "How many users?", "answer": "10k"}}},
					{From: "arch", Record: "clarification", Output: []any{map[string]any{"id": "arch.q1", "question": "Budget?", "answer": "NA"}}},
				}, d.History...)
				return d
			},
			want:    []string{"## Clarifications from the user\n- Q: How many users?\n  A: 10k\n\n## Your proposal from the previous round\nOWN-PREVIOUS", "Improve on your previous proposal"},
			wantNot: []string{"Budget?"},
		},
		{
			name: "propose with recorded clarifications", template: "software-design/propose",
			data: func() promptData {
				d := designData(architect)
				d.History = append([]*value.Message{
					{From: "sec", Record: "clarification", Content: "Q (q1): ...", Output: []any{
						map[string]any{"id": "q1", "question": "How many users?", "answer": "10k"},
						map[string]any{"id": "q2", "question": "Budget?", "answer": "NA"},
					}},
					{From: "arch", Record: "clarification", Output: []any{
						map[string]any{"id": "q3", "question": "Region?", "answer": "EU"},
					}},
				}, d.History...)
				return d
			},
			want:    []string{"## Clarifications from the user\n- Q: How many users?\n  A: 10k\n- Q: Region?\n  A: EU\n\n## Your task"},
			wantNot: []string{"Budget?"},
		},
		{
			name: "nothing answered", template: "software-design/propose",
			data: func() promptData {
				d := designData(architect)
				d.History = append([]*value.Message{{From: "sec", Record: "clarification", Output: []any{
					map[string]any{"id": "q1", "question": "Budget?", "answer": "NA"},
				}}}, d.History...)
				return d
			},
			wantNot: []string{"Clarifications", "Budget?"},
		},
		{
			name: "critique", template: "software-design/critique",
			data: func() promptData {
				d := designData(architect)
				d.Target = value.Message{From: "sec", Record: "proposal", Content: "SEC-PROPOSAL-2"}
				return d
			},
			want: []string{"Author: Security Specialist (security)", "SEC-PROPOSAL-2", "**Unmet requirements**"},
		},
		{
			name: "refine from history", template: "software-design/refine",
			data:    func() promptData { return designData(architect) },
			want:    []string{"ARCH-PROPOSAL-2", "### From Security Specialist\nSEC-CRITIQUES-ARCH-2"},
			wantNot: []string{"SEC-CRITIQUES-ARCH-1", "ARCH-PROPOSAL-1", "No critiques"},
		},
		{
			name: "refine from inbox and own", template: "software-design/refine",
			data: func() promptData {
				d := designData(architect)
				d.History = nil
				d.Summary = "MY-SUMMARY"
				d.Own = value.Message{From: "arch", Record: "refinement", Content: "OWN-REFINEMENT"}
				d.Inbox = []*value.Message{{Round: 2, From: "sec", To: "arch", Record: "critique", Content: "INBOX-CRITIQUE"}}
				return d
			},
			want: []string{"MY-SUMMARY", "OWN-REFINEMENT", "INBOX-CRITIQUE"},
		},
		{
			name: "refine with nothing", template: "software-design/refine",
			data: func() promptData {
				d := designData(architect)
				d.History = nil
				return d
			},
			want: []string{"(You have no proposal on record", "(No critiques reached you this round.)"},
		},
		{
			name: "clarify first iteration", template: "software-design/clarify",
			data: func() promptData {
				d := designData(architect)
				d.MaxQuestions = 1
				return d
			},
			want:    []string{"up to 1 clarifying\nquestion.", `{"questions": []}`},
			wantNot: []string{"already asked"},
		},
		{
			name: "clarify follow-up", template: "software-design/clarify",
			data: func() promptData {
				d := designData(architect)
				d.MaxQuestions = 3
				d.Questions = []value.Question{{ID: "q1", Agent: "arch", Question: "Peak load?", Answer: "NA"}, {ID: "q2", Agent: "arch", Question: "Region?", Answer: "EU"}}
				return d
			},
			want: []string{"up to 3 clarifying\nquestions.", "- Peak load?\n  Answer: (not answered)", "- Region?\n  Answer: EU", "Do not repeat"},
		},
		{
			name: "summarize with limit", template: "software-design/summarize",
			data: func() promptData {
				d := designData(security)
				d.Text = "HISTORY-TEXT"
				d.Extra = map[string]any{"max_chars": 2500}
				return d
			},
			want: []string{"from your perspective as Security Specialist.", "under 2500 characters", "## History\nHISTORY-TEXT"},
		},
		{
			name: "summarize without limit", template: "software-design/summarize",
			data: func() promptData {
				d := designData(security)
				d.Text, d.Extra = "HISTORY-TEXT", nil
				return d
			},
			want: []string{"HISTORY-TEXT"}, wantNot: []string{"characters"},
		},
		{
			name: "summarize as judge", template: "software-design/summarize",
			data: func() promptData {
				d := designData(judge)
				d.Text = "DEBATE-TEXT"
				return d
			},
			want: []string{"## Debate record\nDEBATE-TEXT", "Do not judge yet"}, wantNot: []string{"## History"},
		},
		{
			name: "confidence sees latest refinements", template: "software-design/confidence",
			data:    func() promptData { return designData(judge) },
			want:    []string{"(round 2)", "### System Architect\nARCH-REFINEMENT-2", "### Security Specialist\nSEC-REFINEMENT-1", `{"confidence": 0, "reason":`},
			wantNot: []string{"ARCH-REFINEMENT-1", "PROPOSAL"},
		},
		{
			name: "confidence falls back to proposals", template: "software-design/confidence",
			data: func() promptData {
				d := designData(judge)
				d.History = d.History[:2]
				return d
			},
			want: []string{"ARCH-PROPOSAL-1", "SEC-PROPOSAL-1"},
		},
		{
			name: "synthesize", template: "software-design/synthesize",
			data: func() promptData { return designData(judge) },
			want: []string{"ARCH-REFINEMENT-2", `"solution_markdown"`, `"unmet_requirements"`, "confidence must be 40 or less"},
		},
		{
			name: "synthesize from summary", template: "software-design/synthesize",
			data: func() promptData {
				d := designData(judge)
				d.Summary = "JUDGE-SUMMARY"
				return d
			},
			want: []string{"## Summary of the debate\nJUDGE-SUMMARY"}, wantNot: []string{"ARCH-REFINEMENT-2"},
		},
		{
			name: "extra rules are empty", template: "software-design/extra-rules",
			data: func() promptData { return designData(architect) },
		},
		{
			name: "persona system", template: "chain-of-debate/system",
			data:    func() promptData { return panelData(chen) },
			want:    []string{"You are Dr. Chen, Technical Lead,", "Your expertise: databases.", "Your personality: exacting.", "How you speak: terse.", "- Marcus (id: marcus), Manager", "- Ana Ruiz (id: ruiz)"},
			wantNot: []string{"(id: chen)", "background"},
		},
		{
			name: "default subject lists inputs", template: "chain-of-debate/subject",
			data: func() promptData { return panelData(chen) },
			want: []string{"## problem\nP", "## question\nQ"},
		},
		{
			name: "turn prompt", template: "chain-of-debate/message",
			data: func() promptData { return panelData(chen) },
			want: []string{
				"## Current goal (2 of 3): culture\nAssess team fit",
				"- skills: Dr. Chen gave GOOD_FIT\n\n## The panel",
				"(turn 5 of at most 60)",
				"- Dr. Chen (id: chen) (you): no verdict yet",
				"- Ana Ruiz (id: ruiz): verdict ADEQUATE",
				"[1] Time keeper to everyone:\n    TIMEKEEPER-REMINDER",
				"[3] Dr. Chen to Marcus (whisper: only you and Marcus can see this):\n    CHEN-WHISPER",
				"(your private thoughts at turn 3; only you can see them)\n    CHEN-PRIVATE",
				"[4] Ana Ruiz to everyone [verdict: ADEQUATE]:",
				"[4] Moderators to everyone:\n    WATCH-POST",
				"<Verdict>EXCELLENT_FIT | GOOD_FIT | ADEQUATE | POOR_FIT | REJECT</Verdict>",
				"A Verdict must come with VerdictReasoning.",
			},
			wantNot: []string{"Strong SQL.", "rejected", "ADLER-MODERATES", "NO_ACTION"},
		},
		{
			name: "turn prompt of whisper target after a rejection", template: "chain-of-debate/message",
			data: func() promptData {
				d := panelData(marcus)
				d.History = d.History[:5] // up to the whisper
				d.Feedback = "Verdict MAYBE is not one of the options."
				d.Verdict.Reasoning = false
				return d
			},
			want:    []string{"(whisper: only you and Dr. Chen can see this)", "## Your previous reply was rejected\nVerdict MAYBE is not one of the options."},
			wantNot: []string{"must come with VerdictReasoning"},
		},
		{
			name: "turn prompt without verdicts or history", template: "chain-of-debate/message",
			data: func() promptData {
				d := panelData(marcus)
				d.History, d.Verdict, d.Goal = nil, value.VerdictView{}, value.GoalView{}
				return d
			},
			want:    []string{"(Nobody has spoken on this goal yet.)", "<Withdrawn>true or false</Withdrawn>"},
			wantNot: []string{"<Verdict>", "Current goal", "earlier goals"},
		},
		{
			name: "turn prompt when only outsiders judged earlier goals", template: "chain-of-debate/message",
			data: func() promptData {
				d := panelData(chen)
				d.History = d.History[1:] // keeps only the moderator's verdict on skills
				return d
			},
			wantNot: []string{"earlier goals", "NO_ACTION"},
		},
		{
			name: "remind", template: "chain-of-debate/remind",
			data: func() promptData { return panelData(chen) },
			want: []string{"turn 5", "goal 2 of 3, culture", "using exactly one of: EXCELLENT_FIT", "Still without a verdict: Dr. Chen, Marcus.\nSet <Withdrawn>"},
		},
		{
			name: "remind when all decided", template: "chain-of-debate/remind",
			data: func() promptData {
				d := panelData(chen)
				d.Undecided = nil
				return d
			},
			want: []string{"Everyone has given a verdict.\nSet <Withdrawn>true</Withdrawn>"}, wantNot: []string{"<Verdict>"},
		},
		{
			name: "insist", template: "chain-of-debate/insist",
			data: func() promptData { return panelData(chen) },
			want: []string{"Dr. Chen, Marcus: the panel needs your verdict"},
		},
		{
			name: "demand", template: "chain-of-debate/demand",
			data: func() promptData { return panelData(chen) },
			want: []string{"out of time on goal culture", "Dr. Chen, Marcus: your next message must contain a <Verdict> (EXCELLENT_FIT"},
		},
		{
			name: "force", template: "chain-of-debate/force",
			data: func() promptData { return panelData(chen) },
			want: []string{"final call on goal culture", "will be rejected", "This goal closes now."},
		},
		{
			name: "watch", template: "chain-of-debate/watch",
			data: func() promptData {
				d := panelData(chen)
				d.Text = "GENTLE_REDIRECT"
				return d
			},
			want: []string{"Moderators' decision: GENTLE_REDIRECT.\nStay on the resume.\nPlease take"},
		},
		{
			name: "watch without guidance", template: "chain-of-debate/watch",
			data: func() promptData {
				d := panelData(chen)
				d.Text = "FIRM_CORRECTION"
				return d
			},
			want: []string{"Moderators' decision: FIRM_CORRECTION.\nPlease take"},
		},
		{
			name: "watch all clear", template: "chain-of-debate/watch",
			data: func() promptData {
				d := panelData(chen)
				d.Text = "NO_ACTION"
				return d
			},
			want: []string{"see no need to intervene"}, wantNot: []string{"decision"},
		},
		{
			name: "moderate", template: "chain-of-debate/moderate",
			data: moderationData,
			want: []string{
				"## The debate you are moderating\n\n[1] Time keeper to everyone:\n    TIMEKEEPER-REMINDER",
				// The debaters are not agents of the moderation node, so they
				// appear by id.
				"[2] marcus to everyone:\n    MARCUS-PUBLIC\n\n[4] ruiz to everyone [verdict: ADEQUATE]:\n    RUIZ-VERDICT",
				"## Discussion among the moderators\n\n(your private note)\n    ADLER-PRIVATE\n\nRuth Adler [verdict: GENTLE_REDIRECT]:\n    ADLER-NOW",
				"<Verdict>NO_ACTION | GENTLE_REDIRECT</Verdict>",
			},
			// Whispers and private notes of the debaters are not in a
			// moderator's history; earlier goals and earlier moderation
			// sessions stay out.
			wantNot: []string{"Strong SQL.", "old moderation", "ADLER-MODERATES", "(None yet.)", "(The debate has no messages yet.)"},
		},
		{
			name: "moderate first session", template: "chain-of-debate/moderate",
			data: func() promptData {
				d := moderationData()
				d.History = d.History[:len(d.History)-2]
				return d
			},
			want: []string{"## Discussion among the moderators\n(None yet.)"},
		},
		{
			name: "reasoning first round", template: "reasoning/answer",
			data: func() promptData {
				d := designData(architect)
				d.Round = 1
				return d
			},
			want: []string{"Question: 2+2?", `\boxed{ANSWER}`}, wantNot: []string{"other agents"},
		},
		{
			name: "reasoning later round", template: "reasoning/answer",
			data: func() promptData {
				d := designData(architect)
				d.History = []*value.Message{
					{Round: 1, From: "arch", Record: "answer", Content: "MINE"},
					{Round: 1, From: "sec", Record: "answer", Content: "THEIRS"},
				}
				d.Own = *d.History[0]
				return d
			},
			want: []string{"--- Security Specialist ---\nTHEIRS", "Your own previous answer was:\nMINE"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := render(t, set, tc.template, tc.data())
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(out, w) {
					t.Errorf("output should not contain %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestExtraRulesOverride checks that a spec's define of extra-rules reaches
// the prompts that include it, and only those.
func TestExtraRulesOverride(t *testing.T) {
	set := allLibraries(t, "  define:\n    software-design/extra-rules: \"HOUSE-RULE: under 600 words.\"\n")
	for _, tc := range []struct {
		template string
		want     bool
	}{
		{"software-design/propose", true},
		{"software-design/refine", true},
		{"software-design/critique", false},
		{"software-design/synthesize", false},
	} {
		d := designData(architect)
		d.Target = value.Message{From: "sec", Content: "x"}
		out := render(t, set, tc.template, d)
		if got := strings.Contains(out, "HOUSE-RULE: under 600 words."); got != tc.want {
			t.Errorf("%s: has house rule = %v, want %v", tc.template, got, tc.want)
		}
	}
}

// TestNoTrailingWhitespace keeps prompts tidy: trailing blanks cost tokens
// and show up in every recorded request.
func TestNoTrailingWhitespace(t *testing.T) {
	set := allLibraries(t, "")
	for _, name := range []string{"software-design/propose", "software-design/refine", "software-design/synthesize", "software-design/system", "chain-of-debate/message", "chain-of-debate/system", "chain-of-debate/moderate"} {
		d := panelData(chen)
		if strings.HasPrefix(name, "software-design") {
			d = designData(architect)
		}
		out := render(t, set, name, d)
		for i, line := range strings.Split(out, "\n") {
			if strings.TrimRight(line, " \t") != line {
				t.Errorf("%s: line %d has trailing whitespace: %q", name, i+1, line)
			}
		}
		if strings.HasPrefix(out, "\n") {
			t.Errorf("%s starts with a blank line", name)
		}
	}
}

// promptData has the fields of every kind's prompt data, flat, so one value
// can stand for what any of them would give a template; validate checks the
// templates against each kind's own type.
type promptData struct {
	Agent        value.AgentView
	Agents       []value.AgentView
	AllAgents    []value.AgentView
	Round        int
	Loop         map[string]any
	Item         any
	Goal         value.GoalView
	Inputs       map[string]any
	Vars         map[string]any
	Nodes        map[string]value.NodeResult
	History      []*value.Message
	Inbox        []*value.Message
	Target       value.Message
	Summary      string
	Own          value.Message
	Verdict      value.VerdictView
	Turn         int
	MaxTurns     int
	Participants []value.Participant
	Undecided    []string
	Questions    []value.Question
	MaxQuestions int
	Feedback     string
	Text         string
	Decision     string
	MaxChars     int
	Chars        int
	Extra        map[string]any
}
