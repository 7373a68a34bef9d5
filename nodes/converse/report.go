package converse

import (
	"fmt"
	"math"
	"slices"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
)

// ReportSections implements kit.Reporter: the whispers of the run's
// conversations, and each conversation's final verdicts per goal.
func (Kind) ReportSections(plan *spec.Plan, msgs []value.Message) []kit.ReportSection {
	ours := map[string]bool{}
	for id, n := range plan.Nodes {
		if n.Kind == (Kind{}).Name() {
			ours[id] = true
		}
	}
	name := func(id string) string {
		if a, ok := plan.AgentByID[id]; ok && a.Name != id {
			return fmt.Sprintf("%s (%s)", a.Name, id)
		}
		return id
	}
	var out []kit.ReportSection
	if t := whisperTable(msgs, ours, name); len(t.Rows) > 0 {
		out = append(out, kit.ReportSection{Title: "Whispers", Tables: []kit.ReportTable{t}})
	}
	if tables := verdictTables(msgs, ours, name); len(tables) > 0 {
		out = append(out, kit.ReportSection{Title: "Verdicts", Tables: tables})
	}
	return out
}

// whisperTable counts whispers per goal, sender and addressee, in the order
// first whispered.
func whisperTable(msgs []value.Message, ours map[string]bool, name func(string) string) kit.ReportTable {
	t := kit.ReportTable{Header: []string{"goal", "from", "to", "count"}}
	idx := map[[3]string]int{}
	var counts []int
	for _, m := range msgs {
		if !m.Whisper || !ours[m.Node] {
			continue
		}
		k := [3]string{m.Goal, m.From, m.To}
		if i, ok := idx[k]; ok {
			counts[i]++
			continue
		}
		idx[k] = len(t.Rows)
		t.Rows = append(t.Rows, []string{m.Goal, name(m.From), name(m.To), ""})
		counts = append(counts, 1)
	}
	for i := range t.Rows {
		t.Rows[i][3] = fmt.Sprint(counts[i])
	}
	return t
}

// verdictTables are, per goal and conversation, each agent's last verdict
// and the counts of each verdict, with a pie chart of them.
func verdictTables(msgs []value.Message, ours map[string]bool, name func(string) string) []kit.ReportTable {
	type group struct{ goal, node string }
	latest := map[group]map[string]value.Message{}
	withdrawn := map[group]map[string]bool{}
	order := map[group][]string{}
	var groups []group
	for _, m := range msgs {
		if !ours[m.Node] {
			continue
		}
		g := group{m.Goal, m.Node}
		if m.Withdrawn {
			if withdrawn[g] == nil {
				withdrawn[g] = map[string]bool{}
			}
			withdrawn[g][m.From] = true
		}
		if m.Verdict == "" {
			continue
		}
		if latest[g] == nil {
			latest[g] = map[string]value.Message{}
			groups = append(groups, g)
		}
		if _, seen := latest[g][m.From]; !seen {
			order[g] = append(order[g], m.From)
		}
		latest[g][m.From] = m
	}
	var out []kit.ReportTable
	for _, g := range groups {
		title := "node " + g.node
		if g.goal != "" {
			title = g.goal + " (" + title + ")"
		}
		t := kit.ReportTable{Title: title, Header: []string{"agent", "verdict", "withdrawn", "reasoning"}}
		pie := map[string]int{}
		for _, a := range order[g] {
			m := latest[g][a]
			t.Rows = append(t.Rows, []string{name(a), m.Verdict, fmt.Sprint(withdrawn[g][a]), m.Reasoning})
			pie[m.Verdict]++
		}
		t.Pie = nil
		out = append(out, t)
		counts := kit.ReportTable{Header: []string{"verdict", "count", "percent"}, Pie: pie, PieTitle: title}
		keys := make([]string, 0, len(pie))
		for k := range pie {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			pct := math.Round(float64(pie[k])*1000/float64(len(t.Rows))) / 10
			counts.Rows = append(counts.Rows, []string{k, fmt.Sprint(pie[k]), fmt.Sprintf("%.1f%%", pct)})
		}
		out = append(out, counts)
	}
	return out
}
