package dryrun

import "github.com/debate-runner/runner/internal/runtest"

var (
	loadPlan  = runtest.LoadPlan
	writeSpec = runtest.WriteSpec
)
