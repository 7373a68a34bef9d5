package difffuzz

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes/converse"
	"github.com/debate-runner/runner/spec"
)

// TestRepliesFitConversations: under every profile, the fuzzer's reply to
// a conversation's turn (its shape from converse.MessageShape) is a
// message the conversation accepts (converse.ParseMessage): the replies
// the fuzzer holds a spec to are replies a model may send. Conversations
// are drawn at random: agents, verdict options, reasons needed or not, a
// verdict due now or not, a verdict given before or not. The empty
// profile's <Content></Content> was refused by every conversation in tags
// format (regress/fixed/flow-accepted-reply-failing-24dd1217597e.yaml).
func TestRepliesFitConversations(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for trial := 0; trial < 400; trial++ {
		var agents []*spec.AgentPlan
		for i := 0; i < 2+rng.Intn(3); i++ {
			agents = append(agents, &spec.AgentPlan{ID: fmt.Sprintf("a%d", i), Name: fmt.Sprintf("Agent %d", i)})
		}
		var options []string
		for i := rng.Intn(4); i > 0; i-- {
			options = append(options, pick(rng, []string{"approve", "reject", "A", "B", "undecided yet"}))
		}
		// a verdict is due only where there are options to give
		reasoning, mustDecide, had := rng.Intn(2) == 0, len(options) > 0 && rng.Intn(2) == 0, rng.Intn(2) == 0
		shape := converse.MessageShape("tags", options, reasoning, mustDecide)
		for _, p := range Profiles {
			g := &replyGen{p: p, n: trial}
			reply := g.Reply(shape, "t1/a0")
			if _, err := converse.ParseMessage(reply, agents, agents[0].ID, options, reasoning, had, mustDecide); err != nil {
				t.Fatalf("profile %s, options %q, reasoning %v, must decide %v: the reply %q is refused: %v", p, options, reasoning, mustDecide, reply, err)
			}
		}
	}
	// a person's answer at a seat is not empty either
	tr := &transport{gen: &replyGen{p: Empty}}
	if a := tr.answer("Your turn"); strings.TrimSpace(a) == "" {
		t.Fatalf("the empty profile's answer to a person's turn is empty: %q", a)
	}
}
