package spec

import (
	"fmt"
	"text/template/parse"

	"github.com/debate-runner/runner/spec/value"
)

// checkCacheBreaks checks the uses of {{cacheBreak}} in the template name
// and those it calls: the helper marks the one place a message splits into
// a cached start and the rest, so it stands alone as an action (its mark is
// not text to pass to a function or keep in a variable), outside any range
// (which would mark a message once per item), and one rendering reaches it
// at most once (branches of an if count apart).
func (c *templateChecker) checkCacheBreaks(name string) {
	w := &cacheBreakWalk{c: c, reported: map[string]bool{}, open: map[string]bool{}}
	w.template(name, 0, false)
}

type cacheBreakWalk struct {
	c        *templateChecker
	reported map[string]bool
	open     map[string]bool // templates being walked: a cycle is reported elsewhere
}

func (w *cacheBreakWalk) errorf(tree *parse.Tree, n parse.Node, format string, args ...any) {
	loc, _ := tree.ErrorContext(n)
	if w.reported[loc] {
		return
	}
	w.reported[loc] = true
	w.c.errs = append(w.c.errs, loc+": "+fmt.Sprintf(format, args...))
}

// template walks a called template with the marks made before it (count),
// returning the marks made after it.
func (w *cacheBreakWalk) template(name string, count int, inRange bool) int {
	t := w.c.set.Lookup(name)
	if t == nil || t.Tree == nil || w.open[name] {
		return count
	}
	w.open[name] = true
	defer delete(w.open, name)
	return w.walk(t.Tree, t.Tree.Root, count, inRange)
}

func (w *cacheBreakWalk) walk(tree *parse.Tree, n parse.Node, count int, inRange bool) int {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return count
		}
		for _, x := range n.Nodes {
			count = w.walk(tree, x, count, inRange)
		}
	case *parse.ActionNode:
		if !aloneCacheBreak(n.Pipe) {
			w.pipe(tree, n.Pipe)
			return count
		}
		switch {
		case inRange:
			w.errorf(tree, n, "{{%s}} inside a range would split a message once per item; a message has one split point", value.CacheBreakFunc)
		case count > 0:
			w.errorf(tree, n, "a second {{%s}} in one message: a message has one split point (the end of its stable start)", value.CacheBreakFunc)
		}
		return count + 1
	case *parse.IfNode:
		return w.branch(tree, &n.BranchNode, count, inRange)
	case *parse.WithNode:
		return w.branch(tree, &n.BranchNode, count, inRange)
	case *parse.RangeNode:
		w.pipe(tree, n.Pipe)
		w.walk(tree, n.List, count, true)
		return max(count, w.walk(tree, n.ElseList, count, inRange))
	case *parse.TemplateNode:
		w.pipe(tree, n.Pipe)
		return w.template(n.Name, count, inRange)
	}
	return count
}

func (w *cacheBreakWalk) branch(tree *parse.Tree, b *parse.BranchNode, count int, inRange bool) int {
	w.pipe(tree, b.Pipe)
	return max(w.walk(tree, b.List, count, inRange), w.walk(tree, b.ElseList, count, inRange))
}

// pipe reports cacheBreak used inside a pipeline: as an argument, piped on
// or kept in a variable, where its mark would not reach the prompt as it is.
func (w *cacheBreakWalk) pipe(tree *parse.Tree, p *parse.PipeNode) {
	if p == nil {
		return
	}
	for _, cmd := range p.Cmds {
		for _, arg := range cmd.Args {
			switch a := arg.(type) {
			case *parse.IdentifierNode:
				if a.Ident == value.CacheBreakFunc {
					w.errorf(tree, a, "{{%s}} must stand alone as an action: it marks where a message splits, it is not text to pass on or keep", value.CacheBreakFunc)
				}
			case *parse.PipeNode:
				w.pipe(tree, a)
			}
		}
	}
}

// aloneCacheBreak reports whether a pipeline is {{cacheBreak}} alone.
func aloneCacheBreak(p *parse.PipeNode) bool {
	if p == nil || len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return false
	}
	id, ok := p.Cmds[0].Args[0].(*parse.IdentifierNode)
	return ok && id.Ident == value.CacheBreakFunc
}
