package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
)

// writtenEvents parses everything written to the fake file so far.
func (f *fakeFile) writtenEvents(t *testing.T) map[int64]Event {
	f.mu.Lock()
	data := bytes.Clone(f.data)
	f.mu.Unlock()
	out := map[int64]Event{}
	if _, err := Scan(bytes.NewReader(data), func(e Event) error {
		out[e.Seq] = e
		return nil
	}); err != nil {
		t.Errorf("written data is not a clean journal: %v", err)
	}
	return out
}

// TestAppendUnsynced: an unsynced append is written but not synced; the next
// Append's fsync covers it, and Close syncs a tail of unsynced lines.
func TestAppendUnsynced(t *testing.T) {
	f := &fakeFile{}
	w := newWriter("fake", f, Options{})
	ev, err := w.AppendUnsynced("message", "m1", map[string]int{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	if f.writes != 1 || f.syncs != 0 {
		t.Fatalf("after AppendUnsynced: %d writes, %d syncs; want 1 and 0", f.writes, f.syncs)
	}
	if _, ok := f.writtenEvents(t)[ev.Seq]; !ok {
		t.Fatal("AppendUnsynced returned before its line was written")
	}
	if _, err := w.Append("model_response", "k", "reply"); err != nil {
		t.Fatal(err)
	}
	if f.syncs != 1 || f.synced != len(f.data) {
		t.Fatalf("Append did not sync everything before it: %d syncs, %d of %d bytes synced", f.syncs, f.synced, len(f.data))
	}
	if _, err := w.AppendUnsynced("node_finished", "n", nil); err != nil {
		t.Fatal(err)
	}
	if f.synced == len(f.data) {
		t.Fatal("the second unsynced line was synced")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if f.syncs != 2 || f.synced != len(f.data) {
		t.Errorf("Close left %d of %d bytes unsynced (%d syncs)", len(f.data)-f.synced, len(f.data), f.syncs)
	}
	if got := len(f.writtenEvents(t)); got != 3 {
		t.Errorf("%d events written, want 3", got)
	}
}

// TestAppendSeq: AppendSeq writes the line Append or AppendUnsynced would,
// syncing only when asked, and returns its Seq.
func TestAppendSeq(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	clock := func() time.Time { return now }
	for _, sync := range []bool{true, false} {
		t.Run(fmt.Sprintf("sync=%v", sync), func(t *testing.T) {
			viaSeq, viaEvent := &fakeFile{}, &fakeFile{}
			ws := newWriter("fake", viaSeq, Options{Now: clock})
			we := newWriter("fake", viaEvent, Options{Now: clock})
			appendEvent := we.AppendUnsynced
			if sync {
				appendEvent = we.Append
			}
			for i, data := range []any{map[string]string{"content": "a <b> & c\n"}, nil, []int{1, 2}} {
				seq, err := ws.AppendSeq("message", fmt.Sprintf("m%d", i+1), data, sync)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := appendEvent("message", fmt.Sprintf("m%d", i+1), data); err != nil {
					t.Fatal(err)
				}
				if seq != int64(i+1) {
					t.Errorf("AppendSeq returned seq %d, want %d", seq, i+1)
				}
			}
			if !bytes.Equal(viaSeq.data, viaEvent.data) {
				t.Errorf("AppendSeq wrote\n%s\nthe other appends wrote\n%s", viaSeq.data, viaEvent.data)
			}
			wantSyncs := 0
			if sync {
				wantSyncs = 3
			}
			if viaSeq.syncs != wantSyncs {
				t.Errorf("%d syncs, want %d", viaSeq.syncs, wantSyncs)
			}
		})
	}
}

// TestAppendBatch: a batch is written with one write, as the same events
// appended one by one would be, synced only when asked, redacted like any
// other event, and returned as Read returns them.
func TestAppendBatch(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	clock := func() time.Time { return now }
	const secret = "sk-batch-secret-1"
	entries := []Entry{
		{Type: "message", Key: "m1", Data: map[string]string{"content": "first <b>\n"}},
		{Type: "message", Key: "m2"},
		{Type: "message", Key: "m3", Data: json.RawMessage(`{"echo":"` + secret + `"}`)},
		{Type: "note", Data: json.RawMessage(nil)},
	}
	for _, sync := range []bool{true, false} {
		t.Run(fmt.Sprintf("sync=%v", sync), func(t *testing.T) {
			batched, single := &fakeFile{}, &fakeFile{}
			opts := Options{Now: clock, Redact: NewRedactor(secret)}
			wb, ws := newWriter("fake", batched, opts), newWriter("fake", single, opts)
			if _, err := wb.AppendUnsynced("run_started", "", nil); err != nil {
				t.Fatal(err)
			}
			evs, err := wb.AppendBatch(entries, sync)
			if err != nil {
				t.Fatal(err)
			}
			if batched.writes != 2 {
				t.Errorf("%d writes for an event and a batch, want 2", batched.writes)
			}
			wantSyncs := 0
			if sync {
				wantSyncs = 1
			}
			if batched.syncs != wantSyncs {
				t.Errorf("%d syncs, want %d", batched.syncs, wantSyncs)
			}
			if _, err := ws.AppendUnsynced("run_started", "", nil); err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if _, err := ws.AppendUnsynced(e.Type, e.Key, e.Data); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(batched.data, single.data) {
				t.Fatalf("the batch wrote\n%s\none by one\n%s", batched.data, single.data)
			}
			if bytes.Contains(batched.data, []byte(secret)) {
				t.Errorf("the batch wrote the secret: %s", batched.data)
			}
			written := batched.writtenEvents(t)
			if len(evs) != len(entries) {
				t.Fatalf("%d events returned, want %d", len(evs), len(entries))
			}
			for i, ev := range evs {
				if want := written[int64(i+2)]; !reflect.DeepEqual(ev, want) {
					t.Errorf("event %d returned as %+v, read back as %+v", i, ev, want)
				}
			}
		})
	}
}

// TestAppendBatchAllOrNothing: a batch with an entry that cannot be
// appended writes nothing; an empty batch writes nothing either.
func TestAppendBatchAllOrNothing(t *testing.T) {
	tests := []struct {
		name    string
		entries []Entry
		wantErr bool
	}{
		{name: "empty", entries: nil},
		{name: "no type", entries: []Entry{{Type: "message", Key: "m1"}, {Key: "m2"}}, wantErr: true},
		{name: "invalid key", entries: []Entry{{Type: "message", Key: "m1"}, {Type: "message", Key: "\xff"}}, wantErr: true},
		{name: "unencodable data", entries: []Entry{{Type: "message", Key: "m1"}, {Type: "message", Data: func() {}}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeFile{}
			w := newWriter("fake", f, Options{})
			evs, err := w.AppendBatch(tt.entries, false)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if len(evs) != 0 || f.writes != 0 || w.Seq() != 0 {
				t.Errorf("%d events, %d writes, seq %d; want none", len(evs), f.writes, w.Seq())
			}
		})
	}
}

// TestCloseWithoutUnsyncedLinesDoesNotSync: Close adds no fsync when every
// line is already durable, nor ever with NoSync.
func TestCloseWithoutUnsyncedLinesDoesNotSync(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		f := &fakeFile{}
		w := newWriter("fake", f, Options{NoSync: noSync})
		if _, err := w.Append("a", "", nil); err != nil {
			t.Fatal(err)
		}
		if noSync {
			if _, err := w.AppendUnsynced("b", "", nil); err != nil {
				t.Fatal(err)
			}
		}
		before := f.syncs
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if f.syncs != before {
			t.Errorf("NoSync=%v: Close synced %d times", noSync, f.syncs-before)
		}
	}
}

// TestMixedAppendsConcurrently: under concurrency each kind of append keeps
// its promise (written, or synced) when it returns, and the file stays in
// Seq order.
func TestMixedAppendsConcurrently(t *testing.T) {
	f := &fakeFile{delay: 100 * time.Microsecond}
	w := newWriter("fake", f, Options{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				synced := (g+i)%3 == 0
				var (
					ev  Event
					err error
				)
				if synced {
					ev, err = w.Append("model_response", fmt.Sprint(g, "/", i), i)
				} else {
					ev, err = w.AppendUnsynced("message", fmt.Sprint(g, "/", i), i)
				}
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
				where := f.writtenEvents(t)
				if synced {
					where = f.syncedEvents(t)
				}
				if _, ok := where[ev.Seq]; !ok {
					t.Errorf("append (synced=%v) of seq %d returned too early", synced, ev.Seq)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(f.syncedEvents(t)); n != 64 {
		t.Errorf("%d events durable after Close, want 64", n)
	}
}

// TestAppendUnsyncedWriteError: a failed write breaks the writer for every
// kind of append.
func TestAppendUnsyncedWriteError(t *testing.T) {
	boom := errors.New("disk full")
	f := &fakeFile{writeErr: func(n int) error {
		if n == 2 {
			return boom
		}
		return nil
	}}
	w := newWriter("fake", f, Options{})
	if _, err := w.AppendUnsynced("a", "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendUnsynced("b", "", nil); !errors.Is(err, boom) {
		t.Fatalf("second append: err = %v, want %v", err, boom)
	}
	if _, err := w.Append("c", "", nil); !errors.Is(err, boom) {
		t.Errorf("append after the failure: err = %v, want %v", err, boom)
	}
	if err := w.Close(); !errors.Is(err, boom) {
		t.Errorf("Close: err = %v, want %v", err, boom)
	}
}

// TestSyncTo: SyncTo makes events appended without sync durable with one
// fsync, does nothing when they already are, and concurrent callers whose
// events an fsync under way covers wait for it instead of making their own.
func TestSyncTo(t *testing.T) {
	f := &fakeFile{}
	w := newWriter("fake", f, Options{})
	var seqs []int64
	for i := range 3 {
		seq, err := w.AppendSeq("model_response", fmt.Sprint(i), nil, false)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	if f.syncs != 0 {
		t.Fatalf("%d fsyncs for appends without sync", f.syncs)
	}
	if err := w.SyncTo(seqs[1]); err != nil {
		t.Fatal(err)
	}
	if n := len(f.syncedEvents(t)); f.syncs != 1 || n != 3 {
		t.Fatalf("after SyncTo: %d fsyncs, %d events durable; want 1 and 3 (an fsync covers every line written)", f.syncs, n)
	}
	if err := w.SyncTo(seqs[2]); err != nil || f.syncs != 1 {
		t.Fatalf("SyncTo of a durable event: %v, %d fsyncs, want none more", err, f.syncs)
	}

	// An fsync under way covers the events written before it began.
	f.started, f.release = make(chan struct{}), make(chan struct{})
	seq, _ := w.AppendSeq("model_response", "late", nil, false)
	first := make(chan error)
	go func() { first <- w.SyncTo(seq) }()
	<-f.started
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.SyncTo(seq); err != nil {
				t.Error(err)
			}
		}()
	}
	time.Sleep(10 * time.Millisecond) // let the others queue behind the fsync
	f.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if f.syncs != 2 {
		t.Errorf("%d fsyncs in all, want 2: callers covered by an fsync under way made their own", f.syncs)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
