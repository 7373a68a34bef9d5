// Package syntax reads a spec and says what is wrong with it: the YAML text
// with positions and its limits, the JSON Schema of a spec for a set of node
// kinds and the validation against it, the typed YAML model the spec and the
// kinds' configs are decoded into (File, Str, Expr, Map, ...), and the
// diagnostics every stage reports (Pos, Diagnostics, Reporter). It imports
// nothing of the module; package spec compiles what it reads.
package syntax
