package executor

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/debate-runner/runner/internal/runtest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofrs/flock"
)

// throwawayField is the flag TestNewRunFlagTouchesOneFile declares.
const throwawayField = "\t// Throwaway is a flag a test declares, and nothing reads.\n" +
	"\tThrowaway string `name:\"throwaway\" placeholder:\"WORD\" help:\"A word the run keeps.\" json:\"throwaway,omitempty\"`\n"

// TestNewRunFlagTouchesOneFile proves what docs/runs.md promises: in a copy
// of the repository, a flag that changes a run is one field of
// runflags.Flags. With that one file changed, everything builds, the flag
// is a flag of `runner run`, the word given with it is in the run's
// run.json, and TestEveryRunFlagTravels (which names no field) sees it
// reach resume, Temporal and sweeps.
func TestNewRunFlagTouchesOneFile(t *testing.T) {
	if os.Getenv("RUNNER_NEW_FLAG_COPY") != "" {
		t.Skip("running inside the copy this test made")
	}
	if testing.Short() {
		t.Skip("builds a copy of the repository; skipped with -short")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git lists the repository's files: not found")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := flagCopyDir(t, root)
	before := runtest.CopyCheckout(t, root, dir)

	const file = "runtime/runflags/runflags.go"
	text := string(before[file])
	i := strings.Index(text, "type Flags struct {\n")
	if i < 0 {
		t.Fatalf("%s no longer declares type Flags struct", file)
	}
	end := i + strings.Index(text[i:], "\n}\n") + 1
	text = text[:end] + throwawayField + text[end:]
	writeFile(t, filepath.Join(dir, file), []byte(text))

	bin := filepath.Join(t.TempDir(), "runner")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = runtest.CopyEnv("RUNNER_NEW_FLAG_COPY=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s in the copy: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("go", "vet", "./runtime/...", "./cmd/...")
	run("go", "build", "-o", bin, "./cmd/runner")
	run("go", "test", "-count=1", "-run", "^TestEveryRunFlagTravels$", "./runtime/executor")
	if help := run(bin, "run", "--help"); !strings.Contains(help, "--throwaway=WORD") {
		t.Errorf("runner run --help does not offer the new flag:\n%s", help)
	}
	work := t.TempDir()
	specPath := filepath.Join(work, "spec.yaml")
	writeFile(t, specPath, []byte(flagSpec))
	runs := filepath.Join(work, "runs")
	run(bin, "run", specPath, "--runs-dir", runs, "--no-cache", "-q", "--throwaway", "kept")
	manifests, _ := filepath.Glob(filepath.Join(runs, "*", "run.json"))
	if len(manifests) != 1 {
		t.Fatalf("the run left %d run.json files in %s, want 1", len(manifests), runs)
	}
	data, err := os.ReadFile(manifests[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m["throwaway"] != "kept" {
		t.Errorf("run.json has throwaway %v, want \"kept\":\n%s", m["throwaway"], data)
	}

	var changed []string
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name, _ := filepath.Rel(dir, path)
		name = filepath.ToSlash(name)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if old, ok := before[name]; !ok || !bytes.Equal(old, data) {
			changed = append(changed, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != 1 || changed[0] != file {
		t.Errorf("adding a run flag changed %v, want only %s", changed, file)
	}
}

// flagCopyDir is an empty folder for the copy of the repository at root,
// at the same path every time (the go command's cache then serves the
// copy's packages from one run of the test to the next), locked while the
// test uses it and removed at its end.
func flagCopyDir(t *testing.T, root string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), "runner-new-flag-"+hex.EncodeToString(sum[:6]))
	lock := flock.New(dir + ".lock")
	if err := lock.Lock(); err != nil {
		t.Fatalf("locking %s: %v", dir, err)
	}
	clean := func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing the copy: %v", err)
		}
	}
	clean()
	t.Cleanup(func() {
		clean()
		_ = lock.Unlock()
	})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
