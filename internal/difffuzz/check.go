package difffuzz

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"
)

// Outcome is how a run of a mutant under one profile ended.
type Outcome struct {
	Profile Profile `json:"profile"`
	// Status is the run's status (completed, inconclusive, waiting,
	// budget_exceeded, failed), "start" when it did not start, "hang"
	// when it did not end within the run timeout.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	Calls  int    `json:"calls"`
}

// ok: an ending an accepted spec may have.
func (o Outcome) ok() bool {
	switch o.Status {
	case result.StatusCompleted, result.StatusInconclusive, result.StatusWaiting, result.StatusBudget:
		return true
	}
	return false
}

// Verdict is what checking a mutant found.
type Verdict struct {
	Refused bool `json:"refused"`
	// Errors are the refusal's error diagnostics, formatted; Unplaced
	// those without a line.
	Errors   []string `json:"errors,omitempty"`
	Unplaced []string `json:"unplaced,omitempty"`
	// Runs are its runs, one per profile (for a refused mutant, only when
	// checks were off); Baseline the seed's own runs under each profile.
	Runs     []Outcome `json:"runs,omitempty"`
	Baseline []Outcome `json:"baseline,omitempty"`
	// Warnings are the warnings of an accepted one, formatted.
	Warnings []string `json:"warnings,omitempty"`
	// Panic is a panic of validate (spec.Load).
	Panic string `json:"panic,omitempty"`
	// Unchecked is set when a refused mutant could not be compiled with
	// checks off.
	Unchecked string `json:"unchecked,omitempty"`
}

// Class is what a verdict means for the property.
type Class string

// The classes of verdicts.
const (
	ClassRefused        Class = "refused"          // refused at a position
	ClassRefusedNoPlace Class = "refused-no-place" // refused without file:line:col: a failure
	ClassAccepted       Class = "accepted"         // accepted, every profile ended well
	ClassSpecFailure    Class = "accepted-then-failing"
	ClassReplyFailure   Class = "accepted-reply-failing" // fails under some profiles only: depends on replies
	// ClassWarned fails under some profiles only, and validate warned
	// about it (the node and the failure) as depending only on the
	// replies, naming the guard to add: what the design asks for such a
	// failure (validate --strict refuses it at its position).
	ClassWarned Class = "accepted-warned"
	ClassHang   Class = "hang"
	ClassPanic  Class = "panic"
)

// Classify says what a verdict means. A run failure under a profile the
// seed itself fails under is not the mutant's.
func (v Verdict) Classify() Class {
	if v.Panic != "" {
		return ClassPanic
	}
	if v.Refused {
		if len(v.Unplaced) > 0 {
			return ClassRefusedNoPlace
		}
		return ClassRefused
	}
	failed, okRuns := 0, 0
	for i, o := range v.Runs {
		if o.Status == "hang" {
			return ClassHang
		}
		if strings.HasPrefix(o.Error, "panic:") {
			return ClassPanic
		}
		if o.ok() {
			okRuns++
			continue
		}
		if i < len(v.Baseline) && !v.Baseline[i].ok() {
			continue
		}
		failed++
	}
	switch {
	case failed == 0:
		return ClassAccepted
	case okRuns > 0 && v.warnedOfEveryFailure():
		return ClassWarned
	case okRuns > 0:
		return ClassReplyFailure
	}
	return ClassSpecFailure
}

// nodeNamed finds the node (or the spec's output) a run's error names
// first: an output's failure is warned of by its name as a node's is.
var nodeNamed = regexp.MustCompile(`(node|output) "[^"]+"`)

// loopNamed finds a loop's condition or count a run's error names (a
// loop's until fails naming no node: "loop until (EXPR): ...").
var loopNamed = regexp.MustCompile(`loop [a-z_]+ \(`)

// failingPlace is what a run's failure names as its place, which the
// path check's warning of it names too: a node, an output, or a loop's
// condition with its expression ("loop until (a && b)").
func failingPlace(msg string) string {
	if node := nodeNamed.FindString(msg); node != "" {
		return node
	}
	loc := loopNamed.FindStringIndex(msg)
	if loc == nil {
		return ""
	}
	end := strings.LastIndex(msg, "): ")
	if end < loc[1] {
		return ""
	}
	return msg[loc[0] : end+1]
}

// warnedOfEveryFailure says whether each run failure not the seed's has a
// warning at a position that names its node and its failure and says it
// depends only on the replies (the path check's reply-dependent
// warnings).
func (v Verdict) warnedOfEveryFailure() bool {
	for i, o := range v.Runs {
		if o.ok() || (i < len(v.Baseline) && !v.Baseline[i].ok()) {
			continue
		}
		node := failingPlace(o.Error)
		if node == "" {
			return false
		}
		// the failure's own words: its last clause, past the node and
		// the expression or template it is in
		gist := o.Error
		if j := strings.LastIndex(gist, "): "); j >= 0 {
			gist = gist[j+3:]
		}
		gist = sameFailure(gist)
		warned := false
		for _, w := range v.Warnings {
			if strings.Contains(w, node) && strings.Contains(w, "it depends only on the replies") && strings.Contains(sameFailure(w), gist) && placed.MatchString(w) {
				warned = true
				break
			}
		}
		if !warned {
			return false
		}
	}
	return true
}

// numberKinds are the Go names of numbers in expr's messages: the path
// check's stand-in and a model's reply may put a number of another kind at
// the same place (a decimal where the reply held a whole number), so
// "string < float64" warned of is the run's "string < int".
var numberKinds = regexp.MustCompile(`\b(int|int8|int16|int32|int64|uint|uint8|uint16|uint32|uint64|float32|float64)\b`)

// binaryOp is expr's message for an operator over values of kinds it does
// not take, with the operator's place in the expression.
var binaryOp = regexp.MustCompile(`invalid operation: (\S+) (\S+) (\S+) (\(\d+:\d+\))`)

// sameFailure words a failure so that the path check's warning and a run's
// failure of the same operation read alike: number kinds as one, and the
// operands of an operator in either order (a stand-in may put the number
// on the side where a model's reply put the text).
func sameFailure(msg string) string {
	msg = numberKinds.ReplaceAllString(msg, "number")
	return binaryOp.ReplaceAllStringFunc(msg, func(m string) string {
		p := binaryOp.FindStringSubmatch(m)
		a, b := p[1], p[3]
		if b < a {
			a, b = b, a
		}
		return "invalid operation: " + p[2] + " over " + a + " and " + b + " " + p[4]
	})
}

// placed is a diagnostic's file:line:col.
var placed = regexp.MustCompile(`^[^ :]+:\d+:\d+: `)

// FirstFailure is the first run failure not the seed's, for reports.
func (v Verdict) FirstFailure() Outcome {
	for i, o := range v.Runs {
		if !o.ok() && (i >= len(v.Baseline) || v.Baseline[i].ok()) {
			return o
		}
	}
	return Outcome{}
}

// Checker checks mutants in this process: it keeps a copy of the seeds'
// folders (mutants are written beside their seeds' copies, to find the
// same libraries and data files) and the seeds' own runs.
type Checker struct {
	Root string
	work string
	// dog, when set, stops a phase that does not end (see watchdog.go);
	// without one, a run is stopped after RunTimeout of wall time
	dog        *watchdog
	RunTimeout time.Duration
	mu         sync.Mutex
	baseline   map[string][]Outcome
	// seeds are the seeds loaded so far for their own runs (each is
	// validated, path check included, once per worker rather than once
	// per mutant); seedInputs their inputs
	seeds      map[string]*Seed
	seedInputs map[string]map[string]any
	n          int
}

// NewChecker copies the folders seeds live in under work.
func NewChecker(root, work string) (*Checker, error) {
	for _, dir := range []string{"examples", "spec/testdata/graph", "runtime/testdata"} {
		if err := copyTree(filepath.Join(root, dir), filepath.Join(work, dir)); err != nil {
			return nil, err
		}
	}
	return &Checker{Root: root, work: work, RunTimeout: 60 * time.Second, baseline: map[string][]Outcome{}, seeds: map[string]*Seed{}, seedInputs: map[string]map[string]any{}}, nil
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if strings.HasSuffix(p, ".go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// Check validates the mutant as `runner validate` does (runtime.Load with
// every node kind) and runs it under every profile when accepted, or,
// with checksOff, when refused too (compiled with the checks' errors
// ignored, see compileUnchecked).
// Only, when not empty, are the profiles to run (default: every one).
func (c *Checker) Check(m Mutant, checksOff bool, only ...Profile) (v Verdict) {
	seedPath := filepath.Join(c.work, filepath.FromSlash(m.Seed))
	c.mu.Lock()
	c.n++
	path := filepath.Join(filepath.Dir(seedPath), fmt.Sprintf("fuzz-mutant-%d-%d.yaml", os.Getpid(), c.n))
	c.mu.Unlock()
	if err := os.WriteFile(path, []byte(m.Text), 0o644); err != nil {
		v.Panic = "writing the mutant: " + err.Error()
		return v
	}
	defer os.Remove(path)
	c.dog.start("validate", nil, nil)
	plan, diags, panicked := load(path)
	c.dog.end()
	if panicked != "" {
		v.Panic = panicked
		return v
	}
	for _, d := range diags {
		if d.Severity == syntax.Warning {
			v.Warnings = append(v.Warnings, strings.ReplaceAll(d.String(), filepath.Dir(path)+string(filepath.Separator), ""))
		}
	}
	if diags.HasErrors() {
		v.Refused = true
		for _, d := range diags.Errors() {
			line := d.String()
			v.Errors = append(v.Errors, strings.ReplaceAll(line, filepath.Dir(path)+string(filepath.Separator), ""))
			if d.Pos.Line == 0 || d.File == "" {
				v.Unplaced = append(v.Unplaced, d.Message)
			}
		}
		if !checksOff {
			return v
		}
		var err error
		c.dog.start("validate with checks off", nil, nil)
		plan, err = compileUnchecked(path, []byte(m.Text))
		c.dog.end()
		if err != nil {
			v.Unchecked = err.Error()
			return v
		}
	}
	inputs, err := c.inputs(seedPath)
	if err != nil {
		v.Panic = "the seed does not load: " + err.Error()
		return v
	}
	v.Runs = c.runAll(plan, inputs, only, "run")
	for _, o := range v.Runs {
		if !o.ok() {
			// only a failure asks whether the seed fails alike
			seed, err := c.seed(seedPath)
			if err != nil {
				v.Panic = "the seed does not load: " + err.Error()
				return v
			}
			v.Baseline = c.seedRuns(seed)
			break
		}
	}
	return v
}

// inputs are a seed's inputs (seedInputs), from its compiled plan: the
// parent validated the seed in full, and a worker does so (the path
// check, the costly part) only for the seed's own runs.
func (c *Checker) inputs(path string) (map[string]any, error) {
	c.mu.Lock()
	in, ok := c.seedInputs[path]
	c.mu.Unlock()
	if ok {
		return in, nil
	}
	plan, diags := spec.Load(path, nodes.Registry())
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s does not compile: %s", path, diags.Format())
	}
	in = seedInputs(path, plan)
	c.mu.Lock()
	c.seedInputs[path] = in
	c.mu.Unlock()
	return in, nil
}

// seed loads a seed once.
func (c *Checker) seed(path string) (*Seed, error) {
	c.mu.Lock()
	s, ok := c.seeds[path]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := LoadSeed(c.work, path)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.seeds[path] = s
	c.mu.Unlock()
	return s, nil
}

// seedRuns are the seed's own runs under every profile, run once.
func (c *Checker) seedRuns(seed *Seed) []Outcome {
	c.mu.Lock()
	b, ok := c.baseline[seed.Rel]
	c.mu.Unlock()
	if ok {
		return b
	}
	b = c.runAll(seed.plan, seed.Inputs, nil, "the seed's run")
	c.mu.Lock()
	c.baseline[seed.Rel] = b
	c.mu.Unlock()
	return b
}

func (c *Checker) runAll(plan *spec.Plan, inputs map[string]any, only []Profile, what string) []Outcome {
	var out []Outcome
	profiles := Profiles
	if len(only) > 0 {
		profiles = only
	}
	for _, p := range profiles {
		given := make(map[string]any, len(inputs)) // a cached seed's, shared by runs
		for k, v := range inputs {
			given[k] = v
		}
		o := c.run(plan, given, p, what)
		out = append(out, o)
		if o.Status == "hang" {
			break // one is enough, and each costs the timeout
		}
	}
	return out
}

// load is runtime.Load (compile, then the path check), with a panic caught and told.
func load(path string) (plan *spec.Plan, diags syntax.Diagnostics, panicked string) {
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Sprintf("panic: %v", r)
		}
	}()
	plan, diags = runtime.Load(path, nodes.Registry())
	return plan, diags, ""
}

// testGetenv gives every variable a spec reads a placeholder (endpoints
// need keys to start; nothing reaches a network).
func testGetenv(name string) string {
	switch {
	case name == "OPENAI_BASE_URL":
		return ""
	case strings.Contains(name, "URL"):
		return "http://difffuzz.invalid"
	}
	return "difffuzz-placeholder-key"
}

// run runs plan once under profile p against replies of that profile.
func (c *Checker) run(plan *spec.Plan, inputs map[string]any, p Profile, what string) (o Outcome) {
	o.Profile = p
	defer func() {
		if r := recover(); r != nil {
			o.Status, o.Error = result.StatusFailed, fmt.Sprintf("panic: %v", r)
		}
	}()
	for _, ep := range plan.Endpoints {
		ep.RequestsPerMinute, ep.TokensPerMinute = 0, 0
	}
	dir, err := os.MkdirTemp(c.work, "runs-")
	if err != nil {
		return Outcome{Profile: p, Status: "start", Error: err.Error()}
	}
	defer os.RemoveAll(dir)
	tr := &transport{gen: &replyGen{p: p}}
	ro := runtime.Options{
		Launch: launch.Launch{Given: launch.Given{InputValues: inputs, Budget: []string{"calls=200"}}, Answers: map[string]string{}},
		Settings: runtime.Settings{RunsDir: dir, Getenv: testGetenv,
			// clarifying questions are answered as the profile replies
			Ask: func(_ context.Context, q value.Question) (string, error) {
				return tr.answer(q.Question), nil
			}},
		Seams: runtime.Seams{HTTPClient: &http.Client{Transport: tr},
			Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }},
	}
	r, err := runtime.Start(plan, ro)
	if err != nil {
		return Outcome{Profile: p, Status: "start", Error: scrub(err.Error(), dir)}
	}
	// the watchdog cancels a run that does not end, with the reason as
	// the context's cause; without one, wall time does
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var backstop <-chan time.Time
	if c.dog != nil {
		c.dog.start(what+" under "+string(p), cancel, tr.count)
		defer c.dog.end()
	} else {
		t := time.AfterFunc(c.RunTimeout, func() { cancel(hangError{"no end within " + c.RunTimeout.String()}) })
		defer t.Stop()
		backstop = time.After(c.RunTimeout + 5*time.Second)
	}
	type done struct {
		res *result.Result
		err error
	}
	ch := make(chan done, 1)
	go func() {
		defer func() {
			if rec := recover(); rec != nil {
				ch <- done{err: fmt.Errorf("panic: %v", rec)}
			}
		}()
		res, err := r.Execute(ctx)
		ch <- done{res, err}
	}()
	select {
	case d := <-ch:
		o.Calls = tr.count()
		switch {
		case d.res != nil:
			o.Status = d.res.Status
			if d.res.Error != "" {
				o.Error = d.res.Error
			} else if d.err != nil && d.res.Status != result.StatusCompleted {
				o.Error = d.err.Error()
			}
		default:
			o.Status = result.StatusFailed
			if d.err != nil {
				o.Error = d.err.Error()
			}
		}
		var h hangError
		if errors.As(context.Cause(ctx), &h) {
			o.Status, o.Error = "hang", h.msg
		}
	case <-backstop:
		o.Status, o.Error = "hang", "no end within "+c.RunTimeout.String()+", and the cancelled run went on"
	}
	o.Error = scrub(scrub(o.Error, dir), c.work)
	return o
}

var mutantName = regexp.MustCompile(`fuzz-mutant-\d+-\d+\.yaml`)

// scrub takes run-specific paths out of a message.
func scrub(msg, dir string) string {
	msg = strings.ReplaceAll(msg, dir+string(filepath.Separator), "")
	return mutantName.ReplaceAllString(msg, "MUTANT.yaml")
}
