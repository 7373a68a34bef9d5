package runtime

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/runtime/answers"
	"github.com/debate-runner/runner/runtime/history"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

// runState is what a run has recorded so far: its messages (with each
// agent's view of them), the results of the nodes that ran, usage, the
// warnings, questions, tool calls and rejections of the run, and the
// summaries made. Its lock guards every field but hist (which has its own)
// and contentBytes.
type runState struct {
	// hist is the record of messages with each agent's view of it and
	// indexes over them.
	hist *history.Store
	// contentBytes is the size of every recorded message's content.
	contentBytes atomic.Int64

	mu sync.Mutex
	// messages is hist's record so far (see messagesSoFar): it only grows,
	// and results is replaced (setResult) rather than changed, so prompts
	// and expressions share both without copying.
	messages []value.Message
	results  map[string]value.NodeResult
	// views are agent views by node (nil: every agent), made once.
	views map[*spec.NodePlan][]value.AgentView
	// recruited are the members recruit nodes made.
	recruited   recruitState
	usage       *usageBook
	occurrences map[string]int
	// evaluations counts node executions, against the plan's bound.
	evaluations int
	// iterations counts loop and foreach iterations, against the same.
	iterations int
	warnings   []string
	// drifted are the calls served from a recording or the journal
	// although their request changed (see noteDrift).
	drifted    []string
	warnedOnce map[string]bool
	waiting    []value.Question
	// answered are the questions answered in this attempt; questions.yaml
	// keeps them so that resuming with it answers every question again.
	answered []value.Question
	// turns are the turns of agents a person plays that this attempt
	// waits for (see seats).
	turns      []answers.Turn
	toolCalls  []result.ToolCallInfo
	rejections []result.Rejection
	// absences are the agents nodes completed without (ask's min_answers).
	absences []result.Absence
	// summaries caches summaries by agent and scope; pendingSummaries are
	// recorded as messages when the node that asked for them records.
	summaries        map[string]*summaryEntry
	pendingSummaries []value.Message
	callCounts       CallCounts
	// seenText are the SHA-256 of texts already in the journal, which
	// messages repeating them refer to.
	seenText map[[sha256.Size]byte]bool
}

// CallCounts returns where the run's calls were answered from so far.
func (r *Run) CallCounts() CallCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.callCounts
}

// countCall notes where a call was answered from ("" is the network).
func (r *Run) countCall(source string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch source {
	case "":
		r.callCounts.Network++
	case "cache":
		r.callCounts.Cache++
	case "shared":
		r.callCounts.Shared++
	case "replay":
		r.callCounts.Replay++
	case "journal":
		r.callCounts.Journal++
	case "human":
		r.callCounts.Human++
	}
}

// sampleKey is the sample discriminator of a call's cache key: the call key,
// extended by the sample index of a repeated run so repeats draw new samples.
func (r *Run) sampleKey(callKey string) string {
	if r.opts.Sample > 0 {
		return fmt.Sprintf("%s#sample%d", callKey, r.opts.Sample)
	}
	return callKey
}
