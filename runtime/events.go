package runtime

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/journal"
)

// Notice is something that happened in a run, for progress displays and
// --json output.
type Notice struct {
	Event    *journal.Event     // a journaled event, or nil
	Progress *kit.ProgressEvent // a progress update, or nil
	Scope    string
	Message  string // a warning or status line
}

// eventLog is where a run's events go: appended to its journal before
// their effect is reported, then told to the observer in journal order. A
// resumed run leaves out the events its journal already holds; a dry run
// has no journal and only tells the observer.
type eventLog struct {
	journal  *journal.Writer
	observer func(Notice)
	// already counts, by type and key, the events a resumed run's journal
	// holds from before; see repeated.
	already   map[string]int
	alreadyMu sync.Mutex
	// notifyMu orders observer notices by Seq: concurrent appends return in
	// any order, and --json output should read like the journal.
	notifyMu   sync.Mutex
	nextNotify int64
	early      map[int64]journal.Event
	// unjournaledSeq numbers the events of a run without a journal.
	unjournaledSeq int64
	// responded is the Seq of the latest model response journaled, which
	// the next model call waits to be durable.
	responded atomic.Int64
	// published, when set, is closed once a new run's folder is durable
	// under its name (see Start): until then no event is, synced or not,
	// and publishErr says why it never became so.
	published  chan struct{}
	publishErr error
	staging    string // the folder's hidden name until then
}

// waitPublished returns once the run's folder is durable under its name.
func (r *eventLog) waitPublished() error {
	if r.published == nil {
		return nil
	}
	<-r.published
	if r.publishErr != nil {
		return fmt.Errorf("setting up the run's folder: %w", r.publishErr)
	}
	return nil
}

// noteResponse remembers the Seq of a journaled model response.
func (r *eventLog) noteResponse(typ event.Type, seq int64) {
	if typ != event.ModelResponse {
		return
	}
	for {
		old := r.responded.Load()
		if seq <= old || r.responded.CompareAndSwap(old, seq) {
			return
		}
	}
}

// durableForCall makes every model response journaled so far durable; a
// model call waits for it before it is sent.
func (r *eventLog) durableForCall() error {
	if err := r.waitPublished(); err != nil {
		return err
	}
	seq := r.responded.Load()
	if r.journal == nil || seq == 0 {
		return nil
	}
	if err := r.journal.SyncTo(seq); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// syncedEvents are fsynced before the run goes on: an answer a person gave,
// what a tool read (the file may change), and the run's start, resumption
// and end. Every other event is derived again from these and from the
// model responses when a run resumes, so it is only written (it survives a
// killed process) and becomes durable with the next sync; that keeps an
// fsync per event off the critical path between dependent calls.
//
// A model response, paid for, is durable before the reply of any later
// model call is journaled (see durableForCall and durableWhileSent) and
// before the run ends or waits (its last event is synced), rather than as
// it arrives: the replies of a wave of concurrent calls then share the one
// fsync the next wave's first call starts, where syncing each on arrival
// took two. That fsync runs while the next call is on its way, not before
// it is sent: a reply takes far longer than an fsync, and the next wave
// would otherwise wait for the disk on every step of a debate.
//
// What a crash can lose: a killed process loses nothing, since every line
// is written before its effect is reported, synced or not. A machine crash
// loses at most the journal's last lines, never one in the middle: the
// journal is written in order and an fsync covers every line before it.
// Those lines are replies no later journaled reply was made from, which a
// resume asks for again; the calls in flight at the crash are lost with
// their replies, as they are whenever a machine stops mid-call, and may
// include calls made from those replies. A resume makes them again from
// the replies it gets, so the journal never holds a reply made from one it
// lost; the response cache, keyed by the whole request, cannot serve a
// reply to a request that a lost reply shaped unless that reply comes
// back the same.
var syncedEvents = map[event.Type]bool{event.RunStarted: true, event.RunResumed: true, event.RunFinished: true, event.Answer: true, event.ToolCall: true}

// neverRepeated are the event types a resumed run always writes: the run's
// own milestones, failures, and events of calls actually made.
var neverRepeated = map[event.Type]bool{
	event.RunStarted: true, event.RunResumed: true, event.RunFinished: true, event.Error: true, event.NodeFailed: true,
	event.ModelRequest: true, event.ModelResponse: true, event.Retry: true, event.ModelError: true, event.BudgetExceeded: true,
}

// repeated reports whether an event is already in the journal from before a
// resume. A resumed run walks its flow again from the start; the events it
// re-derives (node_started, message, output, ...) are left out, so the
// journal holds each of them once.
func (r *eventLog) repeated(typ event.Type, key string) bool {
	if r.already == nil || neverRepeated[typ] {
		return false
	}
	r.alreadyMu.Lock()
	defer r.alreadyMu.Unlock()
	k := string(typ) + "\x00" + key
	if r.already[k] > 0 {
		r.already[k]--
		return true
	}
	return false
}

// event journals an event and tells the observer, in that order.
func (r *eventLog) event(typ event.Type, key string, data any) error {
	return r.eventSynced(typ, key, data, syncedEvents[typ])
}

// eventSynced is event, with the event synced before it returns or not.
func (r *eventLog) eventSynced(typ event.Type, key string, data any, sync bool) error {
	if r.repeated(typ, key) {
		return nil
	}
	if r.journal == nil {
		return r.unjournaled(journal.Entry{Type: typ, Key: key, Data: data})
	}
	if r.observer == nil {
		// Nobody looks at the event: spare the journal copying it back.
		seq, err := r.journal.AppendSeq(typ, key, data, sync)
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		r.noteResponse(typ, seq)
		if sync {
			return r.waitPublished()
		}
		return nil
	}
	write := r.journal.AppendUnsynced
	if sync {
		write = r.journal.Append
	}
	ev, err := write(typ, key, data)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	r.noteResponse(typ, ev.Seq)
	if sync {
		if err := r.waitPublished(); err != nil {
			return err
		}
	}
	r.notify(ev)
	return nil
}

// events journals several events in one write and tells the observer about
// each, in order. The batch is synced if any of its events must be.
func (r *eventLog) events(entries []journal.Entry) error {
	if r.already != nil {
		kept := entries[:0:0]
		for _, e := range entries {
			if !r.repeated(e.Type, e.Key) {
				kept = append(kept, e)
			}
		}
		if entries = kept; len(entries) == 0 {
			return nil
		}
	}
	if r.journal == nil {
		for _, e := range entries {
			if err := r.unjournaled(e); err != nil {
				return err
			}
		}
		return nil
	}
	sync := false
	for _, e := range entries {
		sync = sync || syncedEvents[e.Type]
	}
	evs, err := r.journal.AppendBatch(entries, sync)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if sync {
		if err := r.waitPublished(); err != nil {
			return err
		}
	}
	if r.observer != nil {
		for _, ev := range evs {
			r.notify(ev)
		}
	}
	return nil
}

// unjournaled tells the observer about an event of a run that keeps no
// journal (a dry run), numbered as a journal would number it.
func (r *eventLog) unjournaled(e journal.Entry) error {
	if r.observer == nil {
		return nil
	}
	data, err := json.Marshal(e.Data)
	if err != nil {
		return fmt.Errorf("event %s: %w", e.Type, err)
	}
	r.notifyMu.Lock()
	r.unjournaledSeq++
	ev := journal.Event{Seq: r.unjournaledSeq, Time: time.Now().UTC(), Type: e.Type, Key: e.Key, Data: data}
	r.notifyMu.Unlock()
	r.notify(ev)
	return nil
}

// notify tells the observer about ev once every event before it was told.
// The first event of a run or resumption is appended alone, so its Seq
// starts the count.
func (r *eventLog) notify(ev journal.Event) {
	r.notifyMu.Lock()
	defer r.notifyMu.Unlock()
	if r.nextNotify == 0 {
		r.nextNotify = ev.Seq
	}
	if ev.Seq != r.nextNotify {
		if r.early == nil {
			r.early = map[int64]journal.Event{}
		}
		r.early[ev.Seq] = ev
		return
	}
	for {
		told := ev // each notice gets its own copy: observers may keep it
		r.observer(Notice{Event: &told})
		r.nextNotify++
		next, ok := r.early[r.nextNotify]
		if !ok {
			return
		}
		delete(r.early, r.nextNotify)
		ev = next
	}
}
