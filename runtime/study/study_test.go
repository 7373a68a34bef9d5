package study

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/schemas"
)

// TestSchemaPublished keeps schemas/study.schema.json equal to the schema
// study files are validated with.
func TestSchemaPublished(t *testing.T) {
	if !bytes.Equal(schemas.Study, Schema()) {
		t.Error("schemas/study.schema.json differs from runtime/study/schema.json: copy it over")
	}
}

// TestExampleStudy loads the reproduction kit's study file and compiles
// its specs.
func TestExampleStudy(t *testing.T) {
	f, err := Load("../../examples/protocols/du-society-of-minds/study.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st, err := Prepare(f, nodes.Registry())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Cells) != 2 || !st.Cells[0].Baseline || st.Cells[1].Label != "debate" || f.DatasetSource() != "gen:arithmetic?n=100&seed=1" {
		t.Errorf("cells %+v, dataset %s", st.Cells, f.DatasetSource())
	}
}

// TestReasoningStudy loads the reasoning example's study: the debate, its
// single agent and self-consistency at the debate's compute.
func TestReasoningStudy(t *testing.T) {
	f, err := Load("../../examples/reasoning-debate/studies/equal-compute.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st, err := Prepare(f, nodes.Registry())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Cells) != 3 || st.Cells[2].EqualComputeOf != "debate" || st.Cells[2].Label != "self-consistency ≡ debate" || f.EqualCompute.Matched() != "calls" {
		t.Errorf("cells %+v", st.Cells)
	}
}

func TestStudyFileErrors(t *testing.T) {
	dir := t.TempDir()
	spec, _ := filepath.Abs("../../examples/protocols/du-society-of-minds/spec.yaml")
	base, _ := filepath.Abs("../../examples/protocols/du-society-of-minds/baseline.yaml")
	noScore, _ := filepath.Abs("../../examples/hiring-panel/spec.yaml")
	sc, _ := filepath.Abs("../../examples/reasoning-debate/self-consistency.yaml")
	for _, tc := range []struct{ name, src, want string }{
		{"unknown key", "version: 1\nname: s\ndataset: d.jsonl\nspecs: [a.yaml, b.yaml]\nbaseline: a\nmodel: [x]\n",
			"study.yaml:6:1: additionalProperties 'model' not allowed"},
		{"missing baseline", "version: 1\nname: s\ndataset: d.jsonl\nspecs: [a.yaml, b.yaml]\n",
			"study.yaml:1:1: missing properties: 'baseline'"},
		{"one spec", "version: 1\nname: s\ndataset: d.jsonl\nspecs: [a.yaml]\nbaseline: a\n",
			"study.yaml:4:1: specs: minimum 2 items required"},
		{"bad repeat", "version: 1\nname: s\ndataset: d.jsonl\nspecs: [a.yaml, b.yaml]\nbaseline: a\nrepeat: 0\n",
			"study.yaml:6:1: repeat: must be >= 1"},
		{"baseline unknown", "version: 1\nname: s\ndataset: d.jsonl\nspecs: [" + spec + ", " + base + "]\nbaseline: single\n",
			`study.yaml:5:1: baseline "single" is none of the specs (their labels: du-society-of-minds, du-single-agent)`},
		{"spec missing", "version: 1\nname: s\ndataset: d.jsonl\nspecs:\n  - " + spec + "\n  - {path: nothere.yaml}\nbaseline: x\n",
			"study.yaml:6:6: spec nothere.yaml is invalid"},
		{"no score", "version: 1\nname: s\ndataset: d.jsonl\nspecs:\n  - " + spec + "\n  - " + noScore + "\nbaseline: x\n",
			"study.yaml:6:5: spec " + noScore + " has no score expression"},
		{"equal compute without its spec", "version: 1\nname: s\ndataset: d.jsonl\nspecs: [a.yaml, b.yaml]\nbaseline: a\nequal_compute: {match: calls}\n",
			"study.yaml:6:1: equal_compute: missing properties: 'spec'"},
		{"equal compute match", "version: 1\nname: s\ndataset: d.jsonl\nspecs: [a.yaml, b.yaml]\nbaseline: a\nequal_compute: {spec: sc.yaml, match: seconds}\n",
			"study.yaml:6:32: equal_compute.match: value must be one of"},
		{"equal compute without the var", "version: 1\nname: s\ndataset: d.jsonl\nspecs: [" + spec + ", " + base + "]\nbaseline: du-single-agent\nequal_compute: {spec: " + base + "}\n",
			`declares no var "samples" to set its number of samples with`},
		{"equal compute label taken", "version: 1\nname: s\ndataset: d.jsonl\nspecs: [" + spec + ", " + base + "]\nbaseline: du-single-agent\nequal_compute: {spec: " + sc + ", label: du-single-agent}\n",
			`equal_compute: its label "du-single-agent" is a spec's label`},
		{"same label", "version: 1\nname: s\ndataset: d.jsonl\nspecs:\n  - {path: " + spec + ", label: a}\n  - {path: " + base + ", label: a}\nbaseline: a\n",
			`study.yaml:6:6: a second spec is labelled "a"`},
	} {
		path := filepath.Join(dir, "study.yaml")
		if err := os.WriteFile(path, []byte(tc.src), 0o644); err != nil {
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
