// Package runflags is the one place a flag that changes a run is declared.
// A field of Flags is, by its tags, a flag of `runner run` (kong's name and
// help: the command embeds Flags), a key of run.json (its json name:
// result.Manifest embeds Flags), and a value of what a run is given
// (launch.Launch embeds Flags). A resume takes the run's Flags back from
// run.json, a run on Temporal sends them with its input (durable.RunInput
// embeds them), and a sweep gives every run its own copy and keeps them in
// sweep.json for its resume; none of them names a field. Adding a flag is
// adding a field here, and TestEveryRunFlagTravels (runtime/executor)
// checks that every field makes each of those trips.
//
// A field must be a value JSON carries unchanged, and its zero value the
// flag's default (fields are written with omitempty).
package runflags

// Flags are the flags of `runner run` that change what the run does and
// that its resume, replay, sweep and run on Temporal keep.
type Flags struct {
	// LogPrompts writes full prompt texts into the journal's
	// model_request events; otherwise only their digests and sizes are
	// written, which keeps the journal linear in the size of the debate.
	LogPrompts bool `name:"log-prompts" help:"Write full prompt texts into the journal (by default only digests and sizes)." json:"log_prompts,omitempty"`
}
