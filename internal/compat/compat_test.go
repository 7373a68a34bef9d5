package compat_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/templates"
)

// The compatibility corpus: every spec of the examples folder as it stood
// at earlier commits of this repository, with what the runner of that
// commit sent for it and how its run ended, against one scripted server
// (internal/llmtest, answering from the request alone). TestCompatCorpus
// runs today's runner on each and asserts that it sends the same request
// bytes and ends the same way, or that CHANGELOG.md names the change.
//
// RUNNER_COMPAT_RECORD=1 go test ./internal/compat -run TestCompatRecord writes
// the corpus again: it checks each commit out in a git worktree, builds its
// runner and records (it needs the repository's history).

// compatCommits are the earlier commits the corpus holds.
var compatCommits = []string{
	"7ff3153", // 2026-11-21: the first examples, reasoning@2 and software-design@2
	"37c2b9f", // 2026-11-23: the protocols, before er-reasoning was removed and before exit 8
	"c18b0fb", // 2026-11-26: after the inconclusive outcome (exit 8)
	"beba1b7", // 2026-11-27: software-design@7, before the cached layout
}

const compatDir = "testdata"

// compatRecord is what a runner sent for one spec and how its run ended.
type compatRecord struct {
	// Spec is the spec's path inside the commit's examples folder.
	Spec   string            `json:"spec"`
	Inputs map[string]string `json:"inputs,omitempty"`
	// Valid says whether the commit's runner accepted the spec.
	Valid bool `json:"valid"`
	// Exit is the run's exit code.
	Exit int `json:"exit"`
	// Requests are the SHA-256 digests of the request bodies, sorted
	// (calls made at once arrive in any order), and Prompts the digests
	// of their messages alone (role, name and content).
	Requests []string `json:"requests"`
	Prompts  []string `json:"prompts"`
	// Libraries are the built-in library versions the spec resolved to
	// at that commit (found by their files' digests).
	Libraries map[string]int `json:"libraries,omitempty"`
}

type compatCorpus struct {
	Commit  string         `json:"commit"`
	Records []compatRecord `json:"records"`
}

// compatHandler answers every call from its request alone: a JSON value
// its schema accepts when it asks for JSON, else a text that the examples'
// regex and letter formats can read.
func compatHandler(r llmtest.Request) llmtest.Reply {
	switch r.ResponseFormat {
	case "json_schema":
		return llmtest.Reply{Content: calls.StandIn(kit.Shape{Format: "json", Schema: r.JSONSchema}, "compat")}
	case "json_object":
		return llmtest.Reply{Content: calls.StandIn(kit.Shape{Format: "json"}, "compat")}
	}
	return llmtest.Reply{Content: "Reasoning in brief, the answer is B. \\boxed{42}\nVERDICT: agree\nANSWER: B"}
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// promptDigest is the digest of a request's messages: role, name, content.
func promptDigest(r llmtest.Request) string {
	var b bytes.Buffer
	for _, m := range r.Messages {
		fmt.Fprintf(&b, "%s\x00%s\x00%s\x00", m.Role, m.Name, m.Content)
	}
	return digestOf(b.Bytes())
}

// specsIn lists the spec files of an examples folder (YAML files with
// version, nodes and flow at the top), relative to it.
func specsIn(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".test.yaml") {
			return err
		}
		if rel, _ := filepath.Rel(root, p); strings.Contains(filepath.ToSlash(rel), "testdata/") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var top map[string]yaml.Node
		if yaml.Unmarshal(data, &top) != nil {
			return nil
		}
		_, v := top["version"]
		_, n := top["nodes"]
		_, f := top["flow"]
		if v && n && f {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// compatInputs are the inputs a spec is run with: its test file's, else
// today's test file's for the same example, else a placeholder for each
// required input.
func compatInputs(t *testing.T, root, spec string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, test := range []string{filepath.Join(root, filepath.Dir(spec), "spec.test.yaml"), filepath.Join(filepath.Dir(spec), "spec.test.yaml")} {
		data, err := os.ReadFile(test)
		if err != nil {
			continue
		}
		var tf struct {
			Inputs map[string]any `yaml:"inputs"`
		}
		if yaml.Unmarshal(data, &tf) == nil && len(tf.Inputs) > 0 {
			for k, v := range tf.Inputs {
				out[k] = fmt.Sprint(v)
			}
			break
		}
	}
	data, err := os.ReadFile(filepath.Join(root, spec))
	if err != nil {
		t.Fatal(err)
	}
	var sf struct {
		Inputs map[string]struct {
			Required bool `yaml:"required"`
		} `yaml:"inputs"`
	}
	_ = yaml.Unmarshal(data, &sf)
	for k, in := range sf.Inputs {
		if _, ok := out[k]; !ok && in.Required {
			out[k] = "compat input " + k
		}
	}
	for k := range out {
		if _, ok := sf.Inputs[k]; !ok {
			delete(out, k) // an input today's test file has and the spec not
		}
	}
	return out
}

// runCompat runs bin on spec (a path inside root, run from its folder)
// against a fresh scripted server and returns what it sent and its exit.
func runCompat(t *testing.T, bin, root, spec string, inputs map[string]string, extra ...string) compatRecord {
	t.Helper()
	srv := llmtest.New(t, compatHandler)
	dir := filepath.Join(root, filepath.Dir(spec))
	args := []string{"run", filepath.Base(spec), "--no-cache", "-q"}
	keys := make([]string, 0, len(inputs))
	for k := range inputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-i", k+"="+inputs[k])
	}
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cache := t.TempDir()
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "RUNNER_CACHE_DIR=" + cache, "XDG_CACHE_HOME=" + cache,
		"OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=sk-compat-0123456789"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	rec := compatRecord{Spec: spec, Inputs: inputs}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		rec.Exit = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", spec, err)
	}
	rec.Valid = rec.Exit != 4
	for _, r := range srv.Requests() {
		rec.Requests = append(rec.Requests, digestOf(r.Body))
		rec.Prompts = append(rec.Prompts, promptDigest(r))
	}
	sort.Strings(rec.Requests)
	sort.Strings(rec.Prompts)
	if testing.Verbose() {
		t.Logf("%s: exit %d, %d requests\n%s", spec, rec.Exit, len(rec.Requests), lastLines(stderr.String(), 3))
	}
	return rec
}

// librariesAt finds the built-in library versions whose files are the
// ones a commit's templates folder holds.
func librariesAt(t *testing.T, root string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, lib := range templates.Libraries() {
		entries, err := os.ReadDir(filepath.Join(root, lib))
		if err != nil {
			continue
		}
		digests := map[string]string{}
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() || !(strings.HasSuffix(n, ".tmpl") || strings.HasSuffix(n, ".schema.json") || n == "verdicts.yaml") {
				continue
			}
			data, err := os.ReadFile(filepath.Join(root, lib, n))
			if err != nil {
				t.Fatal(err)
			}
			digests[n] = digestOf(data)
		}
		if v := templates.VersionOf(lib, digests); v > 0 {
			out[lib] = v
		} else {
			t.Fatalf("%s: its files are no listed version of %s", root, lib)
		}
	}
	return out
}

// TestCompatRecord writes the corpus from the repository's history.
func TestCompatRecord(t *testing.T) {
	mode := os.Getenv("RUNNER_COMPAT_RECORD")
	if mode != "1" && mode != "runs" {
		t.Skip("writes the compatibility corpus from git history; set RUNNER_COMPAT_RECORD=1 (or =runs for the old run directories alone)")
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("not in a git checkout: %v", err)
	}
	repo := strings.TrimSpace(string(top))
	for _, commit := range compatCommits {
		t.Run(commit, func(t *testing.T) {
			wt := filepath.Join(t.TempDir(), "wt")
			if out, err := exec.Command("git", "-C", repo, "worktree", "add", "--detach", wt, commit).CombinedOutput(); err != nil {
				t.Fatalf("git worktree add: %v\n%s", err, out)
			}
			defer exec.Command("git", "-C", repo, "worktree", "remove", "--force", wt).Run()
			bin := filepath.Join(t.TempDir(), "runner")
			build := exec.Command("go", "build", "-o", bin, "./cmd/runner")
			build.Dir = wt
			build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build at %s: %v\n%s", commit, err, out)
			}
			dest := filepath.Join(compatDir, commit)
			if err := recordOldRun(t, bin, wt, dest); err != nil {
				t.Fatal(err)
			}
			if mode == "runs" {
				return
			}
			if err := os.RemoveAll(filepath.Join(dest, "examples")); err != nil {
				t.Fatal(err)
			}
			if err := copyTree(filepath.Join(wt, "examples"), filepath.Join(dest, "examples")); err != nil {
				t.Fatal(err)
			}
			libs := librariesAt(t, filepath.Join(wt, "templates"))
			corpus := compatCorpus{Commit: commit}
			root := filepath.Join(dest, "examples")
			for _, spec := range specsIn(t, root) {
				rec := runCompat(t, bin, root, spec, compatInputs(t, root, spec))
				rec.Libraries = usedLibraries(t, filepath.Join(root, spec), libs)
				corpus.Records = append(corpus.Records, rec)
			}
			// The runs the old runner left are not part of the corpus.
			_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() && d.Name() == "runs" {
					_ = os.RemoveAll(p)
					return filepath.SkipDir
				}
				return err
			})
			data, err := json.MarshalIndent(corpus, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dest, "corpus.json"), append(data, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// oldRunSpec is the example whose run directory the corpus keeps for each
// commit, as that commit's runner left it.
const oldRunSpec = "reasoning-debate/spec.yaml"

// recordOldRun runs the commit's oldRunSpec with its runner and keeps the
// run directory in dest/run.
func recordOldRun(t *testing.T, bin, wt, dest string) error {
	t.Helper()
	root := filepath.Join(t.TempDir(), "examples")
	if err := copyTree(filepath.Join(wt, "examples"), root); err != nil {
		return err
	}
	runCompat(t, bin, root, oldRunSpec, compatInputs(t, root, oldRunSpec))
	runs, err := filepath.Glob(filepath.Join(root, filepath.Dir(oldRunSpec), "runs", "*"))
	if err != nil || len(runs) != 1 {
		return fmt.Errorf("%s left %d run directories (%v)", oldRunSpec, len(runs), err)
	}
	if err := os.RemoveAll(filepath.Join(dest, "run")); err != nil {
		return err
	}
	return copyTree(runs[0], filepath.Join(dest, "run"))
}

// usedLibraries are the built-in libraries a spec names, with the version
// the commit's runner had.
func usedLibraries(t *testing.T, spec string, at map[string]int) map[string]int {
	t.Helper()
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	var sf struct {
		Templates struct {
			Use yaml.Node `yaml:"use"`
		} `yaml:"templates"`
	}
	_ = yaml.Unmarshal(data, &sf)
	var names []string
	switch sf.Templates.Use.Kind {
	case yaml.ScalarNode:
		names = []string{sf.Templates.Use.Value}
	case yaml.SequenceNode:
		for _, n := range sf.Templates.Use.Content {
			names = append(names, n.Value)
		}
	}
	out := map[string]int{}
	for _, n := range names {
		if v, ok := at[n]; ok {
			out[n] = v
		}
	}
	return out
}

// copyTree copies the regular files under src (no Go files, no run
// folders) to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == "runs" || d.Name() == "gen" {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
}

// TestCompatCorpus runs today's runner on every spec of the corpus against
// the same scripted server. Each spec must still validate, send the same
// request bytes and end with the same exit code, or CHANGELOG.md must name
// the change:
//   - requests that differ must be the same again with the spec's
//     libraries pinned to the versions it resolved to at its commit, and
//     CHANGELOG.md must name every version since (LIB@N);
//   - a spec no longer valid must use a template a library version removed,
//     which CHANGELOG.md names; pinned to the version before, it is valid;
//   - another exit code must be one CHANGELOG.md names (exit N).
func TestCompatCorpus(t *testing.T) {
	bin := runnerBinary(t)
	changelog, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(compatDir)
	if err != nil {
		t.Fatal(err)
	}
	total, same, pinnedSame, exits := 0, 0, 0, 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(compatDir, e.Name(), "corpus.json"))
		if err != nil {
			t.Fatal(err)
		}
		var corpus compatCorpus
		if err := json.Unmarshal(data, &corpus); err != nil {
			t.Fatal(err)
		}
		for _, old := range corpus.Records {
			total++
			t.Run(corpus.Commit+"/"+old.Spec, func(t *testing.T) {
				root := filepath.Join(t.TempDir(), "examples")
				if err := copyTree(filepath.Join(compatDir, corpus.Commit, "examples"), root); err != nil {
					t.Fatal(err)
				}
				now := runCompat(t, bin, root, old.Spec, old.Inputs)
				if old.Valid && !now.Valid {
					removed := removedTemplatesUsed(t, filepath.Join(root, old.Spec))
					if len(removed) == 0 {
						t.Fatalf("valid at %s, invalid now, and it uses no removed template", corpus.Commit)
					}
					for _, name := range removed {
						if !bytes.Contains(changelog, []byte("`"+name+"`")) {
							t.Errorf("uses %s, removed, which CHANGELOG.md does not name", name)
						}
					}
				}
				if equalStrings(now.Requests, old.Requests) && now.Exit == old.Exit || truncatedAlike(now, old) {
					same++
					return
				}
				// A difference the corpus found that no pin takes back is
				// named in CHANGELOG.md by COMMIT/SPEC, with its cause.
				declared := bytes.Contains(changelog, []byte("`"+corpus.Commit+"/"+old.Spec+"`"))
				// The way back: pinned to the versions it resolved to then.
				var pins []string
				for lib, v := range old.Libraries {
					pins = append(pins, "--pin", templates.Ref(lib, v))
					for n := v + 1; n <= templates.Newest(lib); n++ {
						if !bytes.Contains(changelog, []byte("`"+templates.Ref(lib, n)+"`")) {
							t.Errorf("CHANGELOG.md does not name %s, which the spec gets now instead of %s", templates.Ref(lib, n), templates.Ref(lib, v))
						}
					}
				}
				spec := filepath.Join(root, old.Spec)
				if len(pins) > 0 {
					if out, err := exec.Command(bin, append([]string{"migrate", spec}, pins...)...).CombinedOutput(); err != nil {
						if !declared {
							t.Errorf("runner migrate %v: %v\n%s", pins, err, out)
						}
						return
					}
				}
				pinned := runCompat(t, bin, root, old.Spec, old.Inputs)
				if !equalStrings(pinned.Requests, old.Requests) && !truncatedAlike(pinned, old) && !declared {
					if equalStrings(pinned.Prompts, old.Prompts) {
						t.Errorf("pinned to %v: the same prompts, other request bytes (%d of %d requests differ): a change of request format that CHANGELOG.md must name", pins, differing(pinned.Requests, old.Requests), len(old.Requests))
					} else {
						t.Errorf("pinned to %v: %d of %d requests (%d now) still differ in their prompts", pins, differing(pinned.Prompts, old.Prompts), len(old.Prompts), len(pinned.Prompts))
					}
				} else if equalStrings(pinned.Requests, old.Requests) || truncatedAlike(pinned, old) {
					pinnedSame++
				}
				if declared {
					t.Logf("declared in CHANGELOG.md as %s/%s", corpus.Commit, old.Spec)
				}
				if now.Exit != old.Exit {
					exits++
					if !bytes.Contains(changelog, []byte(fmt.Sprintf("exit %d", now.Exit))) {
						t.Errorf("exit %d at %s, exit %d now: CHANGELOG.md names no change to exit %d", old.Exit, corpus.Commit, now.Exit, now.Exit)
					}
				}
			})
		}
	}
	t.Logf("%d specs of %d commits: %d the same, %d the same once pinned to the versions of their commit, %d with another exit code", total, len(entries), same, pinnedSame, exits)
	if total == 0 {
		t.Fatal("the corpus is empty")
	}
}

// removedTemplatesUsed are the templates a spec names that a version of
// a built-in library removed.
func removedTemplatesUsed(t *testing.T, spec string) []string {
	t.Helper()
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, lib := range templates.Libraries() {
		for _, v := range templates.Versions(lib) {
			for file := range v.Files {
				if _, ok := templates.Removed(lib, file); ok && bytes.Contains(data, []byte(lib+"/"+strings.TrimSuffix(file, ".tmpl"))) {
					out = append(out, lib+"/"+strings.TrimSuffix(file, ".tmpl"))
				}
			}
		}
	}
	sort.Strings(out)
	return slicesCompact(out)
}

func slicesCompact(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// truncatedAlike: two runs that failed the same way (the same exit, a
// failure) sent the same requests up to the failure. Calls made at once
// with the one that failed may or may not have gone out before the run
// stopped, so one's requests need only be among the other's.
func truncatedAlike(a, b compatRecord) bool {
	if a.Exit != b.Exit || a.Exit != 1 {
		return false
	}
	return differing(a.Requests, b.Requests) == 0 || differing(b.Requests, a.Requests) == 0
}

// differing counts the entries of a (a sorted multiset) not in b.
func differing(a, b []string) int {
	in := map[string]int{}
	for _, s := range b {
		in[s]++
	}
	n := 0
	for _, s := range a {
		if in[s] > 0 {
			in[s]--
		} else {
			n++
		}
	}
	return n
}

// bin is the runner the corpus test runs; TestMain removes it.
var bin runtest.Binary

func runnerBinary(t *testing.T) string {
	t.Helper()
	return bin.Path(t, "../../cmd/runner")
}

func TestMain(m *testing.M) {
	code := runtest.IsolateCache(m)
	bin.Remove()
	os.Exit(code)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestCompatOldRuns: the run directory each earlier runner left (for the
// reasoning debate) still works with today's runner: show lists its calls,
// resume refuses the completed run and writes nothing, and a replay of it
// by the spec of its commit ends as it did, warning only if its prompts
// changed.
func TestCompatOldRuns(t *testing.T) {
	bin := runnerBinary(t)
	dirs, err := filepath.Glob(filepath.Join(compatDir, "*", "run"))
	if err != nil || len(dirs) < 3 {
		t.Fatalf("%d old run directories in the corpus (%v), want one per commit", len(dirs), err)
	}
	for _, saved := range dirs {
		commit := filepath.Base(filepath.Dir(saved))
		t.Run(commit, func(t *testing.T) {
			tmp := t.TempDir()
			dir := filepath.Join(tmp, "run")
			if err := copyTree(saved, dir); err != nil {
				t.Fatal(err)
			}
			before := readTree(t, dir)
			run := func(args ...string) (int, string, string) {
				cmd := exec.Command(bin, args...)
				cmd.Dir = tmp
				cmd.Env = []string{"HOME=" + tmp, "PATH=" + os.Getenv("PATH"), "RUNNER_CACHE_DIR=" + t.TempDir()}
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return ee.ExitCode(), stdout.String(), stderr.String()
				}
				if err != nil {
					t.Fatal(err)
				}
				return 0, stdout.String(), stderr.String()
			}
			if code, out, stderr := run("show", dir); code != 0 || !strings.Contains(out, "answer/round=1/a") {
				t.Errorf("show: exit %d\n%s%s", code, out, stderr)
			}
			if code, _, stderr := run("resume", dir); code != 1 || !strings.Contains(stderr, "already completed") || !strings.Contains(stderr, "nothing in "+dir+" was changed") {
				t.Errorf("resume of the completed run: exit %d\n%s", code, stderr)
			}
			after := readTree(t, dir)
			for name, data := range before {
				if after[name] != data {
					t.Errorf("%s changed", name)
				}
			}
			if len(after) != len(before) {
				t.Errorf("%d files before, %d after", len(before), len(after))
			}
			spec := filepath.Join(tmp, "examples")
			if err := copyTree(filepath.Join(compatDir, commit, "examples"), spec); err != nil {
				t.Fatal(err)
			}
			// A journal with request digests is checked call by call; one
			// without (a runner from before them) cannot be, which a replay
			// says and --strict refuses.
			journal, err := os.ReadFile(filepath.Join(dir, "journal.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			replay := func(strict bool) (int, string) {
				args := []string{"run", filepath.Join(spec, oldRunSpec), "--replay", dir, "--runs-dir", filepath.Join(tmp, "runs")}
				if strict {
					args = append(args, "--strict")
				}
				code, _, stderr := run(args...)
				return code, stderr
			}
			if bytes.Contains(journal, []byte(`"request_digest"`)) {
				if code, stderr := replay(true); code != 0 {
					t.Errorf("strict replay by the spec of %s: exit %d\n%s", commit, code, stderr)
				}
				return
			}
			if code, stderr := replay(false); code != 0 || !strings.Contains(stderr, "served from the recording unchecked") {
				t.Errorf("replay of a journal without request digests: exit %d\n%s", code, stderr)
			}
			if code, stderr := replay(true); code != 1 || !strings.Contains(stderr, "does not say what its request was") {
				t.Errorf("strict replay of a journal without request digests: exit %d\n%s", code, stderr)
			}
		})
	}
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		out[p] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
