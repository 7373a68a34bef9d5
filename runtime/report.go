package runtime

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/debate-runner/runner/spec"
)

// Report renders report.md: a readable record of the run.
func Report(plan *spec.Plan, m Manifest, res *Result) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# %s\n\n", plan.Name)
	if plan.File.Description != "" {
		w("%s\n\n", strings.TrimSpace(plan.File.Description))
	}
	w("- Run: `%s`\n- Status: **%s**\n", res.RunID, res.Status)
	if res.Error != "" {
		w("- Error: %s\n", res.Error)
	}
	w("- Seed: %d\n- Spec digest: `%s`\n\n", m.Seed, short(m.SpecDigest))

	if len(plan.Inputs) > 0 {
		w("## Inputs\n\n")
		for _, in := range plan.Inputs {
			w("### %s\n\n%s\n\n", in.Name, quote(fmt.Sprint(m.Inputs[in.Name])))
		}
	}
	if len(m.Vars) > 0 {
		w("## Vars\n\n| var | value |\n| --- | --- |\n")
		for _, k := range slices.Sorted(maps.Keys(m.Vars)) {
			w("| %s | %s |\n", k, cell(fmt.Sprint(m.Vars[k])))
		}
		w("\n")
	}
	w("## Agents\n\n| id | name | role | model | temperature |\n| --- | --- | --- | --- | --- |\n")
	for _, a := range plan.Agents {
		model, temp := "", ""
		if a.Model != nil {
			model = a.Model.Model
			if a.Model.Temperature != nil {
				temp = fmt.Sprint(*a.Model.Temperature)
			}
		}
		w("| %s | %s | %s | %s | %s |\n", a.ID, cell(a.Name), cell(a.Role), cell(model), temp)
	}
	w("\n")

	names := map[string]string{}
	for _, a := range plan.Agents {
		names[a.ID] = a.Name
	}
	w("## Transcript\n\n")
	if len(res.Messages) == 0 {
		w("No messages were recorded.\n\n")
	}
	lastGoal, lastRound := "\x00", -1
	for _, msg := range res.Messages {
		if msg.Private && msg.Record != "summary" {
			continue // private thoughts stay out of the public record
		}
		if msg.Goal != lastGoal {
			if msg.Goal != "" {
				w("### Goal: %s\n\n", msg.Goal)
			}
			lastGoal, lastRound = msg.Goal, -1
		}
		if msg.Round != lastRound && msg.Round > 0 {
			w("#### Round %d\n\n", msg.Round)
			lastRound = msg.Round
		}
		head := who(names, msg.From)
		if msg.To != "" {
			head += " → " + who(names, msg.To)
		}
		tags := []string{msg.Node}
		if msg.Record != "" && msg.Record != msg.Node {
			tags = append(tags, msg.Record)
		}
		if msg.Whisper {
			tags = append(tags, "whisper")
		}
		if msg.Record == "summary" {
			tags = append(tags, "summary of the agent's history, seen only by it")
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
		w("**%s** (%s)\n\n%s\n\n", head, strings.Join(tags, ", "), quote(msg.Content))
		if msg.Verdict != "" {
			w("> Verdict: **%s**", msg.Verdict)
			if msg.Reasoning != "" {
				w(": %s", oneLine(msg.Reasoning))
			}
			w("\n\n")
		}
	}
	if len(res.ToolCalls) > 0 {
		w("## Tool calls\n\n| call | agent | tool | arguments | result |\n| --- | --- | --- | --- | --- |\n")
		for _, tc := range res.ToolCalls {
			w("| %s | %s | %s | %s | %s |\n", cell(tc.Key), who(names, tc.Agent), tc.Tool, cell(oneLine(tc.Arguments)), cell(truncateText(oneLine(tc.Result), 160)))
		}
		w("\n")
	}
	if stats := whisperStats(res.Messages); len(stats) > 0 {
		w("## Whispers\n\n| goal | from | to | count |\n| --- | --- | --- | --- |\n")
		for _, s := range stats {
			w("| %s | %s | %s | %d |\n", s.Goal, who(names, s.From), who(names, s.To), s.Count)
		}
		w("\n")
	}
	if len(res.GoalVerdicts) > 0 {
		w("## Verdicts\n\n")
		for _, g := range res.GoalVerdicts {
			title := "node " + g.Node
			if g.Goal != "" {
				title = g.Goal + " (" + title + ")"
			}
			w("### %s\n\n| agent | verdict | withdrawn | reasoning |\n| --- | --- | --- | --- |\n", title)
			for _, v := range g.Verdicts {
				w("| %s | %s | %v | %s |\n", who(names, v.Agent), v.Verdict, v.Withdrawn, cell(oneLine(v.Reasoning)))
			}
			opts := slices.Sorted(maps.Keys(g.Counts))
			w("\n| verdict | count | percent |\n| --- | --- | --- |\n")
			for _, o := range opts {
				w("| %s | %d | %.1f%% |\n", o, g.Counts[o], g.Percent[o])
			}
			w("\n")
		}
	}
	w("## Outputs\n\n")
	for _, name := range res.OutputOrder {
		v, ok := res.Outputs[name]
		if !ok {
			continue
		}
		w("### %s\n\n%s\n\n", name, quote(render(v)))
	}
	w("## Usage\n\n| scope | calls | prompt tokens | completion tokens | latency (s) | cost |\n| --- | --- | --- | --- | --- | --- |\n")
	row := func(name string, u Usage) {
		cost := ""
		if u.Cost > 0 {
			cost = fmt.Sprintf("%.4f", u.Cost)
			if !u.Priced {
				cost += " (partial)"
			}
		}
		mark := ""
		if u.EstimatedCalls > 0 {
			mark = "~"
			if cost != "" {
				cost = "~" + cost
			}
		}
		w("| %s | %d | %s%d | %s%d | %.1f | %s |\n", name, u.Calls, mark, u.PromptTokens, mark, u.CompletionTokens, float64(u.LatencyMS)/1000, cost)
	}
	for _, a := range plan.Agents {
		if u, ok := res.Usage.ByAgent[a.ID]; ok {
			row("agent "+a.ID, u)
		}
	}
	nodes := make([]string, 0, len(res.Usage.ByNode))
	for n := range res.Usage.ByNode {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		row("node "+n, res.Usage.ByNode[n])
	}
	row("**total**", res.Usage.Total)
	if n := res.Usage.Total.EstimatedCalls; n > 0 {
		w("\n~ estimated: the server sent no token usage for %d of %d calls; their tokens were counted with a tokenizer.\n", n, res.Usage.Total.Calls)
	}
	if len(res.Warnings) > 0 {
		w("\n## Warnings\n\n")
		for _, x := range res.Warnings {
			w("- %s\n", x)
		}
	}
	return b.String()
}

func who(names map[string]string, id string) string {
	if n, ok := names[id]; ok && n != id {
		return fmt.Sprintf("%s (%s)", n, id)
	}
	return id
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func render(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "(none)"
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return "```json\n" + string(data) + "\n```"
}

// quote keeps a model's markdown from breaking the report's structure by
// demoting its headings.
func quote(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "#") {
			lines[i] = "#### " + strings.TrimLeft(l, "# ")
		}
	}
	return strings.Join(lines, "\n")
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func cell(s string) string {
	return strings.ReplaceAll(s, "|", "\\|")
}

// WhisperStat counts whispers from one agent to another within a goal.
type WhisperStat struct {
	Goal  string `json:"goal,omitempty"`
	From  string `json:"from"`
	To    string `json:"to"`
	Count int    `json:"count"`
}

func whisperStats(msgs []spec.Message) []WhisperStat {
	idx := map[[3]string]int{}
	var out []WhisperStat
	for _, m := range msgs {
		if !m.Whisper {
			continue
		}
		k := [3]string{m.Goal, m.From, m.To}
		if i, ok := idx[k]; ok {
			out[i].Count++
			continue
		}
		idx[k] = len(out)
		out = append(out, WhisperStat{Goal: m.Goal, From: m.From, To: m.To, Count: 1})
	}
	return out
}

func truncateText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "..."
}
