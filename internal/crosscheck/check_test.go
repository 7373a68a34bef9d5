package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// module writes a module of one package whose lock.go calls syscall.Flock,
// which Windows does not have, and a test file that uses it.
func module(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command lists the packages: not found")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/locks\n\ngo 1.22\n",
		"lock.go": `package locks

import (
	"os"
	"syscall"
)

// Lock locks f.
func Lock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
}
`,
		"lock_test.go": `package locks

import "testing"

func TestLock(t *testing.T) { _ = Lock }
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A call that one target lacks fails that target's check, at its place,
// and only that target's.
func TestCallMissingOnOneSystem(t *testing.T) {
	dir := module(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"-C", dir, "-targets", "linux/arm64,windows/amd64,darwin/arm64"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	want := "windows/amd64: " + filepath.Join(dir, "lock.go") + ":10:17: undefined: syscall.Flock"
	if got := strings.TrimSpace(stderr.String()); !strings.Contains(got, want) {
		t.Errorf("stderr:\n%s\nwant a line:\n%s", got, want)
	}
	if strings.Contains(stderr.String(), "linux/arm64:") || strings.Contains(stderr.String(), "darwin/arm64:") {
		t.Errorf("only windows lacks Flock; stderr:\n%s", &stderr)
	}
	for _, target := range []string{"linux/arm64", "windows/amd64", "darwin/arm64"} {
		if !strings.Contains(stdout.String(), target) {
			t.Errorf("stdout has no line for %s:\n%s", target, &stdout)
		}
	}
}

// With the call behind a unix build constraint and a Windows file beside
// it, every target passes.
func TestEveryTargetPasses(t *testing.T) {
	dir := module(t)
	unix, err := os.ReadFile(filepath.Join(dir, "lock.go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lock.go"), append([]byte("//go:build unix\n\n"), unix...), 0o644); err != nil {
		t.Fatal(err)
	}
	win := "package locks\n\nimport \"os\"\n\n// Lock locks nothing here.\nfunc Lock(f *os.File) error { return nil }\n"
	if err := os.WriteFile(filepath.Join(dir, "lock_windows.go"), []byte(win), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-C", dir, "-targets", "windows/arm64,darwin/amd64"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	if n := strings.Count(stdout.String(), "packages checked"); n != 2 {
		t.Errorf("%d targets checked, want 2:\n%s", n, &stdout)
	}
}

// Without -targets, every system runner ships on is checked: Linux, macOS
// and Windows, each on amd64 and arm64.
func TestDefaultTargets(t *testing.T) {
	list, err := parseTargets(strings.Join(shipped, ","))
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, target := range list {
		have[target.String()] = true
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		for _, goarch := range []string{"amd64", "arm64"} {
			if !have[goos+"/"+goarch] {
				t.Errorf("%s/%s is not checked by default", goos, goarch)
			}
		}
	}
}

func TestBadTargets(t *testing.T) {
	for _, arg := range []string{"windows", "windows/", "/amd64", "a/b/c", ","} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"-targets", arg}, &stdout, &stderr); code != 2 {
			t.Errorf("-targets %q: exit %d, want 2", arg, code)
		}
		if !strings.Contains(stderr.String(), "-targets") {
			t.Errorf("-targets %q: stderr does not name the flag:\n%s", arg, &stderr)
		}
	}
}
