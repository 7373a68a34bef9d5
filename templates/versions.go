package templates

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing/fstest"
)

// Versions of the embedded libraries.
//
// A text change to a file of a built-in library (a template, a schema, the
// verdict presets) is a new version of that library; every older version
// stays in the binary with its bytes, so that a spec naming one
// (`templates: {use: [reasoning@1]}`) renders the same prompts with every
// later runner. versions.json lists each version's files and their SHA-256
// digests; a library's folder holds its newest version, and history/LIB/N/
// holds the files of version N whose bytes differ from the newest (or that
// the newest no longer has). TestVersionsKeepTheirBytes checks both.

//go:embed versions.json
var versionsJSON []byte

//go:embed history
var history embed.FS

// Version is one version of a built-in library.
type Version struct {
	Version int `json:"version"`
	// Since is the commit of this repository that made the version, and
	// Date its day.
	Since string `json:"since"`
	Date  string `json:"date"`
	// Files are the version's files and their SHA-256 digests (hex).
	Files map[string]string `json:"files"`
}

// Removal is a file a version of a library removed, and what replaced it.
type Removal struct {
	// In is the first version without the file.
	In int `json:"in"`
	// Successor says what replaced it.
	Successor string `json:"successor"`
}

type libraryVersions struct {
	Versions []Version          `json:"versions"`
	Removed  map[string]Removal `json:"removed,omitempty"`
}

var (
	versionsOnce sync.Once
	versions     map[string]libraryVersions
	versionsErr  error
)

func loadVersions() (map[string]libraryVersions, error) {
	versionsOnce.Do(func() {
		versionsErr = json.Unmarshal(versionsJSON, &versions)
	})
	return versions, versionsErr
}

// Versions lists the versions of a built-in library, oldest first.
func Versions(lib string) []Version {
	v, err := loadVersions()
	if err != nil {
		return nil
	}
	return v[lib].Versions
}

// Newest is the newest version of a built-in library (0 for none).
func Newest(lib string) int {
	vs := Versions(lib)
	if len(vs) == 0 {
		return 0
	}
	return vs[len(vs)-1].Version
}

// Split reads a library reference NAME or NAME@N. pinned says whether it
// names a version; ok is false for an @ without a version number.
func Split(ref string) (name string, version int, pinned, ok bool) {
	i := strings.LastIndexByte(ref, '@')
	if i < 0 {
		return ref, 0, false, true
	}
	n, err := strconv.Atoi(ref[i+1:])
	if err != nil || n < 1 || strings.HasPrefix(ref[i+1:], "+") || strings.HasPrefix(ref[i+1:], "0") {
		return ref[:i], 0, true, false
	}
	return ref[:i], n, true, true
}

// Ref writes the reference to version v of lib.
func Ref(lib string, v int) string { return lib + "@" + strconv.Itoa(v) }

// Removed says whether a version of lib removed file (FILE.tmpl etc.), and
// what replaced it.
func Removed(lib, file string) (Removal, bool) {
	v, err := loadVersions()
	if err != nil {
		return Removal{}, false
	}
	r, ok := v[lib].Removed[file]
	return r, ok
}

// VersionFS is version v of a built-in library as a folder of its files.
func VersionFS(lib string, v int) (fs.FS, error) {
	if !Has(lib) {
		return nil, fmt.Errorf("no built-in template library %q", lib)
	}
	vs := Versions(lib)
	var ver *Version
	for i := range vs {
		if vs[i].Version == v {
			ver = &vs[i]
		}
	}
	if ver == nil {
		return nil, fmt.Errorf("template library %s has no version %d (it has %s)", lib, v, listVersions(vs))
	}
	out := fstest.MapFS{}
	for name := range ver.Files {
		data, err := fs.ReadFile(history, path.Join("history", lib, strconv.Itoa(v), name))
		if err != nil {
			if data, err = fs.ReadFile(files, path.Join(lib, name)); err != nil {
				return nil, fmt.Errorf("template library %s: %s: %w", Ref(lib, v), name, err)
			}
		}
		out[name] = &fstest.MapFile{Data: data, Mode: 0o444}
	}
	return out, nil
}

func listVersions(vs []Version) string {
	if len(vs) == 0 {
		return "none"
	}
	return fmt.Sprintf("@%d to @%d", vs[0].Version, vs[len(vs)-1].Version)
}

// Digest is a digest of version v of lib: SHA-256 over its files' names
// and digests, in name order, hex, first 16 bytes.
func Digest(lib string, v int) string {
	for _, ver := range Versions(lib) {
		if ver.Version != v {
			continue
		}
		names := make([]string, 0, len(ver.Files))
		for n := range ver.Files {
			names = append(names, n)
		}
		sort.Strings(names)
		h := sha256.New()
		for _, n := range names {
			fmt.Fprintf(h, "%s\x00%s\x00", n, ver.Files[n])
		}
		return hex.EncodeToString(h.Sum(nil)[:16])
	}
	return ""
}

// VersionOf finds the version of lib whose files are these (name to
// SHA-256 hex digest), for a spec whose libraries were read back from a
// run's saved copy or an older checkout; 0 when none is. A checkout from
// before a file was added to a version (additions make no new version)
// has fewer files: every file it has must match.
func VersionOf(lib string, digests map[string]string) int {
	subset := 0
	for _, ver := range Versions(lib) {
		same := true
		for n, d := range digests {
			if ver.Files[n] != d {
				same = false
				break
			}
		}
		switch {
		case same && len(ver.Files) == len(digests):
			return ver.Version
		case same && subset == 0:
			subset = ver.Version
		}
	}
	return subset
}
