package view_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/runtime/view"
)

// domainSpec is a spec without model calls whose var and input declare
// domains.
const domainSpec = `version: 1
name: domains
inputs:
  mode: {default: short, enum: [short, long]}
  code: {default: AB12, pattern: '^[A-Z]{2}[0-9]{2}$'}
vars:
  n: {default: 2, minimum: 1, maximum: 5}
agents: {a: {}}
nodes:
  c: {kind: compute, value: 'vars.n'}
flow: [c]
`

// TestStartFormDomains: the start form tells the page each var's and
// input's domain, and a start from it refuses a value out of its domain
// at that field, leaving no run, as --set and --input do; a value in
// every domain starts. Values are generated in and out of the domains.
func TestStartFormDomains(t *testing.T) {
	specs, root := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(specs, "spec.yaml"), []byte(domainSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	ts, v := actingServer(t, root, specs, nil)
	host := strings.TrimPrefix(ts.URL, "http://")
	code, body := get(t, ts, "/api/specs?path=spec.yaml")
	var info view.SpecInfo
	if err := json.Unmarshal(body, &info); code != http.StatusOK || err != nil {
		t.Fatalf("%d %v %s", code, err, body)
	}
	if len(info.Vars) != 1 || info.Vars[0].Domain == nil || info.Vars[0].Domain.Maximum == nil || *info.Vars[0].Domain.Maximum != 5 {
		t.Errorf("the form's vars do not carry the domain: %s", body)
	}
	if len(info.Inputs) != 2 || info.Inputs[0].Domain == nil || fmt.Sprint(info.Inputs[0].Domain.Enum) != "[short long]" {
		t.Errorf("the form's inputs do not carry the domain: %s", body)
	}
	r := rand.New(rand.NewPCG(38, 5))
	modes := []string{"short", "long", "medium", "Short"}
	codes := []string{"AB12", "ZZ00", "ab12", "AB123", "A12"}
	started := 0
	for range 20 {
		n, mode, c := r.IntN(8)-1, modes[r.IntN(len(modes))], codes[r.IntN(len(codes))]
		req := view.StartRequest{Spec: "spec.yaml", Inputs: map[string]string{"mode": mode, "code": c}, Vars: map[string]string{"n": fmt.Sprint(n)}}
		var bad []string
		if n < 1 || n > 5 {
			bad = append(bad, `"field":"var:n"`)
		}
		if mode != "short" && mode != "long" {
			bad = append(bad, `"field":"input:mode"`)
		}
		if len(c) != 4 || strings.ToUpper(c) != c {
			bad = append(bad, `"field":"input:code"`)
		}
		rec := act(t, v, host, "/api/act/start", req)
		if len(bad) == 0 {
			if rec.Code != http.StatusOK {
				t.Errorf("n=%d mode=%s code=%s, all in their domains: %d %s", n, mode, c, rec.Code, rec.Body)
			}
			started++
			continue
		}
		if rec.Code != http.StatusUnprocessableEntity || !containsAny(rec.Body.String(), bad) {
			t.Errorf("n=%d mode=%s code=%s: %d %s, want it refused at one of %v", n, mode, c, rec.Code, rec.Body, bad)
		}
	}
	if started == 0 || started == 20 {
		t.Fatalf("%d of 20 generated starts were in every domain: the property needs both kinds", started)
	}
	v.Wait()
	if entries, _ := os.ReadDir(root); len(entries) != started {
		t.Errorf("%d entries in the runs folder after %d starts in the domains", len(entries), started)
	}
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}
