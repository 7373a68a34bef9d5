package journal

import (
	"bytes"
	"errors"
	"fmt"
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
