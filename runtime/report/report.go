// Package report renders the readable record of a run: report.md, whose
// contributions are escaped so that a Markdown renderer shows every word of
// them, and report.html, the same rendered into one self-contained page
// with its charts drawn inline.
package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

// Markdown renders report.md: inputs, vars, agents, the transcript by goal
// and round (private messages, history summaries among them, left out),
// rejected replies, tool calls, the kinds' own sections (whispers, verdicts,
// confidence), outputs, usage and warnings.
func Markdown(plan *spec.Plan, m result.Manifest, res *result.Result) string {
	d := newDoc(plan)
	d.render(plan, m, res)
	return d.b.String()
}

// newDoc is a report of plan's run, its agents named.
func newDoc(plan *spec.Plan) *doc {
	d := &doc{names: map[string]string{}}
	for _, a := range plan.Agents {
		d.names[a.ID] = a.Name
	}
	return d
}

// render writes the report (see Markdown), telling d where a section of
// it may end (cut).
func (d *doc) render(plan *spec.Plan, m result.Manifest, res *result.Result) {
	d.w("# %s\n\n", Inline(plan.Name))
	if plan.File != nil && plan.File.Description != "" {
		d.w("%s\n\n", Block(plan.File.Description, 1))
	}
	d.w("- Run: `%s`\n- Status: **%s**\n", res.RunID, res.Status)
	if sim := simulatedModels(m); len(sim) > 0 {
		d.w("- Simulated: **yes**: the replies of %s were made by runner's offline model, not by a language model, and are not priced\n", strings.Join(sim, ", "))
	}
	if res.Error != "" {
		d.w("- Error: %s\n", Inline(res.Error))
	}
	if c := res.Conclusion; c != nil {
		if !c.Concluded {
			d.w("- Inconclusive: %s\n", Inline(c.Summary()))
		}
		if c.Fallbacks+c.ForcedVerdicts > 0 {
			d.w("- Stand-ins: %d fallback output(s), %d forced verdict(s), marked in the transcript\n", c.Fallbacks, c.ForcedVerdicts)
		}
	}
	d.w("- Seed: %d\n- Spec digest: `%s`\n\n", m.Seed, short(m.SpecDigest))

	if len(plan.Inputs) > 0 {
		d.w("## Inputs\n\n")
		for _, in := range plan.Inputs {
			d.w("### %s\n\n%s\n\n", Inline(in.Name), valueBlock(m.Inputs[in.Name], 3))
		}
	}
	if len(m.Vars) > 0 {
		d.w("## Vars\n\n| var | value |\n| --- | --- |\n")
		for _, k := range slices.Sorted(maps.Keys(m.Vars)) {
			d.w("| %s | %s |\n", Inline(k), Inline(fmt.Sprint(m.Vars[k])))
		}
		d.w("\n")
	}
	d.w("## Agents\n\n| id | name | role | model | temperature |\n| --- | --- | --- | --- | --- |\n")
	for _, a := range plan.Agents {
		model, temp := "", ""
		if a.Model != nil {
			model = Inline(a.Model.Model)
			if a.Model.Temperature != nil {
				temp = fmt.Sprint(*a.Model.Temperature)
			}
		}
		if a.Human {
			model, temp = "a person (human: true)", ""
		}
		d.w("| %s | %s | %s | %s | %s |\n", a.ID, Inline(a.Name), Inline(a.Role), model, temp)
	}
	d.w("\n")

	d.cut()
	d.transcript(res.Messages)
	d.cut()
	d.rejections(res.Rejections)
	d.cut()
	d.absent(res.Absent)
	d.cut()
	d.toolCalls(res.ToolCalls)
	d.cut()
	d.kindSections(plan, res.Messages)
	d.cut()
	d.confidence(res.Messages)
	d.cut()

	d.w("## Outputs\n\n")
	for _, name := range res.OutputOrder {
		v, ok := res.Outputs[name]
		if !ok {
			continue
		}
		note := ""
		if c := res.Conclusion; c != nil && slices.Contains(c.FallbackOutputs, name) {
			note = " (from a fallback or a forced verdict)"
		}
		d.w("### %s%s\n\n%s\n\n", Inline(name), note, valueBlock(v, 3))
	}
	d.cut()
	d.rounds(res)
	d.dynamics(res)
	d.judgements(res)
	d.usage(plan, res.Usage)
	if len(res.Warnings) > 0 {
		d.w("\n## Warnings\n\n")
		for _, x := range res.Warnings {
			d.w("- %s\n", Inline(x))
		}
	}
}

// rounds is the per-round section of a scored run whose spec loops.
func (d *doc) rounds(res *result.Result) {
	if len(res.Rounds) == 0 {
		return
	}
	d.w("## Score by round\n\nThe score the outputs would have had had the run stopped after each round, each agent's own answer's score, flips from the round before, and the share of agents giving the most common answer.\n\n")
	d.w("| round | score | agents | right→wrong | wrong→right | changed while wrong | majority changed | agreement |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range res.Rounds {
		score := ""
		if r.Score != nil {
			score = fmt.Sprintf("%g", *r.Score)
		}
		var agents []string
		for _, id := range sortedKeys(r.Agents) {
			agents = append(agents, fmt.Sprintf("%s %g", d.who(id), r.Agents[id]))
		}
		changed := ""
		if r.MajorityChanged {
			changed = "yes"
		}
		d.w("| %d | %s | %s | %s | %s | %s | %s | %.2f |\n", r.Round, score, Inline(strings.Join(agents, ", ")),
			Inline(strings.Join(r.RightToWrong, ", ")), Inline(strings.Join(r.WrongToRight, ", ")), Inline(strings.Join(r.ChangedWhileWrong, ", ")), changed, r.Agreement)
	}
	d.w("\n")
	// The share of agents right after each round, as a line.
	var xs, ys []string
	for _, r := range res.Rounds {
		if len(r.Agents) == 0 {
			continue
		}
		sum := 0.0
		for _, v := range r.Agents {
			sum += v
		}
		xs, ys = append(xs, fmt.Sprint(r.Round)), append(ys, fmt.Sprintf("%.4g", 100*sum/float64(len(r.Agents))))
	}
	if len(xs) > 0 {
		var b strings.Builder
		b.WriteString("xychart-beta\n    title \"Agents right by round (%)\"\n")
		fmt.Fprintf(&b, "    x-axis \"round\" [%s]\n    y-axis \"agents right (%%)\" 0 --> 100\n    line [%s]\n", strings.Join(xs, ", "), strings.Join(ys, ", "))
		d.w("%s\n\n", CodeBlock("mermaid", b.String()))
	}
}

// dynamics is the section of a run whose agents gave verdicts or
// whispered: result.json's dynamics, thread by thread.
func (d *doc) dynamics(res *result.Result) {
	if len(res.Dynamics) == 0 {
		return
	}
	d.w("## Dynamics\n\nHow the verdicts moved, thread by thread (a node on a goal): who changed verdict and when, whether the participants ended agreeing, and what messages addressed to one agent did to its next verdict.\n\n")
	for _, th := range res.Dynamics {
		name := "node " + th.Node
		if th.Goal != "" {
			name = "goal " + th.Goal + " (node " + th.Node + ")"
		}
		d.w("### %s\n\n", Inline(name))
		switch {
		case th.Verdicts == 0:
			d.w("No verdicts.\n\n")
		case th.Consensus != "":
			d.w("Consensus on %s from turn %d (message %d of %d)", Inline(th.Consensus), th.FormedTurn, th.FormedAt, th.Messages)
			if th.Forced > 0 {
				d.w(", with %d forced verdict(s)", th.Forced)
			}
			d.w(". ")
		case th.Majority != "":
			d.w("No consensus: most held %s (%.0f%% of those with a verdict). ", Inline(th.Majority), 100*th.FinalAgreement)
		default:
			d.w("No consensus, and no verdict held by more than any other. ")
		}
		if th.Verdicts > 0 {
			d.w("%d verdicts, %d changes, the plurality changed %d time(s); agreement %.2f at the first verdicts and %.2f at the end.\n\n", th.Verdicts, th.Changes, th.MajorityChanges, th.FirstAgreement, th.FinalAgreement)
			d.w("| agent | messages | verdicts | final | changes |\n| --- | --- | --- | --- | --- |\n")
			for _, a := range th.Participants {
				var ts []string
				for _, tr := range a.Transitions {
					t := fmt.Sprintf("%s → %s at turn %d", tr.From, tr.To, tr.Turn)
					if tr.Forced {
						t += " (forced)"
					}
					ts = append(ts, t)
				}
				d.w("| %s | %d | %d | %s | %s |\n", d.who(a.Agent), a.Messages, a.Verdicts, Inline(a.Final), Inline(strings.Join(ts, "; ")))
			}
			d.w("\n")
		}
		edges := func(title string, es []result.Influence) {
			if len(es) == 0 {
				return
			}
			d.w("| %s | to | count | with a verdict | followed | changed | adopted |\n| --- | --- | --- | --- | --- | --- | --- |\n", title)
			for _, e := range es {
				d.w("| %s | %s | %d | %d | %d | %d | %d |\n", d.who(e.From), d.who(e.To), e.Count, e.WithVerdict, e.Followed, e.Changed, e.Adopted)
			}
			d.w("\n")
		}
		edges("whisper from", th.Whispers)
		edges("public message from", th.Public)
	}
}

// judgements is the section of a judged score: each judge's level and
// its reasoning.
func (d *doc) judgements(res *result.Result) {
	if len(res.Judgements) == 0 {
		return
	}
	d.w("## Judgements\n\n")
	if res.Score != nil {
		d.w("Score: %g, the mean of the judges' levels (0 for the lowest level, 1 for the highest).\n\n", *res.Score)
	}
	for _, j := range res.Judgements {
		level := j.Level
		if level == "" {
			level = "no level (" + j.Error + ")"
		} else if j.Score != nil {
			level = fmt.Sprintf("%s (%g)", level, *j.Score)
		}
		d.w("### %s: %s\n\n", Inline(j.Judge), Inline(level))
		if j.Reasoning != "" {
			d.w("%s\n\n", Block(j.Reasoning, 4))
		}
	}
}

type doc struct {
	b     strings.Builder
	names map[string]string
	// flush, when set, is given the text written since the last cut that
	// it was called at, once at least flushAt bytes of it are waiting.
	flush   func(string)
	flushAt int
}

func (d *doc) w(format string, args ...any) { fmt.Fprintf(&d.b, format, args...) }

// cut marks where one piece of the report may end and the next begin:
// every block before it is closed (the text so far ends with a blank line)
// and the next begins a block of its own, so that Markdown read piece by
// piece reads as it does whole. A doc with flush set hands it what it has
// once that is at least flushAt bytes.
func (d *doc) cut() {
	if d.flush != nil && d.b.Len() > 0 && d.b.Len() >= d.flushAt {
		d.flush(d.b.String())
		d.b.Reset()
	}
}

// who names an agent: "Name (id)", or the id alone.
func (d *doc) who(id string) string {
	if n, ok := d.names[id]; ok && n != id {
		return Inline(fmt.Sprintf("%s (%s)", n, id))
	}
	return Inline(id)
}

// Public reports whether a message belongs in the public record: private
// thoughts and history summaries (seen only by their agent) do not.
func Public(m value.Message) bool { return !m.Private }

// transcript writes the messages by goal and round; a message's own
// headings nest under the heading it sits below.
func (d *doc) transcript(msgs []value.Message) {
	d.w("## Transcript\n\n")
	shown := 0
	lastGoal, lastRound := "\x00", -1
	level := 2
	for _, msg := range msgs {
		if !Public(msg) {
			continue
		}
		d.cut()
		shown++
		if msg.Goal != lastGoal {
			level = 2
			if msg.Goal != "" {
				d.w("### Goal: %s\n\n", Inline(msg.Goal))
				level = 3
			}
			lastGoal, lastRound = msg.Goal, -1
		}
		if msg.Round != lastRound && msg.Round > 0 {
			d.w("#### Round %d\n\n", msg.Round)
			lastRound = msg.Round
			level = 4
		}
		head := d.who(msg.From)
		if msg.To != "" {
			head += " → " + d.who(msg.To)
		}
		tags := []string{msg.Node}
		if msg.Record != "" && msg.Record != msg.Node {
			tags = append(tags, msg.Record)
		}
		if msg.Whisper {
			tags = append(tags, "whisper")
		}
		if msg.Carried {
			tags = append(tags, "carried over, no call")
		}
		if msg.Turn > 0 {
			tags = append(tags, fmt.Sprintf("turn %d", msg.Turn))
		}
		if msg.Withdrawn {
			tags = append(tags, "withdrawn")
		}
		if msg.Fallback {
			tags = append(tags, "fallback output")
		}
		d.w("**%s** (%s)\n\n%s\n\n", head, Inline(strings.Join(tags, ", ")), Block(msg.Content, level))
		if msg.Verdict != "" {
			d.w("> Verdict: **%s**", Inline(msg.Verdict))
			if msg.Forced {
				d.w(" (forced)")
			}
			if msg.Reasoning != "" {
				d.w(": %s", Inline(msg.Reasoning))
			}
			d.w("\n\n")
		}
	}
	if shown == 0 {
		d.w("No messages were recorded.\n\n")
	}
}

// rejections lists the replies that were asked again, with their reasons.
func (d *doc) rejections(rs []result.Rejection) {
	if len(rs) == 0 {
		return
	}
	d.w("## Rejected replies\n\nThese replies broke the conversation's rules; each author was told why and asked again.\n\n")
	for _, r := range rs {
		d.cut()
		where := []string{r.Node}
		if r.Goal != "" {
			where = append(where, "goal "+r.Goal)
		}
		if r.Round > 0 {
			where = append(where, fmt.Sprintf("round %d", r.Round))
		}
		where = append(where, fmt.Sprintf("attempt %d", r.Attempt))
		d.w("**%s** (%s): rejected because %s\n\n%s\n\n", d.who(r.Agent), Inline(strings.Join(where, ", ")), Inline(r.Reasons), Block(r.Content, 2))
	}
}

// absent lists the agents nodes completed without, and why.
func (d *doc) absent(as []result.Absence) {
	if len(as) == 0 {
		return
	}
	d.w("## Absent agents\n\nThese agents were left out: the node went on with the others' answers (min_answers), and its outputs are made from those alone.\n\n")
	for _, a := range as {
		where := []string{a.Node}
		if a.Goal != "" {
			where = append(where, "goal "+a.Goal)
		}
		if a.Round > 0 {
			where = append(where, fmt.Sprintf("round %d", a.Round))
		}
		d.w("**%s** (%s): %s\n\n", d.who(a.Agent), Inline(strings.Join(where, ", ")), Inline(a.Reason))
		if a.Reply != "" {
			d.w("Last reply:\n\n%s\n\n", Block(a.Reply, 2))
		}
	}
}

func (d *doc) toolCalls(tcs []result.ToolCallInfo) {
	if len(tcs) == 0 {
		return
	}
	d.w("## Tool calls\n\n| call | agent | tool | arguments | result |\n| --- | --- | --- | --- | --- |\n")
	for _, tc := range tcs {
		d.w("| %s | %s | %s | %s | %s |\n", Inline(tc.Key), d.who(tc.Agent), Inline(tc.Tool), Inline(tc.Arguments), Inline(truncateText(tc.Result, 160)))
	}
	d.w("\n")
}

func (d *doc) usage(plan *spec.Plan, u result.UsageReport) {
	d.w("## Usage\n\n| scope | calls | prompt tokens | completion tokens | latency (s) | cost |\n| --- | --- | --- | --- | --- | --- |\n")
	row := func(name string, u result.Usage) {
		cost := ""
		if u.Cost > 0 {
			cost = fmt.Sprintf("%.4f", u.Cost)
			if !u.Priced {
				cost += " (partial)"
			}
			if u.BuiltinPrices != "" {
				cost += "*"
			}
		}
		mark := ""
		if u.EstimatedCalls > 0 {
			mark = "~"
			if cost != "" {
				cost = "~" + cost
			}
		}
		d.w("| %s | %d | %s%d | %s%d | %.1f | %s |\n", name, u.Calls, mark, u.PromptTokens, mark, u.CompletionTokens, float64(u.LatencyMS)/1000, cost)
	}
	for _, a := range plan.Agents {
		if x, ok := u.ByAgent[a.ID]; ok {
			row("agent "+a.ID, x)
		}
	}
	nodes := slices.Sorted(maps.Keys(u.ByNode))
	for _, n := range nodes {
		row("node "+Inline(n), u.ByNode[n])
	}
	for _, g := range slices.Sorted(maps.Keys(u.ByGoal)) {
		row("goal "+Inline(g), u.ByGoal[g])
	}
	rounds := slices.SortedFunc(maps.Keys(u.ByRound), func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	for _, r := range rounds {
		name := "round " + Inline(r)
		if r == "0" {
			name = "outside rounds"
		}
		row(name, u.ByRound[r])
	}
	row("**total**", u.Total)
	if date := u.Total.BuiltinPrices; date != "" {
		d.w("\n\\* Cost at built-in list prices of %s (US dollars) for models the spec gives no price; declare `price:` on a model to override.\n", date)
	}
	if t := u.Total; t.PromptTokens > 0 && (t.PrefixTokens > 0 || t.CachedTokens > 0 || t.CacheWriteTokens > 0) {
		d.w("\nPrompt prefix: %.1f%% of prompt tokens (%d of %d) repeat the start of the same agent's previous request, which a provider's prompt cache can serve", 100*float64(t.PrefixTokens)/float64(t.PromptTokens), t.PrefixTokens, t.PromptTokens)
		if t.CachedTokens > 0 {
			d.w("; the providers reported %d cached prompt tokens (%.1f%%)", t.CachedTokens, 100*float64(t.CachedTokens)/float64(t.PromptTokens))
		}
		if t.CacheWriteTokens > 0 {
			d.w(" and %d written to their caches (%.1f%%, at the cache-write price)", t.CacheWriteTokens, 100*float64(t.CacheWriteTokens)/float64(t.PromptTokens))
		}
		d.w(".\n")
	}
	d.cacheable(plan, u)
	if n := u.Total.BatchCalls; n > 0 {
		d.w("\nBatch: %d of %d calls were answered in a provider's batch (`--batch`) and are priced at half their model's prices.\n", n, u.Total.Calls)
	}
	if n := u.Total.EstimatedCalls; n > 0 {
		d.w("\n~ estimated: the server sent no token usage for %d of %d calls; their tokens were counted with a tokenizer.\n", n, u.Total.Calls)
	}
}

// valueBlock shows an input or output: text as a contribution, anything
// else as JSON in a code block.
func valueBlock(v any, base int) string {
	switch x := v.(type) {
	case string:
		return Block(x, base)
	case nil:
		return "(none)"
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return Block(fmt.Sprint(v), base)
	}
	return CodeBlock("json", string(data))
}

// CodeBlock fences text with a fence longer than any backtick run in it.
func CodeBlock(lang, text string) string {
	longest := 0
	for i := 0; i < len(text); i++ {
		if text[i] == '`' {
			n := run(text, i, '`')
			longest = max(longest, n)
			i += n - 1
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + fence
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func truncateText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "..."
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// cacheable writes the cacheable share of the prompt tokens, per agent and
// over the run (docs/runs.md, "Cacheable share"), when some are.
func (d *doc) cacheable(plan *spec.Plan, u result.UsageReport) {
	t := u.Total
	if t.PromptTokens == 0 || t.RunCacheableTokens == 0 && t.CacheableTokens == 0 {
		return
	}
	share := func(n, of int) string {
		if of == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%% (%d)", 100*float64(n)/float64(of), n)
	}
	mark := ""
	if t.EstimatedCalls > 0 {
		mark = "~"
	}
	d.w("\nCacheable share: prompt tokens in a start shared with an earlier request to the same model, of at least %d tokens (what a provider's prompt cache can serve).\n\n", result.CacheMinTokens)
	d.w("| scope | prompt tokens | shared with the same agent | shared with any agent |\n| --- | --- | --- | --- |\n")
	for _, a := range plan.Agents {
		if x, ok := u.ByAgent[a.ID]; ok {
			d.w("| agent %s | %s%d | %s%s | %s%s |\n", a.ID, mark, x.PromptTokens, mark, share(x.CacheableTokens, x.PromptTokens), mark, share(x.RunCacheableTokens, x.PromptTokens))
		}
	}
	d.w("| **run** | %s%d | %s%s | %s%s |\n", mark, t.PromptTokens, mark, share(t.CacheableTokens, t.PromptTokens), mark, share(t.RunCacheableTokens, t.PromptTokens))
	r := t.CacheableByRule
	d.w("\nBy each provider's rule, of the start shared with any agent: OpenAI (at least %d tokens, in steps of %d) %s%s; Anthropic (up to a cache breakpoint, at least %d) %s%s; Gemini (implicit, at least %d) %s%s.\n",
		result.OpenAICacheMin, result.OpenAICacheStep, mark, share(r.OpenAI.Tokens, t.PromptTokens),
		result.AnthropicCacheMin, mark, share(r.Anthropic.Tokens, t.PromptTokens),
		result.GeminiCacheMin, mark, share(r.Gemini.Tokens, t.PromptTokens))
}

// simulatedModels are the run's models whose replies runner made (the
// offline provider kind), by name.
func simulatedModels(m result.Manifest) []string {
	var out []string
	for name, mi := range m.Models {
		if mi.Simulated {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
