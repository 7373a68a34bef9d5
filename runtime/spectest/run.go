package spectest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/yamljson"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/executor"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/runtime/runflags"
	"github.com/debate-runner/runner/runtime/scripted"
	"github.com/debate-runner/runner/spec"
)

// Options configure a test run.
type Options struct {
	// Registry compiles the specs under test.
	Registry *spec.Registry
	// Run selects cases by ID (CaseID); nil runs every case.
	Run *regexp.Regexp
	// Update rewrites golden files instead of comparing with them.
	Update bool
	// Parallel is how many cases run at once (at least 1).
	Parallel int
	// RunsDir keeps the cases' run directories there; "" puts them in a
	// temporary folder that is removed afterwards.
	RunsDir string
	// Version is the runner version recorded in the runs.
	Version string
	// OnFile, when set, is told of each file's results as soon as the file
	// and every file before it are done, in the order of the files.
	OnFile func(FileResult)
}

// FileResult is what one test file gave.
type FileResult struct {
	Path string
	// Err is why the file's cases could not run (the file or its spec is
	// invalid); Cases is then empty.
	Err      error
	Cases    []CaseResult
	Duration time.Duration
}

// Failed reports whether the file failed.
func (f *FileResult) Failed() bool {
	if f.Err != nil {
		return true
	}
	for _, c := range f.Cases {
		if !c.Passed {
			return true
		}
	}
	return false
}

// CaseResult is what one case gave.
type CaseResult struct {
	// ID is the case's name as -run matches it; Name as written.
	ID, Name string
	Passed   bool
	Failures []Failure
	// Notes are things worth knowing that do not fail the case: calls
	// answered with stand-ins, reply entries nobody used, golden files
	// written.
	Notes    []string
	Duration time.Duration
	// Status is the run's: completed, failed or waiting ("" when it did
	// not start).
	Status string
	// Calls counts the model calls, StandIns those answered with stand-ins.
	// When a call fails a run, calls made at the same time may be cut short
	// before they are sent, so a failed run's count can vary.
	Calls, StandIns int
	// RunDir is the case's run directory when it is kept.
	RunDir string
}

// Failure is one reason a case failed.
type Failure struct {
	// Where is FILE:LINE:COL of what failed.
	Where string
	// Message says what failed; Detail shows the values or the diff.
	Message, Detail string
}

// Find lists the test files paths name: a test file itself, the test file
// of a spec (spec.yaml: spec.test.yaml), or every test file below a folder.
func Find(paths []string) ([]string, error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		switch {
		case info.IsDir():
			var found []string
			err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() && path != p && skipDir(d.Name()) {
					return filepath.SkipDir
				}
				if !d.IsDir() && strings.HasSuffix(d.Name(), Suffix) {
					found = append(found, path)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			if len(found) == 0 {
				msg := fmt.Sprintf("%s: no test files (*%s) in this folder", p, Suffix)
				if specs := Untested([]string{p}); len(specs) > 0 {
					msg += fmt.Sprintf("; %s has none beside it (runner init writes a project with one; docs/spec-tests.md shows the format)", specs[0])
				}
				return nil, errors.New(msg)
			}
			sort.Strings(found)
			for _, f := range found {
				add(f)
			}
		case strings.HasSuffix(p, Suffix):
			add(p)
		default:
			t := strings.TrimSuffix(strings.TrimSuffix(p, ".yaml"), ".yml") + Suffix
			if _, err := os.Stat(t); err != nil {
				return nil, fmt.Errorf("%s: no test file beside the spec (looked for %s)", p, t)
			}
			add(t)
		}
	}
	return out, nil
}

// Untested lists the specs below the folders among paths that have no
// test file beside them, for `runner test` to name as go test names a
// package without tests. A spec is a YAML file (not a test file) whose
// top level has version, nodes and flow; a folder's runs/, testdata/ and
// hidden folders are skipped as Find skips them.
func Untested(paths []string) []string {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil || !info.IsDir() {
			continue
		}
		_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				if path != p && skipDir(d.Name()) {
					return filepath.SkipDir
				}
				return nil
			}
			name := d.Name()
			if strings.HasSuffix(name, Suffix) || !(strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
				return nil
			}
			test := strings.TrimSuffix(strings.TrimSuffix(path, ".yaml"), ".yml") + Suffix
			if _, err := os.Stat(test); err == nil || !looksLikeSpec(path) {
				return nil
			}
			out = append(out, path)
			return nil
		})
	}
	sort.Strings(out)
	return out
}

// skipDir says which folders below a named one hold no tests: run
// directories (whose spec.yaml copies are not the specs), test data, tools'
// folders and hidden ones.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "runs" || name == "node_modules" || name == "testdata"
}

// looksLikeSpec reads the top-level keys of a YAML file and says whether
// they are a spec's.
func looksLikeSpec(path string) bool {
	info, err := os.Stat(path)
	if err != nil || info.Size() > maxFileBytes {
		return false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var top map[string]yaml.Node
	if yaml.Unmarshal(data, &top) != nil {
		return false
	}
	_, v := top["version"]
	_, n := top["nodes"]
	_, f := top["flow"]
	return v && n && f
}

// Run runs the test files' cases, Parallel at once, and returns each
// file's results in the order of files.
func Run(ctx context.Context, files []string, opts Options) []FileResult {
	if opts.Parallel < 1 {
		opts.Parallel = 1
	}
	runsDir := opts.RunsDir
	if runsDir == "" {
		dir, err := os.MkdirTemp("", "runner-test-")
		if err != nil {
			out := make([]FileResult, len(files))
			for i, f := range files {
				out[i] = FileResult{Path: f, Err: err}
			}
			return out
		}
		defer os.RemoveAll(dir)
		runsDir = dir
	}
	results := make([]FileResult, len(files))
	// Cases are queued in the order of the files and of their cases, and
	// Parallel workers take them in that order, so that a file's cases run
	// together and the first files report first.
	type job struct {
		file, index int
		ft          *fileTest
		ct          *caseTest
		span        *span
		wg          *sync.WaitGroup
	}
	jobs := make(chan job)
	var workers sync.WaitGroup
	for range opts.Parallel {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for j := range jobs {
				began := time.Now()
				// The folder's name is kept to what `runner view` serves
				// (a case's name may hold commas, quotes, slashes...).
				dir := filepath.Join(runsDir, fmt.Sprintf("%03d-%s", j.file+1, rundir.Name(j.ct.id)))
				results[j.file].Cases[j.index] = j.ft.run(ctx, j.ct, dir, opts)
				j.span.add(began, time.Now())
				j.wg.Done()
			}
		}()
	}
	done := make([]chan struct{}, len(files))
	var queue []job
	for i, path := range files {
		done[i] = make(chan struct{})
		start := time.Now()
		results[i].Path = path
		ft, err := prepare(path, opts.Registry)
		prepared := time.Since(start)
		if err != nil {
			results[i].Err = err
			close(done[i])
			continue
		}
		var cases []int
		for j := range ft.cases {
			if opts.Run == nil || opts.Run.MatchString(ft.cases[j].id) {
				cases = append(cases, j)
			}
		}
		results[i].Cases = make([]CaseResult, len(cases))
		sp, fileWG := &span{}, &sync.WaitGroup{}
		for k, j := range cases {
			fileWG.Add(1)
			queue = append(queue, job{file: i, index: k, ft: ft, ct: &ft.cases[j], span: sp, wg: fileWG})
		}
		go func() {
			fileWG.Wait()
			results[i].Duration = prepared + sp.length()
			close(done[i])
		}()
	}
	go func() {
		for _, j := range queue {
			jobs <- j
		}
		close(jobs)
	}()
	if opts.OnFile != nil {
		for i := range files {
			<-done[i]
			opts.OnFile(results[i])
		}
	}
	workers.Wait()
	for i := range files {
		<-done[i]
	}
	return results
}

// span is the time from a file's first case's start to its last case's
// end: the file's own time, as go test reports a package's, not the time
// its cases waited for a worker.
type span struct {
	sync.Mutex
	first, last time.Time
}

func (s *span) add(began, ended time.Time) {
	s.Lock()
	defer s.Unlock()
	if s.first.IsZero() || began.Before(s.first) {
		s.first = began
	}
	if ended.After(s.last) {
		s.last = ended
	}
}

func (s *span) length() time.Duration {
	s.Lock()
	defer s.Unlock()
	return s.last.Sub(s.first)
}

// fileTest is a test file bound to its compiled spec.
type fileTest struct {
	test  *Test
	plan  *spec.Plan
	cases []caseTest
}

type caseTest struct {
	c       *Case
	id      string
	script  scripted.Script
	asserts []*Assertion
}

// prepare loads a test file and its spec and compiles every case.
func prepare(path string, reg *spec.Registry) (*fileTest, error) {
	t, err := Load(path)
	if err != nil {
		return nil, err
	}
	plan, diags := runtime.Load(t.SpecPath, reg)
	if diags.HasErrors() {
		return nil, fmt.Errorf("the spec %s is invalid:\n%s", t.SpecPath, strings.TrimRight(diags.Errors().Format(), "\n"))
	}
	// Offline, nothing is gained by waiting for rate limits.
	for _, ep := range plan.Endpoints {
		ep.RequestsPerMinute, ep.TokensPerMinute = 0, 0
	}
	ft := &fileTest{test: t, plan: plan}
	var errs yamljson.Errors
	for i := range t.File.Cases {
		c := &t.File.Cases[i]
		ct := caseTest{c: c, id: CaseID(c.Name)}
		s, err := t.script(c)
		if err != nil {
			errs = append(errs, err.(yamljson.Errors)...)
		}
		ct.script = s
		for _, src := range c.Expect {
			a, err := compile(path, src)
			if err != nil {
				errs = append(errs, err.(*yamljson.Error))
				continue
			}
			ct.asserts = append(ct.asserts, a)
		}
		ft.cases = append(ft.cases, ct)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return ft, nil
}

// testKey is what every environment variable a spec reads holds in a
// test: endpoints need keys to start, and nothing reaches a network.
const testKey = "runner-test-placeholder-key"

func testGetenv(name string) string {
	switch {
	case name == "OPENAI_BASE_URL":
		return ""
	case strings.Contains(name, "URL"):
		return "http://runner-test.invalid"
	}
	return testKey
}

func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// run runs one case in dir.
func (ft *fileTest) run(ctx context.Context, ct *caseTest, dir string, opts Options) (res CaseResult) {
	start := time.Now()
	c := ct.c
	res = CaseResult{ID: ct.id, Name: c.Name, Passed: true}
	defer func() { res.Duration = time.Since(start) }()
	where := fmt.Sprintf("%s:%d:%d", ft.test.Path, c.line, c.col)
	fail := func(f Failure) {
		res.Passed = false
		res.Failures = append(res.Failures, f)
	}
	tr := scripted.New(ct.script)
	ro := runtime.Options{
		Launch: launch.Launch{Given: launch.Given{InputValues: merge(ft.test.File.Inputs, c.Inputs), VarValues: merge(ft.test.File.Vars, c.Vars), Seed: c.Seed}, Answers: c.Answers,
			// A kept run directory is there to be looked at: its journal
			// has the prompts' texts, so `runner show` and the view's call
			// page show every message a call sent.
			Flags: runflags.Flags{LogPrompts: opts.RunsDir != ""}},
		Settings: runtime.Settings{RunsDir: dir, Getenv: testGetenv, Version: opts.Version},
		Seams:    runtime.Seams{HTTPClient: &http.Client{Transport: tr}, Sleep: noSleep},
	}
	if ro.Answers == nil {
		ro.Answers = map[string]string{}
	}
	// A case is a run like any other, made by the local executor; it
	// tells no one (no Out): the case's checks read its result.
	x, err := executor.Lookup("local")
	if err != nil {
		fail(Failure{Where: where, Message: err.Error()})
		return res
	}
	h, err := x.Start(ctx, &executor.Launch{Plan: ft.plan, Run: ro})
	if err != nil {
		fail(Failure{Where: where, Message: "the run did not start: " + err.Error()})
		return res
	}
	if opts.RunsDir != "" {
		res.RunDir = h.Dir()
	}
	runErr := h.Wait(ctx)
	out := h.Result()
	if out == nil {
		fail(Failure{Where: where, Message: fmt.Sprintf("the run did not finish: %v", runErr)})
		return res
	}
	events, err := journal.Read(filepath.Join(h.Dir(), "journal.jsonl"))
	if err != nil {
		fail(Failure{Where: where, Message: "reading the run's journal: " + err.Error()})
		return res
	}
	env := buildEnv(out, events, tr.Attempts())
	res.Status = env.Status
	res.Calls = len(env.Calls)
	for _, call := range env.Calls {
		if !call.Scripted {
			res.StandIns++
		}
	}
	if res.StandIns > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d of %d calls were not scripted and were answered with stand-ins", res.StandIns, res.Calls))
	}
	for _, i := range tr.Unused() {
		// The file's entries serve many cases; not every case needs each.
		if i >= len(c.Replies) {
			continue
		}
		res.Notes = append(res.Notes, fmt.Sprintf("the reply entry at %s answered no call", ct.script.Entries[i].Where))
	}
	why := env.Error
	if out.Conclusion != nil && why == "" {
		why = out.Conclusion.Summary()
	}
	if len(ct.asserts) == 0 && env.Status != result.StatusCompleted {
		fail(Failure{Where: where, Message: fmt.Sprintf("the run %s (a case without expect must complete): %s", env.Status, why)})
	}
	for _, a := range ct.asserts {
		ok, detail := a.check(env)
		if ok {
			continue
		}
		if env.Status != result.StatusCompleted && !strings.Contains(a.Source.Text, "status") && !strings.Contains(a.Source.Text, "error") {
			detail += fmt.Sprintf("\n(the run %s: %s)", env.Status, why)
		}
		fail(Failure{Where: fmt.Sprintf("%s:%d:%d", ft.test.Path, a.Source.Line, a.Source.Col), Message: "assertion failed: " + a.Source.Text, Detail: strings.TrimPrefix(detail, "\n")})
	}
	golden := ft.test.File.Golden
	if c.Golden != nil {
		golden = *c.Golden
	}
	if golden {
		path := GoldenPath(ft.test.Path, ct.id)
		note, f := checkGolden(path, Prompts(env.Calls, tr.Attempts()), opts.Update)
		if note != "" {
			res.Notes = append(res.Notes, note)
		}
		if f != nil {
			f.Where = where
			fail(*f)
		}
	}
	return res
}

func merge(base, over map[string]any) map[string]any {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// buildEnv gathers what assertions see from the result, the journal and
// the requests the script answered.
func buildEnv(res *result.Result, events []journal.Event, attempts []scripted.Attempt) *Env {
	env := &Env{
		Status: res.Status, Error: res.Error, Outputs: res.Outputs, Messages: res.Messages, Verdicts: res.GoalVerdicts,
		Warnings: res.Warnings, Nodes: map[string]Node{}, Inputs: map[string]any{}, Vars: map[string]any{},
	}
	if env.Outputs == nil {
		env.Outputs = map[string]any{}
	}
	env.InconclusiveGoals, env.FallbackOutputs = []string{}, []string{}
	if c := res.Conclusion; c != nil {
		env.InconclusiveGoals = append(env.InconclusiveGoals, c.InconclusiveGoals...)
		env.FallbackOutputs = append(env.FallbackOutputs, c.FallbackOutputs...)
		env.Fallbacks, env.ForcedVerdicts = c.Fallbacks, c.ForcedVerdicts
	}
	roundTrip(res.Usage, &env.Usage)
	roundTrip(res.Whispers, &env.Whispers)
	roundTrip(res.Dynamics, &env.Dynamics)
	roundTrip(res.Judgements, &env.Judgements)
	env.Score = res.Score
	for _, r := range res.Rejections {
		env.Rejections = append(env.Rejections, Rejection(r))
	}
	for _, a := range res.Absent {
		env.Absent = append(env.Absent, Absence(a))
	}
	for _, tc := range res.ToolCalls {
		env.ToolCalls = append(env.ToolCalls, result.ToolCallInfo{Key: tc.Key, Agent: tc.Agent, Tool: tc.Tool, Arguments: tc.Arguments, Result: tc.Result})
	}
	starts := map[string]int64{} // node execution prefix -> seq of its start
	errs := map[string]string{}
	for _, ev := range events {
		e := Event{Type: string(ev.Type), Key: ev.Key}
		if len(ev.Data) > 0 {
			if json.Unmarshal(ev.Data, &e.Data) != nil {
				e.Data = nil
			}
		}
		env.Events = append(env.Events, e)
		switch ev.Type {
		case event.RunStarted:
			if m, ok := e.Data["inputs"].(map[string]any); ok {
				env.Inputs = m
			}
			if m, ok := e.Data["vars"].(map[string]any); ok {
				env.Vars = m
			}
		case event.NodeStarted:
			if _, ok := starts[ev.Key]; !ok {
				starts[ev.Key] = ev.Seq
			}
			id, _ := e.Data["node"].(string)
			n := env.Nodes[id]
			n.Runs++
			env.Nodes[id] = n
		case event.ModelError:
			msg, _ := e.Data["error"].(string)
			errs[ev.Key] = msg
		}
	}
	for id, u := range res.Usage.ByNode {
		n := env.Nodes[id]
		n.Calls = u.Calls
		env.Nodes[id] = n
	}
	env.Calls = gatherCalls(attempts, starts, errs)
	return env
}

func roundTrip(from, to any) {
	data, err := json.Marshal(from)
	if err == nil {
		_ = json.Unmarshal(data, to)
	}
}

// gatherCalls groups the requests by call, in the order of the flow: by
// when the node execution that made the call started, then by key (with
// numbers in keys compared as numbers), so that calls made at once still
// come in the same order every run.
func gatherCalls(attempts []scripted.Attempt, starts map[string]int64, errs map[string]string) []Call {
	byKey := map[string]*Call{}
	var order []string
	for _, a := range attempts {
		c := byKey[a.Call.Key]
		if c == nil {
			c = &Call{Key: a.Call.Key, Node: a.Call.Node, Agent: a.Call.Agent, Round: a.Call.Round, Goal: a.Call.Goal,
				Prompt: scripted.Prompt(a.Call.Kit.Messages), Statuses: []int{}, Tools: []string{}}
			for _, m := range a.Call.Kit.Messages {
				if m.Role == "system" {
					c.System = m.Content
					break
				}
			}
			byKey[a.Call.Key] = c
			order = append(order, a.Call.Key)
		}
		c.Attempts++
		c.Scripted = a.Entry >= 0
		status := a.Reply.Status
		switch {
		case a.Reply.Timeout || a.Reply.Reset:
			status = 0
		case status == 0:
			status = http.StatusOK
		}
		c.Statuses = append(c.Statuses, status)
		if status == http.StatusOK && a.Reply.Raw == "" {
			c.Reply = a.Reply.Content
			c.Tools = c.Tools[:0]
			for _, tc := range a.Reply.ToolCalls {
				c.Tools = append(c.Tools, tc.Name)
			}
		}
	}
	startOf := func(key string) int64 {
		best, seq := -1, int64(1<<62)
		for prefix, s := range starts {
			if strings.HasPrefix(key, prefix+"/") && len(prefix) > best {
				best, seq = len(prefix), s
			}
		}
		return seq
	}
	seqs := map[string]int64{}
	for _, k := range order {
		seqs[k] = startOf(k)
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if seqs[a] != seqs[b] {
			return seqs[a] < seqs[b]
		}
		return naturalLess(a, b)
	})
	out := make([]Call, len(order))
	for i, k := range order {
		c := byKey[k]
		if msg, ok := errs[k]; ok {
			c.Error = msg
			c.Reply = ""
		}
		out[i] = *c
	}
	return out
}

// naturalLess orders keys with their numbers compared as numbers: t2
// before t10, round=9 before round=10.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
