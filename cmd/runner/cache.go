package main

import (
	"encoding/json"
	"fmt"

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

type cacheStatsCmd struct {
	cacheDirFlag `embed:""`
	JSON         bool `name:"json" help:"Print the statistics as JSON."`
}

func (c *cacheStatsCmd) Run(e *env) error {
	stats, err := cache.StatsAt(c.CacheDir, e.getenv)
	if err != nil {
		return err
	}
	if c.JSON {
		data, _ := json.MarshalIndent(stats, "", "  ")
		fmt.Fprintln(e.stdout, string(data))
		return nil
	}
	fmt.Fprint(e.stdout, stats.Text())
	if stats.Entries > 0 {
		fmt.Fprint(e.stdout, "\n"+sweep.Table{Header: cache.ModelsHeader, Rows: stats.ModelRows()}.Markdown(0))
	}
	return nil
}

type cacheClearCmd struct {
	cacheDirFlag `embed:""`
}

func (c *cacheClearCmd) Run(e *env) error {
	n, dir, err := cache.ClearAt(c.CacheDir, e.getenv)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "removed %d cached responses from %s\n", n, dir)
	return nil
}
