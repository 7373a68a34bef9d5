// Package syntax reads a spec and says what is wrong with it: the YAML text
// with positions and its limits, the JSON Schema of a spec for a set of node
// kinds and the validation against it, the typed YAML model the spec and the
// kinds' configs are decoded into (File, Str, Expr, Map, ...), and the
// diagnostics every stage reports (Pos, Diagnostics, Reporter). Of the
// module it imports only spec/value (an agent's persona is read as the run
// uses it); package spec compiles what it reads.
package syntax
