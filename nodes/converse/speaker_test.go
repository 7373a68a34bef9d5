package converse_test

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

const chatterSpec = "testdata/chatter.yaml"

// chatter is testdata/chatter.yaml with another speaker strategy and
// whisper-reply chance.
func chatter(t *testing.T, speaker string, replyToWhisper float64) *spec.Plan {
	t.Helper()
	return variant(t, chatterSpec,
		"speaker: least_spoken", "speaker: "+speaker,
		"reply_to_whisper: 0.8", fmt.Sprintf("reply_to_whisper: %v", replyToWhisper))
}

// plain says something to everyone.
func plain(c call) string {
	return turn{Content: fmt.Sprintf("%s speaks at turn %d", c.Speaker, c.Turn)}.String()
}

// whisperNext whispers to the next agent of a, b, c, d (d to a).
func whisperNext(c call) string {
	next := map[string]string{"a": "b", "b": "c", "c": "d", "d": "a"}[c.Speaker]
	return turn{To: next, Whisper: true, Content: fmt.Sprintf("psst %s, from %s at %d", next, c.Speaker, c.Turn)}.String()
}

func talk(t *testing.T, plan *spec.Plan, reply func(call) string, seed int64, turns int) outcome {
	t.Helper()
	return execute(t, plan, scripted(t, plan, reply), flags{Seed: seed, Sets: []string{fmt.Sprintf("turns=%d", turns)}}).must(t)
}

func TestRoundRobin(t *testing.T) {
	for _, reply := range []struct {
		name   string
		script func(call) string
	}{{"plain", plain}, {"whispers", whisperNext}} {
		t.Run(reply.name, func(t *testing.T) {
			// With reply_to_whisper 0 whispers do not change the order.
			o := talk(t, chatter(t, "round_robin", 0), reply.script, 1, 9)
			if got, want := strings.Join(o.speakers("talk"), " "), "a b c d a b c d a"; got != want {
				t.Errorf("speakers %q, want %q", got, want)
			}
			for i, c := range o.calls() {
				if c.Turn != i+1 {
					t.Errorf("call %d asked for turn %d", i+1, c.Turn)
				}
			}
		})
	}
}

// TestWithdrawnAndAlone: withdrawn members are skipped, and the last active
// member speaks on alone, turn after turn, until it withdraws too.
func TestWithdrawnAndAlone(t *testing.T) {
	for _, strategy := range []string{"round_robin", "least_spoken", "random"} {
		t.Run(strategy, func(t *testing.T) {
			plan := variant(t, "testdata/panel.yaml", "speaker: round_robin", "speaker: "+strategy)
			var mu sync.Mutex
			spoken := map[string]int{}
			withdrawAt := map[string]int{"ana": 1, "bo": 2, "cy": 4}
			o := execute(t, plan, scripted(t, plan, func(c call) string {
				mu.Lock()
				defer mu.Unlock()
				spoken[c.Goal+c.Speaker]++
				if spoken[c.Goal+c.Speaker] >= withdrawAt[c.Speaker] {
					return turn{Content: "done", Verdict: "YES", Reasoning: "enough", Withdrawn: "true"}.String()
				}
				return turn{Content: "more to say", Withdrawn: "false"}.String()
			}), flags{Seed: 3}).must(t)
			for _, goal := range []string{"first", "second"} {
				var seq []string
				for _, m := range o.turns("panel") {
					if m.Goal == goal {
						seq = append(seq, m.From)
					}
				}
				if len(seq) != 7 {
					t.Fatalf("goal %s: speakers %v, want 7 turns", goal, seq)
				}
				// Ana never speaks after withdrawing, and once bo withdrew cy
				// speaks alone, turn after turn.
				if slices.Index(seq, "ana") != lastIndex(seq, "ana") {
					t.Errorf("goal %s: ana spoke after withdrawing: %v", goal, seq)
				}
				if b := lastIndex(seq, "bo"); b > 4 || !slices.Equal(seq[b+1:], slices.Repeat([]string{"cy"}, 6-b)) {
					t.Errorf("goal %s: %v does not end with cy alone", goal, seq)
				}
				if strategy == "round_robin" && strings.Join(seq, " ") != "ana bo cy bo cy cy cy" {
					t.Errorf("goal %s: round robin order %v", goal, seq)
				}
			}
			for _, e := range o.eventsOf("conversation_ended") {
				if !strings.Contains(string(e.Data), "everyone withdrew") {
					t.Errorf("conversation ended with %s", e.Data)
				}
			}
		})
	}
}

func lastIndex(s []string, v string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == v {
			return i
		}
	}
	return -1
}

func TestRandomIsSeeded(t *testing.T) {
	plan := chatter(t, "random", 0.8)
	run := func(seed int64) []string { return talk(t, plan, plain, seed, 40).speakers("talk") }
	one, again, other := run(1), run(1), run(2)
	if !slices.Equal(one, again) {
		t.Errorf("the same seed gave different speakers:\n%v\n%v", one, again)
	}
	if slices.Equal(one, other) {
		t.Errorf("seeds 1 and 2 gave the same speakers: %v", one)
	}
	counts := map[string]int{}
	for i, s := range one {
		counts[s]++
		if i > 0 && one[i-1] == s {
			t.Errorf("%s spoke twice in a row at turn %d", s, i+1)
		}
	}
	if len(counts) != 4 {
		t.Errorf("not everyone spoke in 40 random turns: %v", counts)
	}
}

// TestLeastSpoken checks over many turns that the speaker never repeats and
// that the choice favours the quiet: far more often than a uniform choice
// would, the speaker is one of the candidates who had spoken least.
func TestLeastSpoken(t *testing.T) {
	const turns = 240
	speakers := talk(t, chatter(t, "least_spoken", 0.8), plain, 11, turns).speakers("talk")
	if len(speakers) != turns {
		t.Fatalf("%d turns, want %d", len(speakers), turns)
	}
	counts := map[string]int{"a": 0, "b": 0, "c": 0, "d": 0}
	quietest, uniform := 0.0, 0.0
	for i, s := range speakers {
		if i > 0 && speakers[i-1] == s {
			t.Fatalf("%s spoke twice in a row at turn %d", s, i+1)
		}
		// Candidates are everyone but the last speaker.
		min, atMin, n := math.MaxInt, 0, 0
		for id, c := range counts {
			if i > 0 && id == speakers[i-1] {
				continue
			}
			n++
			switch {
			case c < min:
				min, atMin = c, 1
			case c == min:
				atMin++
			}
		}
		if counts[s] == min {
			quietest++
		}
		uniform += float64(atMin) / float64(n)
		counts[s]++
	}
	quietest /= turns
	uniform /= turns
	lo, hi := math.MaxInt, 0
	for _, c := range counts {
		lo, hi = min(lo, c), max(hi, c)
	}
	t.Logf("least_spoken over %d turns: counts %v; the speaker was among the quietest candidates %.0f%% of turns (a uniform choice: %.0f%%)", turns, counts, 100*quietest, 100*uniform)
	if quietest < uniform+0.2 {
		t.Errorf("the quietest candidates spoke %.2f of turns, not clearly more than a uniform choice (%.2f)", quietest, uniform)
	}
	if hi-lo > 3 {
		t.Errorf("turn counts drifted apart: %v", counts)
	}
}

func TestSpeakerExpr(t *testing.T) {
	plan := chatter(t, `{expr: 'turn % 3 == 2 ? "d" : "b"'}`, 0.8)
	if got, want := strings.Join(talk(t, plan, plain, 1, 6).speakers("talk"), " "), "b b d b b d"; got != want {
		t.Errorf("speakers %q, want %q", got, want)
	}
	// An expression over the conversation's state: the one who spoke least,
	// ties broken by declaration order.
	plan = chatter(t, `{expr: 'reduce(participants, #acc == nil || #.turns < #acc.turns ? # : #acc, nil).id'}`, 0.8)
	if got, want := strings.Join(talk(t, plan, plain, 1, 8).speakers("talk"), " "), "a b c d a b c d"; got != want {
		t.Errorf("speakers %q, want %q", got, want)
	}
	// A constant that is no participant is caught by validate...
	text, err := os.ReadFile(chatterSpec)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(text), "speaker: least_spoken", `speaker: {expr: '"zed"'}`, 1)
	if _, diags := spec.Compile("chatter.yaml", []byte(src), nodes.Registry()); !strings.Contains(diags.Format(), `speaker: "zed" is not one of a, b, c, d`) {
		t.Errorf("validate of a constant non-participant speaker says:\n%s", diags.Format())
	}
	// ...and a computed one when the run gets to it.
	plan = chatter(t, `{expr: 'speakers[0] + "ed"'}`, 0.8)
	o := execute(t, plan, scripted(t, plan, plain), flags{Seed: 1})
	if o.err == nil || !strings.Contains(o.err.Error(), `chose aed, which is not a participant`) {
		t.Errorf("err = %v, want the unknown speaker named", o.err)
	}
	if o.srv.Count() != 0 {
		t.Errorf("%d model calls after a bad speaker choice", o.srv.Count())
	}
}

// TestReplyToWhisper: after a whisper its target speaks next with the
// configured chance. The speaker expression never picks the target itself,
// so every time the target speaks it is the whisper rule that chose it.
func TestReplyToWhisper(t *testing.T) {
	const others = `{expr: 'filter(speakers, {# != last.from && # != last.to})[0]'}`
	rate := func(chance float64, seeds []int64, turns int) (hits, trials int) {
		plan := chatter(t, others, chance)
		for _, seed := range seeds {
			msgs := talk(t, plan, whisperNext, seed, turns).turns("talk")
			for i := 1; i < len(msgs); i++ {
				if !msgs[i-1].Whisper {
					t.Fatalf("turn %d is not a whisper: %+v", i, msgs[i-1])
				}
				trials++
				if msgs[i].From == msgs[i-1].To {
					hits++
				}
			}
		}
		return hits, trials
	}
	if hits, trials := rate(1, []int64{1, 2}, 20); hits != trials {
		t.Errorf("reply_to_whisper 1: the target answered %d of %d whispers", hits, trials)
	}
	if hits, trials := rate(0, []int64{1, 2}, 20); hits != 0 {
		t.Errorf("reply_to_whisper 0: the target answered %d of %d whispers", hits, trials)
	}
	hits, trials := rate(0.8, []int64{1, 2, 3}, 100)
	got := float64(hits) / float64(trials)
	t.Logf("reply_to_whisper 0.8: the target answered %d of %d whispers (%.3f)", hits, trials, got)
	// Three standard deviations of a binomial proportion over ~300 trials.
	if tol := 3 * math.Sqrt(0.8*0.2/float64(trials)); math.Abs(got-0.8) > tol {
		t.Errorf("reply rate %.3f, want 0.8 ± %.3f", got, tol)
	}
}
