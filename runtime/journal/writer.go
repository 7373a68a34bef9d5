package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/debate-runner/runner/internal/event"
)

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("journal closed")

// Options tune a [Writer]. The zero value is what a run uses.
type Options struct {
	// NoSync skips fsync. Appends are then written but not durable; it exists
	// for benchmarks and tests that measure CPU, never for real runs.
	NoSync bool
	// Redact, if set, replaces every occurrence of a secret in an event's
	// type, key and payload before its line is written. (The seq and time
	// fields are the journal's own digits and cannot carry one.) Payloads are
	// redacted token by token, so the line stays valid JSON.
	Redact *Redactor
	// Now supplies event times; nil means time.Now. Tests set it to make
	// journals byte-for-byte reproducible.
	Now func() time.Time
	// FolderSynced is set by a caller that syncs the journal's folder
	// itself, after Create and before relying on the journal's first
	// events (as a run's start syncs its folder's files together):
	// CreateWith then leaves the folder alone.
	FolderSynced bool
}

// file is what the writer needs of an *os.File; tests substitute it to
// observe syncs and inject failures.
type file interface {
	io.Writer
	Sync() error
	Close() error
}

// journalPerm keeps the journal private to the user: it holds prompts and
// model replies.
const journalPerm = 0o600

// maxRetainedBuffer bounds the batch buffer kept between flushes, so one huge
// event does not pin its memory for the rest of the run.
const maxRetainedBuffer = 4 << 20

// Writer appends events to a journal. It is safe for concurrent use.
//
// Appends use group commit: one appender (the leader) writes and fsyncs the
// lines queued so far while later appenders queue theirs for the next batch,
// so N concurrent appends cost far fewer than N fsyncs. No Append returns
// before its own line is durable. After a write or sync error the writer is
// broken and every later Append returns that error.
type Writer struct {
	path string
	f    file
	opts Options
	now  func() time.Time

	mu   sync.Mutex
	cond sync.Cond // broadcast when a flush ends; cond.L is &mu

	seq      int64  // last assigned Seq
	written  int64  // every line up to this Seq is written to the file
	durable  int64  // every line up to this Seq is written (and synced unless NoSync)
	pending  []byte // lines not yet handed to a flush, in Seq order
	spare    []byte // the previous batch buffer, reused
	flushing bool   // a leader is writing and syncing outside the lock
	err      error  // sticky: set by the first failed flush
	closed   bool

	syncs     int64 // fsyncs done, for measuring group commit
	truncated int64 // bytes of torn tail removed by OpenAppend
}

// Create creates a new journal at path and fails if the file exists.
func Create(path string) (*Writer, error) { return CreateWith(path, Options{}) }

// CreateWith is [Create] with options.
func CreateWith(path string, opts Options) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, journalPerm)
	if err != nil {
		return nil, fmt.Errorf("journal: create: %w", err)
	}
	if !opts.NoSync && !opts.FolderSynced {
		// The first event is only durable if the file's directory entry is.
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, fmt.Errorf("journal %s: create: %w", path, err)
		}
	}
	return newWriter(path, f, opts), nil
}

// OpenAppend opens an existing journal to continue it, as when a killed run
// resumes. It reads the events already there so Seq numbering continues. If
// the last line is torn (see [Scan]), the file is truncated to the end of the
// last good line first; [Writer.Truncated] reports how many bytes were cut.
// Damage anywhere else is an error and the file is left untouched.
func OpenAppend(path string) (*Writer, error) { return OpenAppendWith(path, Options{}) }

// OpenAppendWith is [OpenAppend] with options.
func OpenAppendWith(path string, opts Options) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("journal: open for append: %w", err)
	}
	res, err := scan(f, nil)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	if res.torn {
		if err := f.Truncate(res.goodEnd); err != nil {
			f.Close()
			return nil, fmt.Errorf("journal %s: cut torn last line: %w", path, err)
		}
		if !opts.NoSync {
			if err := f.Sync(); err != nil {
				f.Close()
				return nil, fmt.Errorf("journal %s: cut torn last line: %w", path, err)
			}
		}
	}
	w := newWriter(path, f, opts)
	w.seq, w.written, w.durable = res.lastSeq, res.lastSeq, res.lastSeq
	w.truncated = res.size - res.goodEnd
	return w, nil
}

func newWriter(path string, f file, opts Options) *Writer {
	w := &Writer{path: path, f: f, opts: opts, now: opts.Now}
	if w.now == nil {
		w.now = time.Now
	}
	w.cond.L = &w.mu
	return w
}

// Truncated returns how many bytes of a torn last line OpenAppend removed;
// zero if the journal was intact or the writer came from Create.
func (w *Writer) Truncated() int64 { return w.truncated }

// Durable returns the Seq up to which every event is durable: written and
// synced (written only, with NoSync).
func (w *Writer) Durable() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.durable
}

// Seq returns the last Seq assigned, which for a writer from OpenAppend
// starts at the last event already in the journal.
func (w *Writer) Seq() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// Append writes one event with the given type, key and payload and returns it
// once its line is durable. data is marshalled as JSON without HTML escaping
// (a json.RawMessage is validated and compacted, not re-encoded); nil or an
// empty json.RawMessage means no payload. Seq and Time are assigned by the
// journal. The returned event is exactly what [Read] will return for it,
// redaction included.
func (w *Writer) Append(typ event.Type, key string, data any) (Event, error) {
	if raw, ok := data.(json.RawMessage); ok && len(raw) == 0 {
		data = nil
	}
	return w.append(string(typ), key, time.Time{}, data, true, true)
}

// AppendUnsynced is [Writer.Append] without the wait for fsync: it returns
// once the event's line is written to the file. The line then survives the
// process being killed (it is in the operating system's cache) but not a
// machine crash until the next Append, whose fsync covers every line before
// its own, or Close. It is meant for events that can be derived again from
// the synced ones, so that each of them does not put an fsync on the
// caller's critical path. Lines keep Seq order whichever method wrote them.
func (w *Writer) AppendUnsynced(typ event.Type, key string, data any) (Event, error) {
	if raw, ok := data.(json.RawMessage); ok && len(raw) == 0 {
		data = nil
	}
	return w.append(string(typ), key, time.Time{}, data, false, true)
}

// AppendSeq appends an event like [Writer.Append], or like
// [Writer.AppendUnsynced] when sync is false, and returns only its Seq. It
// spares the copy of the payload that their returned [Event] carries, for
// callers that keep nothing of the event.
func (w *Writer) AppendSeq(typ event.Type, key string, data any, sync bool) (int64, error) {
	if raw, ok := data.(json.RawMessage); ok && len(raw) == 0 {
		data = nil
	}
	ev, err := w.append(string(typ), key, time.Time{}, data, sync, false)
	return ev.Seq, err
}

// AppendEvent writes e like [Writer.Append] does, keeping e.Time (in UTC) if
// it is set. e.Seq is ignored: the journal always assigns it.
func (w *Writer) AppendEvent(e Event) (Event, error) {
	var data any
	if len(e.Data) > 0 {
		data = e.Data
	}
	return w.append(string(e.Type), e.Key, e.Time, data, true, true)
}

// Entry is one event of [Writer.AppendBatch]: its type, key and payload, as
// for [Writer.Append].
type Entry struct {
	Type event.Type
	Key  string
	Data any
}

// AppendBatch appends entries as consecutive events in one write, as
// [Writer.AppendUnsynced] would one by one, or [Writer.Append] if sync is
// set. It is for a caller that has several events at once, such as the
// messages a node records, and spares a write per event. If any entry
// cannot be appended, none is. The events are returned in order.
func (w *Writer) AppendBatch(entries []Entry, sync bool) ([]Event, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	lines := make([]pendingLine, len(entries))
	ends := make([]int, len(entries)) // end of each payload in buf
	var buf []byte
	enc := getEncoder()
	defer putEncoder(enc)
	for i, e := range entries {
		if err := w.check(string(e.Type), e.Key, time.Time{}); err != nil {
			return nil, err
		}
		data := e.Data
		if raw, ok := data.(json.RawMessage); ok && len(raw) == 0 {
			data = nil
		}
		var payload []byte
		if data != nil {
			var err error
			if payload, err = enc.encode(data); err != nil {
				return nil, fmt.Errorf("journal %s: append %s %q: encode data: %w", w.path, e.Type, e.Key, err)
			}
		}
		typ, key, payload := w.redact(string(e.Type), e.Key, payload)
		lines[i] = pendingLine{typ: typ, key: key}
		if len(buf)+len(payload) > cap(buf) {
			// Guess that the payloads still to come are about this size.
			buf = slices.Grow(buf, len(payload)*(len(entries)-i))
		}
		buf = append(buf, payload...)
		ends[i] = len(buf)
	}
	start := 0
	for i := range lines {
		lines[i].payload = buf[start:ends[i]:ends[i]]
		start = ends[i]
	}
	first, err := w.commit(lines, sync)
	if err != nil {
		return nil, err
	}
	evs := make([]Event, len(lines))
	for i, l := range lines {
		evs[i] = Event{Seq: first + int64(i), Time: l.t, Type: event.Type(l.typ), Key: l.key}
		if len(l.payload) > 0 {
			evs[i].Data = l.payload // buf is this call's own
		}
	}
	return evs, nil
}

// append writes one event; the returned event carries a copy of the payload
// only if keepData is set.
func (w *Writer) append(typ, key string, t time.Time, data any, sync, keepData bool) (Event, error) {
	if err := w.check(typ, key, t); err != nil {
		return Event{}, err
	}
	var payload []byte
	if data != nil {
		enc := getEncoder()
		defer putEncoder(enc)
		var err error
		if payload, err = enc.encode(data); err != nil {
			return Event{}, fmt.Errorf("journal %s: append %s %q: encode data: %w", w.path, typ, key, err)
		}
	}
	typ, key, payload = w.redact(typ, key, payload)
	lines := [1]pendingLine{{typ: typ, key: key, t: t, payload: payload}}
	seq, err := w.commit(lines[:], sync)
	if err != nil {
		return Event{}, err
	}
	ev := Event{Seq: seq, Time: lines[0].t, Type: event.Type(typ), Key: key}
	if keepData && len(payload) > 0 {
		ev.Data = bytes.Clone(payload)
	}
	return ev, nil
}

// check rejects an event that could not be read back.
func (w *Writer) check(typ, key string, t time.Time) error {
	if typ == "" {
		return fmt.Errorf("journal %s: append: empty event type", w.path)
	}
	if !utf8.ValidString(typ) || !utf8.ValidString(key) {
		return fmt.Errorf("journal %s: append %s %q: type and key must be valid UTF-8", w.path, typ, key)
	}
	if !t.IsZero() {
		// RFC 3339 has four-digit years; anything else could not be read back.
		if y := t.UTC().Year(); y < 0 || y > 9999 {
			return fmt.Errorf("journal %s: append %s %q: time %v out of range", w.path, typ, key, t)
		}
	}
	return nil
}

// redact removes secrets from an event's type, key and encoded payload.
func (w *Writer) redact(typ, key string, payload []byte) (string, string, []byte) {
	if r := w.opts.Redact; r.active() {
		return r.Redact(typ), r.Redact(key), r.redactJSON(payload)
	}
	return typ, key, payload
}

// pendingLine is an event on its way into the journal; commit sets its time.
type pendingLine struct {
	typ, key string
	t        time.Time // zero: now
	payload  []byte
}

// commit queues lines as consecutive events and returns the Seq of the first
// once all are durable (or, without sync, written), leading a flush when no
// other appender is.
func (w *Writer) commit(lines []pendingLine, sync bool) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, fmt.Errorf("journal %s: append %s %q: %w", w.path, lines[0].typ, lines[0].key, ErrClosed)
	}
	first := w.seq + 1
	for i := range lines {
		w.seq++
		if lines[i].t.IsZero() {
			// Read under the lock so times never go backwards along Seq.
			lines[i].t = w.now()
		}
		lines[i].t = lines[i].t.UTC()
		w.pending = appendLine(w.pending, w.seq, lines[i].t, lines[i].typ, lines[i].key, lines[i].payload)
	}
	last := w.seq
	done := func() bool { return w.written >= last && (!sync || w.durable >= last) }
	for !done() && w.err == nil {
		if w.flushing {
			w.cond.Wait()
			continue
		}
		w.flushLocked(sync)
	}
	if !done() {
		return 0, w.err
	}
	return first, nil
}

// flushLocked writes every pending line as one batch and, if sync is set,
// syncs the file (which also makes lines written earlier without sync
// durable). It is called with w.mu held and releases it during I/O, so
// appenders arriving meanwhile queue into the next batch.
func (w *Writer) flushLocked(sync bool) {
	batch, upTo := w.pending, w.seq
	w.pending, w.spare = w.spare[:0], nil
	w.flushing = true
	w.mu.Unlock()

	synced := false
	var err error
	if len(batch) > 0 {
		_, err = w.f.Write(batch)
	}
	if err == nil && sync && !w.opts.NoSync {
		synced = true
		if err = w.f.Sync(); err != nil {
			err = fmt.Errorf("sync: %w", err)
		}
	}

	w.mu.Lock()
	w.flushing = false
	if synced {
		w.syncs++
	}
	if cap(batch) <= maxRetainedBuffer {
		w.spare = batch[:0]
	}
	switch {
	case err != nil:
		w.err = fmt.Errorf("journal %s: write events %d..%d: %w", w.path, w.durable+1, upTo, err)
	case synced || w.opts.NoSync:
		w.written, w.durable = upTo, upTo
	default:
		w.written = upTo
	}
	w.cond.Broadcast()
}

// SyncTo returns once every event up to seq is durable (written, and
// synced unless NoSync). Events appended without sync become durable with
// the next synced append or SyncTo; an fsync already under way that covers
// seq is waited for rather than repeated, so concurrent callers share one.
func (w *Writer) SyncTo(seq int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	seq = min(seq, w.seq)
	for w.durable < seq && w.err == nil {
		if w.closed && !w.flushing && len(w.pending) == 0 {
			// Close syncs what is left; nothing more can be written.
			return fmt.Errorf("journal %s: sync: %w", w.path, ErrClosed)
		}
		if w.flushing {
			w.cond.Wait()
			continue
		}
		w.flushLocked(true)
	}
	if w.durable < seq {
		return w.err
	}
	return nil
}

// Close waits for queued events to be written, syncs lines written without
// sync, and closes the file. It reports the error that broke the writer, if
// one did, or the error syncing or closing the file. Later Appends return
// ErrClosed; a second Close does nothing.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	// Queued lines belong to appenders still in commit; one of them flushes.
	for w.flushing || (len(w.pending) > 0 && w.err == nil) {
		w.cond.Wait()
	}
	err := w.err
	unsynced := err == nil && w.written > w.durable && !w.opts.NoSync
	w.mu.Unlock()
	if unsynced {
		if serr := w.f.Sync(); serr != nil {
			err = fmt.Errorf("journal %s: sync: %w", w.path, serr)
		} else {
			w.mu.Lock()
			w.syncs++
			w.durable = w.written
			w.mu.Unlock()
		}
	}
	if cerr := w.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("journal %s: close: %w", w.path, cerr)
	}
	return err
}

// syncCount returns the number of fsyncs so far (for group-commit checks).
func (w *Writer) syncCount() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.syncs
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		// Directories cannot be opened for sync there; NTFS journals the
		// entry itself.
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// encoder marshals payloads without HTML escaping, so model replies full of
// "<", ">" and "&" stay readable and the same size in the journal.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

func getEncoder() *encoder { return encoders.Get().(*encoder) }

func putEncoder(e *encoder) {
	if e.buf.Cap() > maxRetainedBuffer {
		return
	}
	encoders.Put(e)
}

// encode returns the compact JSON of v, valid until the next use of e.
func (e *encoder) encode(v any) ([]byte, error) {
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	b := e.buf.Bytes()
	return b[:len(b)-1], nil // Encode ends with a newline
}
