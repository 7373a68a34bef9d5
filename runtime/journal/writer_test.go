package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/event"
)

var fixedTime = time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC)

func fixedClock() time.Time { return fixedTime }

func tempJournal(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "journal.jsonl")
}

func mustRead(t *testing.T, path string) []Event {
	t.Helper()
	events, err := Read(path)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return events
}

func TestLineFormat(t *testing.T) {
	path := tempJournal(t)
	w, err := CreateWith(path, Options{Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	type reply struct {
		Text   string `json:"text"`
		Tokens int    `json:"tokens"`
	}
	if _, err := w.Append("model_response", "propose/r1/architect", reply{Text: "a<b & \"q\"\n", Tokens: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append("run_finished", "", nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq":1,"time":"2025-01-02T03:04:05.123456789Z","type":"model_response","key":"propose/r1/architect","data":{"text":"a<b & \"q\"\n","tokens":3}}` + "\n" +
		`{"seq":2,"time":"2025-01-02T03:04:05.123456789Z","type":"run_finished"}` + "\n"
	if string(got) != want {
		t.Fatalf("journal bytes:\n%s\nwant:\n%s", got, want)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != journalPerm {
		t.Fatalf("journal mode = %v (%v), want %v", info.Mode().Perm(), err, os.FileMode(journalPerm))
	}
}

func TestRoundTrip(t *testing.T) {
	type payload struct {
		Text   string            `json:"text"`
		Tokens int               `json:"tokens,omitempty"`
		Meta   map[string]string `json:"meta,omitempty"`
	}
	var nilPtr *payload
	tests := []struct {
		name     string
		typ      event.Type
		key      string
		data     any
		wantData string // "" means no data
	}{
		{name: "struct", typ: "model_response", key: "propose/r1/architect", data: payload{Text: "hello", Tokens: 5}, wantData: `{"text":"hello","tokens":5}`},
		{name: "no data", typ: "run_started", data: nil},
		{name: "empty raw message", typ: "node_started", key: "n1", data: json.RawMessage(nil)},
		{name: "raw message is compacted, not re-encoded", typ: "output", key: "k", data: json.RawMessage("{\n  \"a\": [1, 2],\n  \"b\": \"x y\"\n}"), wantData: `{"a":[1,2],"b":"x y"}`},
		{name: "string with specials", typ: "message", key: "k\t\"quoted\"\n", data: "line1\nline2 <tag> & \u2028 \x01 é 😀", wantData: `"line1\nline2 <tag> & \u2028 \u0001 é 😀"`},
		{name: "typed nil is null", typ: "output", data: nilPtr, wantData: `null`},
		{name: "map", typ: "retry", key: "k", data: map[string]any{"attempt": 2, "wait_ms": 1500}, wantData: `{"attempt":2,"wait_ms":1500}`},
		{name: "number", typ: "usage", data: 42, wantData: `42`},
	}
	path := tempJournal(t)
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var written []Event
	for i, tt := range tests {
		ev, err := w.Append(event.Type(tt.typ), tt.key, tt.data)
		if err != nil {
			t.Fatalf("%s: Append: %v", tt.name, err)
		}
		if ev.Seq != int64(i+1) || ev.Type != tt.typ || ev.Key != tt.key || string(ev.Data) != tt.wantData {
			t.Errorf("%s: Append returned %+v (data %s), want seq %d data %s", tt.name, ev, ev.Data, i+1, tt.wantData)
		}
		if ev.Time.Location() != time.UTC || time.Since(ev.Time) > time.Minute || time.Since(ev.Time) < 0 {
			t.Errorf("%s: time %v is not a current UTC time", tt.name, ev.Time)
		}
		written = append(written, ev)
	}
	// An explicit time is kept (in UTC); a Seq set by the caller is not.
	at := time.Date(2024, 6, 1, 12, 0, 0, 1, time.FixedZone("CEST", 2*3600))
	ev, err := w.AppendEvent(Event{Seq: 99, Time: at, Type: "message", Key: "k", Data: json.RawMessage(`{"x": 1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Seq != int64(len(tests)+1) || !ev.Time.Equal(at) || ev.Time.Location() != time.UTC || string(ev.Data) != `{"x":1}` {
		t.Errorf("AppendEvent returned %+v", ev)
	}
	written = append(written, ev)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, path); !reflect.DeepEqual(got, written) {
		t.Fatalf("read back:\n%+v\nwant:\n%+v", got, written)
	}
}

func TestAppendRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		ev   Event
		data any
	}{
		{name: "empty type", ev: Event{Type: ""}},
		{name: "type not UTF-8", ev: Event{Type: "a\xffb"}},
		{name: "key not UTF-8", ev: Event{Type: "a", Key: "\xfe"}},
		{name: "invalid raw JSON", ev: Event{Type: "a"}, data: json.RawMessage(`{"a":`)},
		{name: "unencodable data", ev: Event{Type: "a"}, data: make(chan int)},
		{name: "year past 9999", ev: Event{Type: "a", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	}
	path := tempJournal(t)
	w, err := CreateWith(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		var err error
		if tt.ev.Time.IsZero() {
			_, err = w.Append(tt.ev.Type, tt.ev.Key, tt.data)
		} else {
			_, err = w.AppendEvent(tt.ev)
		}
		if err == nil {
			t.Errorf("%s: Append succeeded, want an error", tt.name)
		}
	}
	// Rejected events consume no Seq and leave nothing behind.
	if ev, err := w.Append("ok", "", nil); err != nil || ev.Seq != 1 {
		t.Fatalf("Append after rejections = seq %d, %v; want seq 1", ev.Seq, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, path); len(got) != 1 {
		t.Fatalf("journal holds %d events, want 1", len(got))
	}
}

func TestCreateExistingFails(t *testing.T) {
	path := tempJournal(t)
	if err := os.WriteFile(path, []byte(line(1, "a")), 0o600); err != nil {
		t.Fatal(err)
	}
	if w, err := Create(path); !errors.Is(err, fs.ErrExist) {
		if w != nil {
			w.Close()
		}
		t.Fatalf("Create on existing file: err = %v, want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(path); string(got) != line(1, "a") {
		t.Fatalf("existing journal was modified: %q", got)
	}
}

func TestAppendAfterClose(t *testing.T) {
	path := tempJournal(t)
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append("a", "", nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append("b", "", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: err = %v, want ErrClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if got := mustRead(t, path); len(got) != 1 {
		t.Fatalf("journal holds %d events, want 1", len(got))
	}
}

func TestConcurrentAppend(t *testing.T) {
	const goroutines, perG = 64, 25
	path := tempJournal(t)
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	type item struct{ G, I int }
	returned := make([][]Event, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perG {
				ev, err := w.Append("message", fmt.Sprintf("g%d/%d", g, i), item{g, i})
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				returned[g] = append(returned[g], ev)
			}
		}()
	}
	wg.Wait()
	syncs := w.syncCount()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	events := mustRead(t, path)
	const n = goroutines * perG
	if len(events) != n {
		t.Fatalf("read %d events, want %d", len(events), n)
	}
	seen := map[item]bool{}
	for i, e := range events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
		var it item
		if err := json.Unmarshal(e.Data, &it); err != nil {
			t.Fatal(err)
		}
		if seen[it] || e.Key != fmt.Sprintf("g%d/%d", it.G, it.I) {
			t.Fatalf("event %+v duplicated or mislabelled", e)
		}
		seen[it] = true
	}
	for g, evs := range returned {
		for i, ev := range evs {
			if !reflect.DeepEqual(ev, events[ev.Seq-1]) {
				t.Fatalf("goroutine %d append %d returned %+v, journal has %+v", g, i, ev, events[ev.Seq-1])
			}
			if i > 0 && ev.Seq <= evs[i-1].Seq {
				t.Fatalf("goroutine %d: seq %d after %d", g, ev.Seq, evs[i-1].Seq)
			}
		}
	}
	t.Logf("%d appends, %d fsyncs", n, syncs)
	if syncs > n {
		t.Fatalf("%d fsyncs for %d appends", syncs, n)
	}
}

// fakeFile records what was written and synced, and can block or fail.
type fakeFile struct {
	mu       sync.Mutex
	data     []byte
	synced   int // len(data) at the last successful Sync
	writes   int
	syncs    int
	writeErr func(n int) error // called with the 1-based write number
	syncErr  error
	started  chan struct{} // if set, receives when a Sync begins
	release  chan struct{} // if set, each Sync waits for a value
	delay    time.Duration // how long each Sync takes
}

func (f *fakeFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if f.writeErr != nil {
		if err := f.writeErr(f.writes); err != nil {
			half := len(p) / 2 // a failed write can still leave bytes behind
			f.data = append(f.data, p[:half]...)
			return half, err
		}
	}
	f.data = append(f.data, p...)
	return len(p), nil
}

func (f *fakeFile) Sync() error {
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.release != nil {
		<-f.release
	}
	time.Sleep(f.delay)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.syncErr != nil {
		return f.syncErr
	}
	f.syncs++
	f.synced = len(f.data)
	return nil
}

func (f *fakeFile) Close() error { return nil }

// syncedEvents parses the synced prefix of the fake file.
func (f *fakeFile) syncedEvents(t *testing.T) map[int64]Event {
	f.mu.Lock()
	data := bytes.Clone(f.data[:f.synced])
	f.mu.Unlock()
	out := map[int64]Event{}
	torn, err := Scan(bytes.NewReader(data), func(e Event) error {
		out[e.Seq] = e
		return nil
	})
	if err != nil || torn {
		t.Errorf("synced data is not a clean journal (torn %v): %v", torn, err)
	}
	return out
}

// TestAppendReturnsOnlyWhenSynced checks, under heavy concurrency, that every
// Append's line is already in the synced part of the file when it returns.
func TestAppendReturnsOnlyWhenSynced(t *testing.T) {
	// A slow fsync leaves time for a premature return to be seen.
	f := &fakeFile{delay: 200 * time.Microsecond}
	w := newWriter("fake", f, Options{})
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				ev, err := w.Append("message", fmt.Sprint(g, "/", i), i)
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				if got, ok := f.syncedEvents(t)[ev.Seq]; !ok || !reflect.DeepEqual(got, ev) {
					t.Errorf("Append of seq %d returned before its line was synced", ev.Seq)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if f.synced != len(f.data) || f.syncs > 64*5 {
		t.Fatalf("synced %d of %d bytes with %d fsyncs", f.synced, len(f.data), f.syncs)
	}
}

// TestGroupCommit holds the first fsync open, queues more appends behind it
// and checks they go out together in the next single fsync, and that none of
// them returns before that fsync is done.
func TestGroupCommit(t *testing.T) {
	f := &fakeFile{started: make(chan struct{}), release: make(chan struct{})}
	w := newWriter("fake", f, Options{Now: fixedClock})
	var returned sync.WaitGroup
	var done sync.Map // seq -> true once its Append has returned
	appendAsync := func(key string) {
		returned.Add(1)
		go func() {
			defer returned.Done()
			ev, err := w.Append("message", key, nil)
			if err != nil {
				t.Errorf("Append %s: %v", key, err)
				return
			}
			done.Store(ev.Seq, true)
		}()
	}
	countDone := func() (n int) {
		done.Range(func(any, any) bool { n++; return true })
		return n
	}

	appendAsync("leader")
	<-f.started // the leader is inside fsync
	const queued = 10
	for i := range queued {
		appendAsync(fmt.Sprint("follower", i))
	}
	waitFor(t, func() bool { return w.Seq() == 1+queued })
	if n := countDone(); n != 0 {
		t.Fatalf("%d appends returned while the first fsync was still running", n)
	}

	f.release <- struct{}{} // finish fsync 1
	<-f.started             // fsync 2 has begun: it must carry all followers
	f.mu.Lock()
	lines := bytes.Count(f.data, []byte("\n"))
	writes := f.writes
	f.mu.Unlock()
	if lines != 1+queued || writes != 2 {
		t.Fatalf("before fsync 2: %d lines in %d writes, want %d lines in 2 writes", lines, writes, 1+queued)
	}
	waitFor(t, func() bool { _, ok := done.Load(int64(1)); return ok })
	time.Sleep(20 * time.Millisecond) // room for a premature return to show
	if n := countDone(); n != 1 {
		t.Fatalf("%d appends returned while fsync 2 was still running; want only the leader", n)
	}

	f.release <- struct{}{} // finish fsync 2
	returned.Wait()
	if n := countDone(); n != 1+queued {
		t.Fatalf("%d appends returned, want %d", n, 1+queued)
	}
	if s := w.syncCount(); s != 2 {
		t.Fatalf("%d fsyncs for %d appends, want 2", s, 1+queued)
	}
	f.release = nil
	f.started = nil
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in time")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWriteErrorBreaksWriter(t *testing.T) {
	boom := errors.New("disk full")
	tests := []struct {
		name string
		f    *fakeFile
	}{
		{name: "write fails", f: &fakeFile{writeErr: func(n int) error {
			if n >= 2 {
				return boom
			}
			return nil
		}}},
		{name: "sync fails", f: &fakeFile{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWriter("fake", tt.f, Options{})
			if _, err := w.Append("a", "", nil); err != nil {
				t.Fatalf("first Append: %v", err)
			}
			if tt.f.writeErr == nil {
				tt.f.syncErr = boom
			}
			_, err := w.Append("b", "", nil)
			if !errors.Is(err, boom) {
				t.Fatalf("Append during failure: err = %v, want it to wrap %v", err, boom)
			}
			tt.f.writeErr, tt.f.syncErr = nil, nil // the disk recovers; the writer stays broken
			for range 3 {
				if _, err2 := w.Append("c", "", nil); err2 != err {
					t.Fatalf("later Append: err = %v, want the first error %v", err2, err)
				}
			}
			if cerr := w.Close(); cerr != err {
				t.Fatalf("Close: err = %v, want %v", cerr, err)
			}
		})
	}
}

// TestCloseWaitsForInFlightAppends closes the writer while appends race with
// it: each must either be in the journal or fail with ErrClosed.
func TestCloseWaitsForInFlightAppends(t *testing.T) {
	path := tempJournal(t)
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu sync.Mutex
		ok = map[int64]bool{}
		wg sync.WaitGroup
	)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				ev, err := w.Append("message", fmt.Sprint(g, "/", i), nil)
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				mu.Lock()
				ok[ev.Seq] = true
				mu.Unlock()
			}
		}()
	}
	waitFor(t, func() bool { return w.Seq() > 50 })
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	events := mustRead(t, path)
	for _, e := range events {
		delete(ok, e.Seq)
	}
	if len(ok) != 0 {
		t.Fatalf("%d acknowledged appends missing from the journal", len(ok))
	}
}

func TestOpenAppend(t *testing.T) {
	intact := line(1, "a") + line(2, "b") + line(3, "c")
	tests := []struct {
		name          string
		content       string
		wantTruncated int64
		wantSeq       int64
		wantErr       bool
	}{
		{name: "intact", content: intact, wantSeq: 3},
		{name: "empty", content: "", wantSeq: 0},
		{name: "partial last line", content: intact + `{"seq":4,"time":"20`, wantTruncated: int64(len(`{"seq":4,"time":"20`)), wantSeq: 3},
		{name: "last line without newline", content: intact + strings.TrimSuffix(line(4, "d"), "\n"), wantTruncated: int64(len(line(4, "d")) - 1), wantSeq: 3},
		{name: "invalid last line", content: intact + "\x00\x00\x00\n", wantTruncated: 4, wantSeq: 3},
		{name: "damage in the middle", content: line(1, "a") + "junk\n" + line(2, "b"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempJournal(t)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			w, err := OpenAppend(path)
			if tt.wantErr {
				if err == nil {
					w.Close()
					t.Fatal("OpenAppend succeeded on a damaged journal")
				}
				var le *LineError
				if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), path) {
					t.Fatalf("err = %v, want a line-2 error naming the file", err)
				}
				if got, _ := os.ReadFile(path); string(got) != tt.content {
					t.Fatal("a damaged journal was modified")
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenAppend: %v", err)
			}
			if w.Truncated() != tt.wantTruncated || w.Seq() != tt.wantSeq {
				t.Fatalf("Truncated() = %d, Seq() = %d; want %d, %d", w.Truncated(), w.Seq(), tt.wantTruncated, tt.wantSeq)
			}
			ev, err := w.Append("resumed", "k", map[string]int{"n": 1})
			if err != nil {
				t.Fatal(err)
			}
			if ev.Seq != tt.wantSeq+1 {
				t.Fatalf("first appended seq = %d, want %d", ev.Seq, tt.wantSeq+1)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var seqs []int64
			torn, err := Scan(f, func(e Event) error { seqs = append(seqs, e.Seq); return nil })
			if err != nil || torn {
				t.Fatalf("journal after resume: torn %v, err %v", torn, err)
			}
			if len(seqs) != int(tt.wantSeq)+1 || seqs[len(seqs)-1] != tt.wantSeq+1 {
				t.Fatalf("journal after resume has seqs %v", seqs)
			}
		})
	}
}

func TestOpenAppendMissingFile(t *testing.T) {
	if _, err := OpenAppend(tempJournal(t)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
}

func TestLargePayload(t *testing.T) {
	// A 1 MB model reply with every kind of character JSON has to escape.
	var sb strings.Builder
	for sb.Len() < 1<<20 {
		sb.WriteString("line of a long reply: \"quotes\", <html> & tabs\t, back\\slash, ünïcödé 😀\n")
	}
	reply := sb.String()
	raw, err := json.Marshal(map[string]string{"text": reply})
	if err != nil {
		t.Fatal(err)
	}
	path := tempJournal(t)
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var written []Event
	for _, data := range []any{reply, json.RawMessage(raw)} {
		ev, err := w.Append("model_response", "propose/r1/architect", data)
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, ev)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := mustRead(t, path)
	if !reflect.DeepEqual(got, written) {
		t.Fatal("large events not read back as written")
	}
	var text string
	if err := json.Unmarshal(got[0].Data, &text); err != nil || text != reply {
		t.Fatalf("reply did not survive the round trip (err %v)", err)
	}
}

// TestEnvelopeOverhead checks that the bytes a line adds to its payload do not
// depend on the payload's size.
func TestEnvelopeOverhead(t *testing.T) {
	path := tempJournal(t)
	w, err := CreateWith(path, Options{NoSync: true, Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{1, 100, 10_000, 1_000_000}
	var payloadLen []int
	for _, n := range sizes {
		ev, err := w.Append("model_response", "propose/r1/architect", strings.Repeat("x", n))
		if err != nil {
			t.Fatal(err)
		}
		payloadLen = append(payloadLen, len(ev.Data))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i := range sizes {
		overhead := len(lines[i]) - payloadLen[i]
		if overhead != len(lines[0])-payloadLen[0] || overhead > 128 {
			t.Errorf("payload of %d bytes: overhead %d bytes, want the same small constant as for %d bytes (%d)",
				sizes[i], overhead, sizes[0], len(lines[0])-payloadLen[0])
		}
	}
}
