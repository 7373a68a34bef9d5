package converse_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/dryrun"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/spec/value"
)

const rollingSpec = "testdata/rolling.yaml"

var (
	shownMsg    = regexp.MustCompile(`(?m)^MSG (\d+) (\S+): (.*)$`)
	summaryUpTo = regexp.MustCompile(`SUM (\S+) upto (\d+)`)
	condensing  = regexp.MustCompile(`^CONDENSE (\S+) in`)
	replyMark   = regexp.MustCompile(`R(\d+)-`)
)

// rollingCase is one generated conversation: its length, threshold, how
// many messages a summary keeps, and the seed of its replies' lengths.
type rollingCase struct {
	turns, over, keep, longest int
	seed                       uint64
	// thread gives each speaker its own chat thread.
	thread bool
}

func (c rollingCase) String() string {
	return fmt.Sprintf("turns=%d over_chars=%d keep=%d longest=%d seed=%d thread=%v", c.turns, c.over, c.keep, c.longest, c.seed, c.thread)
}

// replyLen is the length of turn n's reply: from 4 to longest characters,
// fixed by the case's seed.
func (c rollingCase) replyLen(n int) int {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d", c.seed, n)
	return 4 + int(h.Sum64()%uint64(c.longest-3))
}

// rollingHandler answers turns with "R<turn>-" and padding, and summaries
// with "SUM <agent> upto <last turn they cover>", read from the turns the
// summary prompt shows (the earlier summary's included).
func rollingHandler(c rollingCase) llmtest.Handler {
	return func(r llmtest.Request) llmtest.Reply {
		user := r.LastUser()
		if m := condensing.FindStringSubmatch(user); m != nil {
			last := 0
			for _, x := range replyMark.FindAllStringSubmatch(user, -1) {
				last = max(last, atoi(x[1]))
			}
			for _, x := range summaryUpTo.FindAllStringSubmatch(user, -1) {
				last = max(last, atoi(x[2]))
			}
			return llmtest.Reply{Content: fmt.Sprintf("SUM %s upto %d", m[1], last)}
		}
		n := atoi(markerTurn.FindStringSubmatch(user)[1])
		text := fmt.Sprintf("R%d-", n)
		return llmtest.Reply{Content: text + strings.Repeat("x", max(c.replyLen(n)-len(text), 0))}
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// TestRollingSummaries runs generated conversations of testdata/rolling.yaml
// against the local server and checks the rule of a conversation's own
// summaries on every request: a speaker sees its latest summary and then
// exactly the messages after the turn it reaches, in order, whose
// characters stay under over_chars; every summary takes in the one before
// and continues it without a gap; each is a call of its own with a summary
// event and a private record; and the dry run plans at least as many.
func TestRollingSummaries(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 8))
	for i := range 10 {
		c := rollingCase{turns: 1 + rng.IntN(30), over: 20 + rng.IntN(300), keep: rng.IntN(4), longest: 8 + rng.IntN(160), seed: rng.Uint64(), thread: i%2 == 1}
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Logf("case %s", c)
			plan := variant(t, rollingSpec,
				"default: 12,", fmt.Sprintf("default: %d,", c.turns),
				"over_chars: 300", fmt.Sprintf("over_chars: %d", c.over),
				"keep: 2", fmt.Sprintf("keep: %d", c.keep),
				"max_chars: 120", "max_chars: 60",
				"speaker: round_robin", map[bool]string{true: "speaker: round_robin\n    thread: talk", false: "speaker: round_robin"}[c.thread])
			o := execute(t, plan, rollingHandler(c), flags{Seed: 1}).must(t)
			checkRolling(t, c, o)
			rep, err := dryrun.Run(plan, dryrun.Options{Given: launch.Given{}})
			if err != nil {
				t.Fatal(err)
			}
			summaries := len(o.eventsOf("summary"))
			t.Logf("%d turns, %d summaries, the dry run plans %d calls", c.turns, summaries, rep.Calls)
			if rep.Calls < c.turns+summaries {
				t.Errorf("the dry run plans %d calls; the run made %d turns and %d summaries", rep.Calls, c.turns, summaries)
			}
		})
	}
}

func checkRolling(t *testing.T, c rollingCase, o outcome) {
	t.Helper()
	// upto is each agent's latest summary: the last turn it covers.
	upto := map[string]int{}
	summaryCalls := 0
	// With threads: each agent's turns so far, whether a summary was just
	// made for it, and the turn its latest summary was made before.
	spoke := map[string][]int{}
	pending := map[string]bool{}
	madeAt := map[string]int{}
	contents := map[int]string{}
	for _, m := range o.turns("talk") {
		contents[m.Turn] = m.Content
	}
	for _, r := range o.srv.Requests() {
		user := r.LastUser()
		if m := condensing.FindStringSubmatch(user); m != nil {
			summaryCalls++
			agent := m[1]
			// It takes in the speaker's earlier summary, and the turns
			// after it with no gap.
			if prev := upto[agent]; prev > 0 && !strings.Contains(user, fmt.Sprintf("SUM %s upto %d", agent, prev)) {
				t.Errorf("request %d: %s's summary does not take in its earlier one (upto %d):\n%s", r.N, agent, prev, user)
			}
			marks := replyMark.FindAllStringSubmatch(user, -1)
			for k, x := range marks {
				if want := upto[agent] + 1 + k; atoi(x[1]) != want {
					t.Errorf("request %d: %s's summary covers turn %s where turn %d comes next:\n%s", r.N, agent, x[1], want, user)
					break
				}
			}
			if len(marks) > 0 {
				upto[agent] = atoi(marks[len(marks)-1][1])
			}
			pending[agent] = true
			continue
		}
		cl := parseCall(o.plan, r)
		if pending[cl.Speaker] {
			madeAt[cl.Speaker], pending[cl.Speaker] = cl.Turn, false
		}
		if c.thread {
			// The thread's turns the latest summary stands for are left out.
			pairs := 0
			for _, n := range spoke[cl.Speaker] {
				if n >= madeAt[cl.Speaker] {
					pairs++
				}
			}
			if want := 1 + 2*pairs + 1; len(r.Messages) != want {
				t.Errorf("turn %d: %s's request has %d messages, want %d (system, %d thread turns since its summary, prompt)", cl.Turn, cl.Speaker, len(r.Messages), want, pairs)
			}
		}
		spoke[cl.Speaker] = append(spoke[cl.Speaker], cl.Turn)
		shown := shownMsg.FindAllStringSubmatch(user, -1)
		sum := summaryUpTo.FindStringSubmatch(user)
		from := 1
		if sum != nil {
			if sum[1] != cl.Speaker || atoi(sum[2]) != upto[cl.Speaker] {
				t.Errorf("turn %d: %s's prompt shows %q; its latest summary reaches turn %d", cl.Turn, cl.Speaker, sum[0], upto[cl.Speaker])
			}
			from = atoi(sum[2]) + 1
		} else if upto[cl.Speaker] > 0 {
			t.Errorf("turn %d: %s's prompt shows no summary; it has one up to turn %d", cl.Turn, cl.Speaker, upto[cl.Speaker])
		}
		if len(shown) != cl.Turn-from {
			t.Errorf("turn %d: %s sees %d messages; after its summary (turn %d) there are %d", cl.Turn, cl.Speaker, len(shown), from-1, cl.Turn-from)
		}
		size := 0
		for k, m := range shown {
			if atoi(m[1]) != from+k || m[3] != contents[from+k] {
				t.Errorf("turn %d: message %d shown is %q, want turn %d", cl.Turn, k+1, m[0], from+k)
			}
			size += utf8.RuneCountInString(m[3])
		}
		if size >= c.over {
			t.Errorf("turn %d: %s sees %d characters of messages, not under over_chars %d", cl.Turn, cl.Speaker, size, c.over)
		}
	}
	events := o.eventsOf("summary")
	records := o.byRecord("summary")
	if len(events) != summaryCalls || len(records) != summaryCalls {
		t.Errorf("%d summary calls, %d summary events, %d summary records", summaryCalls, len(events), len(records))
	}
	keys := map[string]bool{}
	for _, e := range events {
		if keys[e.Key] {
			t.Errorf("two summaries journaled under %s", e.Key)
		}
		keys[e.Key] = true
	}
}

// TestRollingSummariesResume: a replay of a conversation that summarises
// itself, and a run of it that fails at a generated call (a turn's or a
// summary's) and is resumed, end with the messages the run recorded,
// summaries included: the summaries come from the recording or the
// journal, so the speakers' views are rebuilt as they were.
func TestRollingSummariesResume(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 9))
	c := rollingCase{turns: 18, over: 60, keep: 1, longest: 40, seed: 7, thread: true}
	plan := variant(t, rollingSpec, "default: 12,", "default: 18,", "over_chars: 300", "over_chars: 60", "keep: 2", "keep: 1",
		"speaker: round_robin", "speaker: round_robin\n    thread: talk")
	clean := execute(t, plan, rollingHandler(c), flags{Seed: 1}).must(t)
	want := fmt.Sprint(messageLines(clean.res.Messages))
	total := clean.srv.Count()
	// A replay of the run, with no endpoint, records the same.
	rec, _, _, err := runtime.LoadRecording(clean.run.Dir, false)
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t, func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Status: 400, ErrorMessage: "replays send nothing"}
	})
	r, err := runtime.Start(plan, runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Seed: new(int64(1))}, Recording: rec},
		Settings: runtime.Settings{RunsDir: runsDir(t), Getenv: envFor(srv.URL)},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background())
	if err != nil || srv.Count() != 0 {
		t.Fatalf("replay: %v, %d requests sent", err, srv.Count())
	}
	if got := fmt.Sprint(messageLines(res.Messages)); got != want {
		t.Errorf("the replay recorded\n%s\nwant\n%s", got, want)
	}
	for range 3 {
		failAt := 2 + rng.IntN(total-2)
		_, res, _ := failThenResume(t, plan, rollingHandler(c), failAt)
		if got := fmt.Sprint(messageLines(res.Messages)); got != want {
			t.Errorf("failed at call %d and resumed, the run recorded\n%s\nwant\n%s", failAt, got, want)
		}
	}
}

func messageLines(ms []value.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s/%s/%d/%v: %s", m.From, m.Record, m.Turn, m.Private, m.Content))
	}
	return out
}
