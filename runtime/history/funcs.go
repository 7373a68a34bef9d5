package history

import (
	"text/template"

	"github.com/debate-runner/runner/spec/value"
)

// The helpers of package value define what each helper means; the store's
// answer the same from its indexes and fall back to these for a slice it
// does not know. They are named, so a changed signature is a compile error.
var (
	refByRecord = value.ByRecord
	refByFrom   = value.ByFrom
	refByTo     = value.ByTo
	refNotFrom  = value.NotFrom
	refInRound  = value.InRound
	refLatest   = value.LatestPerAuthor
	refLast     = value.LastMessage
	refCount    = value.Count
)

// Funcs returns the message helpers of templates bound to the store:
// byRecord, byFrom, byTo, notFrom, inRound, latest, last and count, with
// spec's names and meanings.
func (s *Store) Funcs() template.FuncMap {
	return template.FuncMap{
		"byRecord": func(record string, ms value.MessageList) ([]*value.Message, error) {
			return s.filter(ms, key{op: opRecord, s: record}, func() ([]*value.Message, error) { return refByRecord(record, ms) })
		},
		"byFrom": func(agent string, ms value.MessageList) ([]*value.Message, error) {
			return s.filter(ms, key{op: opFrom, s: agent}, func() ([]*value.Message, error) { return refByFrom(agent, ms) })
		},
		"byTo": func(agent string, ms value.MessageList) ([]*value.Message, error) {
			return s.filter(ms, key{op: opTo, s: agent}, func() ([]*value.Message, error) { return refByTo(agent, ms) })
		},
		"notFrom": func(agent string, ms value.MessageList) ([]*value.Message, error) {
			return s.filter(ms, key{op: opNotFrom, s: agent}, func() ([]*value.Message, error) { return refNotFrom(agent, ms) })
		},
		"inRound": func(round int, ms value.MessageList) ([]*value.Message, error) {
			return s.filter(ms, key{op: opRound, n: round}, func() ([]*value.Message, error) { return refInRound(round, ms) })
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
func (s *Store) filter(v any, k key, ref func() ([]*value.Message, error)) ([]*value.Message, error) {
	if ms, ok := v.([]*value.Message); ok {
		s.mu.Lock()
		if l := s.listOf(ms); l != nil {
			out := s.filtered(l, k).prefix(len(l.msgs), len(ms))
			s.mu.Unlock()
			return out, nil
		}
		s.mu.Unlock()
	}
	return ref()
}

func (s *Store) latest(v value.MessageList) ([]*value.Message, error) {
	if ms, ok := v.([]*value.Message); ok {
		s.mu.Lock()
		if l := s.listOf(ms); l != nil && len(ms) == len(l.msgs) {
			out := l.latest()
			s.mu.Unlock()
			return out, nil
		}
		s.mu.Unlock()
	}
	return refLatest(v)
}

// listOf finds the list ms is a prefix of, by its backing array: nil when
// the store did not hand ms out (or ms is empty, which needs no index).
func (s *Store) listOf(ms []*value.Message) *list {
	if len(ms) == 0 {
		return nil
	}
	l := s.arrays[&ms[0]]
	if l == nil || len(ms) > len(l.msgs) {
		return nil
	}
	return l
}
