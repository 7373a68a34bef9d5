package draw

import (
	"fmt"
	"strings"

	"github.com/debate-runner/runner/spec"
)

// Mermaid draws the plan's flow as a Mermaid flowchart: nodes in order,
// loops and foreach as subgraphs labelled with their bounds, if as a
// decision, and beside a node, with dashed edges, the nodes it runs (a
// watcher) and the messages it posts by itself (a time keeper).
func Mermaid(p *spec.Plan) string {
	g := &graphWriter{plan: p, mermaid: true}
	g.line("flowchart TD")
	g.line(`  start([start])`)
	last := g.steps(p.Flow, []string{"start"}, "  ")
	g.line(`  finish([finish])`)
	for _, l := range last {
		g.line(fmt.Sprintf("  %s --> finish", l))
	}
	return g.b.String()
}

// Dot draws the plan's flow for Graphviz, with loops and foreach as clusters.
func Dot(p *spec.Plan) string {
	g := &graphWriter{plan: p}
	g.line(fmt.Sprintf("digraph %q {", p.Name))
	g.line(`  rankdir=TB; node [shape=box, style=rounded, fontname="Helvetica"];`)
	g.line(`  start [shape=oval]; finish [shape=oval];`)
	last := g.steps(p.Flow, []string{"start"}, "  ")
	for _, l := range last {
		g.line(fmt.Sprintf("  %s -> finish;", l))
	}
	g.line("}")
	return g.b.String()
}

type graphWriter struct {
	plan    *spec.Plan
	mermaid bool
	b       strings.Builder
	n       int
}

// attachments draws what is attached to a node drawn as id: the nodes it
// runs (and theirs), and its posts, each with a dashed edge. via holds the
// nodes being drawn, against cycles.
func (g *graphWriter) attachments(n *spec.NodePlan, id, indent string, via map[string]bool) {
	ga, ok := n.Config.(spec.GraphAttachments)
	if !ok {
		return
	}
	a := ga.GraphAttachments()
	var lines []string
	if len(a.Posts) > 0 {
		lines = append([]string{"posts without a model call:"}, a.Posts...)
	}
	if len(a.Asks) > 0 {
		lines = append(append(lines, "also calls:"), a.Asks...)
	}
	if len(lines) > 0 {
		pid := g.id("k")
		text := strings.Join(lines, "\n")
		if g.mermaid {
			g.line(fmt.Sprintf("%s%s>%s]", indent, pid, mermaidText(text)))
			g.line(fmt.Sprintf("%s%s -.- %s", indent, id, pid))
		} else {
			g.line(fmt.Sprintf("%s%s [shape=note, label=%q];", indent, pid, text))
			g.line(fmt.Sprintf("%s%s -> %s [style=dashed, arrowhead=none];", indent, id, pid))
		}
	}
	for _, r := range a.Runs {
		w, ok := g.plan.Nodes[r.Node]
		if !ok || via[r.Node] {
			continue
		}
		wid := g.id("w")
		label := g.nodeLabel(w)
		if g.mermaid {
			g.line(fmt.Sprintf("%s%s[%s]", indent, wid, mermaidText(strings.ReplaceAll(label, "\n", "<br/>"))))
			g.line(fmt.Sprintf("%s%s -.->|%s| %s", indent, id, mermaidText(r.Label), wid))
		} else {
			g.line(fmt.Sprintf("%s%s [label=%q, style=\"rounded,dashed\"];", indent, wid, label))
			g.line(fmt.Sprintf("%s%s -> %s [style=dashed, label=%q];", indent, id, wid, r.Label))
		}
		via[r.Node] = true
		g.attachments(w, wid, indent, via)
		delete(via, r.Node)
	}
}

func (g *graphWriter) line(s string) { g.b.WriteString(s + "\n") }

func (g *graphWriter) id(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%d", prefix, g.n)
}

func (g *graphWriter) edge(from, to, label, indent string) {
	switch {
	case g.mermaid && label != "":
		g.line(fmt.Sprintf("%s%s -->|%s| %s", indent, from, mermaidText(label), to))
	case g.mermaid:
		g.line(fmt.Sprintf("%s%s --> %s", indent, from, to))
	case label != "":
		g.line(fmt.Sprintf("%s%s -> %s [label=%q];", indent, from, to, label))
	default:
		g.line(fmt.Sprintf("%s%s -> %s;", indent, from, to))
	}
}

// mermaidText quotes a label for Mermaid, which ends a label at a raw
// newline or quote.
func mermaidText(s string) string {
	s = strings.ReplaceAll(s, "\n", "<br/>")
	s = strings.ReplaceAll(s, `"`, "#quot;")
	s = strings.ReplaceAll(s, "|", "#124;")
	return `"` + s + `"`
}

func (g *graphWriter) nodeLabel(n *spec.NodePlan) string {
	// Agents of different models (a panel) are shown with their models,
	// unless the node calls one model for them all.
	models := map[string]bool{}
	for _, a := range n.Agents {
		if a.Model != nil {
			models[a.Model.Model] = true
		}
	}
	perAgent := len(models) > 1 && len(n.Models) > 1
	var agents []string
	for _, a := range n.Agents {
		if perAgent && a.Model != nil {
			agents = append(agents, a.ID+" ("+a.Model.Model+")")
			continue
		}
		agents = append(agents, a.ID)
	}
	label := fmt.Sprintf("%s (%s)", n.ID, n.Kind)
	if len(agents) > 0 {
		label += "\n" + strings.Join(agents, ", ")
	}
	return label
}

// steps draws a sequence, connecting it from the given predecessors, and
// returns the ids the next step should connect from.
func (g *graphWriter) steps(steps []*spec.FlowStep, prev []string, indent string) []string {
	return g.stepsLabelled(steps, prev, "", indent)
}

// stepsLabelled is steps with a label on the edges into the first step.
func (g *graphWriter) stepsLabelled(steps []*spec.FlowStep, prev []string, label, indent string) []string {
	for _, s := range steps {
		prev = g.step(s, prev, label, indent)
		label = ""
	}
	return prev
}

func (g *graphWriter) step(s *spec.FlowStep, prev []string, in, indent string) []string {
	switch s.Kind {
	case spec.StepNode:
		id := g.id("n")
		label := g.nodeLabel(s.Node)
		if g.mermaid {
			g.line(fmt.Sprintf("%s%s[%s]", indent, id, mermaidText(strings.ReplaceAll(label, "\n", "<br/>"))))
		} else {
			g.line(fmt.Sprintf("%s%s [label=%q];", indent, id, label))
		}
		for _, p := range prev {
			g.edge(p, id, in, indent)
		}
		g.attachments(s.Node, id, indent, map[string]bool{s.Node.ID: true})
		return []string{id}
	case spec.StepLoop, spec.StepForeach:
		title := loopTitle(s)
		cid := g.id("c")
		head := g.id("h")
		if g.mermaid {
			g.line(fmt.Sprintf("%ssubgraph %s[%s]", indent, cid, mermaidText(title)))
			g.line(fmt.Sprintf("%s  %s{{%s}}", indent, head, mermaidText(headLabel(s))))
		} else {
			g.line(fmt.Sprintf("%ssubgraph cluster_%s {", indent, cid))
			g.line(fmt.Sprintf("%s  label=%q; style=dashed;", indent, title))
			g.line(fmt.Sprintf("%s  %s [shape=hexagon, label=%q];", indent, head, headLabel(s)))
		}
		body := g.steps(s.Do, []string{head}, indent+"  ")
		for _, b := range body {
			g.edge(b, head, "next", indent+"  ")
		}
		if g.mermaid {
			g.line(indent + "end")
		} else {
			g.line(indent + "}")
		}
		for _, p := range prev {
			g.edge(p, head, in, indent)
		}
		return []string{head}
	case spec.StepIf:
		id := g.id("d")
		if g.mermaid {
			g.line(fmt.Sprintf("%s%s{%s}", indent, id, mermaidText("if "+s.Cond.Source)))
		} else {
			g.line(fmt.Sprintf("%s%s [shape=diamond, label=%q];", indent, id, "if "+s.Cond.Source))
		}
		for _, p := range prev {
			g.edge(p, id, in, indent)
		}
		thenEnd := g.stepsLabelled(s.Do, []string{id}, "then", indent)
		if len(s.Else) == 0 {
			return append(thenEnd, id)
		}
		elseEnd := g.stepsLabelled(s.Else, []string{id}, "else", indent)
		return append(thenEnd, elseEnd...)
	}
	return prev
}

func loopTitle(s *spec.FlowStep) string {
	if s.Kind == spec.StepForeach {
		if s.Concurrency > 1 {
			return fmt.Sprintf("foreach %s in %s, %d at once", s.As, s.In.Source, s.Concurrency)
		}
		return fmt.Sprintf("foreach %s in %s", s.As, s.In.Source)
	}
	return fmt.Sprintf("loop %s", s.As)
}

func headLabel(s *spec.FlowStep) string {
	if s.Kind == spec.StepForeach {
		return fmt.Sprintf("next %s of %s", s.As, sourceOf(s.In))
	}
	max := fmt.Sprint(s.MaxConst)
	if s.MaxExpr != nil {
		max = s.MaxExpr.Source
	}
	label := fmt.Sprintf("%s = 1..%s", s.As, max)
	if s.Until != nil {
		label += "\nuntil " + s.Until.Source
	}
	if s.Break != nil {
		label += "\nbreak " + s.Break.Source
	}
	return label
}

func sourceOf(p *spec.Program) string {
	if p == nil {
		return "?"
	}
	return p.Source
}
