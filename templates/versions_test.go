package templates

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"path"
	"strings"
	"testing"
)

// TestVersionsKeepTheirBytes: every version of every library serves files
// whose digests are the ones versions.json recorded for it, and the newest
// is exactly the library's folder, so a text change to a built-in file
// without a new version (and the old bytes kept in history/) fails here.
func TestVersionsKeepTheirBytes(t *testing.T) {
	for _, lib := range Libraries() {
		vs := Versions(lib)
		if len(vs) == 0 {
			t.Errorf("library %s has no version in versions.json", lib)
			continue
		}
		for i, v := range vs {
			if v.Version != i+1 {
				t.Errorf("%s: version %d listed as number %d", lib, v.Version, i+1)
			}
			fsys, err := VersionFS(lib, v.Version)
			if err != nil {
				t.Fatal(err)
			}
			got := digests(t, fsys, ".")
			if len(got) != len(v.Files) {
				t.Errorf("%s: serves %d files, versions.json lists %d", Ref(lib, v.Version), len(got), len(v.Files))
			}
			for name, want := range v.Files {
				if got[name] != want {
					t.Errorf("%s: %s has digest %s, versions.json says %s", Ref(lib, v.Version), name, got[name], want)
				}
			}
		}
		newest := vs[len(vs)-1]
		current := digests(t, files, lib)
		for name, d := range current {
			if newest.Files[name] != d {
				t.Errorf("templates/%s/%s differs from %s (a text change is a new version: add it to versions.json and keep the old bytes in history/%s/%d/)",
					lib, name, Ref(lib, newest.Version), lib, newest.Version)
			}
		}
		for name := range newest.Files {
			if _, ok := current[name]; !ok {
				t.Errorf("%s lists %s, which templates/%s does not have", Ref(lib, newest.Version), name, lib)
			}
		}
		for name, r := range mustVersions(t)[lib].Removed {
			if _, still := current[name]; still || r.In < 2 || r.Successor == "" {
				t.Errorf("%s: removal of %s: %+v (the file must be gone, removed after version 1, with its successor named)", lib, name, r)
			}
		}
	}
	// Every version kept in history/ belongs to a listed version.
	_ = fs.WalkDir(history, "history", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		parts := strings.Split(p, "/")
		if len(parts) != 4 {
			t.Errorf("history file %s is not history/LIB/N/FILE", p)
			return nil
		}
		lib, num, name := parts[1], parts[2], parts[3]
		found := false
		for _, v := range Versions(lib) {
			if Ref(lib, v.Version) == lib+"@"+num && v.Files[name] != "" {
				found = true
			}
		}
		if !found {
			t.Errorf("history file %s belongs to no listed version", p)
		}
		return nil
	})
}

func mustVersions(t *testing.T) map[string]libraryVersions {
	v, err := loadVersions()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func digests(t *testing.T, fsys fs.FS, dir string) map[string]string {
	t.Helper()
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		out[e.Name()] = hex.EncodeToString(sum[:])
	}
	return out
}

// FuzzSplitRef: a reference written by Ref reads back as itself, and Split
// never accepts a version it would not write.
func FuzzSplitRef(f *testing.F) {
	for _, s := range []string{"reasoning", "reasoning@2", "a@0", "a@", "a@+1", "a@01", "x@y@3", "@7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		name, v, pinned, ok := Split(ref)
		if !pinned {
			if !ok || name != ref || strings.Contains(ref, "@") {
				t.Fatalf("Split(%q) = %q %d %v %v", ref, name, v, pinned, ok)
			}
			return
		}
		if !ok {
			return
		}
		if v < 1 || Ref(name, v) != ref {
			t.Fatalf("Split(%q) = %q@%d, which Ref writes as %q", ref, name, v, Ref(name, v))
		}
	})
}

func TestVersionOfFindsEachVersion(t *testing.T) {
	for _, lib := range Libraries() {
		for _, v := range Versions(lib) {
			if got := VersionOf(lib, v.Files); got != v.Version {
				t.Errorf("VersionOf(%s's files) = %d", Ref(lib, v.Version), got)
			}
		}
	}
}
