package view

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The start form's files: the page reads each file the user picks and
// sends it in the start request (JSON, base64), so an upload passes the
// same checks as any acting request (token, origin, JSON body under
// MaxActBody). The files become the new run's context folder, <run>/context,
// which read_file and list_files read, as runner run --context DIR gives.
// Every name is checked and every size counted before anything is written;
// the files are written to a hidden folder of the runs folder that the run
// moves into its directory as it starts, or that is removed.

// UploadFile is a file of the start form.
type UploadFile struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

const (
	// MaxUploadFile is the largest file the start form takes.
	MaxUploadFile = 1 << 20
	// MaxUploadTotal is the most the start form's files may hold together.
	MaxUploadTotal = 2 << 20
	// MaxUploadFiles is the most files the start form takes.
	MaxUploadFiles = 100
	// maxUploadName is the longest file name, in bytes.
	maxUploadName = 200
)

// UploadName checks a file name of the start form: a plain base name, or
// an error saying why not. Nothing is made of a name that is refused (no
// path is cut off it): a name with a separator was not made by a browser.
func UploadName(name string) error {
	switch {
	case name == "":
		return errors.New("a file has no name")
	case len(name) > maxUploadName:
		return fmt.Errorf("a file's name is over %d bytes", maxUploadName)
	case !utf8.ValidString(name):
		return fmt.Errorf("%q is not UTF-8", name)
	case name == "." || name == "..":
		return fmt.Errorf("%q is not a file name", name)
	case strings.ContainsAny(name, `/\:`):
		return fmt.Errorf("%q has a path in it: give a file's name only", name)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("%q is a hidden name", name)
	case strings.HasSuffix(name, " ") || strings.HasSuffix(name, "."):
		return fmt.Errorf("%q ends with a space or a dot", name)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError }) >= 0:
		return fmt.Errorf("%q has a control character in it", name)
	}
	return nil
}

// checkUploads checks the start form's files, each problem at the
// "files" field.
func checkUploads(files []UploadFile) []FieldError {
	var problems []FieldError
	bad := func(format string, a ...any) {
		problems = append(problems, FieldError{Field: "files", Message: fmt.Sprintf(format, a...)})
	}
	if len(files) > MaxUploadFiles {
		bad("%d files: give at most %d", len(files), MaxUploadFiles)
		return problems
	}
	seen := map[string]string{}
	total := 0
	for _, f := range files {
		if err := UploadName(f.Name); err != nil {
			bad("%v", err)
			continue
		}
		// Names that differ in case alone are one file on some systems.
		key := strings.ToLower(f.Name)
		if other, ok := seen[key]; ok {
			bad("%q and %q: two files of one name", other, f.Name)
			continue
		}
		seen[key] = f.Name
		if len(f.Data) > MaxUploadFile {
			bad("%s is %d bytes: a file may have at most %d (1 MB)", f.Name, len(f.Data), MaxUploadFile)
		}
		total += len(f.Data)
	}
	if total > MaxUploadTotal {
		bad("the files have %d bytes together: at most %d (2 MB)", total, MaxUploadTotal)
	}
	return problems
}

// writeUploads writes checked files to a new hidden folder of root and
// returns it; on a failure it leaves nothing.
func writeUploads(root string, files []UploadFile) (dir string, err error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	dir, err = os.MkdirTemp(root, ".upload-*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
			dir = ""
		}
	}()
	for _, f := range files {
		if err := UploadName(f.Name); err != nil {
			return "", err
		}
		fh, err := os.OpenFile(filepath.Join(dir, f.Name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return "", err
		}
		_, err = fh.Write(f.Data)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", err
		}
	}
	return dir, nil
}
