package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// A run's workflow code is the engine's flow walk, and the client that
// submits a run walks the same flow to record it: both must be the same
// build. Rather than refuse a run of another build, workers take part in
// Temporal's Worker Versioning: the workers polling a task queue form a
// Worker Deployment (named after the queue), each runner build a version
// of it (build id: the runner version), and a run is pinned at submission
// to the submitter's build. Workers of a new build can then start beside
// the old ones at any time: new runs go to the build of the client that
// submits them, and runs in flight stay on theirs until they end, never
// replayed on code they did not start on. Gates (gate.go) are shared by
// every build and upgrade automatically to the deployment's current
// version, which each worker sets to its own build when it starts: a
// change to the commands a gate makes must keep old gates replaying
// (workflow.GetVersion), as their histories move from build to build.

// DeploymentName is the Worker Deployment of the workers polling taskQueue.
func DeploymentName(taskQueue string) string { return taskQueue }

// Version is the deployment version of a runner build on taskQueue.
func Version(taskQueue, buildID string) worker.WorkerDeploymentVersion {
	return worker.WorkerDeploymentVersion{DeploymentName: DeploymentName(taskQueue), BuildID: buildID}
}

// WorkerOptions makes a worker of build buildID on taskQueue a version of
// the queue's deployment.
func WorkerOptions(taskQueue, buildID string) worker.Options {
	return worker.Options{DeploymentOptions: worker.DeploymentOptions{
		UseVersioning: true, Version: Version(taskQueue, buildID),
	}}
}

// StartOptions start workflow id on taskQueue pinned to build buildID:
// only workers of that build make it, from its first step to its last.
func StartOptions(id, taskQueue, buildID string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID: id, TaskQueue: taskQueue,
		VersioningOverride: &client.PinnedVersioningOverride{Version: Version(taskQueue, buildID)},
	}
}

// Promote makes build buildID the current version of taskQueue's
// deployment, where gates (and workflows started without a pinned
// build) go. A version exists once its first worker has polled, so a
// worker calls it after starting, and it waits for the server to know it.
func Promote(ctx context.Context, cl client.Client, taskQueue, buildID string) error {
	h := cl.WorkerDeploymentClient().GetHandle(DeploymentName(taskQueue))
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: buildID})
		if err == nil {
			return nil
		}
		var notFound *serviceerror.NotFound
		var precondition *serviceerror.FailedPrecondition
		if !errors.As(err, &notFound) && !errors.As(err, &precondition) {
			return fmt.Errorf("making build %s the current version of deployment %s: %w", buildID, DeploymentName(taskQueue), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("making build %s the current version of deployment %s: the server did not see this worker's version within a minute: %w", buildID, DeploymentName(taskQueue), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// HasBuild reports whether a worker of build buildID has polled
// taskQueue: a run pinned to a build no worker runs waits until one does.
func HasBuild(ctx context.Context, cl client.Client, taskQueue, buildID string) (bool, error) {
	// A worker polling now says so at once; the deployment's record of
	// its versions can lag seconds behind its first poll (measured: up to
	// 5 s on a busy dev server, while the client waited to follow its
	// runs), and still knows a version whose workers are between polls.
	if q, err := cl.DescribeTaskQueue(ctx, taskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW); err == nil {
		for _, p := range q.GetPollers() {
			if d := p.GetDeploymentOptions(); d.GetBuildId() == buildID && d.GetDeploymentName() == DeploymentName(taskQueue) {
				return true, nil
			}
		}
	}
	h := cl.WorkerDeploymentClient().GetHandle(DeploymentName(taskQueue))
	_, err := h.DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: buildID})
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return false, nil
	}
	return err == nil, err
}
