package difffuzz

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/expr-lang/expr"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
)

// processStart is when the test binary started: a timed run's budget
// (RUNNER_FUZZ_TIME) counts from here, so it covers loading the seeds and
// starting the workers as well as the mutants.
var processStart = time.Now()

func TestMain(m *testing.M) {
	if os.Getenv(WorkerEnv) != "" {
		if err := ServeWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "difffuzz worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if pool != nil {
		pool.Close() // the workers end as their input does
	}
	os.Exit(code)
}

var (
	setupOnce sync.Once
	setupErr  error
	seeds     []*Seed
	gen       *Generator
	pool      *Pool
	root      string
	setupTook time.Duration
)

// setup loads the seeds and starts the pool of workers once per process.
func setup(t testing.TB) {
	t.Helper()
	setupOnce.Do(func() {
		root, setupErr = Root()
		if setupErr != nil {
			return
		}
		timeout := 60 * time.Second
		if d, err := time.ParseDuration(os.Getenv("RUNNER_FUZZ_RUN_TIMEOUT")); err == nil {
			timeout = d
		}
		pool = NewPool(os.Args[0], []string{"-test.run=^$"}, parallel(), timeout*raceSlowdown)
		// the workers start (and copy the seeds' folders) while the seeds
		// load, which is mostly the path check of each, on every core
		warmed := make(chan error, 1)
		go func() { warmed <- pool.Warm() }()
		paths := SeedPaths(root)
		loaded := make([]*Seed, len(paths))
		var wg sync.WaitGroup
		next := make(chan int)
		for w := 0; w < max(goruntime.GOMAXPROCS(0), 1); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					if s, err := LoadSeed(root, paths[i]); err == nil {
						loaded[i] = s
					} // a testdata spec that does not validate is no seed
				}
			}()
		}
		for i := range paths {
			next <- i
		}
		close(next)
		wg.Wait()
		for _, s := range loaded {
			if s != nil {
				seeds = append(seeds, s)
			}
		}
		if setupErr = <-warmed; setupErr != nil {
			return
		}
		if len(seeds) < 20 {
			setupErr = fmt.Errorf("only %d seeds validate; expected every example", len(seeds))
			return
		}
		gen = NewGenerator()
		setupTook = time.Since(processStart)
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

func parallel() int {
	if n, err := strconv.Atoi(os.Getenv("RUNNER_FUZZ_PARALLEL")); err == nil && n > 0 {
		return n
	}
	return 2
}

// enforced are the classes of failure that fail `go test` (and CI), per
// grammar, from testdata/enforce.txt: "GRAMMAR CLASS" lines, "*" for
// every grammar. Failures of other classes are reported, not failed on,
// until the checker is fixed for them and a line is added.
func enforced(t testing.TB) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "enforce.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			t.Fatalf("testdata/enforce.txt: %q is not GRAMMAR CLASS", line)
		}
		out[fields[0]+" "+fields[1]] = true
	}
	return out
}

func isEnforced(e map[string]bool, grammar string, class Class) bool {
	return e[grammar+" "+string(class)] || e["* "+string(class)]
}

func violation(c Class) bool {
	return c != ClassRefused && c != ClassAccepted && c != ClassWarned
}

// TestDifferential is the fuzzer's run: a short deterministic one by
// default (RUNNER_FUZZ_N mutants; when unset 24, 12 under -race), or a timed one with
// RUNNER_FUZZ_TIME (e.g. 10m, 1h), which also estimates false refusals.
// It prints the counts per grammar and every finding; RUNNER_FUZZ_SAVE
// names a folder to write the findings into as regression cases.
func TestDifferential(t *testing.T) {
	setup(t)
	n, d := defaultMutants, time.Duration(0)
	if v, err := strconv.Atoi(os.Getenv("RUNNER_FUZZ_N")); err == nil {
		n = v
	}
	var deadline time.Time
	if v := os.Getenv("RUNNER_FUZZ_TIME"); v != "" {
		dd, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("RUNNER_FUZZ_TIME=%s: %v", v, err)
		}
		// the budget counts from the test binary's start: seeds, workers,
		// mutants and the checks under way at the end (cut off) are in it;
		// a few seconds are kept for the report
		n, d, deadline = 0, dd, processStart.Add(dd-min(dd/20, 5*time.Second))
	}
	seed := int64(1)
	if v, err := strconv.ParseInt(os.Getenv("RUNNER_FUZZ_SEED"), 10, 64); err == nil {
		seed = v
	}
	c := &Campaign{Gen: gen, Seeds: seeds, Pool: pool, Seed: seed, Parallel: parallel(),
		FalseRefusals: d > 0 || os.Getenv("RUNNER_FUZZ_FALSE_REFUSALS") != "", FalseRefusalEvery: 1}
	if d > 0 {
		// a long run tells its counts and findings every five minutes; and
		// should a timed run not stop within a minute of its deadline, it
		// tells them then, before a test timeout can end it without them
		stop := make(chan struct{})
		defer close(stop)
		every := 5 * time.Minute
		if d < 10*time.Minute {
			every = 1000 * time.Hour
		}
		go func() {
			tick := time.NewTicker(every)
			defer tick.Stop()
			late := time.NewTimer(time.Until(deadline) + time.Minute)
			defer late.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if r := c.Report(); r != nil {
						t.Logf("so far (%s):\n%s", time.Since(processStart).Round(time.Second), r.Progress())
					}
				case <-late.C:
					if r := c.Report(); r != nil {
						t.Errorf("the campaign did not stop within a minute of its deadline; so far (%s):\n%s", time.Since(processStart).Round(time.Second), r.Progress())
					}
				}
			}
		}()
	}
	rep, err := c.Run(n, deadline)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d, %d seeds; seeds and workers ready in %s, mutants checked for %s (%d checks cut off at the deadline)\n%s",
		seed, len(seeds), setupTook.Round(time.Second), rep.Elapsed.Round(time.Second), rep.Cut, rep.Table())
	if n == 0 && rep.Total() == 0 {
		t.Errorf("no mutant was checked in RUNNER_FUZZ_TIME=%s: loading the seeds and starting the workers took %s", d, setupTook.Round(time.Second))
	}
	if det := rep.Details(); det != "" {
		t.Logf("findings:\n%s", det)
	}
	if len(rep.FalseRefusals) > 0 {
		t.Logf("false refusals by the gist of their refusal:\n%s", rep.FalseRefusalReasons())
	}
	if len(rep.Justified) > 0 {
		t.Logf("refusals justified though their runs with checks off ended well (latent defects), by gist:\n%s", rep.JustifiedReasons())
	}
	if dir := os.Getenv("RUNNER_FUZZ_SAVE"); dir != "" {
		k, err := rep.Save(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d new regression cases written to %s", k, dir)
	}
	e := enforced(t)
	for _, f := range rep.Findings {
		if isEnforced(e, f.Mutant.Grammar, f.Class) {
			t.Errorf("%s (enforced in testdata/enforce.txt): %s %s: %s\n%s", f.Class, f.Mutant.Grammar, f.Mutant.Seed, f.Mutant.What, oneLine(f.Detail, 600))
		}
	}
}

// TestRegressions checks every regression case kept: those under
// testdata/regress/fixed must hold the property (refused at a position,
// or accepted and ending well under every profile); those under
// testdata/regress/known are failures found and not fixed yet: they are
// checked and reported, and one that now holds says so (move it to
// fixed/).
func TestRegressions(t *testing.T) {
	setup(t)
	for _, sub := range []string{"fixed", "known"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "regress", sub, "*.yaml"))
		for _, path := range files {
			t.Run(sub+"/"+filepath.Base(path), func(t *testing.T) {
				t.Parallel()
				m, found, err := ReadCase(path)
				if err != nil {
					t.Fatal(err)
				}
				if sub == "known" && os.Getenv("RUNNER_FUZZ_KNOWN") == "" {
					t.Skipf("known failure, not fixed yet (RUNNER_FUZZ_KNOWN=1 checks it again): %s", oneLine(found, 300))
				}
				if why, ok := slowCase(m.Text); ok && raceSlowdown > 1 {
					t.Skipf("checked in a plain go test, not under the race detector: %s", why)
				}
				v, err := pool.Check(m, false)
				if err != nil {
					t.Fatal(err)
				}
				class := v.Classify()
				switch {
				case !violation(class) && sub == "known":
					t.Logf("%s now holds (%s): move it to testdata/regress/fixed", path, class)
				case violation(class) && sub == "fixed":
					t.Errorf("%s: %s again (it was fixed): %s", path, class, describe(v))
				case violation(class):
					t.Skipf("known failure, not fixed yet: %s (found: %s)", class, oneLine(found, 300))
				}
			})
		}
	}
}

// slowCase is a case's "# difffuzz slow:" line: one whose runs cost too
// much under the race detector, which adds nothing to its verdict.
func slowCase(text string) (string, bool) {
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, "# difffuzz ")
		if !ok {
			break
		}
		if why, ok := strings.CutPrefix(rest, "slow: "); ok {
			return why, true
		}
	}
	return "", false
}

func describe(v Verdict) string {
	if v.Panic != "" {
		return oneLine(v.Panic, 600)
	}
	if len(v.Unplaced) > 0 {
		return strings.Join(v.Unplaced, "; ")
	}
	f := v.FirstFailure()
	return string(f.Profile) + ": " + f.Status + ": " + oneLine(f.Error, 600)
}

// fuzzing says whether the test binary was asked to fuzz (-test.fuzz).
func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// FuzzValidateAgainstRun is the property for go's fuzzer: the input picks
// a seed, a grammar and the random choices of a mutant. While fuzzing,
// every violation fails (and go keeps the input under
// testdata/fuzz/FuzzValidateAgainstRun); replaying the corpus in a plain
// `go test`, only the classes testdata/enforce.txt lists fail, the others
// are logged.
func FuzzValidateAgainstRun(f *testing.F) {
	setup(f)
	// three seeds per grammar, spread over the examples: the short
	// corpus; fuzzing reaches every seed through seedIndex
	for i := 0; i < 3*len(Grammars); i++ {
		f.Add(uint16(i*7%len(seeds)), uint8(i%len(Grammars)), int64(i))
	}
	e := enforced(f)
	strict := fuzzing()
	f.Fuzz(func(t *testing.T, seedIndex uint16, grammar uint8, choices int64) {
		t.Parallel() // the pool's workers check two at once
		s := seeds[int(seedIndex)%len(seeds)]
		g := Grammars[int(grammar)%len(Grammars)]
		m, ok := gen.Mutate(rand.New(rand.NewSource(choices)), s, g)
		if !ok {
			t.Skip("no mutation applies")
		}
		v, err := pool.Check(m, false)
		if err != nil {
			t.Fatal(err)
		}
		class := v.Classify()
		if !violation(class) {
			return
		}
		msg := fmt.Sprintf("%s: %s %s: %s\n%s", class, g, s.Rel, m.What, describe(v))
		if strict || isEnforced(e, g, class) {
			t.Error(msg)
			return
		}
		t.Logf("known failure class (not in testdata/enforce.txt): %s", msg)
	})
}

// TestUncheckedSeamSignature keeps the false-refusal seam honest: the
// compiler's function it reaches has the signature it is called with.
func TestUncheckedSeamSignature(t *testing.T) {
	r, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkSeam(r); err != nil {
		t.Fatal(err)
	}
}

// TestGrammarsFromCode: the grammars are read from the code, and hold
// what the examples need.
func TestGrammarsFromCode(t *testing.T) {
	names := func(fs []tmplFunc) map[string]bool {
		m := map[string]bool{}
		for _, f := range fs {
			m[f.name] = true
		}
		return m
	}
	tf := names(tmplFuncs())
	for _, want := range []string{"add", "indent", "call", "index", "slice", "lt", "printf", "len", "byRecord"} {
		if !tf[want] {
			t.Errorf("template function %s missing from the grammar", want)
		}
	}
	ef := map[string]bool{}
	for _, f := range exprFuncs() {
		ef[f.name] = true
	}
	for _, want := range []string{"split", "groupBy", "fromPairs", "int", "mode", "counts", "filter"} {
		if !ef[want] {
			t.Errorf("expr function %s missing from the grammar", want)
		}
	}
	steps := stepKeywords()
	if !strings.Contains(strings.Join(steps["loop"], " "), "until") || !strings.Contains(strings.Join(steps["foreach"], " "), "in") {
		t.Errorf("step keywords not read from the schema: %v", steps)
	}
	if schemaKeywords()["minItems"] != "count" || schemaKeywords()["enum"] != "list" {
		t.Errorf("JSON Schema keywords not read from the meta-schemas: %v", schemaKeywords())
	}
	if len(kindKeywords()["converse"]) == 0 {
		t.Error("no keywords read from the converse kind's schema")
	}
}

// TestRepliesFitTheirSchemas: under every profile, the reply made for a
// JSON output fits its schema, for every schema the seeds declare (their
// libraries' named ones and their nodes' inline ones), so a run failing
// on a reply is the spec's doing, not the generator's.
func TestRepliesFitTheirSchemas(t *testing.T) {
	setup(t)
	checked := 0
	for _, s := range seeds {
		docs := map[string][]byte{}
		for name, raw := range s.plan.SchemaDocs {
			docs[name] = raw
		}
		ns := mapGet(s.doc.Content[0], "nodes")
		for _, id := range keys(ns) {
			if sn := mapGet(mapGet(mapGet(ns, id), "output"), "schema"); sn != nil {
				var v any
				if err := sn.Decode(&v); err == nil {
					raw, _ := json.Marshal(v)
					docs["node "+id] = raw
				}
			}
		}
		for name, raw := range docs {
			sch, err := spec.CompileJSONSchema(name, raw)
			if err != nil {
				continue
			}
			for _, p := range Profiles {
				g := &replyGen{p: p}
				reply := g.Reply(kit.Shape{Format: "json", Schema: raw}, "x")
				var v any
				if err := json.Unmarshal([]byte(reply), &v); err != nil {
					t.Errorf("%s %s %s: not JSON: %s", s.Rel, name, p, reply)
					continue
				}
				if err := sch.Validate(v); err != nil {
					t.Errorf("%s %s under %s: %s does not fit: %v", s.Rel, name, p, oneLine(reply, 300), err)
				}
				checked++
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d replies checked: the seeds' schemas were not found", checked)
	}
}

// TestSeedsRun: every seed, unchanged, is accepted and ends well under
// the typical profile, so the runs the fuzzer makes are runs and not
// failures at their start that every mutant would share (and that would
// hide its own).
func TestSeedsRun(t *testing.T) {
	setup(t)
	for _, s := range seeds {
		t.Run(s.Rel, func(t *testing.T) {
			t.Parallel()
			v, err := pool.Check(Mutant{Seed: s.Rel, Grammar: "templates", Text: string(s.Text)}, false, Typical)
			if err != nil {
				t.Fatal(err)
			}
			if v.Refused || len(v.Runs) == 0 {
				t.Fatalf("the seed is refused or did not run: %v %s", v.Errors, v.Panic)
			}
			for _, o := range v.Runs {
				if o.Profile == Typical && !o.ok() {
					if knownCase(t, s.Text) {
						t.Skipf("known finding (a regression case under testdata/regress/known): the seed itself ends %s: %s", o.Status, o.Error)
					}
					t.Errorf("under the typical profile the seed ends %s: %s", o.Status, o.Error)
				}
				if o.Profile == Typical && o.Calls == 0 && len(s.plan.UsedModels) > 0 {
					t.Errorf("under the typical profile the seed made no model call")
				}
			}
		})
	}
}

// knownCase says whether a known regression case is this spec text.
func knownCase(t *testing.T, text []byte) bool {
	files, _ := filepath.Glob(filepath.Join("testdata", "regress", "known", "*.yaml"))
	for _, f := range files {
		m, _, err := ReadCase(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(m.Text, string(text)) {
			return true
		}
	}
	return false
}

// TestMismatchedOperationsFailWhenRun: an operation expr refuses over
// operands of basic types ("invalid operation: OP (mismatched types A and
// B)") that certainMismatch counts as a latent defect, judged on its
// sample values, fails over other values of those types as well: for
// every operator of expr and every pair of basic types.
func TestMismatchedOperationsFailWhenRun(t *testing.T) {
	typed := map[string]any{"int": 2, "int64": int64(3), "float64": 2.5, "float32": float32(1), "string": "a", "bool": true}
	other := map[string][]any{
		"int": {7, -40, 1 << 40}, "int64": {int64(-9), int64(1)}, "float64": {1e300, -0.5, 3.0}, "float32": {float32(-2), float32(7)},
		"string": {"zz", "hello, world", "-3"}, "bool": {false, true},
	}
	binary := []string{"+", "-", "*", "/", "%", "**", "^", "<", ">", "<=", ">=", "==", "!=", "and", "or", "&&", "||",
		"in", "not in", "matches", "contains", "startsWith", "endsWith", ".."}
	unary := []string{"!", "not", "-", "+"}
	counted, refused := 0, 0
	try := func(src string, env map[string]any) {
		_, err := expr.Compile(src, expr.Env(env))
		if err == nil || !mismatch.MatchString(err.Error()) {
			return
		}
		refused++
		if !certainMismatch(err.Error()) {
			return
		}
		counted++
		m := mismatch.FindStringSubmatch(err.Error())
		if !alwaysFails(m[1], m[2], m[3], other) {
			t.Errorf("%s over %v: counted as a mismatch that always fails, but some run of it with other values ends well", src, env)
		}
	}
	for _, x := range typed {
		for _, op := range unary {
			try(op+" x", map[string]any{"x": x})
		}
		for _, y := range typed {
			for _, op := range binary {
				try("x "+op+" y", map[string]any{"x": x, "y": y})
			}
		}
	}
	// y of any type, as expr types a name whose type the checker does not
	// know: "x" - y fails whatever y holds
	anyType := reflect.TypeOf((*any)(nil)).Elem()
	for _, x := range typed {
		st := reflect.StructOf([]reflect.StructField{
			{Name: "X", Type: reflect.TypeOf(x), Tag: `expr:"x"`},
			{Name: "Y", Type: anyType, Tag: `expr:"y"`},
		})
		env := reflect.New(st).Elem().Interface()
		for _, op := range binary {
			src := "x " + op + " y"
			_, err := expr.Compile(src, expr.Env(env))
			if err == nil || !mismatch.MatchString(err.Error()) {
				continue
			}
			refused++
			if !certainMismatch(err.Error()) {
				continue
			}
			counted++
			m := mismatch.FindStringSubmatch(err.Error())
			if !alwaysFails(m[1], m[2], m[3], other) {
				t.Errorf("%s over x %T and y of any type: counted as a mismatch that always fails, but some run of it ends well", src, x)
			}
		}
	}
	t.Logf("%d operations refused as mismatches, %d of them counted as certain failures", refused, counted)
	if counted < 50 || counted == refused {
		t.Errorf("%d of %d mismatches counted as certain: the sample runs decide nothing", counted, refused)
	}
}
