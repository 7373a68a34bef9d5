package dotenv

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".env")
	text := `# keys for the runner
OPENAI_API_KEY=sk-abc # personal key
export AZURE_KEY="az 123" # quoted, with a comment
SINGLE='literal $HOME # not a comment'
DOUBLE="line1\nline2"
EMPTY=
  SPACED = value with spaces  
URL=http://localhost:1234/v1#anchor
REF=${OPENAI_API_KEY}-x
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"OPENAI_API_KEY": "sk-abc",
		"AZURE_KEY":      "az 123",
		"SINGLE":         "literal $HOME # not a comment",
		"DOUBLE":         "line1\nline2",
		"EMPTY":          "",
		"SPACED":         "value with spaces",
		"URL":            "http://localhost:1234/v1#anchor",
		"REF":            "sk-abc-x",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Read =\n%q\nwant\n%q", got, want)
	}
}

func TestReadMissingAndBroken(t *testing.T) {
	dir := t.TempDir()
	got, err := Read(filepath.Join(dir, ".env"))
	if err != nil || len(got) != 0 {
		t.Errorf("missing file: %v, %v; want no variables and no error", got, err)
	}
	path := filepath.Join(dir, "broken.env")
	if err := os.WriteFile(path, []byte("KEY=\"unterminated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("broken file: error %v, want one naming %s", err, path)
	}
}
