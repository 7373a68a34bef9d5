package spec_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/templates"
)

func loadText(t *testing.T, text string) (*spec.Plan, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := spec.Load(path, nodes.Registry())
	return plan, diags.Format()
}

const pinSpec = `version: 1
name: pins
templates: {use: [%s]}
inputs: {question: {required: true}}
agents: {a: {name: A}}
nodes:
  ask: {kind: ask, agents: [a], template: %s, record: r}
flow: [ask]
`

// Each version of each library compiles, and a pinned spec renders the
// templates of that version: their digests are the version's bytes.
func TestPinnedVersionsLoadTheirOwnBytes(t *testing.T) {
	for _, lib := range []string{"reasoning", "protocols"} {
		tmpl := map[string]string{"reasoning": "reasoning/answer", "protocols": "protocols/simple"}[lib]
		for _, v := range templates.Versions(lib) {
			ref := templates.Ref(lib, v.Version)
			plan, diags := loadText(t, sprintf(pinSpec, ref, tmpl))
			if plan == nil || strings.Contains(diags, "error") {
				t.Fatalf("%s: %s", ref, diags)
			}
			if len(plan.BuiltIns) != 1 || plan.BuiltIns[0].Ref() != ref || !plan.BuiltIns[0].Pinned || plan.BuiltIns[0].Digest != templates.Digest(lib, v.Version) {
				t.Errorf("%s: BuiltIns = %+v", ref, plan.BuiltIns)
			}
			if len(spec.UnpinnedLibraries(plan)) != 0 {
				t.Errorf("%s: a pinned library is warned of", ref)
			}
			if src := plan.TemplateSources[tmpl]; src.Origin != "library:"+ref || !strings.HasPrefix(v.Files[strings.TrimPrefix(tmpl, lib+"/")+".tmpl"], src.Digest) {
				t.Errorf("%s: %s comes from %+v, want the version's bytes %s", ref, tmpl, src, v.Files[strings.TrimPrefix(tmpl, lib+"/")+".tmpl"])
			}
		}
	}
}

func TestUnpinnedLibraryGetsTheNewestWithAWarning(t *testing.T) {
	plan, diags := loadText(t, sprintf(pinSpec, "reasoning", "reasoning/answer"))
	if plan == nil || diags != "" {
		t.Fatalf("diagnostics: %s", diags)
	}
	newest := templates.Ref("reasoning", templates.Newest("reasoning"))
	if len(plan.BuiltIns) != 1 || plan.BuiltIns[0].Pinned || plan.BuiltIns[0].Ref() != newest {
		t.Fatalf("BuiltIns = %+v", plan.BuiltIns)
	}
	w := spec.UnpinnedLibraries(plan).Format()
	if !strings.Contains(w, "spec.yaml:3:19: warning: ") || !strings.Contains(w, "write "+newest+" to keep them") {
		t.Errorf("warning = %q", w)
	}
}

func TestBadOrUnknownVersionsAreNamed(t *testing.T) {
	for ref, want := range map[string]string{
		"reasoning@0":  `spec.yaml:3:19: error: template library "reasoning@0": a version is a whole number from 1`,
		"reasoning@x":  `a version is a whole number from 1 (NAME@N); reasoning@`,
		"reasoning@99": `template library reasoning has no version 99 (it has @1 to @`,
	} {
		_, diags := loadText(t, sprintf(pinSpec, ref, "reasoning/answer"))
		if !strings.Contains(diags, want) {
			t.Errorf("%s: diagnostics %q, want %q", ref, diags, want)
		}
	}
}

// A removed template names its successor and the version that still has it.
func TestRemovedTemplateNamesItsSuccessor(t *testing.T) {
	_, diags := loadText(t, sprintf(pinSpec, "protocols", "protocols/er-reasoning"))
	for _, want := range []string{`unknown template "protocols/er-reasoning": version 3 of protocols removed it; `, "history: {name: true}", "or pin protocols@2, which still has it"} {
		if !strings.Contains(diags, want) {
			t.Errorf("diagnostics %q, want %q", diags, want)
		}
	}
	prefixed := strings.Replace(sprintf(pinSpec, "protocols@2", "protocols/simple"), "flow: [ask]", `  agg: {kind: ask, agents: [a], template: protocols/simple, history: {records: [r], prefix: protocols/er-reasoning}, record: s}
flow: [ask, agg]`, 1)
	if _, diags := loadText(t, prefixed); strings.Contains(diags, "error") {
		t.Errorf("pinned to protocols@2: %s", diags)
	}
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
