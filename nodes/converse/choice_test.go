package converse

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// TestReadChoice: a selector's reply is read as a demanding user writes a
// name, and never guessed between two participants.
func TestReadChoice(t *testing.T) {
	agents := []*spec.AgentPlan{
		{ID: "debater_1", Name: "Debater 1"},
		{ID: "debater_12", Name: "Debater 12"},
		{ID: "ana", Name: "Ana"},
		{ID: "ana_lima", Name: "Ana Lima"},
		{ID: "bo", Name: "Bo Chen"},
		{ID: "cy", Name: "Dee"},
		{ID: "dee", Name: "Cy"},
		{ID: "t_1", Name: "Twin"},
		{ID: "t_2", Name: "Twin"},
	}
	s := &state{cfg: &Config{Select: &Select{End: "DONE"}}, node: &spec.NodePlan{Agents: agents}, index: map[string]int{}}
	for i, a := range agents {
		s.participants = append(s.participants, value.Participant{ID: a.ID, Name: a.Name})
		s.index[a.ID] = i
	}
	s.participants[4].Withdrawn = true
	s.last = "ana"
	var candidates []value.Participant
	for _, p := range s.participants {
		if p.ID != "ana" && !p.Withdrawn {
			candidates = append(candidates, p)
		}
	}
	for _, tc := range []struct{ reply, want, err string }{
		{"debater_1", "debater_1", ""},
		{" 'Debater 1.' ", "debater_1", ""},
		{"DEBATER-12", "debater_12", ""},
		{"**Ana Lima**", "ana_lima", ""},
		{"I would pick debater 12 now.", "debater_12", ""},
		{"Next: Ana Lima, who has not spoken.", "ana_lima", ""}, // "Ana" inside "Ana Lima" is no mention of ana
		{"done", "", ""},
		{"We are done here.", "", ""},
		{"Debater 1 or debater 12", "", "your reply names debater_1 and debater_12: name exactly one of debater_1, debater_12, ana_lima, cy, dee, t_1, t_2 (or DONE to end the conversation)"},
		{"debater 1, then DONE", "", "your reply names debater_1 and DONE"},
		{"Ana", "", "ana has just spoken and may not speak twice in a row"},
		{"Bo Chen", "", "bo has withdrawn from the conversation"},
		{"Debater 3", "", "your reply names none of the participants who may speak next"},
		{"", "", "your reply names none"},
		{"dee", "dee", ""}, // an id before another's name
		{"CY", "cy", ""},
		{"I choose cy.", "cy", ""},
		{"Twin", "", `"Twin" is the name of t_1 and t_2: reply with the id of one of`},
		{"t_2", "t_2", ""},
	} {
		got, ends, err := s.readChoice(tc.reply, candidates)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: got %q, %v; want the error %q", tc.reply, got, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.reply, err)
		case tc.err == "" && (got != tc.want || ends != (tc.want == "")):
			t.Errorf("%q: got %q (ends %v), want %q", tc.reply, got, ends, tc.want)
		}
	}
}
