package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/cache"
	"github.com/debate-runner/runner/runtime/sweep"
)

type cacheCmd struct {
	Stats cacheStatsCmd `cmd:"" help:"Show what the response cache holds."`
	Clear cacheClearCmd `cmd:"" help:"Delete every cached response."`
}

func (cacheCmd) Help() string {
	return `Model replies are cached by the content of their request (endpoint, model,
parameters, messages, tools and the call's sample), so an identical request is
answered from disk. The cache is in $RUNNER_CACHE_DIR, else runner/ in the user
cache directory (~/.cache/runner on Linux); --cache-dir points elsewhere.
Failed calls are never cached; 'runner run --no-cache' bypasses the cache.

Examples:
  runner cache stats
  runner cache stats --json
  runner cache clear --cache-dir /tmp/runner-cache`
}

// cacheDirFlag is the cache location flag shared by the cache commands.
type cacheDirFlag struct {
	CacheDir string `name:"cache-dir" placeholder:"DIR" help:"Cache directory (default: $RUNNER_CACHE_DIR, else runner/ in the user cache directory)."`
}

// open opens the cache; an absent cache is reported, not created, so that
// stats and clear leave no folder behind.
func (f cacheDirFlag) open(e *env) (*cache.Store, error) {
	return cache.OpenExisting(f.CacheDir, e.getenv)
}

func (f cacheDirFlag) dir(e *env) string {
	if f.CacheDir != "" {
		return f.CacheDir
	}
	d, _ := cache.DefaultDir(e.getenv)
	return d
}

type cacheStatsCmd struct {
	cacheDirFlag `embed:""`
	JSON         bool `name:"json" help:"Print the statistics as JSON."`
}

func (c *cacheStatsCmd) Run(e *env) error {
	st, err := c.open(e)
	if err != nil {
		return err
	}
	stats := cache.Stats{Dir: c.dir(e), ByModel: map[string]cache.ModelStats{}}
	if st != nil {
		if stats, err = st.Stats(); err != nil {
			return exitcode.With(exitcode.Failure, err)
		}
	}
	if c.JSON {
		data, _ := json.MarshalIndent(stats, "", "  ")
		fmt.Fprintln(e.stdout, string(data))
		return nil
	}
	abs, _ := filepath.Abs(stats.Dir)
	fmt.Fprintf(e.stdout, "cache: %s\nentries: %d (%s)\n", abs, stats.Entries, sizeText(stats.Bytes))
	if stats.Corrupt > 0 {
		fmt.Fprintf(e.stdout, "unreadable entries: %d (never served; 'runner cache clear' removes them)\n", stats.Corrupt)
	}
	if stats.Entries > 0 {
		fmt.Fprintf(e.stdout, "oldest: %s\nnewest: %s\n", stats.Oldest.Format("2006-01-02 15:04:05Z"), stats.Newest.Format("2006-01-02 15:04:05Z"))
		t := sweep.Table{Header: []string{"model", "entries", "prompt tokens", "completion tokens"}}
		models := make([]string, 0, len(stats.ByModel))
		for m := range stats.ByModel {
			models = append(models, m)
		}
		sort.Strings(models)
		for _, m := range models {
			ms := stats.ByModel[m]
			t.Rows = append(t.Rows, []string{m, fmt.Sprint(ms.Entries), fmt.Sprint(ms.PromptTokens), fmt.Sprint(ms.CompletionTokens)})
		}
		fmt.Fprint(e.stdout, "\n"+t.Markdown(0))
	}
	return nil
}

type cacheClearCmd struct {
	cacheDirFlag `embed:""`
}

func (c *cacheClearCmd) Run(e *env) error {
	st, err := c.open(e)
	if err != nil {
		return err
	}
	n := 0
	if st != nil {
		if n, err = st.Clear(); err != nil {
			return exitcode.With(exitcode.Failure, err)
		}
	}
	fmt.Fprintf(e.stdout, "removed %d cached responses from %s\n", n, c.dir(e))
	return nil
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
