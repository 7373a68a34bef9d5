package spec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"
)

// echoKind is a minimal node kind for tests: it needs a template and may
// name a record.
type echoKind struct{ name string }

func (k echoKind) Name() string      { return k.name }
func (echoKind) Description() string { return "Test kind." }
func (echoKind) Schema() []byte {
	return []byte(`{"properties": {"template": {"type": "string"}, "record": {"type": "string"}, "times": {"type": "integer", "minimum": 1}}, "required": ["template"]}`)
}

type echoConfig struct {
	Template string
	Times    int
}

type echoRaw struct {
	Template syntax.Str `yaml:"template"`
	Record   syntax.Str `yaml:"record"`
	Times    int        `yaml:"times"`
}

// echoData is the dot of an echo node's template.
type echoData struct {
	value.PromptBase
	Times int
}

func (echoKind) Example() string { return "" }
func (echoKind) NewConfig() any  { return &echoRaw{} }
func (echoKind) PromptData() any { return echoData{} }

func (echoKind) Compile(c *NodeContext, r any) any {
	raw := r.(*echoRaw)
	if raw.Record.Set {
		c.DeclareRecord(raw.Record.V)
	}
	return &echoConfig{Template: c.Template(raw.Template), Times: raw.Times}
}

func TestRegistry(t *testing.T) {
	reg := NewRegistry(echoKind{"echo"}, echoKind{"shout"})
	if got := strings.Join(reg.Names(), ","); got != "echo,shout" {
		t.Errorf("Names = %s", got)
	}
	if _, ok := reg.Lookup("shout"); !ok {
		t.Error("Lookup(shout) failed")
	}
	if _, ok := reg.Lookup("whisper"); ok {
		t.Error("Lookup(whisper) found a kind")
	}
	data, err := reg.Schema()
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs map[string]struct {
			Required   []string       `json:"required"`
			Properties map[string]any `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	def, ok := schema.Defs["node_echo"]
	if !ok {
		t.Fatalf("no $defs/node_echo in %s", data)
	}
	if got := strings.Join(def.Required, ","); got != "kind,template" {
		t.Errorf("node_echo required = %s", got)
	}
	for _, p := range []string{"kind", "agents", "description", "template", "record", "times"} {
		if _, ok := def.Properties[p]; !ok {
			t.Errorf("node_echo lacks property %q", p)
		}
	}
	if again, _ := reg.Schema(); string(again) != string(data) || &again[0] != &data[0] {
		t.Error("the schema is built more than once per registry")
	}
}

func TestRegistryDuplicateKindPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering a kind twice did not panic")
		}
	}()
	NewRegistry(echoKind{"echo"}, echoKind{"echo"})
}

// TestCompileWithFakeKind runs the whole loader with a registry that only
// knows a test kind, showing that kinds plug in through the Registry alone.
func TestCompileWithFakeKind(t *testing.T) {
	reg := NewRegistry(echoKind{"echo"})
	const good = `version: 1
name: fake
templates:
  define:
    t/hi: "Hello {{.Agent.Name}}"
agents:
  a: {name: Alice}
nodes:
  greet: {kind: echo, agents: [a], template: t/hi, times: 2}
flow: [greet]
`
	plan, diags := Compile("fake.yaml", []byte(good), reg)
	if diags.HasErrors() {
		t.Fatalf("unexpected errors:\n%s", diags.Error())
	}
	cfg, ok := plan.Nodes["greet"].Config.(*echoConfig)
	if !ok || cfg.Template != "t/hi" || cfg.Times != 2 {
		t.Errorf("config = %#v", plan.Nodes["greet"].Config)
	}
	if len(plan.Flow) != 1 || plan.Flow[0].Node != plan.Nodes["greet"] {
		t.Errorf("flow = %#v", plan.Flow)
	}

	tests := []struct{ old, new, want string }{
		{"times: 2", "tiems: 2", `9:52: unknown key "tiems" in nodes.greet (did you mean "times"?)`},
		{"times: 2", "times: 0", `9:59: nodes.greet.times: 0 is too small (at least 1)`},
		{"kind: echo", "kind: ecko", `9:17: nodes.greet.kind: "ecko" is not one of echo (did you mean "echo"?)`},
		{", template: t/hi", "", `9:3: nodes.greet is missing required key "template"`},
		{"template: t/hi", "template: t/ho", `9:46: unknown template "t/ho" (did you mean "t/hi"?)`},
		{"{{.Agent.Name}}", "{{.Agent.Nom}}", `5:26: template t/hi: .Agent (AgentView) has no field "Nom"`},
	}
	for _, tc := range tests {
		src := strings.Replace(good, tc.old, tc.new, 1)
		_, diags := Compile("fake.yaml", []byte(src), reg)
		if len(diags) == 0 {
			t.Errorf("%q -> %q: no diagnostics", tc.old, tc.new)
			continue
		}
		if got := strings.TrimPrefix(diags[0].String(), "fake.yaml:"); !strings.HasPrefix(strings.Replace(got, " error: ", " ", 1), tc.want) {
			t.Errorf("%q -> %q:\ngot  %s\nwant %s", tc.old, tc.new, got, tc.want)
		}
	}
}
