package runtime

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

// flowGen writes a random spec: loops with random max and until (on a
// gate node's reply, on the round, or none), foreach over a list var of
// random length, ifs (on a gate's reply or on the round), and nodes whose
// templates and expressions index, slice and divide by the round, the
// items and the history's length. Each condition that reads the run reads
// a gate node of its own, run just before it; a gate's replies are all
// "yes" or all "no" in a run (its script), so the runs over every script
// walk every path the path check walks.
type flowGen struct {
	rnd                *rand.Rand
	nodes, templates   []string
	gates, says, calcs int
	lists              int
	loops, foreachs    int
	listLen            int
	scope              []string // loop and foreach variables in scope
	depth, budget      int
}

func (g *flowGen) risky(inTemplate bool) string {
	k := g.rnd.Intn(5)
	var vars []string
	vars = append(vars, g.scope...)
	if inTemplate {
		switch g.rnd.Intn(5) {
		case 0:
			return fmt.Sprintf("{{index .History %d}}", k)
		case 1:
			return fmt.Sprintf("{{index .Vars.list %d}}", k)
		case 2:
			return fmt.Sprintf("{{slice .Agent.Name 0 %d}}", k+3)
		case 3:
			return "{{.Round}}"
		}
		return "{{len .History}}"
	}
	switch c := g.rnd.Intn(5); {
	case c == 0 && len(vars) > 0:
		return fmt.Sprintf("10 %% (%s - %d)", vars[g.rnd.Intn(len(vars))], k)
	case c == 1:
		return fmt.Sprintf("vars.list[%d]", k)
	case c == 2:
		return fmt.Sprintf("10 %% (len(vars.list) - %d)", k)
	case c == 3 && len(vars) > 0:
		return fmt.Sprintf("%s + 1", vars[g.rnd.Intn(len(vars))])
	}
	return "len(vars.list)"
}

func (g *flowGen) gate() string {
	name := fmt.Sprintf("gate_%d", g.gates)
	g.gates++
	g.templates = append(g.templates, fmt.Sprintf("    t_%s: \"KEY=%s/r{{.Round}}\"", name, name))
	g.nodes = append(g.nodes, fmt.Sprintf("  %s: {kind: ask, agents: [a], template: t_%s, record: %s}", name, name, name))
	return name
}

// list is a node whose reply is a list of integers its schema lets be
// empty: scripted empty or three long.
func (g *flowGen) list() string {
	name := fmt.Sprintf("list_%d", g.lists)
	g.lists++
	g.templates = append(g.templates, fmt.Sprintf("    t_%s: \"KEY=%s/r{{.Round}}\"", name, name))
	g.nodes = append(g.nodes, fmt.Sprintf("  %s: {kind: ask, agents: [a], template: t_%s, record: %s, output: {format: json, schema: {type: object, properties: {items: {type: array, items: {type: integer}}}, required: [items]}}}", name, name, name))
	return name
}

// when is a per-agent condition of an ask node, which the run evaluates
// for an agent once it has a message of the node's record in the goal:
// an index into its own messages, a message's output (text: never a
// boolean), a division by a loop's round, or ones that always evaluate.
func (g *flowGen) when() string {
	k := g.rnd.Intn(3)
	v := ""
	if len(g.scope) > 0 {
		v = g.scope[g.rnd.Intn(len(g.scope))]
	}
	switch c := g.rnd.Intn(6); {
	case c == 0:
		return fmt.Sprintf("len(own) > %d", k)
	case c == 1:
		return fmt.Sprintf("own[%d].content == \"ok\"", k)
	case c == 2:
		return fmt.Sprintf("own[len(own) - 1].%s", []string{"output", "content", "round"}[k])
	case c == 3 && v != "":
		return fmt.Sprintf("10 %% (%s - %d) == 0", v, k)
	case c == 4 && v != "":
		return fmt.Sprintf("%s > %d", v, k)
	}
	return `agent.name == "Alice"`
}

func (g *flowGen) node() string {
	if g.rnd.Intn(4) == 0 {
		name := fmt.Sprintf("say_%d", g.says)
		g.says++
		g.templates = append(g.templates, fmt.Sprintf("    t_%s: %q", name, "say {{.Round}}"))
		g.nodes = append(g.nodes, fmt.Sprintf("  %s: {kind: ask, agents: [a], template: t_%s, record: %s, when: %q}", name, name, name, g.when()))
		return name
	}
	if g.rnd.Intn(2) == 0 {
		name := fmt.Sprintf("say_%d", g.says)
		g.says++
		g.templates = append(g.templates, fmt.Sprintf("    t_%s: %q", name, "say "+g.risky(true)))
		g.nodes = append(g.nodes, fmt.Sprintf("  %s: {kind: ask, agents: [a], template: t_%s, record: %s}", name, name, name))
		return name
	}
	name := fmt.Sprintf("calc_%d", g.calcs)
	g.calcs++
	g.nodes = append(g.nodes, fmt.Sprintf("  %s: {kind: compute, value: %q}", name, g.risky(false)))
	return name
}

// steps writes a list of flow steps as YAML flow items.
func (g *flowGen) stepList() string {
	n := 1 + g.rnd.Intn(3)
	var out []string
	for i := 0; i < n && g.budget > 0; i++ {
		out = append(out, g.step()...)
	}
	if len(out) == 0 {
		out = append(out, g.node())
	}
	return "[" + strings.Join(out, ", ") + "]"
}

func (g *flowGen) step() []string {
	g.budget--
	if g.depth >= 3 || g.budget <= 0 {
		return []string{g.node()}
	}
	g.depth++
	defer func() { g.depth-- }()
	switch g.rnd.Intn(7) {
	case 5:
		// A foreach over a list from a reply.
		list := g.list()
		as := fmt.Sprintf("x%d", g.foreachs)
		g.foreachs++
		return []string{list, fmt.Sprintf("{foreach: {as: %s, in: nodes.%s.output.items, do: %s}}", as, list, g.stepList())}
	case 6:
		// An index into a list from a reply.
		list := g.list()
		name := fmt.Sprintf("calc_%d", g.calcs)
		g.calcs++
		g.nodes = append(g.nodes, fmt.Sprintf("  %s: {kind: compute, value: \"nodes.%s.output.items[%d]\"}", name, list, g.rnd.Intn(4)))
		return []string{list, name}
	case 0:
		as := fmt.Sprintf("r%d", g.loops)
		g.loops++
		max := fmt.Sprint(g.rnd.Intn(4))
		var pre []string
		if g.rnd.Intn(3) == 0 {
			// a max that reads the run: the length of a reply's list,
			// empty or three long, under a declared bound
			list := g.list()
			pre = append(pre, list)
			max = fmt.Sprintf("'min(len(nodes.%s.output.items), %d)'", list, 1+g.rnd.Intn(3))
		}
		g.scope = append(g.scope, as)
		do := g.stepList()
		until := ""
		switch g.rnd.Intn(3) {
		case 0:
			gate := g.gate()
			do = strings.TrimSuffix(do, "]") + ", " + gate + "]"
			until = fmt.Sprintf(", until: 'nodes.%s.text == \"yes\"'", gate)
		case 1:
			until = fmt.Sprintf(", until: '%s >= %d'", as, 1+g.rnd.Intn(3))
		}
		g.scope = g.scope[:len(g.scope)-1]
		steps := append(pre, fmt.Sprintf("{loop: {as: %s, max: %s%s, do: %s}}", as, max, until, do))
		// now and then a read, after the loop, of a node it ran (none
		// when it ran no round)
		if first, _, _ := strings.Cut(strings.TrimPrefix(do, "["), ","); strings.HasPrefix(first, "say_") && !strings.ContainsAny(first, "{]") && g.rnd.Intn(2) == 0 {
			name := fmt.Sprintf("calc_%d", g.calcs)
			g.calcs++
			g.nodes = append(g.nodes, fmt.Sprintf("  %s: {kind: compute, value: 'nodes.%s.output + \"!\"'}", name, first))
			steps = append(steps, name)
		}
		return steps
	case 1:
		as := fmt.Sprintf("x%d", g.foreachs)
		g.foreachs++
		g.scope = append(g.scope, as)
		do := g.stepList()
		g.scope = g.scope[:len(g.scope)-1]
		return []string{fmt.Sprintf("{foreach: {as: %s, in: vars.list, do: %s}}", as, do)}
	case 2:
		var pre []string
		cond := ""
		if len(g.scope) > 0 && g.rnd.Intn(2) == 0 {
			cond = fmt.Sprintf("%s > %d", g.scope[g.rnd.Intn(len(g.scope))], g.rnd.Intn(3))
		} else {
			gate := g.gate()
			pre = append(pre, gate)
			cond = fmt.Sprintf("nodes.%s.text == \"yes\"", gate)
		}
		then := g.stepList()
		els := ""
		if g.rnd.Intn(2) == 0 {
			els = ", else: " + g.stepList()
		}
		return append(pre, fmt.Sprintf("{if: '%s', then: %s%s}", cond, then, els))
	}
	return []string{g.node()}
}

// genFlowSpec is a random spec and its numbers of gates and lists.
func genFlowSpec(seed int64) (string, int, int) {
	g := &flowGen{rnd: rand.New(rand.NewSource(seed)), budget: 6}
	g.listLen = g.rnd.Intn(4)
	flow := g.stepList()
	list := make([]string, g.listLen)
	for i := range list {
		list[i] = fmt.Sprint(i + 1)
	}
	out := "outputs:\n  n: len(vars.list)\n"
	if g.calcs > 0 && g.rnd.Intn(2) == 0 {
		out = fmt.Sprintf("outputs:\n  n: %s\n", g.risky(false))
	}
	templates := g.templates
	return fmt.Sprintf(`version: 1
name: generated
agents:
  a: {name: Alice}
vars:
  list: [%s]
templates:
  define:
%s
nodes:
%s
flow: %s
%s`, strings.Join(list, ", "), strings.Join(templates, "\n"), strings.Join(g.nodes, "\n"), flow, out), g.gates, g.lists
}

// TestPathCheckMatchesRuns is the path check's property: over random
// flows, CheckPaths refuses a spec exactly when some run of it fails, the
// runs made by the real engine against a local server whose replies (each
// gate's "yes" or "no") walk every path. A spec the static checks refuse
// is counted and left out. Failures found are kept in
// testdata/pathcheck/ and checked first.
func TestPathCheckMatchesRuns(t *testing.T) {
	warnedN := 0
	var script sync.Map // gate name -> reply
	srv := llmtest.New(t, keyed(func(key string) string {
		node, _, _ := strings.Cut(key, "/")
		if v, ok := script.Load(node); ok {
			return v.(string)
		}
		return "ok"
	}))
	check := func(t *testing.T, name, src string, gates, lists int) (refused, failed bool, static bool) {
		dir := t.TempDir()
		path := filepath.Join(dir, "spec.yaml")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		plan, diags := spec.Load(path, nodes.Registry())
		if diags.HasErrors() {
			return false, false, true
		}
		pd := CheckPaths(plan)
		refused = pd.HasErrors()
		warned := len(pd) > 0 && !refused
		var why []string
		for mask := 0; mask < 1<<(gates+lists); mask++ {
			for i := 0; i < gates; i++ {
				reply := "no"
				if mask&(1<<i) != 0 {
					reply = "yes"
				}
				script.Store(fmt.Sprintf("gate_%d", i), reply)
			}
			for i := 0; i < lists; i++ {
				reply := `{"items": []}`
				if mask&(1<<(gates+i)) != 0 {
					reply = `{"items": [1, 2, 3]}`
				}
				script.Store(fmt.Sprintf("list_%d", i), reply)
			}
			_, res, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
			var be *calls.BudgetError
			if err != nil && !errors.As(err, &be) && res != nil && res.Status == result.StatusFailed {
				failed = true
				why = append(why, fmt.Sprintf("gates %b: %v", mask, firstLineOf(err)))
				break
			}
		}
		// An error: some run fails. A warning: some run fails, for some
		// replies only. Neither: every run completes.
		if refused && !failed || !refused && !warned && failed || warned && !failed {
			t.Errorf("%s: path check refuses: %v, warns: %v, some run fails: %v\nspec:\n%s\npath check: %v\nruns: %v", name, refused, warned, failed, src, pd, why)
		}
		if warned {
			warnedN++
		}
		return refused, failed, false
	}
	// Regression cases first.
	kept, _ := filepath.Glob("testdata/pathcheck/*.yaml")
	for _, f := range kept {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		check(t, filepath.Base(f), string(data), strings.Count(string(data), "KEY=gate_"), strings.Count(string(data), "KEY=list_"))
	}
	n := 100
	if testing.Short() {
		n = 40
	}
	seed := rand.Int63()
	if s := os.Getenv("PATHCHECK_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (PATHCHECK_SEED to repeat)", seed)
	var refusedN, failedN, staticN int
	for i := 0; i < n; i++ {
		src, gates, lists := genFlowSpec(seed + int64(i))
		refused, failed, static := check(t, fmt.Sprintf("seed %d", seed+int64(i)), src, gates, lists)
		if t.Failed() {
			t.Logf("keep it: testdata/pathcheck/seed-%d.yaml", seed+int64(i))
			break
		}
		switch {
		case static:
			staticN++
		case refused:
			refusedN++
		}
		if failed {
			failedN++
		}
	}
	t.Logf("%d specs: %d refused by the static checks, %d by the path check, %d warned, %d failing some run", n, staticN, refusedN, warnedN, failedN)
	if refusedN == 0 || n-staticN-refusedN == 0 {
		t.Errorf("the generator made no refused (%d) or no accepted (%d) spec: it proves nothing", refusedN, n-staticN-refusedN)
	}
}
