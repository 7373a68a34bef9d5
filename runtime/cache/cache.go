// Package cache is the on-disk response cache: model replies stored by the
// content address of their request (runtime.CacheKey), so that running the
// same request again, in a later run or in another run of a sweep, costs
// nothing and gives the same reply.
//
// Every entry is one JSON file, written through a temporary file and a
// rename, so a reader never sees half an entry and concurrent writers of the
// same key (identical replies) cannot interleave. An entry that cannot be
// read or decoded is a miss: a damaged cache costs calls, never a run.
package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/debate-runner/runner/nodes/kit"
)

// EnvDir is the environment variable that overrides the default cache
// directory.
const EnvDir = "RUNNER_CACHE_DIR"

// formatVersion is bumped when the entry layout changes; entries of another
// version are misses.
const formatVersion = 1

// entriesDir is the subfolder holding entries, so that Clear never touches
// files in a folder the user pointed --cache-dir at by mistake.
const entriesDir = "responses"

// Store is a response cache in a directory. It is safe for concurrent use,
// also by several processes sharing the directory.
type Store struct {
	dir string

	hits, misses, writes, writeErrors atomic.Int64
}

// entry is the file format of one cached reply.
type entry struct {
	Version int       `json:"version"`
	Key     string    `json:"key"`
	Created time.Time `json:"created"`
	Reply   kit.Reply `json:"reply"`
}

// Open returns the cache in dir, creating the directory when needed.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("cache directory: empty path")
	}
	if err := os.MkdirAll(filepath.Join(dir, entriesDir), 0o755); err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	return &Store{dir: dir}, nil
}

// Dir is the cache's directory.
func (s *Store) Dir() string { return s.dir }

// DefaultDir is where the cache lives when no directory is given: $RUNNER_CACHE_DIR,
// else "runner" in the user cache directory. It reads the environment
// through getenv, so callers with their own environment (tests) stay off the
// real one; "" with no error means no location is known and there is no
// default cache.
func DefaultDir(getenv func(string) string) (string, error) {
	if d := getenv(EnvDir); d != "" {
		return d, nil
	}
	base := ""
	switch runtime.GOOS {
	case "windows":
		base = getenv("LocalAppData")
	case "darwin", "ios":
		if h := getenv("HOME"); h != "" {
			base = filepath.Join(h, "Library", "Caches")
		}
	case "plan9":
		if h := getenv("home"); h != "" {
			base = filepath.Join(h, "lib", "cache")
		}
	default:
		base = getenv("XDG_CACHE_HOME")
		if base != "" && !filepath.IsAbs(base) {
			return "", fmt.Errorf("XDG_CACHE_HOME %q is not an absolute path", base)
		}
		if base == "" {
			if h := getenv("HOME"); h != "" {
				base = filepath.Join(h, ".cache")
			}
		}
	}
	if base == "" {
		return "", nil
	}
	return filepath.Join(base, "runner"), nil
}

// validKey accepts the hex digests runtime.CacheKey makes; anything else
// could name a path outside the cache.
func validKey(key string) bool {
	return len(key) >= 16 && len(key) <= 128 && validKeyChars(key)
}

// path spreads entries over 256 folders so none grows huge.
func (s *Store) path(key string) string {
	return filepath.Join(s.dir, entriesDir, key[:2], key+".json")
}

// Get returns the reply stored under key. A missing, unreadable or corrupt
// entry is a miss.
func (s *Store) Get(key string) (kit.Reply, bool) {
	if !validKey(key) {
		s.misses.Add(1)
		return kit.Reply{}, false
	}
	data, err := os.ReadFile(s.path(key))
	if err != nil {
		s.misses.Add(1)
		return kit.Reply{}, false
	}
	var e entry
	if err := json.Unmarshal(data, &e); err != nil || e.Version != formatVersion || e.Key != key {
		s.misses.Add(1)
		return kit.Reply{}, false
	}
	s.hits.Add(1)
	return e.Reply, true
}

// Put stores rep under key. The cache is an optimisation, so a failed write
// is counted (Counters) rather than failing the call that produced rep.
func (s *Store) Put(key string, rep kit.Reply) {
	if err := s.put(key, rep); err != nil {
		s.writeErrors.Add(1)
		return
	}
	s.writes.Add(1)
}

func (s *Store) put(key string, rep kit.Reply) error {
	if !validKey(key) {
		return fmt.Errorf("invalid cache key %q", key)
	}
	rep.Replayed = false
	data, err := json.Marshal(entry{Version: formatVersion, Key: key, Created: time.Now().UTC(), Reply: rep})
	if err != nil {
		return err
	}
	path := s.path(key)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Counters are what this Store did since it was opened.
type Counters struct {
	Hits        int64 `json:"hits"`
	Misses      int64 `json:"misses"`
	Writes      int64 `json:"writes"`
	WriteErrors int64 `json:"write_errors"`
}

// Counters returns the hits, misses and writes of this Store so far.
func (s *Store) Counters() Counters {
	return Counters{Hits: s.hits.Load(), Misses: s.misses.Load(), Writes: s.writes.Load(), WriteErrors: s.writeErrors.Load()}
}

// Stats describe what the cache directory holds.
type Stats struct {
	Dir     string `json:"dir"`
	Entries int    `json:"entries"`
	Bytes   int64  `json:"bytes"`
	// Corrupt entries are counted but never served.
	Corrupt int       `json:"corrupt"`
	Oldest  time.Time `json:"oldest,omitzero"`
	Newest  time.Time `json:"newest,omitzero"`
	// ByModel counts entries by the model that answered.
	ByModel map[string]ModelStats `json:"by_model"`
}

// ModelStats count the entries of one model.
type ModelStats struct {
	Entries          int `json:"entries"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Stats reads every entry of the cache.
func (s *Store) Stats() (Stats, error) {
	st := Stats{Dir: s.dir, ByModel: map[string]ModelStats{}}
	err := s.walk(func(path string, info fs.FileInfo) error {
		st.Bytes += info.Size()
		data, err := os.ReadFile(path)
		if err != nil {
			st.Corrupt++
			return nil
		}
		var e entry
		if json.Unmarshal(data, &e) != nil || e.Version != formatVersion || e.Key+".json" != filepath.Base(path) {
			st.Corrupt++
			return nil
		}
		st.Entries++
		if st.Oldest.IsZero() || e.Created.Before(st.Oldest) {
			st.Oldest = e.Created
		}
		if e.Created.After(st.Newest) {
			st.Newest = e.Created
		}
		model := e.Reply.Model
		if model == "" {
			model = "(unknown)"
		}
		m := st.ByModel[model]
		m.Entries++
		m.PromptTokens += e.Reply.PromptTokens
		m.CompletionTokens += e.Reply.CompletionTokens
		st.ByModel[model] = m
		return nil
	})
	return st, err
}

// Clear deletes every entry (and leftover temporary file) and returns how
// many entries it removed. Files that are not the cache's own are left alone.
func (s *Store) Clear() (int, error) {
	n := 0
	err := s.walk(func(path string, _ fs.FileInfo) error {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if !strings.HasPrefix(filepath.Base(path), ".tmp-") {
			n++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("clearing the cache in %s: %w", s.dir, err)
	}
	// Remove the fan-out folders that are now empty; a folder holding
	// someone else's file stays.
	root := filepath.Join(s.dir, entriesDir)
	subs, _ := os.ReadDir(root)
	for _, d := range subs {
		if d.IsDir() && isFanout(d.Name()) {
			_ = os.Remove(filepath.Join(root, d.Name()))
		}
	}
	return n, nil
}

// walk calls fn for every entry file and temporary file of the cache, in a
// stable order.
func (s *Store) walk(fn func(path string, info fs.FileInfo) error) error {
	root := filepath.Join(s.dir, entriesDir)
	subs, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, d := range subs {
		if !d.IsDir() || !isFanout(d.Name()) {
			continue
		}
		files, err := os.ReadDir(filepath.Join(root, d.Name()))
		if err != nil {
			return err
		}
		sort.Slice(files, func(i, j int) bool { return files[i].Name() < files[j].Name() })
		for _, f := range files {
			name := f.Name()
			own := strings.HasPrefix(name, ".tmp-") ||
				strings.HasSuffix(name, ".json") && validKey(strings.TrimSuffix(name, ".json")) && strings.HasPrefix(name, d.Name())
			if f.IsDir() || !own {
				continue
			}
			info, err := f.Info()
			if err != nil {
				continue // removed meanwhile
			}
			if err := fn(filepath.Join(root, d.Name(), name), info); err != nil {
				return err
			}
		}
	}
	return nil
}

func isFanout(name string) bool { return len(name) == 2 && validKeyChars(name) }

func validKeyChars(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
