package history

import (
	"sort"

	"github.com/debate-runner/runner/spec/value"
)

// op is a way of filtering a list of messages, as the template helpers do.
type op uint8

const (
	opRecord  op = iota // byRecord
	opFrom              // byFrom
	opTo                // byTo
	opRound             // inRound
	opInbox             // addressee, goal and round: a prompt's Inbox
	keyedOps            // the ops above partition a list by a key
	opNotFrom           // notFrom: every author but one
)

// key names one filtered list: an op and its argument.
type key struct {
	op   op
	s    string // record, author or addressee
	goal string // opInbox
	n    int    // round, for opRound and opInbox
}

// keyOf is the key of the list of op that m belongs to (ops below keyedOps).
func keyOf(o op, m *value.Message) key {
	switch o {
	case opRecord:
		return key{op: o, s: m.Record}
	case opFrom:
		return key{op: o, s: m.From}
	case opTo:
		return key{op: o, s: m.To}
	case opRound:
		return key{op: o, n: m.Round}
	default:
		return key{op: o, s: m.To, goal: m.Goal, n: m.Round}
	}
}

// list is a list of messages in the order they were recorded, kept up to
// date as messages are recorded: the whole record, an agent's view of it,
// or a list filtered from another one (its parent).
//
// Lists hold pointers to the store's one copy of each message (8 bytes a
// message and list), not copies of the messages. A filtered list of a keyed
// op is first tracked by positions only, which costs 4 bytes a message; its
// messages are picked out of the parent when a helper first asks for it
// (its size, not the parent's), and from then on appended as they are
// recorded. Lists that were handed out are never
// changed below their length then, only appended to, so every slice handed
// out stays valid.
type list struct {
	// msgs are the messages, once materialised (always, for roots).
	msgs  []*value.Message
	ready bool
	// src is, for a filtered list, the index in the parent of each message.
	src []int32
	// fams are this list's partitions by key, per keyed op, made when a
	// helper first filters the list with that op.
	fams [keyedOps]map[key]*list
	// others are the lists of every author but one (notFrom), by author.
	others map[string]*list
	// authors indexes each author's latest message, once latest was asked.
	authors *authors
}

// authors is the index behind latest: authors in order of first appearance
// with the position of their latest message.
type authors struct {
	order []string
	last  map[string]int32
	// cache is the answer of latest for the list at length cacheLen.
	cache    []*value.Message
	cacheLen int
}

func (a *authors) note(from string, i int) {
	if _, ok := a.last[from]; !ok {
		a.order = append(a.order, from)
	}
	a.last[from] = int32(i)
}

// add appends m to l (at index src of l's parent when l is filtered) and to
// the lists filtered from l that keep it.
func (s *Store) add(l *list, m *value.Message, src int) {
	if src >= 0 {
		l.src = append(l.src, int32(src))
	}
	if !l.ready {
		return
	}
	s.push(l, m)
	i := len(l.msgs) - 1
	if l.authors != nil {
		l.authors.note(m.From, i)
	}
	for o := range keyedOps {
		fam := l.fams[o]
		if fam == nil {
			continue
		}
		k := keyOf(o, m)
		c := fam[k]
		if c == nil {
			c = &list{}
			fam[k] = c
		}
		s.add(c, m, i)
	}
	for author, c := range l.others {
		if m.From != author {
			s.add(c, m, i)
		}
	}
}

// push appends m to l's messages and keeps the index of backing arrays up
// to date when the append moves them.
//
// A full array is replaced by one twice its size. append grows large slices
// by a quarter, which copies each entry about four times over as a list
// grows, against once here: with a message in a dozen lists or more, that
// made the cost of recording grow with the history.
func (s *Store) push(l *list, m *value.Message) {
	n := len(l.msgs)
	moved := n == cap(l.msgs)
	if moved {
		grown := make([]*value.Message, n, max(8, 2*n))
		copy(grown, l.msgs)
		if n > 0 {
			delete(s.arrays, &l.msgs[0])
		}
		l.msgs = grown
	}
	l.msgs = append(l.msgs, m)
	if moved {
		s.arrays[&l.msgs[0]] = l
	}
}

// none is the answer for a key no message has: an empty list that is in no
// family, so nothing is ever added to it.
var none = &list{ready: true}

// filtered returns the list of l that k keeps, materialised.
func (s *Store) filtered(l *list, k key) *list {
	if k.op == opNotFrom {
		c := l.others[k.s]
		if c == nil {
			c = &list{ready: true}
			for i, m := range l.msgs {
				if m.From != k.s {
					c.src = append(c.src, int32(i))
					s.push(c, m)
				}
			}
			if l.others == nil {
				l.others = map[string]*list{}
			}
			l.others[k.s] = c
		}
		return c
	}
	fam := l.fams[k.op]
	if fam == nil {
		// One pass over l partitions it by this op's key; every later key
		// of the op is then found without looking at l again.
		fam = map[key]*list{}
		for i, m := range l.msgs {
			ki := keyOf(k.op, m)
			c := fam[ki]
			if c == nil {
				c = &list{}
				fam[ki] = c
			}
			c.src = append(c.src, int32(i))
		}
		l.fams[k.op] = fam
	}
	c := fam[k]
	if c == nil {
		// No message has the key yet; asking for every round's inbox,
		// say, must not leave a list per round behind.
		return none
	}
	if !c.ready {
		c.ready = true
		if len(c.src) > 0 {
			c.msgs = make([]*value.Message, len(c.src))
			for i, j := range c.src {
				c.msgs[i] = l.msgs[j]
			}
			s.arrays[&c.msgs[0]] = c
		}
	}
	return c
}

// prefix returns the part of filtered list c that comes from the first n
// messages of its parent of length parentLen: nil if none, else capped so
// that appending to it copies.
func (c *list) prefix(parentLen, n int) []*value.Message {
	k := len(c.msgs)
	if n < parentLen {
		k = sort.Search(len(c.src), func(i int) bool { return int(c.src[i]) >= n })
	}
	if k == 0 {
		return nil
	}
	return c.msgs[:k:k]
}

// latest returns each author's latest message of l, in order of the
// authors' first message, as spec's latest does; nil for an empty list.
func (l *list) latest() []*value.Message {
	if len(l.msgs) == 0 {
		return nil
	}
	a := l.authors
	if a == nil {
		a = &authors{last: map[string]int32{}}
		for i, m := range l.msgs {
			a.note(m.From, i)
		}
		l.authors = a
	}
	if a.cacheLen != len(l.msgs) {
		out := make([]*value.Message, len(a.order))
		for i, from := range a.order {
			out[i] = l.msgs[a.last[from]]
		}
		a.cache, a.cacheLen = out, len(l.msgs)
	}
	return a.cache
}
