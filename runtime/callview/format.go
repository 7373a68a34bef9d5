package callview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteList prints a run's calls as a table, one line each.
func WriteList(w io.Writer, r *Run) error {
	fmt.Fprintf(w, "%s (%s): %d calls\n", r.ID, r.Spec, len(r.Calls))
	if r.Provenance != "" {
		fmt.Fprintf(w, "made by %s\n", r.Provenance)
	}
	fmt.Fprintln(w)
	if len(r.Calls) == 0 {
		_, err := fmt.Fprintln(w, "The run made no model calls.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tCALL\tAGENT\tSOURCE\tTOKENS IN/OUT\tLATENCY\tCOST\tNOTES")
	for _, s := range r.Summaries() {
		var notes []string
		if s.Retries > 0 {
			notes = append(notes, plural(s.Retries, "retry", "retries"))
		}
		if s.Repairs > 0 {
			notes = append(notes, plural(s.Repairs, "repair", "repairs"))
		}
		if s.Rejections > 0 {
			notes = append(notes, plural(s.Rejections, "rejection", "rejections"))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", s.Index, s.Key, dash(s.Agent), s.Source, s.PromptTokens, s.CompletionTokens,
			seconds(s.LatencyMS), money(s.Cost, s.Priced), strings.Join(notes, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nShow one with: runner show %s CALL (its key or its number)\n", r.Dir)
	return err
}

// Write prints one call for a terminal: what it was, what it sent, what
// came back, how it was read.
func Write(w io.Writer, c *Call) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Call %s\n", c.Key)
	kv := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(kv, "  %s\t%s\n", k, v)
		}
	}
	row("node", c.Node)
	row("agent", c.Agent)
	row("to", c.Target)
	model := c.Model
	if c.ModelName != "" && c.ModelName != c.Model {
		model += " (" + c.ModelName + ")"
	}
	if c.Endpoint != "" {
		model += " at endpoint " + c.Endpoint
	}
	row("model", strings.TrimSpace(model))
	if len(c.Params) > 0 {
		row("params", string(c.Params))
	}
	if len(c.Tools) > 0 {
		row("tools offered", strings.Join(c.Tools, ", "))
	}
	row("source", sourceText(c))
	if c.Done {
		tok := fmt.Sprintf("%d prompt (%d cached), %d completion", c.PromptTokens, c.CachedTokens, c.CompletionTokens)
		if c.CacheWriteTokens > 0 {
			tok = fmt.Sprintf("%d prompt (%d cached, %d written to the cache), %d completion", c.PromptTokens, c.CachedTokens, c.CacheWriteTokens, c.CompletionTokens)
		}
		if c.UsageEstimated {
			tok += " (estimated: the endpoint sent no usage)"
		}
		row("tokens", tok)
		row("cost", money(c.Cost, c.Priced))
		row("latency", seconds(c.LatencyMS))
		if c.Attempts > 1 {
			row("attempts", fmt.Sprint(c.Attempts))
		}
		row("finish reason", c.Finish)
	}
	if c.RequestedAt != nil {
		row("requested", c.RequestedAt.UTC().Format("2006-01-02 15:04:05.000 UTC"))
	}
	row("repair of", c.RepairOf)
	if len(c.Recorded) > 0 {
		row("recorded as", strings.Join(c.Recorded, ", "))
	}
	_ = kv.Flush()

	section(&b, fmt.Sprintf("Messages sent (%d)", len(c.Messages)))
	switch {
	case c.RequestFrom != "":
		b.WriteString("  As the recording asked them (" + c.RequestFrom + "):\n")
	case !c.Requested:
		b.WriteString("  Not journaled: the reply was not asked for in this run (" + sourceText(c) + "), so its request is not known.\n")
	case len(c.Messages) == 0:
		b.WriteString("  (none)\n")
	}
	for i, m := range c.Messages {
		head := fmt.Sprintf("[%d] %s", i+1, m.Role)
		if m.Name != "" {
			head += " (" + m.Name + ")"
		}
		if m.ToolCallID != "" {
			head += " answering tool call " + m.ToolCallID
		}
		head += fmt.Sprintf(" · %d chars", m.Chars)
		fmt.Fprintf(&b, "  %s\n", head)
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, "    calls tool %s(%s) [%s]\n", tc.Name, tc.Arguments, tc.ID)
		}
		switch {
		case m.TextFrom != "":
			indent(&b, m.Text, "    | ")
		case m.Chars > 0:
			fmt.Fprintf(&b, "    (text not journaled; digest %s. Run with --log-prompts to keep prompt texts.)\n", m.Digest)
		}
	}

	section(&b, "Reply")
	switch {
	case c.Done:
		if c.Reply == "" && len(c.ToolCalls) == 0 {
			b.WriteString("  (empty)\n")
		}
		indent(&b, c.Reply, "  | ")
		for _, tc := range c.ToolCalls {
			fmt.Fprintf(&b, "  calls tool %s(%s) [%s]\n", tc.Name, tc.Arguments, tc.ID)
		}
	case len(c.Errors) > 0:
		b.WriteString("  No reply: the call failed.\n")
	case c.Stopped:
		b.WriteString("  No reply: the run stopped before it came (another call failed, or the run was stopped).\n")
	default:
		b.WriteString("  No reply yet: the call is in flight, or the run was killed while it was.\n")
	}

	if len(c.Output) > 0 || len(c.Fallback) > 0 {
		section(&b, "Parsed output")
		if len(c.Output) > 0 {
			indent(&b, pretty(c.Output), "  ")
		}
		if len(c.Fallback) > 0 {
			fmt.Fprintf(&b, "  The reply could not be parsed (%s); the fallback output was used:\n", c.FallbackReason)
			indent(&b, pretty(c.Fallback), "  ")
		}
	}
	if len(c.Retries) > 0 {
		section(&b, fmt.Sprintf("Retries (%d)", len(c.Retries)))
		for _, r := range c.Retries {
			status := ""
			if r.Status != 0 {
				status = fmt.Sprintf(" HTTP %d", r.Status)
			}
			fmt.Fprintf(&b, "  attempt %d%s: %s (waited %s)\n", r.Attempt, status, r.Error, seconds(r.WaitMS))
		}
	}
	if len(c.Repairs) > 0 {
		section(&b, fmt.Sprintf("Repairs (%d)", len(c.Repairs)))
		for _, r := range c.Repairs {
			fmt.Fprintf(&b, "  repair %d: %s; asked again as %s", r.Attempt, r.Error, r.Next)
			if r.Mode != "" {
				fmt.Fprintf(&b, " (%s)", r.Mode)
			}
			b.WriteString("\n")
		}
	}
	if len(c.Rejections) > 0 {
		section(&b, fmt.Sprintf("Rejections (%d)", len(c.Rejections)))
		for _, r := range c.Rejections {
			fmt.Fprintf(&b, "  attempt %d: %s", r.Attempt, r.Reasons)
			if r.Next != "" {
				fmt.Fprintf(&b, "; asked again as %s", r.Next)
			}
			b.WriteString("\n")
		}
	}
	if len(c.ToolRuns) > 0 {
		section(&b, fmt.Sprintf("Tools run (%d)", len(c.ToolRuns)))
		for _, t := range c.ToolRuns {
			fmt.Fprintf(&b, "  %s(%s) under %s\n", t.Tool, t.Arguments, t.Key)
			res := t.Result
			if len(res) > 2000 {
				res = res[:2000] + "…"
			}
			indent(&b, res, "    | ")
		}
	}
	if len(c.Errors) > 0 {
		section(&b, "Errors")
		for _, e := range c.Errors {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// sourceText says where a reply came from in words.
func sourceText(c *Call) string {
	switch c.Unanswered() {
	case "failed":
		return "failed"
	case "no reply":
		return "no reply (the run stopped before it came)"
	case "in flight":
		return "in flight (no reply journaled yet)"
	}
	switch c.Source {
	case "network":
		return "network (the endpoint answered this call)"
	case "cache":
		return "cache (an identical earlier request's reply)"
	case "shared":
		return "shared (an identical call in flight at the same time)"
	case "replay":
		return "replay (a recorded run's reply)"
	case "journal":
		return "journal (recorded before a resume)"
	case "placeholder":
		return "placeholder (dry run)"
	}
	return c.Source
}

func section(b *bytes.Buffer, title string) {
	fmt.Fprintf(b, "\n%s\n", title)
}

func indent(b *bytes.Buffer, text, prefix string) {
	if text == "" {
		return
	}
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		b.WriteString(strings.TrimRight(prefix+line, " "))
		b.WriteByte('\n')
	}
}

func pretty(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	if s, ok := v.(string); ok {
		return s
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return string(raw)
	}
	return string(data)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func seconds(ms int64) string { return fmt.Sprintf("%.2f s", float64(ms)/1000) }

func money(c float64, priced bool) string {
	if !priced {
		return "-"
	}
	return fmt.Sprintf("$%.4f", c)
}
