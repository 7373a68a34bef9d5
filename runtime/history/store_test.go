package history

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/debate-runner/runner/spec/value"
)

// The store must answer every helper exactly as spec's helpers would on the
// same slice: the same messages, nil where they give nil. check drives a
// store with a program of bytes (random in TestStoreMatchesSpec, fuzzed in
// FuzzStore) and compares each answer with spec's and with a plain model of
// the history.

var (
	agentIDs = []string{"a", "b", "c", "A", "timekeeper", ""}
	records  = []string{"answer", "critique", "message", "private", ""}
	goals    = []string{"", "g1", "g2"}
)

// checker runs one program against a store and a plain copy of its record.
type checker struct {
	t     testing.TB
	prog  []byte
	store *Store
	funcs template.FuncMap
	ref   template.FuncMap
	all   []value.Message // what was recorded, kept apart from the store
	// pool holds slices the store handed out or its helpers returned, and
	// cuts of them, for later steps to use.
	pool [][]*value.Message
	// indexed counts answers served from the store's lists, for the test
	// to see that the index is used rather than the fallback.
	indexed int
}

func (c *checker) next() int {
	if len(c.prog) == 0 {
		return 0
	}
	b := c.prog[0]
	c.prog = c.prog[1:]
	return int(b)
}

func (c *checker) pick(list []string) string { return list[c.next()%len(list)] }

func (c *checker) message() value.Message {
	m := value.Message{
		ID: "m" + strconv.Itoa(len(c.all)+1), Node: c.pick([]string{"n1", "n2"}),
		From: c.pick(agentIDs), Record: c.pick(records), Round: c.next() % 4, Goal: c.pick(goals),
		Content: "content " + strconv.Itoa(len(c.all)+1),
	}
	switch c.next() % 6 {
	case 0:
		m.To = c.pick(agentIDs)
	case 1:
		m.To, m.Whisper = c.pick(agentIDs), true
	case 2:
		m.Private = true
	}
	switch c.next() % 5 {
	case 0:
		m.Verdict, m.Reasoning = c.pick([]string{"YES", "NO"}), "because "+m.ID
	case 1:
		m.Withdrawn = true
	case 2:
		m.Verdict, m.Withdrawn = "NO", true
	}
	return m
}

// visible is who may see what, spelled out apart from Visible.
func visible(m value.Message, agent string) bool {
	switch {
	case m.Private:
		return strings.EqualFold(m.From, agent)
	case m.Whisper:
		return strings.EqualFold(m.From, agent) || strings.EqualFold(m.To, agent)
	}
	return true
}

func (c *checker) run() {
	for len(c.prog) > 0 {
		switch c.next() % 12 {
		case 8, 9:
			// A chain of helpers on a prompt's history, as templates write.
			history, _ := c.store.Seen(c.pick(agentIDs), c.next()%4, c.pick(goals))
			c.pool = append(c.pool, history)
			for range 1 + c.next()%3 {
				c.helper(len(c.pool) - 1)
			}
		case 10, 11:
			c.helper(-1)
		case 0, 1, 2:
			m := c.message()
			c.all = append(c.all, m)
			c.store.Append(m)
			if n := c.store.Len(); n != len(c.all) {
				c.t.Fatalf("Len() = %d after %d messages", n, len(c.all))
			}
		case 3:
			agent, round, goal := c.pick(agentIDs), c.next()%4, c.pick(goals)
			history, inbox := c.store.Seen(agent, round, goal)
			var want []value.Message
			for i := range c.all {
				if visible(c.all[i], agent) {
					want = append(want, c.all[i])
				}
			}
			if want == nil {
				want = []value.Message{}
			}
			c.same(fmt.Sprintf("history of %q", agent), history, ptrs(want))
			var wantInbox []value.Message
			for _, m := range want {
				if m.To == agent && m.Round == round && m.Goal == goal {
					wantInbox = append(wantInbox, m)
				}
			}
			c.same(fmt.Sprintf("inbox of %q in round %d of goal %q", agent, round, goal), inbox, ptrs(wantInbox))
			c.pool = append(c.pool, history, inbox)
		case 4:
			all := c.store.All()
			if !reflect.DeepEqual(all, append([]value.Message{}, c.all...)) || cap(all) != len(all) {
				c.t.Fatalf("All() after %d messages: %d messages, cap %d", len(c.all), len(all), cap(all))
			}
			c.pool = append(c.pool, ptrs(all))
		case 5:
			c.helper(-1)
		case 6:
			if len(c.pool) == 0 {
				continue
			}
			ms := c.pool[c.choose()]
			if len(ms) == 0 {
				continue
			}
			i, j := c.next()%len(ms), c.next()%(len(ms)+1)
			if c.next()%3 == 0 {
				c.pool = append(c.pool, ms[i:]) // not a prefix: the fallback answers
			} else {
				c.pool = append(c.pool, ms[:j])
			}
		case 7:
			// A slice nobody handed out, equal to one that was.
			if len(c.pool) > 0 {
				c.pool = append(c.pool, append([]*value.Message(nil), c.pool[c.choose()]...))
			}
		}
	}
}

// choose picks a slice of the pool, most often one of the latest.
func (c *checker) choose() int {
	n := c.next()
	if n%4 != 0 {
		return max(0, len(c.pool)-1-n%4)
	}
	return n % len(c.pool)
}

// helper applies one helper to the slice at index i of the pool (-1: one
// chosen by the program) and compares; a non-empty answer goes last in the
// pool.
func (c *checker) helper(i int) {
	if len(c.pool) == 0 {
		return
	}
	if i < 0 {
		i = c.choose()
	}
	ms := c.pool[i]
	arg := c.pick(agentIDs)
	name := c.pick([]string{"byRecord", "byFrom", "byTo", "notFrom", "inRound", "latest", "last", "count"})
	var got, want any
	var gotErr, wantErr error
	switch name {
	case "byRecord":
		arg = c.pick(records)
		got, gotErr = c.funcs[name].(func(string, value.MessageList) ([]*value.Message, error))(arg, ms)
		want, wantErr = c.ref[name].(func(string, value.MessageList) ([]*value.Message, error))(arg, ms)
	case "byFrom", "byTo", "notFrom":
		got, gotErr = c.funcs[name].(func(string, value.MessageList) ([]*value.Message, error))(arg, ms)
		want, wantErr = c.ref[name].(func(string, value.MessageList) ([]*value.Message, error))(arg, ms)
	case "inRound":
		r := c.next() % 4
		arg = strconv.Itoa(r)
		got, gotErr = c.funcs[name].(func(int, value.MessageList) ([]*value.Message, error))(r, ms)
		want, wantErr = c.ref[name].(func(int, value.MessageList) ([]*value.Message, error))(r, ms)
	case "latest":
		arg = ""
		got, gotErr = c.funcs[name].(func(value.MessageList) ([]*value.Message, error))(ms)
		want, wantErr = c.ref[name].(func(value.MessageList) ([]*value.Message, error))(ms)
	case "last":
		got, gotErr = c.funcs[name].(func(value.MessageList) (value.Message, error))(ms)
		want, wantErr = c.ref[name].(func(value.MessageList) (value.Message, error))(ms)
	case "count":
		got, gotErr = c.funcs[name].(func(value.MessageList) (int, error))(ms)
		want, wantErr = c.ref[name].(func(value.MessageList) (int, error))(ms)
	}
	if gotErr != nil || wantErr != nil {
		c.t.Fatalf("%s(%q): errors %v, %v", name, arg, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		c.t.Fatalf("%s(%q) of %d messages [%s]:\ngot  %s\nwant %s", name, arg, len(ms), ids(ms), describe(got), describe(want))
	}
	if out, ok := got.([]*value.Message); ok && len(out) > 0 {
		if name != "latest" {
			c.store.mu.Lock()
			if c.store.listOf(out) != nil {
				c.indexed++
			}
			c.store.mu.Unlock()
		}
		c.pool = append(c.pool, out)
	}
}

func (c *checker) same(what string, got, want []*value.Message) {
	if !reflect.DeepEqual(got, want) {
		c.t.Fatalf("%s after %d messages:\ngot  %s\nwant %s", what, len(c.all), describe(got), describe(want))
	}
	if cap(got) != len(got) {
		c.t.Fatalf("%s has cap %d > len %d: appending to it would write into the store", what, cap(got), len(got))
	}
}

// ptrs points to each message of ms; never nil for a non-nil ms.
func ptrs(ms []value.Message) []*value.Message {
	if ms == nil {
		return nil
	}
	out := make([]*value.Message, len(ms))
	for i := range ms {
		out[i] = &ms[i]
	}
	return out
}

func ids(ms []*value.Message) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return strings.Join(out, " ")
}

func describe(v any) string {
	if ms, ok := v.([]*value.Message); ok {
		if ms == nil {
			return "nil"
		}
		return fmt.Sprintf("%d: [%s]", len(ms), ids(ms))
	}
	return fmt.Sprintf("%+v", v)
}

func check(t testing.TB, prog []byte) *checker {
	s := New()
	c := &checker{t: t, prog: prog, store: s, funcs: s.Funcs(), ref: value.TemplateFuncs()}
	c.run()
	c.checkArrays()
	return c
}

// checkArrays checks that the store's index of backing arrays holds the
// current array of each list and nothing else: an array a list outgrew
// would stay in memory for as long as the run.
func (c *checker) checkArrays() {
	s := c.store
	s.mu.Lock()
	defer s.mu.Unlock()
	lists := 0
	var walk func(l *list)
	walk = func(l *list) {
		if l.ready && len(l.msgs) > 0 {
			lists++
			if s.arrays[&l.msgs[0]] != l {
				c.t.Fatalf("a list of %d messages is not found by its array", len(l.msgs))
			}
		}
		for _, fam := range l.fams {
			for _, k := range fam {
				walk(k)
			}
		}
		for _, k := range l.others {
			walk(k)
		}
	}
	walk(s.all)
	for _, v := range s.views {
		walk(v)
	}
	if len(s.arrays) != lists {
		c.t.Fatalf("%d arrays indexed for %d lists", len(s.arrays), lists)
	}
}

// TestStoreMatchesSpec runs random programs: histories of up to a few
// hundred messages of several agents (ids that differ in case only
// included), private messages, whispers, rounds and goals, read through
// prompts, helpers and chains of helpers, stale and cut slices.
func TestStoreMatchesSpec(t *testing.T) {
	indexed := 0
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		prog := make([]byte, 200+rng.IntN(1200))
		for i := range prog {
			prog[i] = byte(rng.UintN(256))
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			indexed += check(t, prog).indexed
		})
	}
	t.Logf("%d answers from the store's lists", indexed)
	if indexed == 0 {
		t.Error("no helper answered from the store's lists: every answer was the fallback's")
	}
}

func FuzzStore(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 5, 5, 5, 6, 5, 7, 5, 4, 5})
	f.Add([]byte("a program of bytes that records, reads and filters messages"))
	f.Fuzz(func(t *testing.T, prog []byte) { check(t, prog) })
}

// TestChainsStayIndexed: the library's chains, applied to a prompt's
// history, are answered from lists the store keeps, and asking again gives
// the very same lists: a prompt pays for its result, not for the history.
func TestChainsStayIndexed(t *testing.T) {
	s := New()
	byRecord, byTo, notFrom := helper(t, s, "byRecord"), helper(t, s, "byTo"), helper(t, s, "notFrom")
	f := s.Funcs()
	inRound := func(r int, ms []*value.Message) []*value.Message {
		out, err := f["inRound"].(func(int, value.MessageList) ([]*value.Message, error))(r, ms)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	latest := func(ms []*value.Message) []*value.Message {
		out, err := f["latest"].(func(value.MessageList) ([]*value.Message, error))(ms)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	agents := []string{"a", "b", "c"}
	for round := 1; round <= 50; round++ {
		for i, a := range agents {
			s.Append(value.Message{From: a, Record: "answer", Round: round, Content: "answer"})
			s.Append(value.Message{From: a, To: agents[(i+1)%3], Record: "critique", Round: round, Content: "critique"})
		}
		if round == 25 {
			s.Append(value.Message{From: "a", To: "b", Whisper: true, Round: round, Content: "psst"})
		}
		history, inbox := s.Seen("b", round, "")
		answers := latest(notFrom("b", byRecord("answer", history)))
		critiques := byTo("b", byRecord("critique", inRound(round, history)))
		if len(answers) != 2 || answers[0].From != "a" || answers[1].From != "c" || answers[0].Round != round {
			t.Fatalf("round %d: latest answers of the others %s", round, describe(answers))
		}
		if len(critiques) != 1 || critiques[0].From != "a" || !reflect.DeepEqual(critiques, byRecord("critique", inbox)) {
			t.Fatalf("round %d: critiques to b %s, inbox %s", round, describe(critiques), describe(inbox))
		}
		s.mu.Lock()
		l := s.listOf(critiques)
		s.mu.Unlock()
		if l == nil {
			t.Fatalf("round %d: the critiques are not one of the store's lists", round)
		}
		again := byTo("b", byRecord("critique", inRound(round, history)))
		if &again[0] != &critiques[0] || &latest(notFrom("b", byRecord("answer", history)))[0] != &answers[0] {
			t.Fatalf("round %d: asking again made new lists", round)
		}
	}
}

// TestTemplatesRenderAlike renders templates that use every helper with
// the store's helpers on the store's history and with spec's on a copy.
func TestTemplatesRenderAlike(t *testing.T) {
	const text = `{{define "t"}}{{range latest (notFrom .Agent (byRecord "answer" .History))}}[{{.From}} {{.Content}}]{{end}}
{{range byTo .Agent (byRecord "critique" (inRound .Round .History))}}<{{.From}}>{{end}}
{{with last (byFrom .Agent .History)}}{{.ID}}{{end}} {{count .History}} {{count .Inbox}}
{{range .History | inRound (sub .Round 1)}}{{.ID}} {{end}}{{end}}`
	plain := template.Must(template.New("").Funcs(value.TemplateFuncs()).Parse(text))
	s := New()
	bound := s.Templates(plain)
	rng := rand.New(rand.NewPCG(1, 2))
	type data struct {
		Agent          string
		Round          int
		History, Inbox []*value.Message
	}
	for i := range 400 {
		c := &checker{prog: []byte{byte(rng.UintN(256)), byte(rng.UintN(256)), byte(rng.UintN(256)), byte(rng.UintN(256)), byte(rng.UintN(256)), byte(rng.UintN(256))}}
		m := c.message()
		m.ID, m.Content = "m"+strconv.Itoa(i+1), "text "+strconv.Itoa(i)
		s.Append(m)
		agent := agentIDs[rng.IntN(3)]
		round := rng.IntN(4)
		history, inbox := s.Seen(agent, round, m.Goal)
		var got, want strings.Builder
		if err := bound.ExecuteTemplate(&got, "t", data{agent, round, history, inbox}); err != nil {
			t.Fatal(err)
		}
		copied := data{agent, round, ptrs(values(history)), ptrs(values(inbox))}
		if err := plain.ExecuteTemplate(&want, "t", copied); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("after %d messages, for %s:\n%s\nwant\n%s", i+1, agent, got.String(), want.String())
		}
	}
}

// TestRestrictionDropsListsOfTheRecord: lists filtered from the whole
// record while every message was public stop growing once prompts read
// agents' views, and a slice handed out before still gets right answers.
func TestRestrictionDropsListsOfTheRecord(t *testing.T) {
	s := New()
	byRecord, notFrom := helper(t, s, "byRecord"), helper(t, s, "notFrom")
	for i := range 20 {
		s.Append(value.Message{From: agentIDs[i%3], Record: "answer", Round: 1 + i/3})
	}
	before, _ := s.Seen("a", 1, "")
	if got := len(notFrom("a", byRecord("answer", before))); got != 13 {
		t.Fatalf("%d answers of others, want 13", got)
	}
	s.Append(value.Message{From: "a", To: "b", Whisper: true})
	s.mu.Lock()
	lists, arrays := s.all.fams[opRecord], len(s.arrays)
	s.mu.Unlock()
	if lists != nil || arrays != 1 {
		t.Fatalf("after the first whisper the record keeps %d filtered lists, %d arrays indexed; want none and 1", len(lists), arrays)
	}
	if got := notFrom("a", byRecord("answer", before)); len(got) != 13 || got[12].From != "b" {
		t.Fatalf("a history handed out before the whisper: %s", describe(got))
	}
}

// helper is one of the store's filtering helpers of a string and a list.
func helper(t testing.TB, s *Store, name string) func(string, []*value.Message) []*value.Message {
	f := s.Funcs()[name].(func(string, value.MessageList) ([]*value.Message, error))
	return func(arg string, ms []*value.Message) []*value.Message {
		out, err := f(arg, ms)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// values copies the messages of ms; nil for nil.
func values(ms []*value.Message) []value.Message {
	if ms == nil {
		return nil
	}
	out := make([]value.Message, len(ms))
	for i, m := range ms {
		out[i] = *m
	}
	return out
}
