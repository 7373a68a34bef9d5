package report

import (
	"fmt"
	"strings"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
)

// kindSections writes the sections node kinds add themselves
// (kit.Reporter), once per kind, in the order the plan first uses each.
func (d *doc) kindSections(plan *spec.Plan, msgs []value.Message) {
	if plan == nil {
		return
	}
	seen := map[string]bool{}
	for _, id := range plan.NodeOrder {
		n := plan.Nodes[id]
		r, ok := n.Impl.(kit.Reporter)
		if !ok || seen[n.Kind] {
			continue
		}
		seen[n.Kind] = true
		for _, sec := range r.ReportSections(plan, msgs) {
			d.w("## %s\n\n", Inline(sec.Title))
			for _, t := range sec.Tables {
				d.table(t)
			}
		}
	}
}

// table writes a kind's table: its title, the cells escaped, and its pie.
func (d *doc) table(t kit.ReportTable) {
	if t.Title != "" {
		d.w("### %s\n\n", Inline(t.Title))
	}
	d.w("| %s |\n|%s\n", strings.Join(escapeAll(t.Header), " | "), strings.Repeat(" --- |", len(t.Header)))
	for _, row := range t.Rows {
		d.w("| %s |\n", strings.Join(escapeAll(row), " | "))
	}
	d.w("\n")
	if len(t.Pie) > 0 {
		d.w("%s\n\n", VerdictPie(t.PieTitle, t.Pie))
	}
}

func escapeAll(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = Inline(c)
	}
	return out
}

// VerdictPie is a Mermaid pie chart of how many agents gave each verdict.
func VerdictPie(title string, counts map[string]int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pie title Verdicts: %s\n", mermaidLabel(title))
	for _, o := range sortedKeys(counts) {
		fmt.Fprintf(&b, "    %q : %d\n", mermaidLabel(o), counts[o])
	}
	return CodeBlock("mermaid", b.String())
}

// ConfidencePoint is one confidence a node's output gave.
type ConfidencePoint struct {
	Node, Agent, Goal string
	Round             int
	Value             float64
}

// Confidences finds the confidence of every public message whose output
// has a numeric "confidence" field (a judge's rating, a synthesis), in
// order.
func Confidences(msgs []value.Message) []ConfidencePoint {
	var out []ConfidencePoint
	for _, m := range msgs {
		if !Public(m) {
			continue
		}
		obj, ok := m.Output.(map[string]any)
		if !ok {
			continue
		}
		v, ok := number(obj["confidence"])
		if !ok {
			continue
		}
		out = append(out, ConfidencePoint{Node: m.Node, Agent: m.From, Goal: m.Goal, Round: m.Round, Value: v})
	}
	return out
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case jsonNumber:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// jsonNumber is what a decoder set to UseNumber gives.
type jsonNumber interface{ Float64() (float64, error) }

// confidence writes the confidence ratings per round, as a table and a
// line chart per node and agent.
func (d *doc) confidence(msgs []value.Message) {
	pts := Confidences(msgs)
	if len(pts) == 0 {
		return
	}
	d.w("## Confidence\n\n| node | agent | goal | round | confidence |\n| --- | --- | --- | --- | --- |\n")
	type series struct {
		name   string
		rounds []string
		values []string
	}
	var all []*series
	byName := map[string]*series{}
	for i, p := range pts {
		d.w("| %s | %s | %s | %s | %g |\n", Inline(p.Node), d.who(p.Agent), Inline(p.Goal), roundText(p.Round), p.Value)
		name := p.Node + " (" + p.Agent + ")"
		s := byName[name]
		if s == nil {
			s = &series{name: name}
			byName[name] = s
			all = append(all, s)
		}
		x := fmt.Sprint(p.Round)
		if p.Round == 0 {
			x = fmt.Sprint(i + 1)
		}
		s.rounds = append(s.rounds, x)
		s.values = append(s.values, fmt.Sprintf("%g", p.Value))
	}
	d.w("\n")
	for _, s := range all {
		d.w("%s\n\n", ConfidenceChart(s.name, s.rounds, s.values))
	}
}

// ConfidenceChart is a Mermaid line chart of confidence (0-100) over rounds.
func ConfidenceChart(name string, rounds, values []string) string {
	var b strings.Builder
	b.WriteString("xychart-beta\n")
	fmt.Fprintf(&b, "    title %q\n", "Confidence: "+mermaidLabel(name))
	fmt.Fprintf(&b, "    x-axis \"round\" [%s]\n", strings.Join(rounds, ", "))
	b.WriteString("    y-axis \"confidence\" 0 --> 100\n")
	fmt.Fprintf(&b, "    line [%s]\n", strings.Join(values, ", "))
	return CodeBlock("mermaid", b.String())
}

func roundText(r int) string {
	if r == 0 {
		return ""
	}
	return fmt.Sprint(r)
}

// mermaidLabel keeps a label inside Mermaid's quotes.
func mermaidLabel(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.NewReplacer(`"`, "'", "`", "'").Replace(s)
}
