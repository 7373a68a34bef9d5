package templates_test

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/debate-runner/runner/spec/value"
)

// The cached layout of software-design (the *-cached templates and
// shared-system, since software-design@12) shows each prompt's texts as the
// original layout does, only in another order: the shared start (the
// problem, the clarifications, what is under discussion) first, what is
// the agent's own (its role, notes, the critiques it received, its task)
// after the {{cacheBreak}}. TestCachedLayoutKeepsTheTexts checks both over
// generated debates.

// genDebate is a generated software-design debate at some round: its
// specialists, judge, history (proposals, critiques, refinements,
// clarifications) and the data every prompt starts from.
type genDebate struct {
	specialists []value.AgentView
	judge       value.AgentView
	base        promptData
}

func genText(rng *rand.Rand, tag string) string {
	words := strings.Fields("cache queue shard replica index token audit latency region failover budget quota")
	var b strings.Builder
	b.WriteString(tag)
	for p := rng.Intn(3); p >= 0; p-- {
		b.WriteString("\n\n")
		for w := 3 + rng.Intn(12); w > 0; w-- {
			b.WriteString(words[rng.Intn(len(words))] + " ")
		}
		b.WriteString("end.")
	}
	return b.String()
}

func genDesignDebate(rng *rand.Rand) genDebate {
	roles := []string{"architect", "performance", "security", "testing", "kiss", "generalist", "datamodeling", "privacy", ""}
	var d genDebate
	for i := 0; i < 2+rng.Intn(3); i++ {
		role := roles[rng.Intn(len(roles))]
		d.specialists = append(d.specialists, value.AgentView{ID: fmt.Sprintf("a%d", i), Name: fmt.Sprintf("Agent %c", 'A'+i), Role: role})
	}
	d.judge = value.AgentView{ID: "judge", Name: "Technical Judge", Role: "judge"}
	round := 1 + rng.Intn(3)
	var history []*value.Message
	if rng.Intn(2) == 0 {
		var qs []any
		for q := 0; q < 1+rng.Intn(3); q++ {
			answer := []string{"NA", "", genText(rng, "ANSWER")}[rng.Intn(3)]
			qs = append(qs, map[string]any{"id": fmt.Sprint(q), "question": genText(rng, "QUESTION"), "answer": answer})
		}
		history = append(history, &value.Message{From: d.specialists[0].ID, Record: "clarification", Output: qs})
	}
	for r := 1; r <= round; r++ {
		for _, a := range d.specialists {
			history = append(history, &value.Message{Round: r, From: a.ID, Record: "proposal", Content: genText(rng, fmt.Sprintf("PROPOSAL %s %d", a.ID, r)), Carried: r > 1})
		}
		last := r == round && rng.Intn(2) == 0 // the round's critiques may not be in yet
		for _, a := range d.specialists {
			for _, b := range d.specialists {
				if a.ID != b.ID && (!last || rng.Intn(2) == 0) {
					history = append(history, &value.Message{Round: r, From: a.ID, To: b.ID, Record: "critique", Content: genText(rng, fmt.Sprintf("CRITIQUE %s>%s %d", a.ID, b.ID, r))})
				}
			}
		}
		if r < round || rng.Intn(2) == 0 {
			for _, a := range d.specialists {
				history = append(history, &value.Message{Round: r, From: a.ID, Record: "refinement", Content: genText(rng, fmt.Sprintf("REFINEMENT %s %d", a.ID, r))})
			}
		}
	}
	context := ""
	if rng.Intn(2) == 0 {
		context = genText(rng, "CONTEXT")
	}
	d.base = promptData{
		Agents:    d.specialists,
		AllAgents: append(slices.Clone(d.specialists), d.judge),
		Round:     round,
		Inputs:    map[string]any{"problem": genText(rng, "PROBLEM"), "context": context, "question": "?"},
		Vars:      map[string]any{},
		Nodes:     map[string]value.NodeResult{},
		History:   history,
		Extra:     map[string]any{},
	}
	return d
}

// layoutCall is one call of a debate, rendered in both layouts.
type layoutCall struct {
	name                   string
	agent, shareWith       string // shareWith: calls whose start must be the same
	original, cached, head string // head: the cached prompt up to its break
}

// renderBoth renders a call's system prompt and prompt in the original
// layout (system, NAME) and the cached one (shared-system, NAME-cached).
func renderBoth(t *testing.T, set *template.Template, name string, data promptData) (original, cached, head string) {
	t.Helper()
	join := func(system, prompt string) string {
		if system == "" {
			return prompt
		}
		return system + "\n\n" + prompt
	}
	original = join(render(t, set, "software-design/system", data), render(t, set, "software-design/"+name, data))
	prompt, at := value.SplitCacheBreak(value.SealCacheBreaks(render(t, set, "software-design/"+name+"-cached", data)))
	if at < 0 {
		t.Fatalf("software-design/%s-cached has no {{cacheBreak}}", name)
	}
	system := render(t, set, "software-design/shared-system", data)
	return original, join(system, prompt), join(system, prompt[:at])
}

// layoutPieces are a prompt's texts: its paragraphs, each without its
// heading lines (Markdown "#" lines), which the layouts name differently.
func layoutPieces(s string) []string {
	var out []string
	for _, p := range strings.Split(s, "\n\n") {
		var lines []string
		for _, l := range strings.Split(p, "\n") {
			if !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
		if p := strings.TrimSpace(strings.Join(lines, "\n")); p != "" {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// debateCalls renders the calls of a generated debate in both layouts:
// each specialist's clarify, propose, critique of every other and refine,
// and the judge's rating and syntheses.
func debateCalls(t *testing.T, set *template.Template, d genDebate, rng *rand.Rand) []layoutCall {
	var calls []layoutCall
	add := func(name, share string, data promptData) {
		o, c, h := renderBoth(t, set, name, data)
		calls = append(calls, layoutCall{name: name, agent: data.Agent.ID, shareWith: share, original: o, cached: c, head: h})
	}
	for _, a := range d.specialists {
		data := d.base
		data.Agent = a
		if rng.Intn(3) == 0 {
			data.Summary = genText(rng, "SUMMARY "+a.ID)
		}
		clar := data
		clar.MaxQuestions = 1 + rng.Intn(5)
		if rng.Intn(2) == 0 {
			clar.Questions = []value.Question{{Question: genText(rng, "ASKED"), Answer: []string{"NA", "yes"}[rng.Intn(2)]}}
		}
		add("clarify", "", clar)
		own := data
		for _, m := range data.History {
			if m.From == a.ID && m.Record == "refinement" && m.Round == data.Round-1 {
				own.Own = *m
			}
		}
		add("propose", "", own)
		for _, b := range d.specialists {
			if b.ID == a.ID {
				continue
			}
			crit := data
			crit.Summary = ""
			for _, m := range data.History {
				if m.From == b.ID && m.Record == "proposal" && m.Round == data.Round {
					crit.Target = *m
				}
			}
			add("critique", "proposal of "+b.ID, crit)
		}
		ref := data
		if rng.Intn(2) == 0 {
			for _, m := range data.History {
				if m.To == a.ID && m.Record == "critique" && m.Round == data.Round {
					ref.Inbox = append(ref.Inbox, m)
				}
			}
		}
		add("refine", "proposal of "+a.ID, ref)
	}
	judged := d.base
	judged.Agent = d.judge
	if rng.Intn(4) == 0 {
		judged.Summary = genText(rng, "JUDGE SUMMARY")
	}
	for _, name := range []string{"confidence", "synthesize", "synthesize-text"} {
		add(name, "judged", judged)
	}
	return calls
}

// TestCachedLayoutKeepsTheTexts: over generated debates (2-4 specialists
// of any role, the judge, rounds 1-3, clarifications answered or skipped,
// context or none, summaries, critiques in the inbox or the history), every
// call of the cached layout shows the texts of the original layout's call,
// its system prompt included, and no others; and the start up to its
// {{cacheBreak}} is the same for every call that shows the same thing
// first (the critiques of a proposal and its author's refinement; the
// judge's rating and syntheses), whichever agent makes it, so it holds
// nothing of the agent's own.
func TestCachedLayoutKeepsTheTexts(t *testing.T) {
	set := allLibraries(t, "")
	for seed := int64(1); seed <= 24; seed++ {
		rng := rand.New(rand.NewSource(seed))
		d := genDesignDebate(rng)
		calls := debateCalls(t, set, d, rng)
		heads := map[string]layoutCall{}
		for _, c := range calls {
			o, k := layoutPieces(c.original), layoutPieces(c.cached)
			if !slices.Equal(o, k) {
				t.Fatalf("seed %d, %s of %s: the layouts show different texts\noriginal:\n%s\n\ncached:\n%s\n\nonly in the original: %q\nonly in the cached: %q",
					seed, c.name, c.agent, c.original, c.cached, missing(o, k), missing(k, o))
			}
			if c.shareWith == "" {
				continue
			}
			if prev, ok := heads[c.shareWith]; ok && prev.head != c.head {
				t.Fatalf("seed %d: %s of %s and %s of %s (both showing the %s first) start differently:\n%s\n\n---\n\n%s",
					seed, prev.name, prev.agent, c.name, c.agent, c.shareWith, prev.head, c.head)
			}
			heads[c.shareWith] = c
		}
	}
}

// missing are the pieces of a that b lacks (counting repeats).
func missing(a, b []string) []string {
	left := slices.Clone(b)
	var out []string
	for _, p := range a {
		if i := slices.Index(left, p); i >= 0 {
			left = slices.Delete(left, i, i+1)
		} else {
			out = append(out, p)
		}
	}
	return out
}
