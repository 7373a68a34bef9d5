package spec

import (
	"errors"
	"text/template"

	"github.com/debate-runner/runner/spec/syntax"
)

// TemplateErrorAt is where in the spec (file "") or in a template file of
// its own a template failed to render: err is text/template's error
// (wrapped or not). ok is false when err names no template position.
func (p *Plan) TemplateErrorAt(err error) (file string, pos syntax.Pos, msg string, ok bool) {
	var ee template.ExecError
	if p == nil || p.templateAt == nil || !errors.As(err, &ee) {
		return "", syntax.Pos{}, "", false
	}
	name, line, col, rest := templateErrorLine(ee.Err.Error())
	if name == "" {
		name = ee.Name
	}
	file, pos, ok = p.templateAt(name, line, col)
	return file, pos, rest, ok
}
