package view_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/view"
)

// FuzzUploadName: a file name the start form takes is one plain name: it
// stays in the folder it is written to, as the only entry there, and reads
// back as written; no name with a separator, "..", a control character or
// nothing in it is taken.
func FuzzUploadName(f *testing.F) {
	for _, s := range []string{"notes.md", "../x", "/etc/passwd", `a\b`, "..", "", "a\x00b", "C:x", ".env", "résumé.txt"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := view.UploadName(name)
		unsafe := name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) ||
			strings.IndexFunc(name, unicode.IsControl) >= 0 || filepath.IsAbs(name)
		if unsafe && err == nil {
			t.Fatalf("%q was taken", name)
		}
		if err != nil {
			return
		}
		if !filepath.IsLocal(name) || filepath.Base(name) != name {
			t.Fatalf("%q was taken but is not a plain local name", name)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o600); err != nil {
			t.Skipf("this file system refuses %q: %v", name, err)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 || entries[0].Name() != name {
			t.Fatalf("%q was written as %v", name, entries)
		}
	})
}

// randomUploads draws a set of files: plain names, or (unsafe) one name
// made a traversal, a path, a control character, a duplicate or empty.
func randomUploads(rng *rand.Rand, unsafe bool) []view.UploadFile {
	letters := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_ éü"
	word := func() string {
		b := []rune{}
		for n := 1 + rng.IntN(12); n > 0; n-- {
			b = append(b, []rune(letters)[rng.IntN(len([]rune(letters)))])
		}
		return strings.TrimSpace(string(b)) + "x"
	}
	var files []view.UploadFile
	seen := map[string]bool{}
	for n := 1 + rng.IntN(4); n > 0; n-- {
		name := word() + []string{".md", ".txt", "", ".json"}[rng.IntN(4)]
		if seen[strings.ToLower(name)] {
			continue
		}
		seen[strings.ToLower(name)] = true
		data := make([]byte, rng.IntN(3000))
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		files = append(files, view.UploadFile{Name: name, Data: data})
	}
	if unsafe {
		i := rng.IntN(len(files))
		name := files[i].Name
		files[i].Name = []func() string{
			func() string { return "../" + name },
			func() string { return "../../" + strings.Repeat("../", rng.IntN(3)) + name },
			func() string { return "/tmp/" + name },
			func() string { return word() + "/" + name },
			func() string { return word() + `\..\` + name },
			func() string { return ".." },
			func() string { return "." },
			func() string { return "" },
			func() string { return name[:len(name)/2] + string(rune(rng.IntN(32))) + name[len(name)/2:] },
			func() string { return name + "\x7f" },
			func() string { return "C:" + name },
			func() string { return "." + name },
		}[rng.IntN(12)]()
		if rng.IntN(4) == 0 {
			// Or a second file of the same name (in another case).
			files[i].Name = name
			files = append(files, view.UploadFile{Name: strings.ToUpper(name), Data: []byte("again")})
		}
	}
	return files
}

// TestUploadsProperty: start requests with generated files. A set of plain
// names starts a run whose context folder, inside its directory, holds
// exactly those files with the same bytes (and run.json names it); a set
// with one unsafe name is refused at the files field with nothing written.
func TestUploadsProperty(t *testing.T) {
	root, specs := t.TempDir(), readSpecs(t)
	srv := llmtest.New(t, func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "read"} })
	ts, v := actingServer(t, root, specs, runtest.Env(srv.URL, "sk-view-test"))
	host := strings.TrimPrefix(ts.URL, "http://")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 36))
	t.Logf("seed %d", seed)
	started := 0
	for i := 0; i < 40; i++ {
		unsafe := i%4 != 0
		files := randomUploads(rng, unsafe)
		before := snapshot(t, root)
		req := view.StartRequest{Spec: "spec.yaml", Inputs: map[string]string{"question": "What do the files say?"}, Files: files}
		rec := act(t, v, host, "/api/act/start", req)
		v.Wait()
		if unsafe {
			if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), `"field":"files"`) {
				t.Fatalf("unsafe files %q: %d %s", names(files), rec.Code, rec.Body)
			}
			if snapshot(t, root) != before {
				t.Fatalf("unsafe files %q were refused but the runs folder changed", names(files))
			}
			continue
		}
		if rec.Code != http.StatusOK {
			t.Fatalf("files %q: %d %s", names(files), rec.Code, rec.Body)
		}
		started++
		var got struct{ ID string }
		_ = json.Unmarshal(rec.Body.Bytes(), &got)
		dir := filepath.Join(root, got.ID)
		ctxDir := filepath.Join(dir, "context")
		entries, err := os.ReadDir(ctxDir)
		if err != nil || len(entries) != len(files) {
			t.Fatalf("files %q: the context folder holds %v (%v)", names(files), entries, err)
		}
		for _, f := range files {
			data, err := os.ReadFile(filepath.Join(ctxDir, f.Name))
			if err != nil || !bytes.Equal(data, f.Data) {
				t.Fatalf("%q: %d bytes read back of %d (%v)", f.Name, len(data), len(f.Data), err)
			}
		}
		if res, err := result.Read(dir); err != nil || res.Status != result.StatusCompleted {
			t.Fatalf("files %q: the run %v %v", names(files), res, err)
		}
		m, err := result.ReadManifest(dir)
		if err != nil || m.ContextDir != ctxDir {
			t.Fatalf("run.json's context folder %q, want %q (%v)", m.ContextDir, ctxDir, err)
		}
		if left, _ := filepath.Glob(filepath.Join(root, ".upload-*")); len(left) > 0 {
			t.Fatalf("the upload folder was left: %v", left)
		}
	}
	if started == 0 {
		t.Fatal("no draw started a run")
	}
}

func names(files []view.UploadFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}

// endlessUpload is a start request with one file whose content never
// ends (size bytes in all, made as read; reading past stop fails).
type endlessUpload struct {
	size, stop, read int
}

func (e *endlessUpload) Read(p []byte) (int, error) {
	const head = `{"spec":"spec.yaml","inputs":{"question":"q"},"files":[{"name":"big.bin","data":"`
	if e.read >= e.size {
		return 0, io.EOF
	}
	if e.read >= e.stop {
		return 0, errors.New("read past twice the limit")
	}
	p = p[:min(len(p), e.size-e.read)]
	n := 0
	if e.read < len(head) {
		n = copy(p, head[e.read:])
	}
	copy(p[n:], aaaa[:min(len(p)-n, len(aaaa))])
	n = min(len(p), n+len(aaaa))
	e.read += n
	return n, nil
}

var aaaa = bytes.Repeat([]byte("A"), 64<<10)

// TestUploadLimits: a file over MaxUploadFile, files over MaxUploadTotal
// together, too many files: each refused at the files field; a 1 GB
// upload refused with 413 before it is read when its length is said, once
// the limit is read when it is not. Nothing is written.
func TestUploadLimits(t *testing.T) {
	root := t.TempDir()
	ts, v := actingServer(t, root, readSpecs(t), nil)
	host := strings.TrimPrefix(ts.URL, "http://")
	over := []struct {
		what  string
		files []view.UploadFile
	}{
		{"a file over the limit", []view.UploadFile{{Name: "big.bin", Data: make([]byte, view.MaxUploadFile+1)}}},
		{"files over the total", []view.UploadFile{{Name: "a", Data: make([]byte, view.MaxUploadFile)}, {Name: "b", Data: make([]byte, view.MaxUploadFile)}, {Name: "c", Data: []byte{1}}}},
		{"too many files", func() []view.UploadFile {
			var fs []view.UploadFile
			for i := 0; i <= view.MaxUploadFiles; i++ {
				fs = append(fs, view.UploadFile{Name: fmt.Sprintf("f%d", i)})
			}
			return fs
		}()},
	}
	for _, c := range over {
		req := view.StartRequest{Spec: "spec.yaml", Inputs: map[string]string{"question": "q"}, Files: c.files}
		if rec := act(t, v, host, "/api/act/start", req); rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), `"field":"files"`) {
			t.Errorf("%s: %d %s", c.what, rec.Code, rec.Body)
		}
	}
	for _, said := range []bool{true, false} {
		huge := &endlessUpload{size: 1 << 30, stop: 2 * view.MaxActBody}
		req := httptest.NewRequest(http.MethodPost, "http://"+host+"/api/act/start", huge)
		req.Host = host
		req.ContentLength = -1
		if said {
			req.ContentLength = 1 << 30
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "http://"+host)
		req.Header.Set(view.TokenHeader, testToken)
		rec := httptest.NewRecorder()
		v.Handler().ServeHTTP(rec, req)
		limit := view.MaxActBody + 1<<16
		if said {
			limit = 0
		}
		if rec.Code != http.StatusRequestEntityTooLarge || huge.read > limit {
			t.Errorf("a 1 GB upload (length said: %v): %d %s, %d bytes of it read", said, rec.Code, rec.Body, huge.read)
		}
	}
	v.Wait()
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("refused uploads left %d entries in the runs folder", len(entries))
	}
}

// readSpec is a one-call spec whose agent reads the context folder.
const readSpec = `version: 1
name: reads
inputs:
  question: {required: true}
agents:
  a: {name: Alice, tools: [read_file]}
templates:
  define:
    first: "{{.Inputs.question}}"
nodes:
  first: {kind: ask, agents: [a], template: first, record: first}
flow: [first]
outputs:
  first: map(latest("first"), {.content})
`

// readSpecs is a specs folder holding readSpec as spec.yaml.
func readSpecs(t *testing.T) string {
	t.Helper()
	specs := t.TempDir()
	if err := os.WriteFile(filepath.Join(specs, "spec.yaml"), []byte(readSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	return specs
}

// TestUploadedFileReadByRun: a run started from the view with a file
// reads it with read_file through the local OpenAI-compatible server: the
// model is given the uploaded bytes, and the run's output says them. A run
// that cannot start (no key) leaves none of its files.
func TestUploadedFileReadByRun(t *testing.T) {
	root, specs := t.TempDir(), readSpecs(t)
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		for _, m := range r.Messages {
			if m.Role == "tool" {
				return llmtest.Reply{Content: "the file says: " + m.Content}
			}
		}
		return llmtest.Reply{ToolCalls: []kit.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path": "brief.md"}`}}}
	})
	secret := "the launch is on the 3rd of March"
	start := view.StartRequest{Spec: "spec.yaml", Inputs: map[string]string{"question": "When is the launch?"},
		Files: []view.UploadFile{{Name: "brief.md", Data: []byte(secret)}}}

	// Without its key the run does not start: the files written for it
	// are removed with it.
	keyless := t.TempDir()
	kts, kv := actingServer(t, keyless, specs, nil)
	if rec := act(t, kv, strings.TrimPrefix(kts.URL, "http://"), "/api/act/start", start); rec.Code == http.StatusOK {
		t.Fatalf("a run without its key started: %s", rec.Body)
	}
	kv.Wait()
	if entries, _ := os.ReadDir(keyless); len(entries) != 0 {
		t.Errorf("a run that did not start left %d entries in the runs folder", len(entries))
	}

	ts, v := actingServer(t, root, specs, runtest.Env(srv.URL, "sk-view-test"))
	host := strings.TrimPrefix(ts.URL, "http://")
	rec := act(t, v, host, "/api/act/start", start)
	if rec.Code != http.StatusOK {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	var started struct{ ID string }
	_ = json.Unmarshal(rec.Body.Bytes(), &started)
	v.Wait()
	res, err := result.Read(filepath.Join(root, started.ID))
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("the run: %v %v", res, err)
	}
	if out := fmt.Sprint(res.Outputs["first"]); !strings.Contains(out, secret) {
		t.Errorf("the run's output %q does not say what the uploaded file says", out)
	}
}
