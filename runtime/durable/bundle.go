package durable

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing/fstest"

	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/spec"
)

// Bundle is everything a worker needs to compile a spec away from the
// files next to it: the spec's text, the template library folders it uses
// (by the path the spec's folder gives them) and a snapshot of the context
// directory its file tools may read.
type Bundle struct {
	// SpecPath is the spec's path on the machine that submitted it, so
	// that messages name the file its author knows.
	SpecPath string `json:"spec_path"`
	Spec     []byte `json:"spec"`
	// Folders are the library folders' files (templates, schemas,
	// verdicts.yaml) by folder path, then file name.
	Folders map[string]map[string][]byte `json:"folders,omitempty"`
	// Context answers the file tools, when the run was given a context
	// directory.
	Context *tools.Snapshot `json:"context,omitempty"`
}

// MaxBundle bounds what a bundle may hold, well below the 2 MB Temporal
// accepts for one payload by default.
const MaxBundle = 1536 << 10

// libraryFiles are the files a template library folder contributes.
func libraryFile(name string) bool {
	return strings.HasSuffix(name, ".tmpl") || strings.HasSuffix(name, ".schema.json") || name == "verdicts.yaml"
}

// NewBundle bundles plan for workers: its spec text, the library folders it
// compiled with (found by compiling it again and noting which it read) and
// a snapshot of contextDir ("" for none).
func NewBundle(plan *spec.Plan, reg *spec.Registry, contextDir string) (*Bundle, error) {
	b := &Bundle{SpecPath: plan.Path, Spec: plan.Source, Folders: map[string]map[string][]byte{}}
	var readErr error
	folders := func(dir string) (fs.FS, bool) {
		info, err := os.Stat(dir)
		if err != nil || !info.IsDir() {
			return nil, false
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			readErr = fmt.Errorf("template library %s: %w", dir, err)
			return nil, false
		}
		files := map[string][]byte{}
		for _, e := range entries {
			if e.IsDir() || !libraryFile(e.Name()) {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				readErr = fmt.Errorf("template library %s: %w", dir, err)
				return nil, false
			}
			files[e.Name()] = data
		}
		b.Folders[dir] = files
		return folderFS(files), true
	}
	if _, diags := spec.CompileIn(folders, plan.Path, plan.Source, reg); diags.HasErrors() {
		if readErr != nil {
			return nil, readErr
		}
		return nil, fmt.Errorf("%s no longer compiles:\n%s", plan.Path, diags.Format())
	}
	if contextDir != "" {
		snap, err := tools.TakeSnapshot(contextDir, MaxBundle)
		if err != nil {
			return nil, err
		}
		b.Context = snap
	}
	size := len(b.Spec)
	for _, files := range b.Folders {
		for name, data := range files {
			size += len(name) + len(data)
		}
	}
	if b.Context != nil {
		data, _ := json.Marshal(b.Context)
		size += len(data)
	}
	if size > MaxBundle {
		return nil, fmt.Errorf("the spec, its template folders and its context directory hold %d KiB, more than the %d KiB a run sent to Temporal may carry", size>>10, MaxBundle>>10)
	}
	return b, nil
}

func folderFS(files map[string][]byte) fs.FS {
	m := fstest.MapFS{}
	for name, data := range files {
		m[name] = &fstest.MapFile{Data: data, Mode: 0o444}
	}
	return m
}

// Digest identifies what a bundle compiles to.
func (b *Bundle) Digest() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00", b.SpecPath, len(b.Spec))
	h.Write(b.Spec)
	dirs := make([]string, 0, len(b.Folders))
	for d := range b.Folders {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		names := make([]string, 0, len(b.Folders[d]))
		for n := range b.Folders[d] {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(h, "%s\x00%s\x00%d\x00", d, n, len(b.Folders[d][n]))
			h.Write(b.Folders[d][n])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// plans caches compiled plans by bundle digest: every workflow task of a
// run (and every replay of its history) needs its plan, and the runs of a
// sweep share one. Plans are never changed by the runs that use them.
var plans = struct {
	sync.Mutex
	m     map[string]*spec.Plan
	order []string
}{m: map[string]*spec.Plan{}}

// maxPlans bounds the plans a worker keeps compiled.
const maxPlans = 64

// Plan compiles the bundle with reg, or returns the plan it compiled to
// before.
func (b *Bundle) Plan(reg *spec.Registry) (*spec.Plan, error) {
	d := b.Digest()
	plans.Lock()
	p, ok := plans.m[d]
	plans.Unlock()
	if ok {
		return p, nil
	}
	folders := func(dir string) (fs.FS, bool) {
		files, ok := b.Folders[dir]
		if !ok {
			return nil, false
		}
		return folderFS(files), true
	}
	p, diags := spec.CompileIn(folders, b.SpecPath, b.Spec, reg)
	if diags.HasErrors() {
		return nil, fmt.Errorf("the spec sent with the run does not compile on this worker:\n%s", diags.Format())
	}
	plans.Lock()
	defer plans.Unlock()
	if _, ok := plans.m[d]; !ok {
		plans.m[d] = p
		plans.order = append(plans.order, d)
		if len(plans.order) > maxPlans {
			delete(plans.m, plans.order[0])
			plans.order = plans.order[1:]
		}
	}
	return p, nil
}

// Values are a run's inputs, vars and expected value as the Go values the
// engine computes with. They travel gob-encoded: JSON would turn every
// number into a float64, and the run on the worker must see what the run
// on the client sees.
type Values struct {
	Inputs   map[string]any
	Vars     map[string]any
	Expected any
	// Models are the run's model overrides (--matrix model=...).
	Models map[string]string
}

func init() {
	gob.Register(map[string]any{})
	gob.Register([]any{})
}

// Encode gob-encodes the values.
func (v Values) Encode() ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&v); err != nil {
		return nil, fmt.Errorf("encoding the run's inputs and vars: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeValues reads values Encode wrote.
func DecodeValues(data []byte) (Values, error) {
	var v Values
	if len(data) == 0 {
		return v, errors.New("the run carries no inputs")
	}
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&v); err != nil {
		return v, fmt.Errorf("decoding the run's inputs and vars: %w", err)
	}
	return v, nil
}
