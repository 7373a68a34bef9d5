package rundir

import (
	"path/filepath"

	"github.com/debate-runner/runner/runtime/result"
)

// WriteManifest writes a run directory's run.json atomically (the records
// of a run directory are typed in package result, which readers import
// alone; result.ReadManifest reads it back).
func WriteManifest(dir string, m result.Manifest) error {
	return WriteJSON(filepath.Join(dir, "run.json"), m)
}
