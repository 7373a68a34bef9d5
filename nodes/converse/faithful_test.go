package converse_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestCadencesOfTheOriginal runs testdata/faithful.yaml: the time keeper
// posts before the first turn of each goal and every 3 turns (the original
// "before turns 0, 3, 6" cadence, in every goal), and the moderation panel
// runs once 4 messages were posted since it last ran, counting the time
// keeper's posts as the original did. A NO_ACTION decision posts nothing;
// a redirect posts every agreeing moderator's reason, joined.
func TestCadencesOfTheOriginal(t *testing.T) {
	plan := loadPlan(t, "testdata/faithful.yaml")
	var mu sync.Mutex
	modCalls := 0
	o := execute(t, plan, scripted(t, plan, func(c call) string {
		if !strings.HasPrefix(c.Speaker, "m") {
			return silent(c)
		}
		mu.Lock()
		session := modCalls / 2
		modCalls++
		mu.Unlock()
		if session%2 == 0 {
			return turn{Content: "all fine", Verdict: "NO_ACTION", Reasoning: "on track", Withdrawn: "true"}.String()
		}
		return turn{Content: "steer", Verdict: "GENTLE_REDIRECT", Reasoning: fmt.Sprintf("REASON-%s-%d", c.Speaker, session+1), Withdrawn: "true"}.String()
	}), flags{Seed: 1}).must(t)

	var got []string
	for _, m := range o.res.Messages {
		if m.Node != "debate" {
			continue
		}
		switch m.Record {
		case "interjection":
			got = append(got, fmt.Sprintf("%s:keeper@%d", m.Goal, m.Turn))
		case "watch":
			got = append(got, fmt.Sprintf("%s:watch@%d[%s]", m.Goal, m.Turn, m.Content))
		case "message":
			got = append(got, fmt.Sprintf("%s:%s@%d", m.Goal, m.From, m.Turn))
		}
	}
	want := []string{}
	for g, goal := range []string{"g1", "g2"} {
		want = append(want,
			goal+":keeper@0", goal+":ann@1", goal+":ben@2", goal+":ann@3", goal+":keeper@3",
			goal+":ben@4", goal+":ann@5", goal+":ben@6", goal+":keeper@6",
			fmt.Sprintf("%s:watch@6[DECISION GENTLE_REDIRECT: REASON-m1-%d | REASON-m2-%d]", goal, 2*g+2, 2*g+2),
			goal+":ann@7")
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("debate messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var runs []string
	for _, e := range o.eventsOf("watch") {
		var w watchEvent
		if err := json.Unmarshal(e.Data, &w); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, fmt.Sprintf("%d:%s", w.Turn, w.Decision))
	}
	if fmt.Sprint(runs) != "[3:NO_ACTION 6:GENTLE_REDIRECT 3:NO_ACTION 6:GENTLE_REDIRECT]" {
		t.Errorf("watcher ran at %v, want after turns 3 and 6 of each goal (4 messages apart)", runs)
	}
}
