package spec

import "github.com/debate-runner/runner/spec/value"

// PromptData, for the tests of this package, is a dot with the fields of
// every kind's prompt data, as a stand-in for them.
type PromptData struct {
	value.PromptBase
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
	Extra        map[string]any
}
