package recruit_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// specWith is a spec whose recruit node's list is the expression from,
// for a group of at most max members that may use models default and
// strong.
func specWith(from string, max, min int) string {
	return fmt.Sprintf(`version: 1
name: recruit-prop
models:
  default: gpt-4o-mini
  strong: gpt-4o
  other: gpt-4.1
agents:
  expert:
    name: Expert
    recruit: {max: %d, models: [default, strong]}
templates:
  define:
    t/work: "You are {{.Agent.Name}}."
nodes:
  hire:
    kind: recruit
    agents: expert
    min: %d
    from: '%s'
  work: {kind: ask, agents: [expert], template: t/work}
flow: [hire, work]
`, max, min, strings.ReplaceAll(from, "'", "''"))
}

// fromLine and fromCol are where specWith's from: value starts.
const fromLine, fromCol = 19, 11

// member is a generated element of a list and what makes it wrong.
type member struct {
	src  string // as an expression
	val  any    // as a value
	name string // the name it gives ("" for the default)
	bad  string // why it cannot be a member, or ""
}

func genMember(rng *rand.Rand) (m member) {
	names := []string{"Ada", "Bo", "Cy", "Ada"}
	switch rng.IntN(9) {
	case 0:
		return member{src: "42", val: 42, bad: "is a number"}
	case 1:
		return member{src: `"  "`, val: "  ", bad: "the name is empty"}
	case 2:
		n := names[rng.IntN(len(names))]
		return member{src: strconv.Quote(n), val: n, name: n}
	}
	var parts []string
	v := map[string]any{}
	defer func() { m.val = v }()
	if rng.IntN(4) > 0 {
		m.name = names[rng.IntN(len(names))]
		parts = append(parts, `"name": `+strconv.Quote(m.name))
		v["name"] = m.name
	}
	if rng.IntN(2) == 0 {
		parts = append(parts, `"role": "critic"`)
		v["role"] = "critic"
	}
	switch rng.IntN(5) {
	case 0:
		parts = append(parts, `"model": "strong"`)
		v["model"] = "strong"
	case 1:
		parts = append(parts, `"model": "default"`)
		v["model"] = "default"
	case 2:
		parts = append(parts, `"model": "other"`) // declared, but not among recruit.models
		v["model"] = "other"
		m.bad = "model other"
	}
	if rng.IntN(8) == 0 {
		parts = append(parts, `"colour": "red"`)
		v["colour"] = "red"
		m.bad = `key "colour"`
	}
	if rng.IntN(4) == 0 {
		parts = append(parts, `"persona": {"title": "Dr"}, "vars": {"x": 1}`)
		v["persona"], v["vars"] = map[string]any{"title": "Dr"}, map[string]any{"x": 1}
	}
	m.src = "{" + strings.Join(parts, ", ") + "}"
	return m
}

// For generated lists, the checker refuses a list from vars and literals
// at the from: key exactly when a run would refuse it (too many or too few
// members, a member that is neither a name nor a mapping of the known
// keys, a model the group may not use, two members of one name), and
// spec.Plan.Recruit gives the members the list says, in order, in the
// group's slots.
func TestRecruitListsCheckedAsRunsRefuseThem(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 9))
	dir := t.TempDir()
	for trial := range 120 {
		max, min := 1+rng.IntN(4), rng.IntN(3)
		var ms []member
		var srcs []string
		for range rng.IntN(6) {
			m := genMember(rng)
			ms = append(ms, m)
			srcs = append(srcs, m.src)
		}
		from := "[" + strings.Join(srcs, ", ") + "]"
		// The oracle: what a run refuses, first problem first.
		want := ""
		switch {
		case min > max:
			want = "more than"
		case len(ms) > max:
			want = "recruit.max"
		case len(ms) < min:
			want = "fewer than min"
		default:
			seen := map[string]bool{}
			for i, m := range ms {
				if m.bad != "" {
					want = m.bad
					break
				}
				name := m.name
				if name == "" {
					name = "Expert " + strconv.Itoa(i+1)
				}
				if seen[name] {
					want = "names must differ"
					break
				}
				seen[name] = true
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("s%d.yaml", trial))
		if err := os.WriteFile(path, []byte(specWith(from, max, min)), 0o644); err != nil {
			t.Fatal(err)
		}
		plan, diags := spec.Load(path, nodes.Registry())
		got := diags.Format()
		if want == "" {
			if diags.HasErrors() {
				t.Fatalf("trial %d: max %d min %d from %s: refused:\n%s", trial, max, min, from, got)
			}
			var list []any
			for _, m := range ms {
				list = append(list, m.val)
			}
			members, err := plan.Recruit("expert", list)
			if err != nil || len(members) != len(ms) {
				t.Fatalf("trial %d: %s gives %d members, %v", trial, from, len(members), err)
			}
			for i, a := range members {
				mv, _ := ms[i].val.(map[string]any)
				model := "default"
				if s, ok := mv["model"].(string); ok {
					model = s
				}
				name := ms[i].name
				if name == "" {
					name = "Expert " + strconv.Itoa(i+1)
				}
				if a.ID != "expert_"+strconv.Itoa(i+1) || a.Group != "expert" || a.Name != name || a.Model.Name != model || (mv["persona"] != nil) != (a.Persona.Title == "Dr") {
					t.Errorf("trial %d: member %d is %+v, want %s named %q on %s", trial, i+1, a, "expert_"+strconv.Itoa(i+1), name, model)
				}
			}
			continue
		}
		if !diags.HasErrors() || !strings.Contains(got, want) {
			t.Fatalf("trial %d: max %d min %d from %s: want an error about %q, got:\n%s", trial, max, min, from, want, got)
		}
		if want != "more than" && !strings.Contains(got, fmt.Sprintf("s%d.yaml:%d:%d: error", trial, fromLine, fromCol)) {
			t.Errorf("trial %d: the error is not at from: (%d:%d):\n%s", trial, fromLine, fromCol, got)
		}
	}
}
