package runtime

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
)

// pathVerdictsDir is the folder of the cache directory that keeps path
// checks' verdicts (beside the response cache's entries, which `runner
// cache stats` and `clear` keep to).
const pathVerdictsDir = "paths"

// pathVerdictVersion changes when what a verdict file holds does.
const pathVerdictVersion = 1

// pathVerdict is a verdict file: the path check's diagnostics of one spec,
// as compiled by one runner binary.
type pathVerdict struct {
	Version     int                `json:"version"`
	Diagnostics syntax.Diagnostics `json:"diagnostics"`
}

// LoadRemembering is Load with the path check's verdict kept in the cache
// directory dir (its folder "paths", a small file per spec): a spec run
// again unchanged, with unchanged libraries, by the same runner binary,
// starts without walking its paths again, which is most of what a run
// does before its first call. The verdict is a function of what the key
// digests (see planKey; the spec's file by its absolute path), and of the
// binary, named by its file (path, size, modification time) and its build
// information; values given to the run do not enter the path check. A
// verdict that is missing or cannot be read is checked again and written
// anew; a verdict that cannot be written is not kept. dir "" is Load.
func LoadRemembering(path string, reg *spec.Registry, dir string) (*spec.Plan, syntax.Diagnostics) {
	plan, diags := spec.Load(path, reg)
	if plan == nil || diags.HasErrors() {
		return plan, diags
	}
	return plan, append(diags, checkedPaths.checkWith(plan, reg, func(plan *spec.Plan) syntax.Diagnostics {
		return rememberedCheck(plan, dir, thisBinary())
	})...)
}

// rememberedCheck is CheckPaths(plan) read from, or else written to, the
// verdicts in dir, for the binary named binary ("" remembers nothing).
func rememberedCheck(plan *spec.Plan, dir, binary string) syntax.Diagnostics {
	if dir == "" || binary == "" {
		return CheckPaths(plan)
	}
	abs, err := filepath.Abs(plan.Path)
	if err != nil {
		return CheckPaths(plan)
	}
	key := planDigest("runner path check\x00"+binary, abs+"\x00"+plan.Path, plan)
	file := filepath.Join(dir, pathVerdictsDir, hex.EncodeToString(key[:])+".json")
	if data, err := os.ReadFile(file); err == nil {
		var v pathVerdict
		if json.Unmarshal(data, &v) == nil && v.Version == pathVerdictVersion {
			// Used: it counts as new for pruning (see pruneVerdicts).
			now := time.Now()
			_ = os.Chtimes(file, now, now)
			return v.Diagnostics
		}
	}
	diags := CheckPaths(plan)
	if writeVerdict(file, pathVerdict{Version: pathVerdictVersion, Diagnostics: diags}) == nil {
		pruneVerdicts(filepath.Dir(file), filepath.Base(file), time.Now(), maxPathVerdicts, maxPathVerdictAge)
	}
	return diags
}

// Pruning of the verdicts' folder, done when a verdict is written: a
// verdict is kept while it is among the newest maxPathVerdicts and younger
// than maxPathVerdictAge (by modification time, which a verdict read back
// renews), so the folder stays small however many specs and binaries
// (each build names its own verdicts) it has seen. Temporary files of
// writes that never finished are removed after the same age.
const (
	maxPathVerdicts   = 256
	maxPathVerdictAge = 30 * 24 * time.Hour
)

// pruneVerdicts removes from dir the verdicts pruning drops (see above: at
// most most verdicts, none older than age), as of now, never keep (the
// verdict just written, which counts among the most). What cannot be read
// or removed is left: pruning only keeps the folder small.
func pruneVerdicts(dir, keep string, now time.Time, most int, age time.Duration) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type verdictFile struct {
		name string
		mod  time.Time
	}
	var verdicts []verdictFile
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || name == keep {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		switch {
		case now.Sub(info.ModTime()) > age:
			if strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".tmp-") {
				_ = os.Remove(filepath.Join(dir, name))
			}
		case strings.HasSuffix(name, ".json"):
			verdicts = append(verdicts, verdictFile{name, info.ModTime()})
		}
	}
	// The verdict just written is the newest; of the others the newest
	// most-1 stay (at the same time: by name, so the choice is the same
	// whichever order the folder lists them in).
	if len(verdicts) < most {
		return
	}
	slices.SortFunc(verdicts, func(a, b verdictFile) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	for _, v := range verdicts[max(0, most-1):] {
		_ = os.Remove(filepath.Join(dir, v.name))
	}
}

// writeVerdict writes v to file whole or not at all: a temporary file in
// the same folder renamed over it. Unsynced: a verdict lost to a crash is
// checked again.
func writeVerdict(file string, v pathVerdict) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(file), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), file)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// thisBinary names the running binary for the verdicts it keeps: its file
// and its build information, or "" when they cannot be read (nothing is
// remembered then).
var thisBinary = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s\x00%d\x00%d\x00%s", exe, fi.Size(), fi.ModTime().UnixNano(), info)
})
