package report

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/debate-runner/runner/runtime/result"
)

// TestRoundsAndDynamicsInReport: a run with per-round scores and verdict
// dynamics gets, in report.md and report.html, a line of the share of
// agents right after each round (drawn as an SVG with a point per round
// at that share) and a section per thread of its dynamics, over generated
// rounds.
func TestRoundsAndDynamicsInReport(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 37))
	for range 8 {
		plan, m, res := golden(t)
		res.Dynamics = result.Dynamics(res.Messages)
		var shares []string
		for i := range 1 + r.IntN(4) {
			rd := result.Round{Round: i + 1, Agents: map[string]float64{}}
			right := 0
			for _, a := range []string{"ana", "bo", "cy"}[:1+r.IntN(3)] {
				v := float64(r.IntN(2))
				rd.Agents[a] = v
				right += int(v)
			}
			shares = append(shares, fmt.Sprintf("%.4g", 100*float64(right)/float64(len(rd.Agents))))
			res.Rounds = append(res.Rounds, rd)
		}
		md := Markdown(plan, m, res)
		line := fmt.Sprintf("    line [%s]\n", strings.Join(shares, ", "))
		if !strings.Contains(md, "title \"Agents right by round (%)\"") || !strings.Contains(md, line) {
			t.Fatalf("report.md lacks the rounds chart with %q:\n%s", line, md)
		}
		page, err := HTML("rounds", md)
		if err != nil {
			t.Fatal(err)
		}
		html := string(page)
		if n := strings.Count(html, "<svg"); n != 3 {
			t.Fatalf("report.html draws %d charts, want 3 (verdicts, confidence, rounds)", n)
		}
		chart := html[strings.Index(html, "Agents right by round"):]
		chart = chart[:strings.Index(chart, "</svg>")]
		if got := strings.Count(chart, "<circle"); got != len(shares) {
			t.Fatalf("the rounds chart has %d points for %d rounds", got, len(shares))
		}
		for _, s := range shares {
			if !strings.Contains(chart, ">"+s+"</text>") {
				t.Fatalf("the rounds chart does not label %s%%:\n%s", s, chart)
			}
		}
		for _, th := range res.Dynamics {
			if !strings.Contains(md, "### goal "+th.Goal+" (node "+th.Node+")") {
				t.Fatalf("report.md has no dynamics of %s/%s", th.Node, th.Goal)
			}
			for _, e := range th.Whispers {
				if !strings.Contains(md, fmt.Sprintf("| %d | %d | %d | %d | %d |", e.Count, e.WithVerdict, e.Followed, e.Changed, e.Adopted)) {
					t.Fatalf("report.md lacks the whisper edge %+v", e)
				}
			}
		}
		if c := res.Dynamics[0]; c.Consensus != "" && !strings.Contains(md, "Consensus on "+c.Consensus) {
			t.Fatalf("report.md does not say the consensus %s", c.Consensus)
		}
	}
}
