package difffuzz

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/expr-lang/expr"
)

// Counts are one grammar's numbers.
type Counts struct {
	Generated, Refused, RefusedNoPlace, Accepted, AcceptedThenFailing, ReplyFailing, Warned, Hangs, Panics int
	// CheckedOff are the refused mutants run with checks off;
	// FalseRefusals those of them that ended well under every profile,
	// but for the Justified ones (see justified).
	CheckedOff, FalseRefusals, Justified int
}

// Finding is a mutant that broke the property (or a false refusal).
type Finding struct {
	Mutant  Mutant
	Class   Class
	Detail  string
	Verdict Verdict
	// Why is a justified refusal's reasons (its kinds of error).
	Why string
}

// Report is a campaign's numbers and findings.
type Report struct {
	mu        sync.Mutex
	ByGrammar map[string]*Counts
	Findings  []Finding
	// FalseRefusals are refused mutants that ran well with checks off;
	// Justified those of them whose refusal is right all the same.
	FalseRefusals, Justified []Finding
	Elapsed                  time.Duration
	// Cut are the checks under way at a timed campaign's deadline, stopped
	// there: their mutants are not counted.
	Cut int
}

func newReport() *Report {
	r := &Report{ByGrammar: map[string]*Counts{}}
	for _, g := range Grammars {
		r.ByGrammar[g] = &Counts{}
	}
	return r
}

// Total is the number of mutants checked.
func (r *Report) Total() int {
	n := 0
	for _, c := range r.ByGrammar {
		n += c.Generated
	}
	return n
}

// Failures counts the findings that break the property.
func (r *Report) Failures() int { return len(r.Findings) }

// Campaign is a run of the fuzzer.
type Campaign struct {
	Gen   *Generator
	Seeds []*Seed
	Pool  *Pool
	// Rand seeds the mutants; Parallel is how many are checked at once.
	Seed     int64
	Parallel int
	// FalseRefusals runs refused mutants with checks off (one in
	// FalseRefusalEvery of them; 0 or 1: all).
	FalseRefusals     bool
	FalseRefusalEvery int
	Log               func(format string, args ...any)
	mutants           int
	reportMu          sync.Mutex
	report            *Report
}

// Report is the report of the run under way (nil before Run).
func (c *Campaign) Report() *Report {
	c.reportMu.Lock()
	defer c.reportMu.Unlock()
	return c.report
}

// Run checks mutants until n are generated (n > 0) or the deadline
// (when not zero). At the deadline the checks under way are cut off, so
// a timed campaign ends on time; the mutants they held are not counted
// (Report.Cut).
func (c *Campaign) Run(n int, deadline time.Time) (*Report, error) {
	rep := newReport()
	c.reportMu.Lock()
	c.report = rep
	c.reportMu.Unlock()
	start := time.Now()
	ctx := context.Background()
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	rng := rand.New(rand.NewSource(c.Seed))
	var gmu sync.Mutex
	next := func() (Mutant, bool) {
		gmu.Lock()
		defer gmu.Unlock()
		if (n > 0 && c.mutants >= n) || ctx.Err() != nil {
			return Mutant{}, false
		}
		for {
			i := c.mutants
			c.mutants++
			seed := c.Seeds[i%len(c.Seeds)]
			// every grammar in turn, and the seeds in turn: with a number of
			// seeds prime to 4, every pair comes round
			grammar := Grammars[i%len(Grammars)]
			if len(c.Seeds)%len(Grammars) == 0 {
				grammar = Grammars[(i+i/len(c.Seeds))%len(Grammars)]
			}
			if m, ok := c.Gen.Mutate(rng, seed, grammar); ok {
				return m, true
			}
			if n > 0 && c.mutants >= n {
				return Mutant{}, false
			}
		}
	}
	var wg sync.WaitGroup
	var firstErr error
	par := max(c.Parallel, 1)
	refusedSeen := 0
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, ok := next()
				if !ok {
					return
				}
				v, err := c.Pool.CheckContext(ctx, m, false)
				if errors.Is(err, ErrCut) {
					rep.mu.Lock()
					rep.Cut++
					rep.mu.Unlock()
					return
				}
				if err != nil {
					rep.mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					rep.mu.Unlock()
					return
				}
				class := v.Classify()
				rep.add(m, v, class)
				if class == ClassRefused && c.FalseRefusals {
					rep.mu.Lock()
					refusedSeen++
					take := c.FalseRefusalEvery <= 1 || refusedSeen%c.FalseRefusalEvery == 0
					rep.mu.Unlock()
					if take {
						off, err := c.Pool.CheckContext(ctx, m, true)
						if err == nil {
							rep.addUnchecked(m, off)
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	return rep, firstErr
}

func (r *Report) add(m Mutant, v Verdict, class Class) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.ByGrammar[m.Grammar]
	c.Generated++
	detail := ""
	switch class {
	case ClassRefused:
		c.Refused++
		return
	case ClassRefusedNoPlace:
		c.Refused++
		c.RefusedNoPlace++
		detail = "refused without a position: " + strings.Join(v.Unplaced, "; ")
	case ClassAccepted:
		c.Accepted++
		return
	case ClassSpecFailure:
		c.Accepted++
		c.AcceptedThenFailing++
		f := v.FirstFailure()
		detail = fmt.Sprintf("every profile fails (%s: %s)", f.Status, f.Error)
	case ClassReplyFailure:
		c.Accepted++
		c.ReplyFailing++
		f := v.FirstFailure()
		detail = fmt.Sprintf("fails under %s only (%s: %s)", failingProfiles(v), f.Status, f.Error)
	case ClassWarned:
		// what the design asks for: counted, not a finding
		c.Accepted++
		c.Warned++
		return
	case ClassHang:
		c.Hangs++
		if !v.Refused {
			c.Accepted++
		}
		detail = "hang"
		for _, o := range v.Runs {
			if o.Status == "hang" {
				detail = fmt.Sprintf("hang under %s: %s", o.Profile, o.Error)
			}
		}
	case ClassPanic:
		c.Panics++
		detail = v.Panic
		if detail == "" {
			detail = v.FirstFailure().Error
		}
	}
	r.Findings = append(r.Findings, Finding{Mutant: m, Class: class, Detail: detail, Verdict: v})
}

func failingProfiles(v Verdict) string {
	var out []string
	for i, o := range v.Runs {
		if !o.ok() && (i >= len(v.Baseline) || v.Baseline[i].ok()) {
			out = append(out, string(o.Profile))
		}
	}
	return strings.Join(out, ",")
}

func (r *Report) addUnchecked(m Mutant, v Verdict) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.ByGrammar[m.Grammar]
	if v.Unchecked != "" || v.Panic != "" || len(v.Runs) == 0 {
		return
	}
	c.CheckedOff++
	for i, o := range v.Runs {
		if !o.ok() && (i >= len(v.Baseline) || v.Baseline[i].ok()) {
			return
		}
	}
	if why, ok := justified(v.Errors); ok {
		c.Justified++
		r.Justified = append(r.Justified, Finding{Mutant: m, Class: "justified-refusal", Detail: why + ": " + strings.Join(v.Errors, "; "), Verdict: v, Why: why})
		return
	}
	c.FalseRefusals++
	r.FalseRefusals = append(r.FalseRefusals, Finding{Mutant: m, Class: "false-refusal", Detail: strings.Join(v.Errors, "; "), Verdict: v})
}

// latentDefects are the refusals that stay right when a mutant's runs
// with checks off end well: the error is a defect whenever it comes into
// play, and the profiles' runs did not bring it into play. Each says why.
var latentDefects = []struct {
	re  *regexp.Regexp
	why string
}{
	// A fallback stands in for a reply that cannot be read even after its
	// repairs. The profiles' replies always can be, so no run used it;
	// one outside the schema would hand the expressions, templates and
	// outputs typed by that schema a value of another shape.
	{regexp.MustCompile(`output fallback( .*)? (does not satisfy the output schema|must be a mapping)`), "a fallback outside the output schema (used only when a reply cannot be read)"},
	// int(vars.x) or float(vars.x) of a var whose default is text that is
	// no number: the var holds that text on every run (--set gives text
	// too), so the conversion fails whenever it is evaluated.
	{regexp.MustCompile(`\w+\(vars\.\w+\) fails: the var's default .* is not a number`), "a number read from a var whose default is text that is no number, which fails whenever it is evaluated (no run evaluated it)"},
	// text/template counts a call's arguments when it makes it, as the
	// checker does: for its own functions with the same counts
	// (TestBuiltinArityIsTextTemplates in spec checks them against it),
	// for the prompts' helpers from their Go signatures, as text/template
	// reads them. So a run that ended well never made that call: it lies
	// in a branch or a template no profile's run reached.
	{regexp.MustCompile(`: [A-Za-z]+ takes (at (most|least) )?\d+ arguments?, but is given \d+`), "a template call with a wrong number of arguments, which fails whenever it is made (no run reached it)"},
	// A part of an expression where a boolean is wanted that gives a
	// number, text or nil (an answer normaliser, arithmetic): it fails
	// whenever it gives what is not nil there, and a run that ended well
	// never evaluated it, or evaluated it only to nil (a normaliser that
	// found no answer in the profile's reply), or short-circuited past it.
	{regexp.MustCompile(`a boolean is wanted here, but .* never a boolean`), "a part where a boolean is wanted that never gives one (a normaliser or arithmetic), which fails whenever it gives a value there (no run did)"},
}

// deliberateRules are the refusals the language makes on purpose of a
// spec whatever its runs do: rules on what a spec says, not on what a run
// trips on. A mutant refused by them alone may run well with checks off
// (the value is never looked up, the node never runs); the refusal is
// right all the same, and counted as justified under the rule's kind.
// Errors about values of an untyped or any-typed kind ("interface", "any
// type") are never matched: those may be the checker's imprecision.
var deliberateRules = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`^(nodes|flow|agents|inputs|vars|outputs|templates|budget|goals|models|endpoints)[.\[][^ ]*:? .*(is too (small|large)|is not a valid id|is not one of|must have at least one entry|expected an? [a-z ]+, found)|loop max must be (at least|a whole number)`),
		"schema: a keyword's value breaks the spec language's schema (its type, range or form), refused as a schema validator refuses an instance"},
	{regexp.MustCompile(`unknown (template|model|agent|verdict set|tool|input|var|node|name|schema) "|no var named "|has no var "|no node named "|no loop or foreach variable named "|uses unknown model "|no node records "|no input named "|is the name of every loop's counter|is neither a built-in tool|but the spec declares no goals|watch runs unknown node|has no topology`),
		"names: a name that names nothing declared (a typo), refused wherever it is written, though the runs never looked it up"},
	{regexp.MustCompile(`is never run: no flow step names it|cannot have run (at this point|when|before)|runs outside every foreach`),
		"dead: a node no step runs, or a read of a node that cannot have run there (its value is always nil), or of a foreach's item outside every foreach"},
	{regexp.MustCompile(`may not have run when the flow has finished`),
		"unguarded: an output reads, without a guard, a node some runs skip (an if, a foreach over a list that can be empty); the runs here ran it"},
	{regexp.MustCompile(`a count is fixed before the run starts|has no declared maximum, which the dry run|needs a declared maximum for the dry run|^node "[^"]+": [a-z_.]+ \(.+\)(: .+ \(\d+:\d+\)$| is at (most|least) .+ by the domains it reads| gave .+, not a whole number)|must be a whole number, but .* may have a fraction|bad number syntax`),
		"counts: a count (max_turns, min_answers, samples...) that reads what only the run decides, has no declared maximum, or fails or falls out of its range over the declared values (the dry run, the path check and the budget need it before the run starts)"},
	{regexp.MustCompile(`reads a number from free text: a run whose input`),
		"free text: a number read from an input declared as free text (no number default), which a person may give as any text; the runs here gave a number"},
	{regexp.MustCompile(`no reply can satisfy it`),
		"unsatisfiable: an output schema no reply satisfies (every call of the node is repaired, then fails: the run goes on without its answers)"},
	{regexp.MustCompile(`use one of them|needs a pattern|cacheBreak\}\} inside|cannot be combined with|, not both|appl(y|ies) only to format|needs (record|history)|is listed twice|calls no model and has no agents|could never go on without one|must stand alone as an action|is the user turn after the history turns`),
		"contradiction: keywords that contradict each other, or one that does nothing where it is written"},
	{regexp.MustCompile(`output schema[^:]*: (expected an? [a-z]+, found|must be > |items at index \d+ and \d+ are equal)`),
		"schema keyword: an output schema that is not valid JSON Schema (the draft 2020-12 meta-schema refuses it)"},
	{regexp.MustCompile(`is read by name, but a (message|node)`),
		"by name: a read by name of a key a reply decides (its tags, choice labels, the agents that answered), which fails on a reply without it; index gives \"\""},
	{regexp.MustCompile(`argument \d+ is .*(, but .* is wanted|cannot take)|values of different types cannot be compared|the value piped in(to it)? is .*(but .* is wanted|has no length)|cannot range over|cannot order|which cannot be (indexed|sliced)|which has no length|condition must be a boolean|is not declared here|has no field "|an index is never below|the format has \d+ verbs?, but|: %[a-zA-Z] wants an? [a-z ]+, but|but the mapping's keys are|not a function, so rendering would fail|has no argument \(the format has|its format \(argument \d+\) is`),
		"template types: a template action over a value of a type its function or command does not take, which text/template refuses whenever it is evaluated (no run evaluated it)"},
	{regexp.MustCompile(`syntax error: |unexpected token |not enough arguments to call|too many arguments to call|predicate should return|builtin \w+ takes only|interface conversion: interface \{\} is \w+, not \w+|must be a number, but .* is (a string|a boolean|a list|a mapping|a message)|cannot concat \w+$|invalid argument for \w+ \(type|invalid number of arguments \(expected|cannot use .+ to get an element|cannot slice |non-bool expression .* used as condition|mismatched types? |cannot use .+ as (argument|type)|has no field \w|is undefined|can only be selected using an integer|is not callable`),
		"expression types: an expression expr does not compile (its syntax, or types it refuses), which cannot run wherever it is evaluated (no run evaluated it)"},
}

// knownConversion is a value's failed conversion, its type known.
var knownConversion = regexp.MustCompile(`interface conversion: interface \{\} is \w+|func\(\.\.\.interface \{\}\) \(interface \{\}, error\)`)

// imprecise are the words of a type the checker did not know.
// A list or a map of them ([]interface {}) is known to be a list or a map.
var imprecise = regexp.MustCompile(`(^|[^\]])interface \{\}|any type|is a interface|an interface value`)

// mismatch is expr's refusal of an operator over operands of types it
// does not take.
// (a value of any type is "interface {}", read as interface).
var mismatch = regexp.MustCompile(`invalid operation: (\S+) \(mismatched types? (\w+)(?: \{\})?(?: and (\w+)(?: \{\})?)?\)`)

// sampleValues are values of the basic types expr names in a mismatch.
var sampleValues = map[string][]any{
	"int": {0, 2, -1}, "int64": {int64(0), int64(3)}, "float64": {0.0, 2.5, -1.0}, "float32": {float32(0), float32(1.5)},
	"string": {"", "a", "2"}, "bool": {true, false},
}

var (
	certainMu sync.Mutex
	certain   = map[string]bool{}
)

// certainMismatch says whether an error is expr's refusal of an operator
// over operands of basic types that fails whenever it is evaluated, with
// the operands untyped as a run holds them. That is found by running the
// operation, compiled untyped, over sample values of those types: certain
// when every run fails (`! 2` does; `true and 2` does not, `false and 2`
// gives false). A run that ended well never evaluated such an
// expression: a node's when, say, is read only from its second round on.
func certainMismatch(e string) bool {
	m := mismatch.FindStringSubmatch(e)
	if m == nil {
		return false
	}
	certainMu.Lock()
	defer certainMu.Unlock()
	key := strings.Join(m[1:], " ")
	if c, ok := certain[key]; ok {
		return c
	}
	c := alwaysFails(m[1], m[2], m[3], sampleValues)
	certain[key] = c
	return c
}

// alwaysFails runs "OP x" (t2 empty) or "x OP y", compiled untyped, over
// every pair of values of types t1 and t2, and says whether each run fails.
// An operand expr types as interface (a value of any type) is tried with
// every sample value, nil among them: "x" - any fails for each.
func alwaysFails(op, t1, t2 string, values map[string][]any) bool {
	of := func(t string) ([]any, bool) {
		if t != "interface" {
			xs, ok := values[t]
			return xs, ok
		}
		all := []any{nil}
		for _, k := range slices.Sorted(maps.Keys(values)) {
			all = append(all, values[k]...)
		}
		return all, true
	}
	xs, ok := of(t1)
	if !ok {
		return false
	}
	src, ys := op+" x", []any{nil}
	if t2 != "" {
		if ys, ok = of(t2); !ok {
			return false
		}
		src = "x " + op + " y"
	}
	prog, err := expr.Compile(src, expr.Env(map[string]any{}), expr.AllowUndefinedVariables())
	if err != nil {
		return false
	}
	for _, x := range xs {
		for _, y := range ys {
			if _, err := expr.Run(prog, map[string]any{"x": x, "y": y}); err == nil {
				return false
			}
		}
	}
	return true
}

// justified says why a refusal is right though its runs with checks off
// ended well: when every error of it is a latent defect.
func justified(errs []string) (string, bool) {
	if len(errs) == 0 {
		return "", false
	}
	var whys []string
	for _, e := range errs {
		found := ""
		if certainMismatch(e) {
			found = "an operator over operands of types it does not take, which fails whenever it is evaluated (no run evaluated it)"
		}
		for _, l := range latentDefects {
			if found != "" {
				break
			}
			if l.re.MatchString(e) {
				found = l.why
				break
			}
		}
		for _, l := range deliberateRules {
			if found != "" || imprecise.MatchString(knownConversion.ReplaceAllString(e, "")) {
				break
			}
			if l.re.MatchString(diagHead.ReplaceAllString(e, "")) {
				found = l.why
				break
			}
		}
		if found == "" {
			return "", false
		}
		if !slices.Contains(whys, found) {
			whys = append(whys, found)
		}
	}
	return strings.Join(whys, "; "), true
}

// Progress is the table and the findings so far, for a long run's log
// (a run stopped from outside still tells what it found).
func (r *Report) Progress() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.table() + r.details()
}

// Table prints the counts per grammar.
func (r *Report) Table() string { return r.table() }

func (r *Report) table() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "grammar\tgenerated\trefused\tno-position\taccepted\taccepted-then-failing\treply-failing\twarned\thangs\tpanics\tchecked-off\tfalse-refusals\tjustified\t")
	var t Counts
	for _, g := range Grammars {
		c := r.ByGrammar[g]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", g, c.Generated, c.Refused, c.RefusedNoPlace, c.Accepted, c.AcceptedThenFailing, c.ReplyFailing, c.Warned, c.Hangs, c.Panics, c.CheckedOff, c.FalseRefusals, c.Justified)
		t.Generated += c.Generated
		t.Refused += c.Refused
		t.RefusedNoPlace += c.RefusedNoPlace
		t.Accepted += c.Accepted
		t.AcceptedThenFailing += c.AcceptedThenFailing
		t.ReplyFailing += c.ReplyFailing
		t.Warned += c.Warned
		t.Hangs += c.Hangs
		t.Panics += c.Panics
		t.CheckedOff += c.CheckedOff
		t.FalseRefusals += c.FalseRefusals
		t.Justified += c.Justified
	}
	fmt.Fprintf(tw, "all\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", t.Generated, t.Refused, t.RefusedNoPlace, t.Accepted, t.AcceptedThenFailing, t.ReplyFailing, t.Warned, t.Hangs, t.Panics, t.CheckedOff, t.FalseRefusals, t.Justified)
	_ = tw.Flush()
	return b.String()
}

// Details lists the findings, one paragraph each, sorted by class.
func (r *Report) Details() string { return r.details() }

func (r *Report) details() string {
	all := append(append([]Finding{}, r.Findings...), r.FalseRefusals...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].Class < all[j].Class })
	var b strings.Builder
	for _, f := range all {
		fmt.Fprintf(&b, "- [%s] %s %s: %s\n    %s\n", f.Class, f.Mutant.Grammar, f.Mutant.Seed, oneLine(f.Mutant.What, 300), oneLine(f.Detail, 400))
	}
	return b.String()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

// Save writes each finding as a regression case into dir (named by its
// text's digest, so a case found twice is written once).
func (r *Report) Save(dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	n := 0
	for _, f := range r.Findings {
		// one case per grammar, class, seed and gist of the failure:
		// the same failure found again is not written again
		sum := sha256.Sum256([]byte(f.Mutant.Seed + "\x00" + reason([]string{f.Detail})))
		name := fmt.Sprintf("%s-%s-%s.yaml", f.Mutant.Grammar, f.Class, hex.EncodeToString(sum[:6]))
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			continue
		}
		if err := os.WriteFile(p, []byte(FormatCase(f)), 0o644); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

var (
	quoted   = regexp.MustCompile(`"[^"]*"`)
	numbers  = regexp.MustCompile(`-?\d+(\.\d+)?`)
	diagHead = regexp.MustCompile(`^[^ ]*:\d+:\d+: error: `)
	tmplName = regexp.MustCompile(`template fuzz/[^:]*: `)
)

// reason is the gist of a refusal's first error: its message with names,
// numbers and quoted text taken out, so refusals alike count together.
func reason(errs []string) string {
	if len(errs) == 0 {
		return "(none)"
	}
	m := diagHead.ReplaceAllString(errs[0], "")
	m = tmplName.ReplaceAllString(m, "")
	m = quoted.ReplaceAllString(m, `"_"`)
	m = numbers.ReplaceAllString(m, "N")
	return oneLine(m, 160)
}

// FalseRefusalReasons counts the false refusals by the gist of their
// refusal, most first.
func (r *Report) FalseRefusalReasons() string { return reasons(r.FalseRefusals) }

// JustifiedReasons counts the justified refusals by their kinds (the
// kinds of their errors), most first.
func (r *Report) JustifiedReasons() string {
	counts := map[string]int{}
	for _, f := range r.Justified {
		// a refusal of several kinds counts under each
		for _, k := range strings.Split(f.Why, "; ") {
			counts[k]++
		}
	}
	return countLines(counts)
}

func countLines(counts map[string]int) string {
	type kv struct {
		k string
		n int
	}
	var all []kv
	for k, n := range counts {
		all = append(all, kv{k, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].k < all[j].k })
	var b strings.Builder
	for _, x := range all {
		fmt.Fprintf(&b, "%4d  %s\n", x.n, x.k)
	}
	return b.String()
}

func reasons(fs []Finding) string {
	counts := map[string]int{}
	for _, f := range fs {
		counts[reason(f.Verdict.Errors)]++
	}
	type kv struct {
		k string
		n int
	}
	var all []kv
	for k, n := range counts {
		all = append(all, kv{k, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].k < all[j].k })
	var b strings.Builder
	for _, x := range all {
		fmt.Fprintf(&b, "%4d  %s\n", x.n, x.k)
	}
	return b.String()
}
