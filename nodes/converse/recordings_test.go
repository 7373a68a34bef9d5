package converse_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/shared"
	"github.com/debate-runner/runner/nodes/converse"
	"github.com/debate-runner/runner/spec"
)

// recordingsDir holds console transcripts of chain-of-debate runs. They are
// shared data outside the module (never copied into it), in ../shared beside
// the checkout: the tests skip when it is absent, unless it is required
// (see internal/shared).
const recordingsDir = "data/chain-of-debate"

// recMessage is one message of a recorded transcript. Header fields are what
// the recording's framework made of the reply, so they are the ground truth
// the reply must parse to.
type recMessage struct {
	File       string
	Line       int    // 1-based line of the header
	Speaker    string // name as declared in the participant list
	To         string // addressee as written: "All", "[Board]", "dr. sarah open"
	Whisper    bool
	Verdict    string // "" when the header shows none
	Withdrawn  bool
	Reasoning  string // the reasoning the framework printed, "" when none
	Body       string // the raw reply
	TimeKeeper bool
	Conv       *recConversation
	Goal       string // the goal of a goal-chained conversation
}

func (m *recMessage) where() string { return fmt.Sprintf("%s:%d", m.File, m.Line) }

// recConversation is one conversation (or one session of a nested
// moderation panel) of a transcript.
type recConversation struct {
	Participants []string
	Options      []string
	Goals        []recGoal
	Messages     []*recMessage
	start        int
}

type recGoal struct{ ID, Description string }

// agents are the conversation's participants as agent plans.
func (c *recConversation) agents() []*spec.AgentPlan {
	out := make([]*spec.AgentPlan, len(c.Participants))
	for i, p := range c.Participants {
		out[i] = &spec.AgentPlan{ID: slug(p), Name: p}
	}
	return out
}

// recording is one transcript file.
type recording struct {
	File       string
	First      string // its first line, which names the framework's format
	Convs      []*recConversation
	TimeKeeper []*recMessage
	Skipped    int // messages by speakers who are no participant (rejection notices)
}

var (
	recHeader     = regexp.MustCompile(`^\[(\d+)\] (.*?) → (.*?)(?: \[VERDICT: ([^\]]*)\])?\s*:\s*$`)
	recTitle      = regexp.MustCompile(` \([^()]*\)$`)
	recMembers    = regexp.MustCompile(`^(?:Participants|Board Members): (.*)$`)
	recOptions    = regexp.MustCompile(`[A-Z][A-Z_]+(?:\s*\|\s*[A-Z][A-Z_]+)+`)
	recGoalLine   = regexp.MustCompile(`^🎯 CURRENT GOAL \((\d+)/(\d+)\): (\S+)`)
	recGoalDone   = regexp.MustCompile(`^🎯 GOAL COMPLETED: (\S+)`)
	recReasonLine = "    💭 Reasoning:"
	recTimestamp  = "    (timestamp:"
)

// slug turns a name into an agent id.
func slug(name string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if under && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			under = false
		} else {
			under = true
		}
	}
	return b.String()
}

// everyone reports whether an addressee means the whole conversation. A
// reply to the time keeper is public too, but keeps its addressee, as the
// recordings show it ("→ timekeeper").
func everyone(to string) bool {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(to), "[]")) {
	case "all", "board", "everyone":
		return true
	}
	return false
}

// loadRecordings reads every transcript, or skips the test when ../shared
// is absent.
func loadRecordings(t *testing.T) []*recording {
	t.Helper()
	dir := shared.Dir(t, recordingsDir)
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".txt") {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings under %s (%v)", dir, err)
	}
	sort.Strings(files)
	var recs []*recording
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, f)
		recs = append(recs, parseRecording(rel, string(data)))
	}
	// Files that declare no option list borrow the list of a recording of
	// the same format (the same first line).
	for _, r := range recs {
		for _, c := range r.Convs {
			if c.Options != nil {
				continue
			}
			for _, o := range recs {
				if o.First == r.First && len(o.Convs) > 0 && o.Convs[0].Options != nil {
					c.Options = o.Convs[0].Options
					break
				}
			}
		}
	}
	return recs
}

// parseRecording splits a transcript into conversations and messages.
func parseRecording(file, text string) *recording {
	lines := strings.Split(text, "\n")
	r := &recording{File: file, First: strings.TrimSpace(lines[0])}
	type optionList struct {
		line    int
		options []string
	}
	var lists []optionList
	goalsByCount := map[int]map[int]recGoal{}
	for i, l := range lines {
		if !strings.HasPrefix(l, "Participants: ") && !strings.HasPrefix(l, "Board Members: ") && !strings.Contains(l, "|") && !strings.HasPrefix(l, "🎯") {
			continue
		}
		if m := recMembers.FindStringSubmatch(l); m != nil {
			c := &recConversation{start: i}
			for _, p := range strings.Split(m[1], ",") {
				if p = strings.TrimSpace(p); p != "" && !strings.EqualFold(p, "TimeKeeper") {
					c.Participants = append(c.Participants, p)
				}
			}
			r.Convs = append(r.Convs, c)
		}
		if strings.Contains(l, "|") {
			if m := recOptions.FindString(l); m != "" {
				var opts []string
				for _, o := range strings.Split(m, "|") {
					opts = append(opts, strings.TrimSpace(o))
				}
				lists = append(lists, optionList{i, opts})
			}
		}
		if !strings.HasPrefix(l, "🎯") {
			continue
		}
		if m := recGoalLine.FindStringSubmatch(l); m != nil {
			var idx, n int
			fmt.Sscan(m[1], &idx)
			fmt.Sscan(m[2], &n)
			if goalsByCount[n] == nil {
				goalsByCount[n] = map[int]recGoal{}
			}
			desc := m[3]
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "Description: ") {
				desc = strings.TrimPrefix(lines[i+1], "Description: ")
			}
			goalsByCount[n][idx] = recGoal{ID: m[3], Description: desc}
		}
	}
	// Each conversation's options are the first list declared after it
	// starts (its time keeper's first reminder).
	for _, c := range r.Convs {
		for _, l := range lists {
			if l.line > c.start {
				c.Options = l.options
				break
			}
		}
		if c.Options == nil && len(lists) > 0 {
			c.Options = lists[0].options
		}
	}
	// The goal chain belongs to the first conversation: it is the chain
	// with the most goals (a moderation session has one).
	most := 0
	for n := range goalsByCount {
		most = max(most, n)
	}
	if len(r.Convs) > 0 && most > 0 {
		for i := 1; i <= most; i++ {
			r.Convs[0].Goals = append(r.Convs[0].Goals, goalsByCount[most][i])
		}
	}

	// Messages: a header, an optional (is_whisper=...) line, the raw reply,
	// then the framework's own "💭 Reasoning:" and "(timestamp: ...)" lines.
	goal, completing := 0, false
	var heads []int
	for i, l := range lines {
		if strings.HasPrefix(l, "[") && recHeader.MatchString(l) {
			heads = append(heads, i)
		}
	}
	next := func(i int) int {
		for _, h := range heads {
			if h > i {
				return h
			}
		}
		return len(lines)
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := recGoalDone.FindStringSubmatch(l); m != nil && len(r.Convs) > 0 {
			if g := r.Convs[0].Goals; goal < len(g) && g[goal].ID == m[1] {
				// The recording announces the completion just before the
				// message that completed the goal.
				completing = true
			}
			continue
		}
		if !strings.HasPrefix(l, "[") {
			continue
		}
		h := recHeader.FindStringSubmatch(l)
		if h == nil {
			continue
		}
		name := recTitle.ReplaceAllString(h[2], "")
		msg := &recMessage{File: r.File, Line: i + 1, To: strings.TrimSpace(h[3])}
		if v := h[4]; v != "" {
			parts := strings.Split(v, ",")
			msg.Verdict = strings.TrimSpace(parts[0])
			msg.Withdrawn = strings.Contains(v, "WITHDRAWN")
		}
		end := next(i)
		body := lines[i+1 : end]
		if len(body) > 0 && strings.HasPrefix(body[0], "(is_whisper=") {
			msg.Whisper = strings.TrimSpace(body[0]) == "(is_whisper=True)"
			body = body[1:]
		}
		cut, reason := len(body), []string(nil)
		for j, bl := range body {
			if strings.HasPrefix(bl, recReasonLine) || strings.HasPrefix(bl, recTimestamp) || strings.HasPrefix(bl, "🤔") {
				cut = j
				for k := j; k < len(body) && !strings.HasPrefix(body[k], recTimestamp); k++ {
					if strings.HasPrefix(body[k], "🤔") {
						break
					}
					reason = append(reason, body[k])
				}
				break
			}
		}
		msg.Body = strings.TrimSpace(strings.Join(body[:cut], "\n"))
		if len(reason) > 0 && strings.HasPrefix(reason[0], recReasonLine) {
			reason[0] = strings.TrimPrefix(reason[0], recReasonLine)
			msg.Reasoning = strings.TrimSpace(strings.Join(reason, "\n"))
		}
		if strings.Contains(strings.ToUpper(name), "TIMEKEEPER") {
			msg.TimeKeeper = true
			r.TimeKeeper = append(r.TimeKeeper, msg)
			continue
		}
		// The latest conversation that has this speaker.
		for k := len(r.Convs) - 1; k >= 0; k-- {
			c := r.Convs[k]
			if c.start > i {
				continue
			}
			for _, p := range c.Participants {
				if strings.EqualFold(p, name) {
					msg.Speaker, msg.Conv = p, c
				}
			}
			if msg.Conv != nil {
				break
			}
		}
		if msg.Conv == nil {
			r.Skipped++
			continue
		}
		if msg.Conv == r.Convs[0] && len(msg.Conv.Goals) > 0 {
			msg.Goal = msg.Conv.Goals[min(goal, len(msg.Conv.Goals)-1)].ID
			if completing {
				goal++
				completing = false
			}
		}
		msg.Conv.Messages = append(msg.Conv.Messages, msg)
	}
	return r
}

// addressed is a recorded reply with the addressee tags its header shows:
// the recording's framework printed them in the header instead of the reply.
func addressed(m *recMessage) string {
	to := m.To
	if everyone(to) {
		to = "All"
	}
	return fmt.Sprintf("<SpeakingTo>%s</SpeakingTo>\n<Whisper>%v</Whisper>\n%s", to, m.Whisper, m.Body)
}

// reasonKind shortens a rejection reason to its rule, for statistics.
func reasonKind(r string) string {
	for _, k := range []string{"names nobody", "not a valid verdict", "needs its reasons", "only withdraw after", "must be true or false", "needs one addressee", "no content", "cannot speak to yourself", "must give your verdict"} {
		if strings.Contains(r, k) {
			return k
		}
	}
	return r
}

// TestRecordedMessages parses every reply of the recordings with the
// recording's verdict options: each must give the verdict, withdrawal and
// reasoning its header and the framework's printout show. Malformed replies
// (the time keepers' scaffolds when copied as a reply, and real replies with
// their reasoning or verdict cut out) must be rejected with the rule they
// break.
func TestRecordedMessages(t *testing.T) {
	recs := loadRecordings(t)
	var parsed, verdicts, withdrawals, whispers, addressedTo, toKeeper, skipped, private int
	rejected := map[string]int{}
	for _, r := range recs {
		skipped += r.Skipped
		for _, c := range r.Convs {
			agents := c.agents()
			decided := map[string]bool{} // goal/speaker
			for _, m := range c.Messages {
				self := slug(m.Speaker)
				had := decided[m.Goal+"/"+self]
				for _, variant := range []string{"raw", "addressed"} {
					reply := m.Body
					if variant == "addressed" {
						reply = addressed(m)
					}
					p, err := converse.ParseMessage(reply, agents, self, c.Options, true, had, false)
					if err != nil {
						var rej *converse.Rejection
						if !errors.As(err, &rej) {
							t.Fatalf("%s: %v", m.where(), err)
						}
						for _, reason := range rej.Reasons {
							rejected[variant+": "+reasonKind(reason)]++
						}
						t.Errorf("%s (%s, %s): a reply the recording accepted is rejected: %v", m.where(), m.Speaker, variant, err)
						continue
					}
					if p.Verdict != m.Verdict || p.Withdrawn != m.Withdrawn {
						t.Errorf("%s (%s): parsed verdict %q withdrawn %v, the header says %q %v", m.where(), m.Speaker, p.Verdict, p.Withdrawn, m.Verdict, m.Withdrawn)
					}
					if m.Verdict != "" && oneLine(p.Reasoning) != oneLine(m.Reasoning) {
						t.Errorf("%s: reasoning\n%q\nthe recording printed\n%q", m.where(), p.Reasoning, m.Reasoning)
					}
					for _, tag := range []string{"<PrivateThoughts", "<PrivatePredictions", "<Verdict", "<Withdrawn", "<SpeakingTo", "<Whisper"} {
						if strings.Contains(p.Content, tag) {
							t.Errorf("%s: content keeps %s", m.where(), tag)
						}
					}
					if privateText.MatchString(m.Body) && p.Private == "" {
						t.Errorf("%s: private thoughts lost", m.where())
					}
					if variant == "raw" {
						parsed++
						if p.Private != "" {
							private++
						}
						continue
					}
					if p.Whisper != m.Whisper {
						t.Errorf("%s: whisper %v, header says %v", m.where(), p.Whisper, m.Whisper)
					}
					if !everyone(m.To) {
						addressedTo++
						if p.To != slug(m.To) {
							t.Errorf("%s: addressee %q resolved to %q", m.where(), m.To, p.To)
						}
					}
					if p.To == converse.TimeKeeper {
						toKeeper++
					}
				}
				if m.Verdict != "" {
					verdicts++
					decided[m.Goal+"/"+self] = true
				}
				if m.Withdrawn {
					withdrawals++
				}
				if m.Whisper {
					whispers++
				}
			}
		}
	}
	if parsed < 350 || verdicts < 250 {
		t.Errorf("only %d replies (%d with verdicts) found: the transcript split is broken", parsed, verdicts)
	}
	if toKeeper == 0 {
		t.Error("no reply to the time keeper kept it as addressee; the recordings have replies \"→ timekeeper\"")
	}
	t.Logf("recorded replies: %d parsed as their headers say (%d verdicts, %d withdrawals, %d whispers, %d addressed to one member, %d of them to the time keeper, %d with private thoughts); %d rejection notices skipped; rejected: %v",
		parsed, verdicts, withdrawals, whispers, addressedTo, toKeeper, private, skipped, rejected)

	// Malformed replies made from the recordings.
	malformed := map[string]int{}
	check := func(what, reply string, c *recConversation, self string, had bool, want string) {
		t.Helper()
		_, err := converse.ParseMessage(reply, c.agents(), self, c.Options, true, had, false)
		var rej *converse.Rejection
		if !errors.As(err, &rej) {
			t.Errorf("%s: accepted, want a rejection for %q", what, want)
			return
		}
		found := false
		for _, r := range rej.Reasons {
			malformed[reasonKind(r)]++
			found = found || strings.Contains(r, want)
		}
		if !found {
			t.Errorf("%s: rejected for %q, want %q", what, rej.Reasons, want)
		}
	}
	scaffolds := 0
	for _, r := range recs {
		for _, tk := range r.TimeKeeper {
			// A time keeper's reminder spells out the scaffold with
			// placeholders; a model that copies it back gives no verdict
			// and a withdrawal that is neither true nor false.
			if !strings.Contains(tk.Body, "<Withdrawn>true|false</Withdrawn>") || len(r.Convs) == 0 {
				continue
			}
			scaffolds++
			c := r.Convs[0]
			check(tk.where()+" (time keeper scaffold)", tk.Body, c, slug(c.Participants[0]), false, `<Withdrawn> must be true or false, not "true|false"`)
		}
		for _, c := range r.Convs {
			decided := map[string]bool{}
			for _, m := range c.Messages {
				self := slug(m.Speaker)
				had := decided[m.Goal+"/"+self]
				if m.Verdict != "" {
					decided[m.Goal+"/"+self] = true
					check(m.where()+" without its reasoning", cutTag(m.Body, "VerdictReasoning"), c, self, had, "a verdict needs its reasons")
					check(m.where()+" with an unknown verdict", strings.Replace(m.Body, ">"+m.Verdict+"<", ">MAYBE_LATER<", 1), c, self, had, `"MAYBE_LATER" is not a valid verdict`)
				}
				if m.Withdrawn && !had {
					check(m.where()+" withdrawing without its first verdict", cutTag(m.Body, "Verdict"), c, self, had, "you can only withdraw after giving a verdict")
				}
				if !everyone(m.To) {
					check(m.where()+" to a stranger", "<SpeakingTo>Mr. Nobody</SpeakingTo><Whisper>true</Whisper>\n"+m.Body, c, self, had, `"Mr. Nobody" names nobody in this conversation`)
				}
			}
		}
	}
	if scaffolds == 0 {
		t.Error("no time keeper scaffolds found")
	}
	t.Logf("malformed replies made from the recordings: %d copied time keeper scaffolds; rejection reasons: %v", scaffolds, malformed)
}

// privateText finds non-empty private thoughts in a reply.
var privateText = regexp.MustCompile(`(?s)<PrivateThoughts[^>]*>\s*\S.*?</PrivateThoughts>`)

var tagElement = map[string]*regexp.Regexp{
	"Verdict":          regexp.MustCompile(`(?s)<Verdict(?:\s[^>]*)?>.*?</Verdict>`),
	"VerdictReasoning": regexp.MustCompile(`(?s)<VerdictReasoning(?:\s[^>]*)?>.*?</VerdictReasoning>`),
}

// cutTag removes every <name>...</name> element from a reply.
func cutTag(s, name string) string { return tagElement[name].ReplaceAllString(s, "") }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// replaySpec writes a spec that replays the goal chain of a recording: its
// participants, goals and verdict options, with the recorded speaker order
// of each goal in the goal's vars so that a speaker expression picks who
// spoke. Everything else (parsing, withdrawal, goal transitions) is the
// real machinery's.
func replaySpec(t *testing.T, r *recording) *spec.Plan {
	t.Helper()
	c := r.Convs[0]
	q := strconv.Quote
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: replay-%s\ninputs:\n  topic: {default: %s}\n", slug(r.File), q(r.First))
	b.WriteString("templates:\n  use: [chain-of-debate]\nverdicts:\n  recorded: [")
	for i, o := range c.Options {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(q(o))
	}
	b.WriteString("]\ngoals:\n")
	for _, g := range c.Goals {
		var order []string
		for _, m := range c.Messages {
			if m.Goal == g.ID {
				order = append(order, q(slug(m.Speaker)))
			}
		}
		fmt.Fprintf(&b, "  - id: %s\n    description: %s\n    vars: {order: [%s]}\n", g.ID, q(g.Description), strings.Join(order, ", "))
	}
	b.WriteString("agents:\n")
	var ids []string
	for _, p := range c.Participants {
		fmt.Fprintf(&b, "  %s: {name: %s}\n", slug(p), q(p))
		ids = append(ids, slug(p))
	}
	fmt.Fprintf(&b, `nodes:
  panel:
    kind: converse
    agents: [%s]
    speaker: {expr: 'goal.vars.order[turn]'}
    reply_to_whisper: 0
    message: {template: chain-of-debate/message}
    verdict: {options: verdicts.recorded, repair: 0}
    max_turns: 200
flow:
  - foreach: {in: goals, as: goal, do: [panel]}
`, strings.Join(ids, ", "))
	path := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return loadPlan(t, path)
}

// TestRecordedDebatesReplay feeds the replies of every goal-chained
// recording, in their recorded order, through a converse node: each turn
// must be recorded with the verdict, withdrawal, addressee and whisper its
// header shows, each goal must end exactly where the recording moved on
// (when everyone had withdrawn), whispers and private thoughts must stay
// out of other members' prompts, and result.json must keep every goal's
// verdicts.
func TestRecordedDebatesReplay(t *testing.T) {
	recs := loadRecordings(t)
	var mu sync.Mutex
	var files, turns, goals, whispers, verdicts int
	for _, r := range recs {
		if len(r.Convs) == 0 || len(r.Convs[0].Goals) == 0 {
			continue
		}
		files++
		t.Run(slug(r.File), func(t *testing.T) {
			t.Parallel()
			c := r.Convs[0]
			plan := replaySpec(t, r)
			byTurn := map[string]*recMessage{}
			perGoal := map[string]int{}
			for _, m := range c.Messages {
				perGoal[m.Goal]++
				byTurn[fmt.Sprintf("%s/%d", m.Goal, perGoal[m.Goal])] = m
			}
			o := execute(t, plan, scripted(t, plan, func(call call) string {
				m := byTurn[fmt.Sprintf("%s/%d", call.Goal, call.Turn)]
				if m == nil || call.Repair {
					t.Errorf("unexpected call: goal %s turn %d by %s (repair %v)", call.Goal, call.Turn, call.Speaker, call.Repair)
					return "<Content>?</Content>"
				}
				if call.Speaker != slug(m.Speaker) {
					t.Errorf("goal %s turn %d asked %s, the recording has %s", call.Goal, call.Turn, call.Speaker, m.Speaker)
				}
				return addressed(m)
			}), flags{Seed: 1})
			if o.err != nil {
				t.Fatalf("replay failed: %v", o.err)
			}
			got := o.turns("panel")
			if len(got) != len(c.Messages) {
				t.Fatalf("%d turns recorded, the recording has %d", len(got), len(c.Messages))
			}
			for i, m := range c.Messages {
				g := got[i]
				to := ""
				if !everyone(m.To) {
					to = slug(m.To)
				}
				if g.From != slug(m.Speaker) || g.Goal != m.Goal || g.Verdict != m.Verdict || g.Withdrawn != m.Withdrawn || g.Whisper != m.Whisper || g.To != to {
					t.Errorf("%s: recorded %s→%q goal %s verdict %q withdrawn %v whisper %v; the recording: %s→%q goal %s verdict %q withdrawn %v whisper %v",
						m.where(), g.From, g.To, g.Goal, g.Verdict, g.Withdrawn, g.Whisper, m.Speaker, m.To, m.Goal, m.Verdict, m.Withdrawn, m.Whisper)
				}
				if m.Verdict != "" && oneLine(g.Reasoning) != oneLine(m.Reasoning) {
					t.Errorf("%s: reasoning %q, the recording printed %q", m.where(), g.Reasoning, m.Reasoning)
				}
			}
			ends := o.ends(t)
			if len(ends) != len(c.Goals) {
				t.Fatalf("%d conversations for %d goals", len(ends), len(c.Goals))
			}
			for i, e := range ends {
				if g := c.Goals[i].ID; e.Reason != "everyone withdrew" || e.Turns != perGoal[g] {
					t.Errorf("goal %s ended after %d turns by %q; the recording moved on after %d, when everyone had withdrawn", g, e.Turns, e.Reason, perGoal[g])
				}
			}
			checkSecrets(t, o)
			// Every goal's final verdicts are in the result.
			if len(o.res.GoalVerdicts) != len(c.Goals) {
				t.Errorf("verdicts of %d goals in the result, want %d", len(o.res.GoalVerdicts), len(c.Goals))
			}
			for _, gv := range o.res.GoalVerdicts {
				last := map[string]string{}
				for _, m := range c.Messages {
					if m.Goal == gv.Goal && m.Verdict != "" {
						last[slug(m.Speaker)] = m.Verdict
					}
				}
				if len(gv.Verdicts) != len(last) {
					t.Errorf("goal %s: %d verdicts in the result, the recording has %d", gv.Goal, len(gv.Verdicts), len(last))
				}
				for _, v := range gv.Verdicts {
					if last[v.Agent] != v.Verdict || !v.Withdrawn {
						t.Errorf("goal %s: %+v, the recording ends with %s", gv.Goal, v, last[v.Agent])
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			goals += len(c.Goals)
			for _, m := range got {
				turns++
				if m.Whisper {
					whispers++
				}
				if m.Verdict != "" {
					verdicts++
				}
			}
		})
	}
	t.Cleanup(func() {
		t.Logf("replayed %d recordings: %d turns over %d goals (%d whispers, %d verdicts), every goal ending when everyone had withdrawn", files, turns, goals, whispers, verdicts)
	})
	if files == 0 {
		t.Skip("no goal-chained recordings")
	}
}

// checkSecrets searches every prompt of a run for each whisper and private
// thought: only the sender (and a whisper's addressee) may have it.
func checkSecrets(t *testing.T, o outcome) {
	t.Helper()
	calls := o.calls()
	for _, m := range o.res.Messages {
		if !m.Whisper && !m.Private || len(m.Content) < 40 {
			continue
		}
		for _, c := range calls {
			if c.Speaker == m.From || m.Whisper && c.Speaker == m.To {
				continue
			}
			if strings.Contains(c.User, m.Content) || strings.Contains(c.System, m.Content) {
				t.Errorf("%s of %s (turn %d, goal %s) is in %s's prompt", m.Record, m.From, m.Turn, m.Goal, c.Speaker)
			}
		}
	}
}
