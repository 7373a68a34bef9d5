package main

import (
	"fmt"
	"os"
	"slices"

	"golang.org/x/tools/go/packages"
)

// result is one target's check: how many packages were type-checked
// (dependencies and test variants included) and the errors found, each as
// "file:line:col: message", sorted.
type result struct {
	checked int
	errors  []string
}

// check type-checks the packages the patterns name, their tests and every
// dependency, from source, as target t's compiler sees them.
func check(dir string, t target, patterns []string) (result, error) {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports |
			packages.NeedDeps | packages.NeedSyntax | packages.NeedTypes,
		Dir:   dir,
		Tests: true,
		Env:   append(os.Environ(), "GOOS="+t.goos, "GOARCH="+t.goarch, "CGO_ENABLED=0", "GOFLAGS="),
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return result{}, err
	}
	var res result
	seen := map[string]bool{}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		res.checked++
		for _, e := range p.Errors {
			msg := e.Msg
			if e.Pos != "" {
				msg = e.Pos + ": " + msg
			} else {
				msg = fmt.Sprintf("%s: %s", p.PkgPath, msg)
			}
			if !seen[msg] {
				seen[msg] = true
				res.errors = append(res.errors, msg)
			}
		}
	})
	slices.Sort(res.errors)
	return res, nil
}
