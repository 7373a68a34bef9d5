package converse_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

// testKey is the API key the tests configure; it must never reach a file.
const testKey = "sk-converse-test-0000"

// hiringPanel is the real example spec the tests run unchanged.
const hiringPanel = "../../examples/hiring-panel/spec.yaml"

// variant compiles a copy of a testdata spec with text replaced: pairs are
// old, new, old, new... Every old text must occur, so a test cannot silently
// run the unmodified spec after the file changed.
func variant(t testing.TB, path string, pairs ...string) *spec.Plan {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(text, pairs[i]) {
			t.Fatalf("%s does not contain %q", path, pairs[i])
		}
		text = strings.ReplaceAll(text, pairs[i], pairs[i+1])
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return loadPlan(t, out)
}

// envFor points the default endpoint at a scripted server.
func envFor(url string) func(string) string { return runtest.Env(url, testKey) }

var loadPlan = runtest.LoadPlan

// call is what a test script knows about one turn request.
type call struct {
	Speaker string // agent id
	Turn    int
	Goal    string
	Repair  bool // the prompt carries feedback on a rejected reply
	User    string
	System  string
	N       int
}

var (
	markerSpeaker = regexp.MustCompile(`SPEAKER=(\S+)`)
	markerTurn    = regexp.MustCompile(`(?:TURN=|\(turn )(\d+)`)
	markerGoal    = regexp.MustCompile(`(?m)(?:GOAL=|^## Current goal[^:]*: )(\S*)`)
	yourTurn      = regexp.MustCompile(`(?m)^## Your (?:turn|task), (.+)$`)
)

// parseCall reads speaker, turn and goal from a request. The small test
// specs put SPEAKER=, TURN= and GOAL= markers in their prompts; prompts of the
// chain-of-debate library are read by the speaker's name.
func parseCall(plan *spec.Plan, r llmtest.Request) call {
	c := call{User: r.LastUser(), N: r.N}
	for _, m := range r.Messages {
		if m.Role == "system" {
			c.System = m.Content
		}
	}
	if m := markerSpeaker.FindStringSubmatch(c.User); m != nil {
		c.Speaker = m[1]
	} else if m := yourTurn.FindStringSubmatch(c.User); m != nil {
		for _, a := range plan.Agents {
			if a.Name == strings.TrimSpace(m[1]) {
				c.Speaker = a.ID
			}
		}
	}
	if m := markerTurn.FindStringSubmatch(c.User); m != nil {
		c.Turn, _ = strconv.Atoi(m[1])
	}
	if m := markerGoal.FindStringSubmatch(c.User); m != nil {
		c.Goal = m[1]
	}
	c.Repair = strings.Contains(c.User, "previous reply was rejected") || strings.Contains(c.User, "FEEDBACK=Your last message")
	return c
}

// scripted answers every turn request with reply(call); replies may depend
// on the state the script keeps, since a conversation asks one turn at a time.
func scripted(t testing.TB, plan *spec.Plan, reply func(c call) string) llmtest.Handler {
	return func(r llmtest.Request) llmtest.Reply {
		c := parseCall(plan, r)
		if c.Speaker == "" {
			t.Errorf("request %d names no speaker:\n%s", r.N, c.User)
			return llmtest.Reply{Status: 500, ErrorMessage: "no speaker"}
		}
		return llmtest.Reply{Content: reply(c)}
	}
}

// turn is a reply in the tag scaffold. Empty fields are left out.
type turn struct {
	To        string
	Whisper   bool
	Content   string
	Private   string
	Verdict   string
	Reasoning string
	Withdrawn string // "true", "false" or "" for no tag
}

func (m turn) String() string {
	var b strings.Builder
	if m.To != "" {
		fmt.Fprintf(&b, "<SpeakingTo>%s</SpeakingTo>\n", m.To)
	}
	if m.Whisper {
		b.WriteString("<Whisper>true</Whisper>\n")
	}
	if m.Private != "" {
		fmt.Fprintf(&b, "<PrivateThoughts>%s</PrivateThoughts>\n", m.Private)
	}
	fmt.Fprintf(&b, "<Content>%s</Content>\n", m.Content)
	if m.Verdict != "" {
		fmt.Fprintf(&b, "<Verdict>%s</Verdict>\n", m.Verdict)
	}
	if m.Reasoning != "" {
		fmt.Fprintf(&b, "<VerdictReasoning>%s</VerdictReasoning>\n", m.Reasoning)
	}
	if m.Withdrawn != "" {
		fmt.Fprintf(&b, "<Withdrawn>%s</Withdrawn>\n", m.Withdrawn)
	}
	return b.String()
}

// outcome is a finished run with what the scripted server saw.
type outcome struct {
	run    *runtime.Run
	res    *result.Result
	err    error
	srv    *llmtest.Server
	plan   *spec.Plan
	events []journal.Event
}

// runsDir is where a test's run directories go: on tmpfs when the machine
// has one, because journals fsync every event and the statistical tests run
// hundreds of turns; else in the test's temporary directory.
func runsDir(t testing.TB) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "converse-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// flags are the command-line settings of a test run.
type flags struct {
	Seed   int64
	Inputs []string // NAME=VALUE
	Sets   []string // NAME=VALUE
}

// execute runs plan against handler and returns the result even when the
// run failed.
func execute(t testing.TB, plan *spec.Plan, h llmtest.Handler, f flags) outcome {
	t.Helper()
	srv := llmtest.New(t, h)
	r, err := runtime.Start(plan, runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Seed: &f.Seed, Inputs: f.Inputs, Sets: f.Sets}},
		Settings: runtime.Settings{RunsDir: runsDir(t), Getenv: envFor(srv.URL)},
		Seams:    runtime.Seams{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }},
	})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	res, err := r.Execute(context.Background())
	evs, jerr := journal.Read(filepath.Join(r.Dir, "journal.jsonl"))
	if jerr != nil {
		t.Fatalf("journal: %v", jerr)
	}
	return outcome{run: r, res: res, err: err, srv: srv, plan: plan, events: evs}
}

// must fails the test when the run did not run to its end (completed, or
// inconclusive: a conversation that ends without every verdict is what
// many of these tests are about).
func (o outcome) must(t testing.TB) outcome {
	t.Helper()
	if o.err != nil || !result.Finished(o.res.Status) {
		t.Fatalf("run %s: %v (status %s)", o.run.Dir, o.err, o.res.Status)
	}
	return o
}

// turns are the recorded turn messages of node, in order.
func (o outcome) turns(node string) []value.Message {
	var out []value.Message
	for _, m := range o.res.Messages {
		if m.Node == node && m.Record == "message" {
			out = append(out, m)
		}
	}
	return out
}

// byRecord are the recorded messages of one record kind.
func (o outcome) byRecord(record string) []value.Message {
	var out []value.Message
	for _, m := range o.res.Messages {
		if m.Record == record {
			out = append(out, m)
		}
	}
	return out
}

// eventsOf returns the journal events of one type.
func (o outcome) eventsOf(typ event.Type) []journal.Event {
	var out []journal.Event
	for _, e := range o.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// calls are the requests the server received, parsed.
func (o outcome) calls() []call {
	var out []call
	for _, r := range o.srv.Requests() {
		out = append(out, parseCall(o.plan, r))
	}
	return out
}

// speakers lists who spoke each turn of node.
func (o outcome) speakers(node string) []string {
	var out []string
	for _, m := range o.turns(node) {
		out = append(out, m.From)
	}
	return out
}

// readFile reads a file of the run directory.
func (o outcome) readFile(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(o.run.Dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// failThenResume runs plan against good, except that every call from the
// failAt-th on fails until the run has failed; then it resumes the run
// against good and checks it completes. It gives the failed run, the
// resumed run's result and how many requests the server had before the
// resume.
func failThenResume(t testing.TB, plan *spec.Plan, good llmtest.Handler, failAt int) (outcome, *result.Result, int) {
	t.Helper()
	var broken atomic.Bool
	broken.Store(true)
	o := execute(t, plan, func(r llmtest.Request) llmtest.Reply {
		if broken.Load() && r.N >= failAt {
			return llmtest.Reply{Status: 400, ErrorMessage: "bad request"}
		}
		return good(r)
	}, flags{Seed: 1})
	if o.err == nil {
		t.Fatal("the run with a failing endpoint completed")
	}
	broken.Store(false)
	before := o.srv.Count()
	r, err := runtime.Resume(o.run.Dir, nodes.Registry(), runtime.Options{Settings: runtime.Settings{Getenv: envFor(o.srv.URL)}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background())
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("resumed run: %v (status %s)", err, res.Status)
	}
	return o, res, before
}
