// Package dotenv reads .env files: KEY=VALUE lines as docker compose and
// most tools write them, with comments (a whole line, or after a value
// following a space), single and double quotes (double quotes take \n
// escapes), an optional "export " prefix, and $NAME references to earlier
// keys of the file in unquoted and double-quoted values. Parsing is done by
// github.com/joho/godotenv, which users' other tools mostly agree with.
package dotenv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/joho/godotenv"
)

// Read returns the variables of the file at path. A missing file is no
// error: it gives no variables.
func Read(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars, err := godotenv.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return vars, nil
}
