package runtime

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/debate-runner/runner/runtime/images"
	"github.com/debate-runner/runner/runtime/rundir"
)

// stageImages queues the images the run's image inputs name into the new
// run's directory (images/, by digest), so that a resume or a replay of
// the run sends the same bytes; the paths they were read from are not
// kept. An image input whose bytes are not held (a recorded run's, whose
// directory lacks them) stops the run before it starts.
func (r *Run) stageImages(files *rundir.Batch) error {
	made := false
	for _, in := range r.Plan.Inputs {
		s, _ := r.inputs[in.Name].(string)
		if !in.Image || s == "" {
			continue
		}
		fs, err := images.Files(r.Dir, s)
		if err != nil {
			return fmt.Errorf("input %s: %w", in.Name, err)
		}
		if len(fs) > 0 && !made {
			if err := os.MkdirAll(images.Dir(r.Dir), 0o755); err != nil {
				return err
			}
			files.Folder(images.Dir(r.Dir))
			made = true
		}
		for _, p := range slices.Sorted(maps.Keys(fs)) {
			files.Stage(p, fs[p])
		}
	}
	return nil
}
