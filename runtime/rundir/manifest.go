package rundir

import (
	"path/filepath"

	"github.com/debate-runner/runner/runtime/result"
)

// Manifest is run.json (see result.Manifest: the records of a run
// directory are typed in package result, which readers import alone).
type Manifest = result.Manifest

// ModelInfo records a model's parameters in the manifest.
type ModelInfo = result.ModelInfo

// PriceInfo is a model's price per million tokens in the manifest.
type PriceInfo = result.PriceInfo

// ReadManifest reads a run directory's run.json.
func ReadManifest(dir string) (Manifest, error) { return result.ReadManifest(dir) }

// WriteManifest writes a run directory's run.json atomically.
func WriteManifest(dir string, m Manifest) error {
	return WriteJSON(filepath.Join(dir, "run.json"), m)
}
