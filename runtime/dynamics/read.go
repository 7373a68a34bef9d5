// Package dynamics is `runner dynamics`: it reads and prints how a debate
// moved, as its record keeps it. It computes nothing of its own: a run's
// dynamics are result.json's `dynamics` (runtime/result, the one
// definition), a sweep's are summary.json's (runtime/sweep adds the runs'
// up), so the command, the files and spec tests say the same thing.
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

// Report is the dynamics of a run directory, or of a sweep directory.
type Report struct {
	Dir string `json:"dir"`
	// Sweep is true for a sweep directory: Goals then holds its threads
	// added up over its finished runs (summary.json's dynamics), Runs
	// those runs and Unfinished the runs without a result.
	Sweep      bool `json:"sweep"`
	Runs       int  `json:"runs"`
	Unfinished int  `json:"unfinished,omitempty"`
	// Threads are a run's threads (result.json's dynamics).
	Threads []result.GoalDynamics `json:"threads,omitempty"`
	Goals   []sweep.GoalDynamics  `json:"goals"`
	Totals  Totals                `json:"totals"`
}

// Totals adds up every thread.
type Totals struct {
	Threads         int            `json:"threads"`
	WithVerdicts    int            `json:"with_verdicts"`
	Consensus       int            `json:"consensus"`
	ForcedConsensus int            `json:"forced_consensus"`
	Changes         int            `json:"changes"`
	ChangesByAgent  map[string]int `json:"changes_by_agent"`
	// ConsensusRate is Consensus over WithVerdicts with its 95 % (Wilson)
	// interval.
	ConsensusRate *sweep.Accuracy    `json:"consensus_rate,omitempty"`
	Whispers      result.Influence   `json:"whispers"`
	Public        result.Influence   `json:"public"`
	WhisperGraph  []result.Influence `json:"whisper_graph"`
}

// Read reads the dynamics of dir: a run directory (result.json) or a
// sweep directory (summary.json).
func Read(dir string) (*Report, error) {
	rep := &Report{Dir: dir}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		s, err := sweep.Load(dir)
		if err != nil {
			return nil, err
		}
		rep.Sweep = true
		for _, r := range s.Runs {
			if r.Status == result.StatusCompleted || r.Status == result.StatusInconclusive || r.Status == result.StatusFailed {
				rep.Runs++
			} else {
				rep.Unfinished++
			}
		}
		if rep.Runs == 0 {
			return nil, fmt.Errorf("%s: no run of the sweep has finished", dir)
		}
		rep.Goals = s.Dynamics
	} else {
		res, err := result.Read(dir)
		if err != nil {
			return nil, fmt.Errorf("%s has neither a run's result.json nor a sweep's summary.json: %w", dir, err)
		}
		rep.Runs, rep.Threads = 1, res.Dynamics
		rep.Goals = sweep.SumDynamics([][]result.GoalDynamics{res.Dynamics})
	}
	rep.Totals = total(rep.Goals)
	return rep, nil
}

// total adds up the threads of a sweep's (or one run's) dynamics.
func total(goals []sweep.GoalDynamics) Totals {
	t := Totals{ChangesByAgent: map[string]int{}, WhisperGraph: []result.Influence{}}
	edges := map[[2]string]*result.Influence{}
	for _, g := range goals {
		t.Threads += g.Runs
		t.WithVerdicts += g.WithVerdicts
		t.Consensus += g.Consensus
		t.ForcedConsensus += g.ForcedConsensus
		t.Changes += g.Changes
		for a, n := range g.ByAgent {
			t.ChangesByAgent[a] += n
		}
		for _, e := range g.Whispers {
			t.Whispers.Add(e)
			k := [2]string{e.From, e.To}
			if edges[k] == nil {
				edges[k] = &result.Influence{From: e.From, To: e.To}
			}
			edges[k].Add(e)
		}
		for _, e := range g.Public {
			t.Public.Add(e)
		}
	}
	if t.WithVerdicts > 0 {
		scores := make([]float64, t.WithVerdicts)
		for i := range t.Consensus {
			scores[i] = 1
		}
		t.ConsensusRate = sweep.MeanCI(scores)
	}
	for _, e := range edges {
		t.WhisperGraph = append(t.WhisperGraph, *e)
	}
	sort.Slice(t.WhisperGraph, func(i, j int) bool {
		a, b := t.WhisperGraph[i], t.WhisperGraph[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.From+"\x00"+a.To < b.From+"\x00"+b.To
	})
	return t
}

// WriteText writes the report for a reader: each thread of a single run,
// or each thread's line over a sweep, then the totals and the whisper
// graph.
func (rep *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	t := rep.Totals
	if rep.Sweep {
		fmt.Fprintf(&b, "Dynamics of sweep %s: %d finished runs", rep.Dir, rep.Runs)
		if rep.Unfinished > 0 {
			fmt.Fprintf(&b, " (%d not finished, left out)", rep.Unfinished)
		}
		b.WriteString("\n")
		for _, g := range rep.Goals {
			fmt.Fprintf(&b, "%s\n", strings.SplitN(g.String(), "\n", 2)[0])
		}
	} else {
		fmt.Fprintf(&b, "Dynamics of run %s\n", rep.Dir)
		for _, th := range rep.Threads {
			writeThread(&b, th)
		}
	}
	b.WriteString("\n")
	if t.WithVerdicts == 0 {
		fmt.Fprintf(&b, "No verdicts: %d threads, none with a verdict to follow.\n", t.Threads)
	} else {
		fmt.Fprintf(&b, "Consensus: %d of %d threads with verdicts (%s)", t.Consensus, t.WithVerdicts, Share(t.Consensus, t.WithVerdicts))
		if a := t.ConsensusRate; a != nil && rep.Sweep {
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
	if len(t.WhisperGraph) > 0 {
		b.WriteString("Whisper graph (sender -> addressee: whispers, addressee changed next, adopted the sender's verdict):\n")
		for _, e := range t.WhisperGraph {
			fmt.Fprintf(&b, "  %s -> %s: %d, %d changed, %d adopted\n", e.From, e.To, e.Count, e.Changed, e.Adopted)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeThread(b *strings.Builder, th result.GoalDynamics) {
	name := "node " + th.Node
	if th.Goal != "" {
		name = "goal " + th.Goal + " (node " + th.Node + ")"
	}
	fmt.Fprintf(b, "\n%s: %s, %s\n", name, count(th.Messages, "message"), count(len(th.Participants), "participant"))
	switch {
	case th.Verdicts == 0:
		b.WriteString("  no verdicts\n")
		return
	case th.Consensus != "":
		fmt.Fprintf(b, "  consensus: %s, all %d, from turn %d", th.Consensus, len(th.Participants), th.FormedTurn)
		if th.Forced > 0 {
			fmt.Fprintf(b, " (%d verdicts forced)", th.Forced)
		}
		b.WriteString("\n")
	case th.Majority != "":
		fmt.Fprintf(b, "  no consensus: most held %s (%.0f %% of those with a verdict)\n", th.Majority, 100*th.FinalAgreement)
	default:
		b.WriteString("  no consensus, and no verdict held by more than any other\n")
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

func writeInfluence(b *strings.Builder, what string, in result.Influence) {
	if in.Count == 0 {
		fmt.Fprintf(b, "%s: none\n", what)
		return
	}
	fmt.Fprintf(b, "%s: %d; the addressee's next verdict changed after %d (%s), took the sender's after %d of the %d sent with a verdict (%s)\n",
		what, in.Count, in.Changed, Share(in.Changed, in.Count), in.Adopted, in.WithVerdict, Share(in.Adopted, in.WithVerdict))
}

// Share is n of d as a percentage for text, "-" when d is 0.
func Share(n, d int) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f %%", 100*float64(n)/float64(d))
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
