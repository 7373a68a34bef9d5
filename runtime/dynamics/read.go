package dynamics

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/sweep"
)

// Report is the dynamics of a run directory, or of every finished run of a
// sweep directory.
type Report struct {
	Dir string `json:"dir"`
	// Sweep is true for a sweep directory; Runs then holds each finished
	// run's dynamics by its folder name, and Unfinished counts the runs
	// without a result.
	Sweep      bool            `json:"sweep"`
	Runs       map[string]*Run `json:"runs"`
	Unfinished int             `json:"unfinished,omitempty"`
	Totals     Totals          `json:"totals"`
	// ConsensusRate is the share of threads with verdicts that ended in
	// consensus, with its 95 % (Wilson) interval.
	ConsensusRate *sweep.Accuracy `json:"consensus_rate,omitempty"`
}

// Read reads the dynamics of dir: a run directory (result.json) or a
// sweep directory (summary.json).
func Read(dir string) (*Report, error) {
	rep := &Report{Dir: dir, Runs: map[string]*Run{}}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		s, err := sweep.Load(dir)
		if err != nil {
			return nil, err
		}
		rep.Sweep = true
		for _, r := range s.Runs {
			if r.Dir == "" {
				rep.Unfinished++
				continue
			}
			rd := r.Dir
			if !filepath.IsAbs(rd) {
				rd = filepath.Join(dir, filepath.Base(rd))
			}
			res, err := result.Read(rd)
			if err != nil {
				rep.Unfinished++
				continue
			}
			rep.Runs[filepath.Base(rd)] = Of(res.Messages)
		}
		if len(rep.Runs) == 0 {
			return nil, fmt.Errorf("%s: no run of the sweep has finished", dir)
		}
	} else {
		res, err := result.Read(dir)
		if err != nil {
			return nil, fmt.Errorf("%s has neither a run's result.json nor a sweep's summary.json: %w", dir, err)
		}
		rep.Runs[filepath.Base(dir)] = Of(res.Messages)
	}
	runs := make([]*Run, 0, len(rep.Runs))
	var agreed []float64
	for _, name := range rep.names() {
		r := rep.Runs[name]
		runs = append(runs, r)
		for _, th := range r.Threads {
			if verdicts(th) {
				agreed = append(agreed, boolScore(th.Consensus != ""))
			}
		}
	}
	rep.Totals = Sum(runs...)
	rep.ConsensusRate = sweep.MeanCI(agreed)
	return rep, nil
}

func (rep *Report) names() []string {
	names := make([]string, 0, len(rep.Runs))
	for n := range rep.Runs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func verdicts(th Thread) bool {
	for _, a := range th.Participants {
		if a.Verdicts > 0 {
			return true
		}
	}
	return false
}

func boolScore(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// WriteText writes the report for a reader: each thread of a single run,
// or the totals of a sweep with each agent's changes and the whisper
// graph summed over its runs.
func (rep *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	t := rep.Totals
	if rep.Sweep {
		fmt.Fprintf(&b, "Dynamics of sweep %s: %d finished runs", rep.Dir, t.Runs)
		if rep.Unfinished > 0 {
			fmt.Fprintf(&b, " (%d not finished, left out)", rep.Unfinished)
		}
		b.WriteString("\n")
	} else {
		fmt.Fprintf(&b, "Dynamics of run %s\n", rep.Dir)
		for _, name := range rep.names() {
			for _, th := range rep.Runs[name].Threads {
				writeThread(&b, th)
			}
		}
	}
	b.WriteString("\n")
	if t.WithVerdicts == 0 {
		fmt.Fprintf(&b, "No verdicts: %d threads, none with a verdict to follow.\n", t.Threads)
	} else {
		fmt.Fprintf(&b, "Consensus: %d of %d threads with verdicts (%s)", t.Consensus, t.WithVerdicts, Share(t.Consensus, t.WithVerdicts))
		if a := rep.ConsensusRate; a != nil && rep.Sweep {
			fmt.Fprintf(&b, ", 95 %% interval %.0f-%.0f %%", 100*a.Low, 100*a.High)
		}
		b.WriteString("\n")
		if t.ForcedConsensus > 0 {
			fmt.Fprintf(&b, "  %d of them with a verdict the conversation forced\n", t.ForcedConsensus)
		}
		fmt.Fprintf(&b, "Verdict changes: %d", t.Changes)
		agents := make([]string, 0, len(t.ChangesByAgent))
		for a := range t.ChangesByAgent {
			agents = append(agents, a)
		}
		sort.Strings(agents)
		var parts []string
		for _, a := range agents {
			parts = append(parts, fmt.Sprintf("%s %d", a, t.ChangesByAgent[a]))
		}
		if len(parts) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
		}
		b.WriteString("\n")
	}
	writeInfluence(&b, "Whispers", t.Whispers)
	writeInfluence(&b, "Public messages to one agent", t.Public)
	var edges []Edge
	whispers := map[[2]string]*Influence{}
	for _, name := range rep.names() {
		for _, e := range rep.Runs[name].Whispers {
			k := [2]string{e.From, e.To}
			if whispers[k] == nil {
				whispers[k] = &Influence{}
			}
			whispers[k].add(e.Influence)
		}
	}
	for k, in := range whispers {
		edges = append(edges, Edge{From: k[0], To: k[1], Influence: *in})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].Messages != edges[j].Messages {
			return edges[i].Messages > edges[j].Messages
		}
		return edges[i].From+"\x00"+edges[i].To < edges[j].From+"\x00"+edges[j].To
	})
	if len(edges) > 0 {
		b.WriteString("Whisper graph (sender -> addressee: whispers, addressee changed next, adopted the sender's verdict):\n")
		for _, e := range edges {
			fmt.Fprintf(&b, "  %s -> %s: %d, %d changed, %d adopted\n", e.From, e.To, e.Messages, e.Changed, e.Adopted)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeThread(b *strings.Builder, th Thread) {
	name := th.Node
	if th.Goal != "" {
		name = "goal " + th.Goal + " (node " + th.Node + ")"
	}
	fmt.Fprintf(b, "\n%s: %s, %s\n", name, count(th.Messages, "message"), count(len(th.Participants), "participant"))
	if !verdicts(th) {
		b.WriteString("  no verdicts\n")
		return
	}
	switch {
	case th.Consensus != "":
		fmt.Fprintf(b, "  consensus: %s, all %d, from turn %d", th.Consensus, len(th.Participants), th.FormedTurn)
		if th.Forced > 0 {
			fmt.Fprintf(b, " (%d verdicts forced)", th.Forced)
		}
		b.WriteString("\n")
	default:
		fmt.Fprintf(b, "  no consensus: most held %s (%.0f %% of participants)\n", th.Majority, 100*th.MajorityShare)
	}
	for _, a := range th.Participants {
		fmt.Fprintf(b, "  %s: %s, final %s, %s", a.Agent, count(a.Messages, "message"), orNone(a.Final), count(a.Changes, "change"))
		var ts []string
		for _, tr := range a.Transitions {
			s := fmt.Sprintf("%s -> %s at turn %d", tr.From, tr.To, tr.Turn)
			if tr.Forced {
				s += " (forced)"
			}
			ts = append(ts, s)
		}
		if len(ts) > 0 {
			fmt.Fprintf(b, " (%s)", strings.Join(ts, "; "))
		}
		b.WriteString("\n")
	}
}

func writeInfluence(b *strings.Builder, what string, in Influence) {
	if in.Messages == 0 {
		fmt.Fprintf(b, "%s: none\n", what)
		return
	}
	fmt.Fprintf(b, "%s: %d; the addressee's next verdict changed after %d (%s), took the sender's after %d of the %d sent with a verdict (%s)\n",
		what, in.Messages, in.Changed, Share(in.Changed, in.Messages), in.Adopted, in.WithVerdict, Share(in.Adopted, in.WithVerdict))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// count is n with its noun, plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Write writes the report as text (WriteText), or as indented JSON.
func (rep *Report) Write(w io.Writer, asJSON bool) error {
	if !asJSON {
		return rep.WriteText(w)
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
