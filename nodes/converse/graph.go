package converse

import (
	"fmt"
	"strings"

	"github.com/debate-runner/runner/spec"
)

// GraphAttachments implements spec.GraphAttachments: a conversation's
// watchers, and its time keeper's interjections, are drawn beside it.
func (c *Config) GraphAttachments() spec.GraphAttachment {
	var a spec.GraphAttachment
	for _, w := range c.Watch {
		a.Runs = append(a.Runs, spec.GraphRun{Node: w.Node, Label: fmt.Sprintf("watches every %d turns", w.Every)})
	}
	for _, ij := range c.Interject {
		var when []string
		if ij.Every > 0 {
			when = append(when, fmt.Sprintf("every %d turns", ij.Every))
		}
		if ij.When != nil {
			when = append(when, "when "+ij.When.Source)
		}
		line := strings.Join(when, ", ") + ": " + templateName(ij.Template)
		if ij.ForceVerdict {
			line += " (forces verdicts)"
		}
		a.Posts = append(a.Posts, line)
	}
	if sel := c.Select; sel != nil && sel.Agent != nil {
		line := fmt.Sprintf("%s chooses each speaker (%s)", sel.Agent.ID, templateName(sel.Template))
		if sel.End != "" {
			line += ", may end it with " + sel.End
		}
		a.Asks = append(a.Asks, line)
	}
	return a
}

// templateName is a template's name without its library.
func templateName(t string) string {
	if i := strings.LastIndex(t, "/"); i >= 0 {
		return t[i+1:]
	}
	return t
}
