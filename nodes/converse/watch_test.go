package converse_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// watchEvent is a journaled watch event.
type watchEvent struct {
	Watcher  string `json:"watcher"`
	Turn     int    `json:"turn"`
	Decision string `json:"decision"`
	Votes    int    `json:"votes"`
	Of       int    `json:"of"`
}

// TestWatcher runs testdata/watch.yaml: a moderation panel (itself a
// converse node) reviews the debate every 3 turns. In its first session two
// of three moderators ask for a redirect, and that decision is posted into
// the debate with the guidance; in its second session they split, and
// nothing is posted.
func TestWatcher(t *testing.T) {
	plan := loadPlan(t, "testdata/watch.yaml")
	var mu sync.Mutex
	modCalls := 0
	votes := [][3]string{
		{"GENTLE_REDIRECT", "GENTLE_REDIRECT", "NO_ACTION"},
		{"NO_ACTION", "GENTLE_REDIRECT", ""},
	}
	o := execute(t, plan, scripted(t, plan, func(c call) string {
		if !strings.HasPrefix(c.Speaker, "m") {
			return silent(c)
		}
		mu.Lock()
		n := modCalls
		modCalls++
		mu.Unlock()
		session, seat := n/3, n%3
		v := votes[session][seat]
		content := fmt.Sprintf("MODTALK-%s-%d", c.Speaker, session+1)
		if v == "" {
			return turn{Content: content}.String()
		}
		return turn{Content: content, Verdict: v, Reasoning: fmt.Sprintf("GUIDE-%s-%d: talk about flavour", c.Speaker, session+1), Withdrawn: "true"}.String()
	}), flags{Seed: 1}).must(t)

	var evs []watchEvent
	for _, e := range o.eventsOf("watch") {
		var w watchEvent
		if err := json.Unmarshal(e.Data, &w); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, w)
	}
	wantEvs := []watchEvent{{"moderation", 3, "GENTLE_REDIRECT", 2, 3}, {"moderation", 6, "", 0, 3}}
	if fmt.Sprint(evs) != fmt.Sprint(wantEvs) {
		t.Errorf("watch events %+v, want %+v (none after the last turn)", evs, wantEvs)
	}
	posted := o.byRecord("watch")
	if len(posted) != 1 {
		t.Fatalf("%d watch messages, want 1: %+v", len(posted), posted)
	}
	// The decision and the guidance of the latest moderator who voted for it
	// (chain-of-debate/watch).
	want := posted[0].Content
	if m := posted[0]; !strings.Contains(want, "GENTLE_REDIRECT") || !strings.Contains(want, "\nGUIDE-m2-1: talk about flavour\n") ||
		m.Turn != 3 || m.From != "moderation" || m.Goal != "taste" {
		t.Errorf("posted %+v, want the decision and m2's guidance at turn 3", m)
	}
	if got := strings.Join(o.speakers("debate"), " "); got != "ann ben cat ann ben cat ann ben cat" {
		t.Errorf("debate turns %s", got)
	}
	for _, c := range o.calls() {
		moderator := strings.HasPrefix(c.Speaker, "m")
		if !moderator && strings.Contains(c.User, "MODTALK") {
			t.Errorf("the moderators' discussion reached debater %s (turn %d)", c.Speaker, c.Turn)
		}
		if !moderator && c.Turn > 3 && !strings.Contains(c.User, "[3] Moderators to everyone:\n    "+strings.ReplaceAll(want, "\n", "\n    ")) {
			t.Errorf("debater %s at turn %d does not see the decision:\n%s", c.Speaker, c.Turn, c.User)
		}
		if moderator && !strings.Contains(c.User, "ann thinks aloud at 1") {
			t.Errorf("moderator %s does not see the debate:\n%s", c.Speaker, c.User)
		}
	}
	// The debate's verdict table does not mix in the moderators' votes.
	for _, gv := range o.res.GoalVerdicts {
		for _, v := range gv.Verdicts {
			if strings.HasPrefix(v.Agent, "m") && gv.Node != "moderation" {
				t.Errorf("moderator %s's verdict counted among %s's verdicts on goal %s", v.Agent, gv.Node, gv.Goal)
			}
		}
	}
}
