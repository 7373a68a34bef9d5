package spec

import (
	"fmt"

	"github.com/debate-runner/runner/spec/syntax"
)

// Kind is a node kind as the loader sees it: everything a kind declares is
// here, in one place, so that schema, decoding, template checks, expression
// types and the models a plan needs all come from the kind itself. Kinds
// live in package nodes; the loader knows them only through a Registry. The
// runtime side of a kind (its executor and optional capabilities) is
// declared in package nodes/kit, which builds on this interface.
type Kind interface {
	// Name is the value of `kind:` that selects this kind.
	Name() string
	// Description is one line for the schema and help.
	Description() string
	// Schema is the JSON Schema fragment of the kind's own fields:
	// {"properties": {...}, "required": [...]}. The fields every node has
	// (kind, agents, description) are added by the registry. A registry
	// test decodes every property of it into NewConfig's value, so the two
	// cannot drift apart.
	Schema() []byte
	// Example is a small complete spec that uses the kind, kept in the
	// kind's package: it documents the kind and must validate without a
	// diagnostic (the registry tests compile it).
	Example() string
	// NewConfig returns a pointer to a new zero value of the kind's YAML
	// form. The loader decodes the node into it (fields every node has
	// included, when the struct declares them) and hands it to Compile.
	NewConfig() any
	// PromptData returns a zero value of the dot the kind's prompt
	// templates are rendered with: a struct embedding PromptBase. Templates
	// the kind names through NodeContext.Template are type-checked against
	// exactly this type. nil means the kind renders no prompts.
	PromptData() any
	// Compile checks the decoded node, resolves its references through c
	// (reporting problems at their positions) and returns the compiled
	// configuration the executor runs. It also declares the node's output
	// type (NodeContext.SetOutput) and the models it calls
	// (NodeContext.UseModel, NodeContext.AgentModel).
	Compile(c *NodeContext, raw any) any
}

// Registry is the set of node kinds a loader accepts. It is a value so that
// tests can build one with only the kinds they need.
type Registry struct {
	kinds     []Kind
	byName    map[string]Kind
	providers []Provider
	schema    *syntax.Schema
}

// NewRegistry returns a registry of the given node kinds, in that order,
// and no provider kinds (see WithProviders).
func NewRegistry(kinds ...Kind) *Registry {
	r := &Registry{byName: map[string]Kind{}}
	for _, k := range kinds {
		if _, dup := r.byName[k.Name()]; dup {
			panic(fmt.Sprintf("spec: node kind %q registered twice", k.Name()))
		}
		r.kinds = append(r.kinds, k)
		r.byName[k.Name()] = k
	}
	r.schema = syntax.NewSchema(kinds, r.providers)
	return r
}

// WithProviders returns the registry with these provider kinds, in that
// order, the first the kind of an endpoint that names none.
func (r *Registry) WithProviders(providers ...Provider) *Registry {
	out := &Registry{kinds: r.kinds, byName: r.byName}
	for _, p := range providers {
		if _, dup := out.Provider(p.Name()); dup {
			panic(fmt.Sprintf("spec: provider kind %q registered twice", p.Name()))
		}
		out.providers = append(out.providers, p)
	}
	out.schema = syntax.NewSchema(out.kinds, out.providers)
	return out
}

// Lookup returns the kind with that name.
func (r *Registry) Lookup(name string) (Kind, bool) {
	k, ok := r.byName[name]
	return k, ok
}

// Kinds lists the kinds in registration order.
func (r *Registry) Kinds() []Kind { return append([]Kind(nil), r.kinds...) }

// Names lists the kind names in registration order.
func (r *Registry) Names() []string {
	out := make([]string, len(r.kinds))
	for i, k := range r.kinds {
		out[i] = k.Name()
	}
	return out
}

// Schema returns the full JSON Schema of a spec: the base schema with one
// definition per registered kind. It is what `runner schema` prints and what
// schemas/spec.schema.json must equal.
func (r *Registry) Schema() ([]byte, error) {
	return r.schema.JSON()
}

// VerdictAsker is implemented by the configs of nodes that ask their agents
// for verdicts: a spec with one has goals that can end without a verdict.
type VerdictAsker interface{ AsksVerdicts() bool }

// GraphAttachments is an optional capability of a node's compiled
// configuration (what its kind's Compile returned): what a graph draws
// beside the node besides its place in the flow.
type GraphAttachments interface {
	GraphAttachments() GraphAttachment
}

// GraphAttachment is what is drawn beside a node.
type GraphAttachment struct {
	// Runs are nodes the node runs while it runs (a moderation panel that
	// watches a conversation), each with a label such as "every 8 turns".
	Runs []GraphRun
	// Posts describe messages the node posts without a model call (a time
	// keeper's interjections), one line each.
	Posts []string
	// Asks are agents beside the node's own that it calls (a selector
	// choosing each speaker), one line each.
	Asks []string
}

// GraphRun is a node run by another, with when.
type GraphRun struct {
	Node  string
	Label string
}
