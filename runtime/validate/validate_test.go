package validate

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
)

const example = "../../examples/reasoning-debate/"

// TestFilesSpecsAndTestFiles checks a valid spec, its test file and an
// invalid spec in one call: ok lines for the valid ones, the invalid one's
// diagnostic with its position, and exit 4 counting it.
func TestFilesSpecsAndTestFiles(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nname: bad\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := Files([]string{example + "spec.yaml", example + "spec.test.yaml", bad}, Options{Registry: nodes.Registry(), Getenv: os.Getenv}, &stdout, &stderr)
	if exitcode.Of(err) != exitcode.InvalidSpec || err.Error() != "1 spec is invalid" {
		t.Fatalf("err = %v (exit %d), want 1 spec is invalid (exit 4)", err, exitcode.Of(err))
	}
	want := example + "spec.yaml: ok\n" + example + "spec.test.yaml: ok (test file)\n"
	if stdout.String() != want {
		t.Errorf("stdout = %q, want %q", stdout.String(), want)
	}
	if !strings.Contains(stderr.String(), bad+":1:1: error: the spec is missing required key") {
		t.Errorf("stderr lacks the diagnostic at %s:1:1: %q", bad, stderr.String())
	}
}

// TestFilesJSON prints every diagnostic as one JSON array on stdout, and
// [] when there is none.
func TestFilesJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := Files([]string{example + "spec.yaml"}, Options{Registry: nodes.Registry(), JSON: true}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(stdout.String()) != "[]" || stderr.Len() != 0 {
		t.Errorf("stdout %q, stderr %q; want [] and nothing", stdout.String(), stderr.String())
	}
	missing := filepath.Join(t.TempDir(), "x.test.yaml")
	if err := os.WriteFile(missing, []byte("spec: nowhere.yaml\ncases:\n  - name: c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	err := Files([]string{missing}, Options{Registry: nodes.Registry(), JSON: true}, &stdout, &stderr)
	if exitcode.Of(err) != exitcode.InvalidSpec {
		t.Fatalf("err = %v, want exit 4", err)
	}
	var diags []map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &diags); err != nil || len(diags) == 0 {
		t.Fatalf("stdout is no array of diagnostics: %v\n%s", err, stdout.String())
	}
}
