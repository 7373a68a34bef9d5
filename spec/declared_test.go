package spec_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// A var's default gives the type of its list items and mapping values in
// templates (docs/spec-language.md): for random defaults, a template that
// uses every item as its type allows validates, and one that uses it as
// another type is refused in words that name the type ("an interface
// value" at worst, never "a interface").
func TestDeclaredItemsTyped(t *testing.T) {
	kinds := []struct {
		sample func(r *rand.Rand) any
		fits   string // an action over an item of this kind
		misfit string // an action that fails on it
	}{
		{func(r *rand.Rand) any { return r.IntN(9) - 3 }, "{{add . 1}}", "{{upper .}}"},
		{func(r *rand.Rand) any { return []string{"x", "", "a b"}[r.IntN(3)] }, "{{upper .}}", "{{add . 1}}"},
		{func(r *rand.Rand) any { return []float64{0.5, -2.5}[r.IntN(2)] }, `{{printf "%.1f" .}}`, "{{sub . 1}}"},
		{func(r *rand.Rand) any { return r.IntN(2) == 0 }, "{{not .}}", "{{lower .}}"},
	}
	badArticle := regexp.MustCompile(`\ba [aeio]|\ban [^aeiouAEIOU ]|a interface`)
	r := rand.New(rand.NewPCG(3, 5))
	dir := t.TempDir()
	for i := 0; i < 120; i++ {
		k := kinds[r.IntN(len(kinds))]
		items := make([]any, 1+r.IntN(3))
		for j := range items {
			items[j] = k.sample(r)
		}
		var def any = items
		read := "{{range .Vars.v}}%s{{end}}"
		if r.IntN(2) == 0 {
			def = map[string]any{"k": items}
			read = "{{range .Vars.v.k}}%s{{end}}"
		}
		for _, c := range []struct {
			action string
			ok     bool
		}{{k.fits, true}, {k.misfit, false}} {
			tmpl := fmt.Sprintf(read, c.action)
			defJSON, _ := json.Marshal(def)
			tmplJSON, _ := json.Marshal(tmpl)
			src := fmt.Sprintf("version: 1\nname: t\nvars: {v: %s}\nagents: {a: {}}\nnodes: {n: {kind: ask, agents: [a], template: t/x}}\nflow: [n]\ntemplates: {define: {t/x: %s}}\n", defJSON, tmplJSON)
			_, diags := spec.Compile(filepath.Join(dir, "t.yaml"), []byte(src), nodes.Registry())
			switch {
			case c.ok && diags.HasErrors():
				t.Errorf("refused, but every item of %s is of the kind %s takes:\n%s", defJSON, c.action, diags.Error())
			case !c.ok && !diags.HasErrors():
				t.Errorf("accepted %s over %s, which fails on every item", c.action, defJSON)
			case !c.ok && badArticle.MatchString(diags.Error()):
				t.Errorf("type words: %s", diags.Error())
			case !c.ok && !strings.Contains(diags.Error(), "t.yaml:"):
				t.Errorf("no position: %s", diags.Error())
			}
		}
	}
}
