package llm

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// countingGate admits every attempt and counts admissions and leaves.
type countingGate struct {
	mu           sync.Mutex
	admits, left int
	tokens       []int
	refuse       error
	inside, most int
}

func (g *countingGate) Admit(ctx context.Context, tokens int) (func(), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refuse != nil {
		return nil, g.refuse
	}
	g.admits++
	g.tokens = append(g.tokens, tokens)
	g.inside++
	g.most = max(g.most, g.inside)
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.left++
		g.inside--
	}, nil
}

// TestGateAdmitsEveryAttempt: with a gate, each attempt (retries included)
// is admitted by it and left once over, and the client keeps none of the
// limits of its own that the gate holds instead.
func TestGateAdmitsEveryAttempt(t *testing.T) {
	s := newServer(t, reply{status: 503}, reply{content: "fine"})
	var sl sleeps
	g := &countingGate{}
	ep := endpoint(s, &sl)
	ep.Gate, ep.MaxConcurrency, ep.RequestsPerMinute, ep.TokensPerMinute = g, 1, 1, 1
	c := New(ep)
	if c.slots != nil || c.rate != nil {
		t.Fatal("a client with a gate keeps limits of its own")
	}
	resp, err := c.Complete(context.Background(), simple("m"), nil)
	if err != nil || resp.Content != "fine" {
		t.Fatalf("Complete = %q, %v", resp.Content, err)
	}
	if g.admits != 2 || g.left != 2 || len(g.tokens) != 2 || g.tokens[0] <= 0 {
		t.Errorf("gate admitted %d attempts (tokens %v) and saw %d leave; want 2 and 2", g.admits, g.tokens, g.left)
	}
	g.refuse = errors.New("gate closed")
	_, err = c.Complete(context.Background(), simple("m"), nil)
	if err == nil || !strings.Contains(err.Error(), "shared limits: gate closed") {
		t.Errorf("a refused admission gave %v", err)
	}
}
