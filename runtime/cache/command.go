package cache

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/debate-runner/runner/internal/exitcode"
)

// This file is runner cache stats and runner cache clear.

// StatsAt is the statistics of the cache in dir (the default folder when
// dir is empty): an absent cache has none.
func StatsAt(dir string, getenv func(string) string) (Stats, error) {
	st, err := OpenExisting(dir, getenv)
	if err != nil {
		return Stats{}, err
	}
	if st == nil {
		return Stats{Dir: dirOrDefault(dir, getenv), ByModel: map[string]ModelStats{}}, nil
	}
	stats, err := st.Stats()
	if err != nil {
		return stats, exitcode.With(exitcode.Failure, err)
	}
	return stats, nil
}

// ClearAt deletes every entry of the cache in dir (the default folder
// when dir is empty), and says how many it deleted from which folder.
func ClearAt(dir string, getenv func(string) string) (int, string, error) {
	st, err := OpenExisting(dir, getenv)
	if err != nil {
		return 0, "", err
	}
	n := 0
	if st != nil {
		if n, err = st.Clear(); err != nil {
			return 0, "", exitcode.With(exitcode.Failure, err)
		}
	}
	return n, dirOrDefault(dir, getenv), nil
}

func dirOrDefault(dir string, getenv func(string) string) string {
	if dir != "" {
		return dir
	}
	d, _ := DefaultDir(getenv)
	return d
}

// Text is what runner cache stats prints above its table of models: the
// folder, the entries and their size, unreadable entries, the oldest and
// the newest.
func (s Stats) Text() string {
	var b strings.Builder
	abs, _ := filepath.Abs(s.Dir)
	fmt.Fprintf(&b, "cache: %s\nentries: %d (%s)\n", abs, s.Entries, sizeText(s.Bytes))
	if s.Corrupt > 0 {
		fmt.Fprintf(&b, "unreadable entries: %d (never served; 'runner cache clear' removes them)\n", s.Corrupt)
	}
	if s.Entries > 0 {
		fmt.Fprintf(&b, "oldest: %s\nnewest: %s\n", s.Oldest.Format("2006-01-02 15:04:05Z"), s.Newest.Format("2006-01-02 15:04:05Z"))
	}
	return b.String()
}

// ModelsHeader is the header of ModelRows.
var ModelsHeader = []string{"model", "entries", "prompt tokens", "completion tokens"}

// ModelRows are the rows of the table of models, by model name.
func (s Stats) ModelRows() [][]string {
	models := make([]string, 0, len(s.ByModel))
	for m := range s.ByModel {
		models = append(models, m)
	}
	sort.Strings(models)
	var rows [][]string
	for _, m := range models {
		ms := s.ByModel[m]
		rows = append(rows, []string{m, fmt.Sprint(ms.Entries), fmt.Sprint(ms.PromptTokens), fmt.Sprint(ms.CompletionTokens)})
	}
	return rows
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
