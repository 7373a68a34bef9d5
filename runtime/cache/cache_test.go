package cache_test

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/cache"
	"github.com/debate-runner/runner/runtime/calls"
)

var _ calls.Cache = (*cache.Store)(nil)

// key makes a valid cache key (a hex digest) from a number.
func key(n int) string { return fmt.Sprintf("%064x", n+1) }

func open(t *testing.T) *cache.Store {
	t.Helper()
	s, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func entryPath(s *cache.Store, k string) string {
	return filepath.Join(s.Dir(), "responses", k[:2], k+".json")
}

func TestRoundTrip(t *testing.T) {
	s := open(t)
	rep := kit.Reply{Content: "hello", Model: "m-1", PromptTokens: 10, CompletionTokens: 2, LatencyMS: 5, Attempts: 1,
		ToolCalls: []kit.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"a"}`}}}
	if _, ok := s.Get(key(1)); ok {
		t.Fatal("hit in an empty cache")
	}
	s.Put(key(1), rep)
	got, ok := s.Get(key(1))
	if !ok || got.Content != rep.Content || got.Model != rep.Model || got.PromptTokens != 10 || len(got.ToolCalls) != 1 || got.ToolCalls[0].Arguments != rep.ToolCalls[0].Arguments {
		t.Fatalf("Get = %+v, %v", got, ok)
	}
	// A second store on the same directory (another process) sees it.
	other, err := cache.Open(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := other.Get(key(1)); !ok {
		t.Error("another store on the directory misses the entry")
	}
	if c := s.Counters(); c.Hits != 1 || c.Misses != 1 || c.Writes != 1 || c.WriteErrors != 0 {
		t.Errorf("counters = %+v", c)
	}
	leftovers, _ := filepath.Glob(filepath.Join(s.Dir(), "responses", "*", ".tmp-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}

func TestCorruptEntriesAreMisses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
	}{
		{"truncated", `{"version": 1, "key": "`},
		{"not json", "\x00\x01binary"},
		{"empty", ""},
		{"other version", fmt.Sprintf(`{"version": 99, "key": %q, "reply": {"content": "x"}}`, key(2))},
		{"other key", fmt.Sprintf(`{"version": 1, "key": %q, "reply": {"content": "x"}}`, key(3))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			p := entryPath(s, key(2))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if rep, ok := s.Get(key(2)); ok {
				t.Fatalf("corrupt entry served: %+v", rep)
			}
			st, err := s.Stats()
			if err != nil || st.Corrupt != 1 || st.Entries != 0 {
				t.Errorf("stats = %+v, %v", st, err)
			}
			// A new reply replaces the corrupt entry.
			s.Put(key(2), kit.Reply{Content: "fresh"})
			if rep, ok := s.Get(key(2)); !ok || rep.Content != "fresh" {
				t.Errorf("after Put: %+v, %v", rep, ok)
			}
		})
	}
}

func TestInvalidKeys(t *testing.T) {
	s := open(t)
	for _, k := range []string{"", "abc", "../../etc/passwd", strings.Repeat("g", 64), strings.Repeat("A", 64)} {
		s.Put(k, kit.Reply{Content: "x"})
		if _, ok := s.Get(k); ok {
			t.Errorf("key %q was served", k)
		}
	}
	if c := s.Counters(); c.Writes != 0 || c.WriteErrors != 5 {
		t.Errorf("counters = %+v, want 5 refused writes", c)
	}
}

func TestConcurrentUse(t *testing.T) {
	s := open(t)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				k := key(i % 5) // writers race on the same keys
				s.Put(k, kit.Reply{Content: fmt.Sprintf("reply %d", i%5)})
				if rep, ok := s.Get(k); ok && rep.Content != fmt.Sprintf("reply %d", i%5) {
					t.Errorf("key %d served %q", i%5, rep.Content)
				}
			}
		}(w)
	}
	wg.Wait()
	st, err := s.Stats()
	if err != nil || st.Entries != 5 || st.Corrupt != 0 {
		t.Errorf("stats = %+v, %v", st, err)
	}
}

func TestStatsAndClear(t *testing.T) {
	s := open(t)
	for i := 0; i < 3; i++ {
		s.Put(key(i), kit.Reply{Content: "x", Model: "gpt-a", PromptTokens: 10, CompletionTokens: 1})
	}
	s.Put(key(3), kit.Reply{Content: "y", PromptTokens: 4})
	foreign := filepath.Join(s.Dir(), "responses", key(0)[:2], "notes.txt")
	if err := os.WriteFile(foreign, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(s.Dir(), "keep.txt")
	if err := os.WriteFile(top, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Entries != 4 || st.Bytes == 0 || st.ByModel["gpt-a"].Entries != 3 || st.ByModel["gpt-a"].PromptTokens != 30 || st.ByModel["(unknown)"].Entries != 1 || st.Oldest.IsZero() || st.Newest.Before(st.Oldest) {
		t.Errorf("stats = %+v", st)
	}
	n, err := s.Clear()
	if err != nil || n != 4 {
		t.Fatalf("Clear = %d, %v; want 4", n, err)
	}
	for i := 0; i < 4; i++ {
		if _, ok := s.Get(key(i)); ok {
			t.Errorf("entry %d survived Clear", i)
		}
	}
	for _, p := range []string{foreign, top} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("Clear removed a file that is not the cache's: %s", p)
		}
	}
	if st, _ := s.Stats(); st.Entries != 0 {
		t.Errorf("%d entries after Clear", st.Entries)
	}
}

func TestDefaultDir(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("the fallbacks tested are Linux's")
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{"override", map[string]string{"RUNNER_CACHE_DIR": "/c", "HOME": "/h"}, "/c", false},
		{"xdg", map[string]string{"XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/x/runner", false},
		{"home", map[string]string{"HOME": "/h"}, "/h/.cache/runner", false},
		{"nothing", map[string]string{}, "", false},
		{"relative xdg", map[string]string{"XDG_CACHE_HOME": "rel"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cache.DefaultDir(func(k string) string { return tc.env[k] })
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("DefaultDir = %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestOpenFailures(t *testing.T) {
	if _, err := cache.Open(""); err == nil {
		t.Error("Open(\"\") succeeded")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Open(file); err == nil {
		t.Error("Open on a file succeeded")
	}
}
