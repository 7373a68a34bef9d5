// Package history is a run's record of messages: append-only, with the view
// each agent may see of it and indexes over those views kept up to date as
// messages are recorded, so that what a prompt or an expression reads of the
// history costs the same at the 20,000th message as at the 10th.
//
// Prompts get their History and Inbox from the store without copying; the
// store's template helpers (Funcs) recognise slices it handed out, and the
// lists filtered from them, and answer from indexes; any other slice gets
// spec's helpers, which define what each helper means.
package history

import (
	"strings"
	"sync"

	"github.com/debate-runner/runner/spec/value"
)

// Store holds a run's messages. Its methods are safe for concurrent use.
// Slices it returns are shared: read them, never change them.
type Store struct {
	mu sync.Mutex
	// record is the one copy of every message, by value: All hands it out
	// and every list points into it. When it is full it moves to an array
	// twice its size and every list is pointed at the new array (see grow).
	record []value.Message
	all    *list
	// restricted is set once a message is private or whispered; until then
	// every agent sees every message (all), after it each agent has a view.
	restricted bool
	views      map[string]*list
	// arrays finds the list a slice was cut from by the first element of
	// its backing array; every materialised list's current array is here.
	arrays   map[**value.Message]*list
	verdicts verdicts
}

// New returns an empty store.
func New() *Store {
	return &Store{
		all:    &list{ready: true},
		views:  map[string]*list{},
		arrays: map[**value.Message]*list{},
	}
}

// Visible reports whether agent may see message m: private messages only
// their author, whispers their author and addressee (ids compared ignoring
// case).
func Visible(m *value.Message, agent string) bool {
	if m.Private {
		return strings.EqualFold(m.From, agent)
	}
	if m.Whisper {
		return strings.EqualFold(m.From, agent) || strings.EqualFold(m.To, agent)
	}
	return true
}

// Append records a message; its id and scope fields are the caller's.
func (s *Store) Append(m value.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.record) == cap(s.record) {
		s.grow()
	}
	s.record = append(s.record, m)
	p := &s.record[len(s.record)-1]
	s.add(s.all, p, -1)
	if (m.Private || m.Whisper) && !s.restricted {
		s.restricted = true
		// Prompts read agents' views from now on: the lists filtered from
		// the whole record would only grow, unread. They are made again
		// from the record if a helper is given it.
		s.forget(s.all)
	}
	for agent, v := range s.views {
		if Visible(p, agent) {
			s.add(v, p, -1)
		}
	}
	s.verdicts.add(p)
}

// grow moves the record to an array twice its size (doubled rather than
// grown by a quarter, as lists are: see push) and points every list at the
// new array, each in an array of its own: arrays handed out are never
// changed, so slices of them stay valid, pointing into the old record, which
// lives on only as long as they do; the store's helpers answer them with
// spec's (they are no longer in arrays). Before, lists pointed into blocks
// of messages that never moved, a second copy of every message beside the
// record; repointing costs each list's length once per doubling.
func (s *Store) grow() {
	n := len(s.record)
	grown := make([]value.Message, n, max(8, 2*n))
	copy(grown, s.record)
	if n == 0 {
		s.record = grown
		return
	}
	old := s.all.msgs // every message in order: old[i] is &s.record[i]
	moved := make([]*value.Message, len(old), cap(old))
	for i := range moved {
		moved[i] = &grown[i]
	}
	s.repoint(s.all, moved)
	for _, v := range s.views {
		// A view holds some of the messages, in order: find each in the
		// whole record.
		msgs := make([]*value.Message, len(v.msgs), cap(v.msgs))
		j := 0
		for i, m := range v.msgs {
			for old[j] != m {
				j++
			}
			msgs[i] = &grown[j]
		}
		s.repoint(v, msgs)
	}
	s.record = grown
}

// repoint gives l its messages in the grown record, msgs, and does the
// same for the lists filtered from it, whose src give their places in l.
func (s *Store) repoint(l *list, msgs []*value.Message) {
	if len(l.msgs) > 0 {
		delete(s.arrays, &l.msgs[0])
	}
	l.msgs = msgs
	if len(msgs) > 0 {
		s.arrays[&msgs[0]] = l
	}
	if l.authors != nil {
		l.authors.cache, l.authors.cacheLen = nil, -1
	}
	from := func(c *list) {
		if !c.ready {
			return // positions only (src); nothing points into the record
		}
		cm := make([]*value.Message, len(c.msgs), cap(c.msgs))
		for i, j := range c.src {
			cm[i] = msgs[j]
		}
		s.repoint(c, cm)
	}
	for _, fam := range l.fams {
		for _, c := range fam {
			from(c)
		}
	}
	for _, c := range l.others {
		from(c)
	}
}

// forget drops the lists filtered from l and l's index of authors.
func (s *Store) forget(l *list) {
	var drop func(l *list)
	drop = func(l *list) {
		for _, fam := range l.fams {
			for _, c := range fam {
				if c.ready && len(c.msgs) > 0 {
					delete(s.arrays, &c.msgs[0])
				}
				drop(c)
			}
		}
		for _, c := range l.others {
			if len(c.msgs) > 0 {
				delete(s.arrays, &c.msgs[0])
			}
			drop(c)
		}
	}
	drop(l)
	l.fams, l.others, l.authors = [keyedOps]map[key]*list{}, nil, nil
}

// Len is the number of messages recorded.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.record)
}

// All returns every message recorded so far, whatever its visibility,
// capped so that appending to it copies; never nil.
func (s *Store) All() []value.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.record)
	if n == 0 {
		return []value.Message{}
	}
	return s.record[:n:n]
}

// whole returns a list's messages, capped so that appending to them copies;
// never nil.
func whole(l *list) []*value.Message {
	n := len(l.msgs)
	if n == 0 {
		return []*value.Message{}
	}
	return l.msgs[:n:n]
}

// Seen returns what agent may see: its history (never nil), and its inbox,
// the messages of its history addressed to it in round of goal (nil if
// none).
func (s *Store) Seen(agent string, round int, goal string) (history, inbox []*value.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.view(agent)
	history = whole(v)
	in := s.filtered(v, key{op: opInbox, s: agent, goal: goal, n: round})
	return history, in.prefix(len(v.msgs), len(v.msgs))
}

// view returns the list of messages agent may see. While no message is
// restricted it is the whole record; after that each agent's view is made
// from the record once, the first time it is asked for, and then grows as
// messages are recorded.
func (s *Store) view(agent string) *list {
	if !s.restricted {
		return s.all
	}
	if v, ok := s.views[agent]; ok {
		return v
	}
	v := &list{ready: true}
	for _, m := range s.all.msgs {
		if Visible(m, agent) {
			s.push(v, m)
		}
	}
	s.views[agent] = v
	return v
}

// Latest returns each author's latest message of a record, in order of the
// authors' first message of it: the latest(record) of expressions, over
// every message.
func (s *Store) Latest(record string) []value.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	latest := s.filtered(s.all, key{op: opRecord, s: record}).latest()
	if latest == nil {
		return nil
	}
	out := make([]value.Message, len(latest))
	for i, m := range latest {
		out[i] = *m
	}
	return out
}

// GoalVerdicts returns the verdicts of every goal as runtime's goalVerdicts
// gathers them from all messages, kept up to date as messages are recorded.
func (s *Store) GoalVerdicts() []value.GoalVerdicts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.verdicts.list()
}
