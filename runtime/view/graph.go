package view

import (
	"fmt"
	"html"
	"strings"

	"github.com/debate-runner/runner/spec"
)

// FlowSVG draws a plan's flow as SVG: nodes top to bottom, loops and
// foreach as dashed frames with their bounds, if as a decision with its
// branches side by side, and beside a node the nodes that watch it and the
// messages it posts by itself (spec.GraphAttachments). Every drawing of a
// node carries data-node="ID", so the page can mark the node that runs.
func FlowSVG(p *spec.Plan) string {
	steps := []item{pill("start")}
	steps = append(steps, flowItems(p, p.Flow)...)
	steps = append(steps, pill("finish"))
	body := sequence(steps)
	const pad = 12
	w, h := body.w+2*pad, body.h+2*pad
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="flow" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="flow of %s">`, w, h, w, h, esc(p.Name))
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>`)
	body.draw(&b, pad, pad)
	b.WriteString("</svg>")
	return b.String()
}

// item is a laid-out part of the drawing: its size, the x (from its left)
// where the flow enters at the top and leaves at the bottom, and how to
// draw it at a position.
type item struct {
	w, h, ax int
	draw     func(b *strings.Builder, x, y int)
}

const (
	charW   = 7 // an average character at 12px
	gap     = 26
	nodeH   = 44
	padding = 14
)

func esc(s string) string { return html.EscapeString(s) }

// cut shortens a label for a box; the whole text is in the box's title.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func textWidth(s string) int { return len([]rune(s))*charW + 2*padding }

func pill(label string) item {
	w := max(textWidth(label), 70)
	return item{w: w, h: 30, ax: w / 2, draw: func(b *strings.Builder, x, y int) {
		fmt.Fprintf(b, `<g class="flow-end"><rect x="%d" y="%d" width="%d" height="30" rx="15"/><text x="%d" y="%d" text-anchor="middle">%s</text></g>`, x, y, w, x+w/2, y+19, esc(label))
	}}
}

// nodeBox draws a node: its id, kind and agents.
func nodeBox(n *spec.NodePlan, dashed bool) item {
	var agents []string
	for _, a := range n.Agents {
		agents = append(agents, a.ID)
	}
	title := n.ID
	sub := n.Kind
	if len(agents) > 0 {
		sub += " · " + strings.Join(agents, ", ")
	}
	shown := cut(sub, 46)
	w := max(textWidth(title)+10, textWidth(shown), 130)
	class := "flow-node"
	if dashed {
		class += " attached"
	}
	tip := n.ID + " (" + n.Kind + ")"
	if n.Description != "" {
		tip += ": " + n.Description
	}
	if len(agents) > 0 {
		tip += "\nagents: " + strings.Join(agents, ", ")
	}
	return item{w: w, h: nodeH, ax: w / 2, draw: func(b *strings.Builder, x, y int) {
		fmt.Fprintf(b, `<g class="%s" data-node="%s"><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" rx="8"/>`, class, esc(n.ID), esc(tip), x, y, w, nodeH)
		fmt.Fprintf(b, `<text class="id" x="%d" y="%d" text-anchor="middle">%s</text>`, x+w/2, y+19, esc(title))
		fmt.Fprintf(b, `<text class="sub" x="%d" y="%d" text-anchor="middle">%s</text></g>`, x+w/2, y+35, esc(shown))
	}}
}

// note draws lines of text in a folded box.
func note(lines []string) item {
	full := strings.Join(lines, "\n")
	shown := make([]string, len(lines))
	w := 0
	for i, l := range lines {
		shown[i] = cut(l, 44)
		w = max(w, textWidth(shown[i]))
	}
	h := 16*len(lines) + 14
	return item{w: w, h: h, ax: 0, draw: func(b *strings.Builder, x, y int) {
		fmt.Fprintf(b, `<g class="flow-note"><title>%s</title><path d="M%d,%d h%d l10,10 v%d h-%d z"/>`, esc(full), x, y, w-10, h-10, w)
		for i, l := range shown {
			fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`, x+10, y+20+16*i, esc(l))
		}
		b.WriteString(`</g>`)
	}}
}

// withAttachments puts the nodes a node runs and the note of its posts to
// its right, joined by dashed lines.
func withAttachments(p *spec.Plan, n *spec.NodePlan, via map[string]bool) item {
	main := nodeBox(n, len(via) > 1)
	ga, ok := n.Config.(spec.GraphAttachments)
	if !ok {
		return main
	}
	a := ga.GraphAttachments()
	var side []item
	var labels []string
	for _, r := range a.Runs {
		w, ok := p.Nodes[r.Node]
		if !ok || via[r.Node] {
			continue
		}
		via[r.Node] = true
		side = append(side, withAttachments(p, w, via))
		delete(via, r.Node)
		labels = append(labels, r.Label)
	}
	// The posts hang below the node, right of the flow line, so that a
	// long list of rules does not widen the drawing.
	var posts *item
	var lines []string
	if len(a.Posts) > 0 {
		lines = append([]string{"posts by itself:"}, a.Posts...)
	}
	if len(a.Asks) > 0 {
		lines = append(append(lines, "also calls:"), a.Asks...)
	}
	if len(lines) > 0 {
		nt := note(lines)
		posts = &nt
	}
	if len(side) == 0 && posts == nil {
		return main
	}
	reach := 100 // room for the edge labels
	for _, l := range labels {
		reach = max(reach, textWidth(l))
	}
	const drop = 22 // from the node down to its posts
	sideW, sideH := 0, 0
	for i, s := range side {
		sideW = max(sideW, s.w)
		sideH += s.h
		if i > 0 {
			sideH += 12
		}
	}
	w, h := main.w, main.h
	if len(side) > 0 {
		w, h = main.w+reach+sideW, max(main.h, sideH)
	}
	if posts != nil {
		w = max(w, main.ax+24+posts.w)
		h = max(h, main.h+drop+posts.h)
	}
	return item{w: w, h: h, ax: main.ax, draw: func(b *strings.Builder, x, y int) {
		main.draw(b, x, y)
		if h > main.h {
			// The flow goes on from the node's foot.
			fmt.Fprintf(b, `<path class="flow-edge" d="M%d,%d V%d"/>`, x+main.ax, y+main.h, y+h)
		}
		if posts != nil {
			px, py := x+main.ax+24, y+main.h+drop
			fmt.Fprintf(b, `<path class="flow-edge dashed" d="M%d,%d V%d H%d"/>`, x+main.ax+main.w/4, y+main.h, py+12, px)
			posts.draw(b, px, py)
		}
		sy := y
		for i, s := range side {
			sx := x + main.w + reach
			my := y + main.h/2
			ty := sy + min(s.h/2, nodeH/2)
			fmt.Fprintf(b, `<path class="flow-edge dashed" d="M%d,%d C%d,%d %d,%d %d,%d" marker-end="url(#arrow)"/>`, x+main.w, my, x+main.w+reach/2, my, sx-reach/2, ty, sx-2, ty)
			if labels[i] != "" {
				fmt.Fprintf(b, `<text class="edge-label" x="%d" y="%d" text-anchor="middle">%s</text>`, x+main.w+reach/2, (my+ty)/2-6, esc(labels[i]))
			}
			s.draw(b, sx, sy)
			sy += s.h + 12
		}
	}}
}

// flowItems lays out flow steps.
func flowItems(p *spec.Plan, steps []*spec.FlowStep) []item {
	var out []item
	for _, s := range steps {
		switch s.Kind {
		case spec.StepNode:
			out = append(out, withAttachments(p, s.Node, map[string]bool{s.Node.ID: true}))
		case spec.StepLoop, spec.StepForeach:
			out = append(out, frame(s, sequence(flowItems(p, s.Do))))
		case spec.StepIf:
			out = append(out, decision(s, flowItems(p, s.Do), flowItems(p, s.Else)))
		}
	}
	return out
}

// sequence stacks items with arrows between them, their flow lines
// aligned.
func sequence(items []item) item {
	if len(items) == 0 {
		return item{w: 40, h: 10, ax: 20, draw: func(*strings.Builder, int, int) {}}
	}
	ax := 0
	for _, it := range items {
		ax = max(ax, it.ax)
	}
	w, h := 0, 0
	for i, it := range items {
		w = max(w, ax-it.ax+it.w)
		h += it.h
		if i > 0 {
			h += gap
		}
	}
	return item{w: w, h: h, ax: ax, draw: func(b *strings.Builder, x, y int) {
		cy := y
		for i, it := range items {
			if i > 0 {
				fmt.Fprintf(b, `<path class="flow-edge" d="M%d,%d V%d" marker-end="url(#arrow)"/>`, x+ax, cy-gap, cy-1)
			}
			it.draw(b, x+ax-it.ax, cy)
			cy += it.h + gap
		}
	}}
}

// frame draws a loop or foreach around its body: a head with its bounds,
// the body, and the way back to the head.
func frame(s *spec.FlowStep, body item) item {
	title := "loop " + s.As
	head := s.As + " = 1.." + fmt.Sprint(s.MaxConst)
	if s.MaxExpr != nil {
		head = s.As + " = 1.." + s.MaxExpr.Source
	}
	if s.Kind == spec.StepForeach {
		title = "foreach " + s.As
		head = "each " + s.As + " of " + s.In.Source
		if s.Concurrency > 1 {
			title += fmt.Sprintf(", %d at once", s.Concurrency)
		}
	}
	until := ""
	if s.Until != nil {
		until = "until " + s.Until.Source
	}
	if s.Break != nil {
		until = strings.TrimSpace(until + " break " + s.Break.Source)
	}
	headW := max(textWidth(cut(head, 50)), textWidth(cut(until, 50)), 120)
	headH := 30
	if until != "" {
		headH = 46
	}
	const top = 30 // the frame's title
	const side = 46
	ax := max(body.ax, headW/2) + padding
	w := max(ax+max(body.w-body.ax, headW/2)+side, textWidth(title)+padding)
	h := top + headH + gap + body.h + padding + 14
	return item{w: w, h: h, ax: ax, draw: func(b *strings.Builder, x, y int) {
		fmt.Fprintf(b, `<g class="flow-frame"><rect x="%d" y="%d" width="%d" height="%d" rx="10"/><text class="frame-title" x="%d" y="%d">%s</text></g>`, x, y, w, h, x+10, y+18, esc(title))
		hx, hy := x+ax-headW/2, y+top
		fmt.Fprintf(b, `<g class="flow-head"><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" rx="14"/><text x="%d" y="%d" text-anchor="middle">%s</text>`, esc(strings.TrimSpace(head+"\n"+until)), hx, hy, headW, headH, x+ax, hy+19, esc(cut(head, 50)))
		if until != "" {
			fmt.Fprintf(b, `<text class="sub" x="%d" y="%d" text-anchor="middle">%s</text>`, x+ax, hy+36, esc(cut(until, 50)))
		}
		b.WriteString(`</g>`)
		by := hy + headH + gap
		fmt.Fprintf(b, `<path class="flow-edge" d="M%d,%d V%d" marker-end="url(#arrow)"/>`, x+ax, hy+headH, by-1)
		body.draw(b, x+ax-body.ax, by)
		// The way back: from below the body, round the right, to the head.
		bottom := by + body.h + 10
		right := x + w - side/2
		fmt.Fprintf(b, `<path class="flow-edge back" d="M%d,%d V%d H%d V%d H%d" marker-end="url(#arrow)"/>`, x+ax, by+body.h, bottom, right, hy+headH/2, hx+headW+1)
		fmt.Fprintf(b, `<text class="edge-label" x="%d" y="%d" text-anchor="end">next</text>`, right-4, bottom-4)
	}}
}

// decision draws an if: a diamond, then the branches side by side, joined
// below.
func decision(s *spec.FlowStep, then, els []item) item {
	cond := cut("if "+s.Cond.Source, 44)
	dw, dh := textWidth(cond)+30, 50
	thenSeq, elseSeq := sequence(then), sequence(els)
	if len(els) == 0 {
		elseSeq = item{w: 60, h: 10, ax: 30, draw: func(b *strings.Builder, x, y int) {
			fmt.Fprintf(b, `<path class="flow-edge" d="M%d,%d V%d"/>`, x+30, y-1, y+10)
		}}
	}
	const between = 30
	branchesW := thenSeq.w + between + elseSeq.w
	w := max(dw, branchesW)
	bx := (w - branchesW) / 2 // left of the branches
	ax := w / 2
	branchH := max(thenSeq.h, elseSeq.h)
	h := dh + gap + 8 + branchH + gap + 4
	return item{w: w, h: h, ax: ax, draw: func(b *strings.Builder, x, y int) {
		cx := x + ax
		fmt.Fprintf(b, `<g class="flow-if"><title>%s</title><path d="M%d,%d L%d,%d L%d,%d L%d,%d z"/><text x="%d" y="%d" text-anchor="middle">%s</text></g>`,
			esc("if "+s.Cond.Source), cx, y, cx+dw/2, y+dh/2, cx, y+dh, cx-dw/2, y+dh/2, cx, y+dh/2+4, esc(cond))
		ty := y + dh + gap + 8
		tx := x + bx + thenSeq.ax
		ex := x + bx + thenSeq.w + between + elseSeq.ax
		join := ty + branchH + gap
		for _, br := range []struct {
			x     int
			label string
			seq   item
		}{{tx, "then", thenSeq}, {ex, "else", elseSeq}} {
			fmt.Fprintf(b, `<path class="flow-edge" d="M%d,%d V%d H%d V%d" marker-end="url(#arrow)"/>`, cx, y+dh, y+dh+8, br.x, ty-1)
			fmt.Fprintf(b, `<text class="edge-label" x="%d" y="%d" text-anchor="start">%s</text>`, br.x+4, ty-4, br.label)
			br.seq.draw(b, br.x-br.seq.ax, ty)
			fmt.Fprintf(b, `<path class="flow-edge" d="M%d,%d V%d H%d"/>`, br.x, ty+br.seq.h, join, cx)
		}
		fmt.Fprintf(b, `<path class="flow-edge" d="M%d,%d V%d"/>`, cx, join, y+h)
	}}
}
