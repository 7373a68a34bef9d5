// Package spec compiles a spec read by package spec/syntax into a Plan and
// type checks it: references, templates against the dot types they are
// rendered with, expressions against their environment, node outputs, run
// order, budget and panels. It knows node kinds only through a Registry.
// Load and Compile read and compile in one call.
package spec
