// Package schemas holds the published JSON Schemas: of a debate spec, made
// from the base schema in package spec/syntax and the fragments of the registered
// node kinds, and of result.json, made from the types of package
// runtime/result, and of spec test files, made from the schema package
// runtime/spectest validates them with (`go generate ./schemas` writes
// all three); tests keep them equal to what they are made from.
package schemas

import _ "embed"

//go:generate go run ../internal/genschema -o spec.schema.json
//go:generate go run ../internal/genschema -result -o result.schema.json
//go:generate go run ../internal/genschema -test -o test.schema.json

// Spec is the JSON Schema (draft 2020-12) of a spec file.
//
//go:embed spec.schema.json
var Spec []byte

// Result is the JSON Schema (draft 2020-12) of result.json.
//
//go:embed result.schema.json
var Result []byte

// Test is the JSON Schema (draft 2020-12) of spec test files
// (NAME.test.yaml).
//
//go:embed test.schema.json
var Test []byte

// Study is the JSON Schema (draft 2020-12) of study files (runner study),
// the one package runtime/study validates them with; a test keeps the two
// copies equal.
//
//go:embed study.schema.json
var Study []byte
