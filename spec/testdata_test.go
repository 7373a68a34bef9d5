package spec

// PromptData, for the tests of this package, is a dot with the fields of
// every kind's prompt data, as a stand-in for them.
type PromptData struct {
	PromptBase
	Target       Message
	Summary      string
	Own          Message
	Verdict      VerdictView
	Turn         int
	MaxTurns     int
	Participants []Participant
	Undecided    []string
	Questions    []Question
	MaxQuestions int
	Feedback     string
	Text         string
	Extra        map[string]any
}
