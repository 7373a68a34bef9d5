// Package schemas holds the published JSON Schema of a debate spec. The file
// is generated from the base schema in package spec and the fragments of the
// registered node kinds (`go generate ./schemas`); a test keeps them equal.
package schemas

import _ "embed"

//go:generate go run ../internal/genschema -o spec.schema.json

// Spec is the JSON Schema (draft 2020-12) of a spec file.
//
//go:embed spec.schema.json
var Spec []byte
