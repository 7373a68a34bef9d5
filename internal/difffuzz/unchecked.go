package difffuzz

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"path/filepath"
	"strings"
	_ "unsafe" // go:linkname

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
)

// compileInto is the spec compiler's own entry (spec/compile.go), which
// returns the plan it built whatever it reported. Reaching it here is the
// test-only seam that compiles a spec with checks off, for the estimate
// of false refusals, without an exported way to skip checks in spec's
// API. TestUncheckedSeamSignature reads spec/compile.go and fails when
// its signature is not this one.
//
//go:linkname compileInto github.com/debate-runner/runner/spec.compileInto
func compileInto(r *syntax.Reporter, path string, data []byte, reg *spec.Registry, opts spec.CompileOptions) *spec.Plan

// seamSignature is the declaration compileInto must have in spec.
const seamSignature = "func compileInto(r *syntax.Reporter, path string, data []byte, reg *Registry, opts CompileOptions) *Plan"

// seamChecked is set by the check of the signature (checkSeam); the seam
// is not used before.
var seamChecked bool

// compileUnchecked compiles a refused spec with its errors ignored: the
// plan as far as the compiler built it. A run of it may fail in any way.
func compileUnchecked(path string, data []byte) (plan *spec.Plan, err error) {
	if !seamChecked {
		return nil, errors.New("the unchecked seam's signature was not checked")
	}
	defer func() {
		if r := recover(); r != nil {
			plan, err = nil, fmt.Errorf("compiling with checks off panicked: %v", r)
		}
	}()
	r := &syntax.Reporter{Src: syntax.NewSource(path, data)}
	plan = compileInto(r, path, data, nodes.Registry(), spec.CompileOptions{})
	if plan == nil {
		return nil, errors.New("no plan even with checks off (the YAML or its schema)")
	}
	if plan.Templates == nil || len(plan.Flow) == 0 {
		return nil, errors.New("the plan is incomplete with checks off")
	}
	return plan, nil
}

// checkSeam reads spec/compile.go and says whether compileInto is still
// declared as seamSignature: a linkname to a function of another
// signature would call it wrongly, so the seam is used only after this.
func checkSeam(root string) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(root, "spec", "compile.go"), nil, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "compileInto" || fd.Recv != nil {
			continue
		}
		var b strings.Builder
		if err := printer.Fprint(&b, fset, &ast.FuncDecl{Name: fd.Name, Type: fd.Type}); err != nil {
			return err
		}
		if got := b.String(); got != seamSignature {
			return fmt.Errorf("spec.compileInto is now %q, not %q: change the linkname in internal/difffuzz/unchecked.go", got, seamSignature)
		}
		return nil
	}
	return errors.New("spec/compile.go no longer declares compileInto: the false-refusal estimate needs another seam")
}
