package study

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/sweep"
)

// personaModel answers the persona panel: each member is right with the
// chance its persona (read from its system prompt) gives, drawn from a hash
// of its request, and wrong by 1 to 4 otherwise.
func personaModel(chance map[string]float64) func(llmtest.Request) llmtest.Reply {
	return func(r llmtest.Request) llmtest.Reply {
		v, ok := runtest.Arithmetic(r.LastUser())
		if !ok {
			return llmtest.Reply{Content: `\boxed{0}`}
		}
		p := 0.5
		h := fnv.New64a()
		for _, msg := range r.Messages {
			h.Write([]byte(msg.Content))
			for name, c := range chance {
				if msg.Role == "system" && strings.Contains(msg.Content, "You are "+name) {
					p = c
				}
			}
		}
		draw := h.Sum64()
		if float64(draw%10000)/10000 >= p {
			v += 1 + int(draw/10000%4)
		}
		return llmtest.Reply{Content: fmt.Sprintf("So it is \\boxed{%d}.", v)}
	}
}

// runPersonaStudy runs the example persona study over n generated items
// against personaModel, with its panels debating for rounds rounds (0: the
// spec's).
func runPersonaStudy(t *testing.T, n, rounds int) (*Report, *Study) {
	t.Helper()
	src, err := os.ReadFile("../../examples/reasoning-debate/studies/personas.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := filepath.Abs("../../examples/reasoning-debate/personas.yaml")
	text := strings.ReplaceAll(string(src), "../personas.yaml", ex)
	if rounds > 0 {
		text = strings.ReplaceAll(text, "set: {panel: ", fmt.Sprintf("set: {rounds: %d, panel: ", rounds))
	}
	text = strings.Replace(text, "gen:arithmetic?n=200&seed=1", fmt.Sprintf("gen:arithmetic?n=%d&seed=3", n), 1) + "resamples: 2000\nparallel: 8\n"
	rep, st, _ := runScriptedStudy(t, "personas", text, personaModel(map[string]float64{"Checker": 0.9, "Skeptic": 0.6, "Intuitive": 0.3}))
	return rep, st
}

// TestPersonaStudy runs the example study over panels against a scripted
// model whose personas differ in skill, and checks each persona's effect
// against the panels' own sweeps: the panels with and without it are
// those whose personas say so, the accuracies are the means over the items
// every panel scored of the panels' mean scores, the effect is their
// difference with an interval around it, and the persona the script makes
// strongest helps while the weakest hurts.
func TestPersonaStudy(t *testing.T) {
	rep, st := runPersonaStudy(t, 10, 1)
	if len(rep.Personas) != 3 {
		t.Fatalf("want the effects of 3 personas, got %+v", rep.Personas)
	}
	sums := map[string]*sweep.Summary{}
	for _, row := range rep.Rows {
		s, err := sweep.Load(filepath.Join(rep.Dir, row.Sweep))
		if err != nil {
			t.Fatal(err)
		}
		sums[row.Protocol] = s
		if len(row.Personas) == 0 {
			t.Errorf("row %s lists no personas", row.Protocol)
		}
	}
	effect := map[string]float64{}
	for _, e := range rep.Personas {
		var with, without []string
		for _, c := range st.Cells {
			if slices.Contains(c.Personas, e.Persona) {
				with = append(with, c.Label)
			} else {
				without = append(without, c.Label)
			}
		}
		if !slices.Equal(with, e.With) || !slices.Equal(without, e.Without) || len(without) == 0 {
			t.Errorf("%s: panels with %v and without %v, want %v and %v", e.Persona, e.With, e.Without, with, without)
		}
		mean := func(labels []string) (float64, int) {
			items := map[[2]int][]float64{}
			for _, l := range labels {
				for _, r := range sums[l].Runs {
					if r.Score != nil {
						k := [2]int{r.Line, r.Sample}
						items[k] = append(items[k], *r.Score)
					}
				}
			}
			total, n := 0.0, 0
			for k, xs := range items {
				if len(xs) != len(labels) {
					continue
				}
				// Only items every panel scored count.
				all := true
				for _, s := range sums {
					found := false
					for _, r := range s.Runs {
						found = found || (r.Line == k[0] && r.Sample == k[1] && r.Score != nil)
					}
					all = all && found
				}
				if !all {
					continue
				}
				sum := 0.0
				for _, x := range xs {
					sum += x
				}
				total += sum / float64(len(xs))
				n++
			}
			return total / float64(n), n
		}
		aw, n := mean(with)
		ao, _ := mean(without)
		if n != e.Items || math.Abs(aw-e.AccuracyWith) > 1e-9 || math.Abs(ao-e.AccuracyWithout) > 1e-9 {
			t.Errorf("%s: with %.4f without %.4f over %d items; the sweeps give %.4f and %.4f over %d", e.Persona, e.AccuracyWith, e.AccuracyWithout, e.Items, aw, ao, n)
		}
		if e.Effect == nil || math.Abs(e.Effect.Estimate-(aw-ao)) > 1e-9 || e.Effect.Low > e.Effect.Estimate || e.Effect.High < e.Effect.Estimate || e.PHolm == nil || *e.PHolm < *e.P {
			t.Errorf("%s: effect %+v, want %.4f inside its interval, and a Holm p no smaller than the raw one", e.Persona, e.Effect, aw-ao)
		}
		effect[e.Persona] = e.Effect.Estimate
	}
	if effect["checker"] <= 0 || effect["intuitive"] >= 0 {
		t.Errorf("the checker (right 90%% of the time) should help and the intuitive (30%%) hurt: %v", effect)
	}
	md := rep.Markdown()
	if !strings.Contains(md, "## Personas") || !strings.Contains(md, "| checker") {
		t.Errorf("results.md has no personas table:\n%s", md)
	}
}

// TestPanelFileErrors: a study over panels names its mistakes at their
// place in the file.
func TestPanelFileErrors(t *testing.T) {
	dir := t.TempDir()
	ex, _ := filepath.Abs("../../examples/reasoning-debate/personas.yaml")
	for _, tc := range []struct{ name, specs, want string }{
		{"persona on every panel", "  - {path: " + ex + ", label: a, personas: [x, y]}\n  - {path: " + ex + ", label: b, personas: [x]}\n",
			`study.yaml:5:6: persona "x" sits on every panel`},
		{"a panel without its personas", "  - {path: " + ex + ", label: a, personas: [x]}\n  - {path: " + ex + ", label: b}\n",
			"study.yaml:6:6: spec " + ex + " lists no personas while"},
		{"an unknown var", "  - {path: " + ex + ", label: a, set: {panle: all}, personas: [x]}\n  - {path: " + ex + ", label: b, personas: []}\n",
			`study.yaml:5:6: set: spec ` + ex + ` declares no var "panle"`},
	} {
		path := filepath.Join(dir, "study.yaml")
		src := "version: 1\nname: s\ndataset: d.jsonl\nspecs:\n" + tc.specs + "baseline: a\n"
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Load(path)
		if err == nil {
			_, err = Prepare(f, nodes.Registry())
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %q", tc.name, err, tc.want)
		}
	}
}

// TestPersonaEffectsOfGeneratedPanels reads persona effects from generated
// studies over panels (random panels of random personas, runs scored at
// random, some items unscored by some panel) and checks each against a
// direct reading: the items are those every panel scored, the effect is
// the mean over them of the with-panels' mean score minus the
// without-panels', inside its interval; renaming the panels changes no
// effect.
func TestPersonaEffectsOfGeneratedPanels(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 37))
	names := []string{"p", "q", "r", "s"}
	for range 200 {
		st := &Study{}
		var sums []*sweep.Summary
		for c := range 2 + r.IntN(4) {
			var ps []string
			for _, n := range names {
				if r.IntN(2) == 0 {
					ps = append(ps, n)
				}
			}
			if ps == nil {
				ps = []string{}
			}
			st.Cells = append(st.Cells, Cell{Label: fmt.Sprintf("panel-%d", c), Personas: ps})
			s := &sweep.Summary{}
			for line := 1; line <= 12; line++ {
				run := sweep.Run{Line: line}
				if r.IntN(10) > 0 {
					v := float64(r.IntN(2))
					run.Score = &v
				}
				s.Runs = append(s.Runs, run)
			}
			sums = append(sums, s)
		}
		effects, _ := personaEffects(st, sums, 200, 1)
		seen := map[string]bool{}
		for _, e := range effects {
			seen[e.Persona] = true
			var with, without []int
			for i, c := range st.Cells {
				if slices.Contains(c.Personas, e.Persona) {
					with = append(with, i)
				} else {
					without = append(without, i)
				}
			}
			if len(without) == 0 {
				// A persona on every panel has no effect to read; the
				// study file refuses it, and its difference is against
				// nothing here.
				continue
			}
			total, items := 0.0, 0
			for line := 1; line <= 12; line++ {
				all := true
				for _, s := range sums {
					all = all && s.Runs[line-1].Score != nil
				}
				if !all {
					continue
				}
				items++
				a, b := 0.0, 0.0
				for _, i := range with {
					a += *sums[i].Runs[line-1].Score / float64(len(with))
				}
				for _, i := range without {
					b += *sums[i].Runs[line-1].Score / float64(len(without))
				}
				total += a - b
			}
			if items != e.Items || e.Effect == nil || math.Abs(e.Effect.Estimate-total/float64(items)) > 1e-9 ||
				e.Effect.Low > e.Effect.Estimate+1e-12 || e.Effect.High < e.Effect.Estimate-1e-12 {
				t.Fatalf("%s: %+v (effect %+v); directly %d items, effect %v", e.Persona, e, e.Effect, items, total/float64(max(items, 1)))
			}
		}
		common := false
		for line := range 12 {
			all := true
			for _, s := range sums {
				all = all && s.Runs[line].Score != nil
			}
			common = common || all
		}
		for _, c := range st.Cells {
			for _, p := range c.Personas {
				if !seen[p] && common {
					// Every persona seated somewhere is read, when items exist.
					t.Fatalf("persona %s has no effect: %+v", p, effects)
				}
			}
		}
		renamed := &Study{}
		for _, c := range st.Cells {
			c.Label = "x-" + c.Label
			renamed.Cells = append(renamed.Cells, c)
		}
		again, _ := personaEffects(renamed, sums, 200, 1)
		for i := range effects {
			if effects[i].Effect != nil && (again[i].Effect == nil || again[i].Effect.Estimate != effects[i].Effect.Estimate) {
				t.Fatalf("renaming the panels changed %s's effect", effects[i].Persona)
			}
		}
	}
}
