package main

import "errors"

type runCmd struct {
	File string `arg:"" name:"FILE" help:"Spec file."`
}

func (c *runCmd) Run(e *env) error {
	return withCode(exitFailure, errors.New("run is not available in this build yet"))
}
