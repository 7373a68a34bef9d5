package history

import (
	"fmt"
	"text/template"

	"github.com/debate-runner/runner/spec"
)

// The helpers of spec.TemplateFuncs define what each helper means; the
// store's answer the same from its indexes and fall back to these for a
// slice it does not know.
var (
	refByRecord = refFunc[func(string, []spec.Message) []spec.Message]("byRecord")
	refByFrom   = refFunc[func(string, []spec.Message) []spec.Message]("byFrom")
	refByTo     = refFunc[func(string, []spec.Message) []spec.Message]("byTo")
	refNotFrom  = refFunc[func(string, []spec.Message) []spec.Message]("notFrom")
	refInRound  = refFunc[func(int, []spec.Message) []spec.Message]("inRound")
	refLatest   = refFunc[func([]spec.Message) []spec.Message]("latest")
	refLast     = refFunc[func([]spec.Message) spec.Message]("last")
	refCount    = refFunc[func([]spec.Message) int]("count")
)

// refFunc returns spec's helper of that name. A helper whose signature
// changed stops every test at start-up rather than a run halfway.
func refFunc[F any](name string) F {
	f, ok := spec.TemplateFuncs()[name].(F)
	if !ok {
		panic(fmt.Sprintf("history: spec.TemplateFuncs()[%q] is %T, not %T", name, spec.TemplateFuncs()[name], f))
	}
	return f
}

// Funcs returns the message helpers of templates bound to the store:
// byRecord, byFrom, byTo, notFrom, inRound, latest, last and count, with
// spec's names and meanings.
func (s *Store) Funcs() template.FuncMap {
	return template.FuncMap{
		"byRecord": func(record string, ms []spec.Message) []spec.Message {
			return s.filter(ms, key{op: opRecord, s: record}, func() []spec.Message { return refByRecord(record, ms) })
		},
		"byFrom": func(agent string, ms []spec.Message) []spec.Message {
			return s.filter(ms, key{op: opFrom, s: agent}, func() []spec.Message { return refByFrom(agent, ms) })
		},
		"byTo": func(agent string, ms []spec.Message) []spec.Message {
			return s.filter(ms, key{op: opTo, s: agent}, func() []spec.Message { return refByTo(agent, ms) })
		},
		"notFrom": func(agent string, ms []spec.Message) []spec.Message {
			return s.filter(ms, key{op: opNotFrom, s: agent}, func() []spec.Message { return refNotFrom(agent, ms) })
		},
		"inRound": func(round int, ms []spec.Message) []spec.Message {
			return s.filter(ms, key{op: opRound, n: round}, func() []spec.Message { return refInRound(round, ms) })
		},
		"latest": s.latest,
		// last and count look at one message or the length: nothing to index.
		"last":  refLast,
		"count": refCount,
	}
}

// Templates returns a copy of a template set whose message helpers are the
// store's. Templates take their functions when they are parsed, so a run
// makes this copy once and renders every prompt with it.
func (s *Store) Templates(set *template.Template) *template.Template {
	if set == nil {
		return nil
	}
	t, err := set.Clone()
	if err != nil {
		// text/template's Clone has never failed; should it, the set's own
		// helpers give the same answers, only without the indexes.
		return set
	}
	return t.Funcs(s.Funcs())
}

// filter answers a filtering helper: from the list filtered from the one ms
// was cut from, when the store handed ms out, else with ref.
func (s *Store) filter(ms []spec.Message, k key, ref func() []spec.Message) []spec.Message {
	s.mu.Lock()
	if l := s.listOf(ms); l != nil {
		out := s.filtered(l, k).prefix(len(l.msgs), len(ms))
		s.mu.Unlock()
		return out
	}
	s.mu.Unlock()
	return ref()
}

func (s *Store) latest(ms []spec.Message) []spec.Message {
	s.mu.Lock()
	if l := s.listOf(ms); l != nil && len(ms) == len(l.msgs) {
		out := l.latest()
		s.mu.Unlock()
		return out
	}
	s.mu.Unlock()
	return refLatest(ms)
}

// listOf finds the list ms is a prefix of, by its backing array: nil when
// the store did not hand ms out (or ms is empty, which needs no index).
func (s *Store) listOf(ms []spec.Message) *list {
	if len(ms) == 0 {
		return nil
	}
	l := s.arrays[&ms[0]]
	if l == nil || len(ms) > len(l.msgs) {
		return nil
	}
	return l
}
