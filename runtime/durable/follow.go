package durable

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/llm"
)

// A run submitted to Temporal is recorded on the machine that submitted it
// by the engine itself: a local run (runtime.Start or Resume) whose calls
// are answered by a Follower, which reads the workflow's history as it
// grows and hands each call the reply its activity returned. The local run
// walks the same flow as the workflow and so asks for the same call keys;
// its journal, result.json and report.md are a local run's, made of the
// workers' replies, and the progress display follows the workers live.

// The marker the Go SDK records for a local activity, and the name of its
// result among the marker's details: part of the history format the SDK
// replays, so stable across its versions.
const (
	localActivityMarker       = "LocalActivity"
	localActivityMarkerResult = "result"
)

// Follower answers a local run's calls from a run workflow's history (it
// is the run's Options.Remote).
type Follower struct {
	c  client.Client
	id string

	mu sync.Mutex
	// changed is closed and replaced whenever something is learned.
	changed   chan struct{}
	scheduled map[int64]string // activity scheduled event id -> call key
	done      map[string]CallOutput
	failed    map[string]string
	ended     string // why the workflow ended; "" while it runs
	readErr   error
	// retries counts the retry signals read; failures are not reported
	// until it reaches awaitRetries (see Follow).
	retries, awaitRetries int
}

// retrySuffix is what the run workflow appends to the activity id of a
// call it tries again (see workflowRun.call).
var retrySuffix = regexp.MustCompile(` \(retry \d+\)$`)

// Follow starts reading the history of workflow id until ctx ends or the
// workflow does. retries is how many retry signals the workflow has been
// sent (RunStatus.Retries, plus one sent just now): until the follower has
// read that many, a failed call may be one the workflow is making again,
// and the follower waits rather than report it.
func Follow(ctx context.Context, c client.Client, id string, retries int) *Follower {
	f := &Follower{
		c: c, id: id, changed: make(chan struct{}), scheduled: map[int64]string{}, done: map[string]CallOutput{}, failed: map[string]string{},
		awaitRetries: retries,
	}
	go f.read(ctx)
	return f
}

func (f *Follower) read(ctx context.Context) {
	dc := DataConverter()
	it := f.c.GetWorkflowHistory(ctx, f.id, "", true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	read := 0
	for it.HasNext() {
		ev, err := it.Next()
		var nf *serviceerror.NotFound
		if err != nil && read == 0 && errors.As(err, &nf) {
			// A sweep's run the sweep workflow has not started yet.
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
				it = f.c.GetWorkflowHistory(ctx, f.id, "", true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
				continue
			}
		}
		if err != nil {
			f.learn(func() { f.readErr = fmt.Errorf("reading the history of workflow %s: %w", f.id, err) })
			return
		}
		read++
		f.learn(func() {
			switch a := ev.Attributes.(type) {
			case *historypb.HistoryEvent_ActivityTaskScheduledEventAttributes:
				f.scheduled[ev.EventId] = retrySuffix.ReplaceAllString(a.ActivityTaskScheduledEventAttributes.ActivityId, "")
			case *historypb.HistoryEvent_ActivityTaskCompletedEventAttributes:
				key := f.scheduled[a.ActivityTaskCompletedEventAttributes.ScheduledEventId]
				var out CallOutput
				if err := dc.FromPayloads(a.ActivityTaskCompletedEventAttributes.Result, &out); err != nil {
					f.failed[key] = fmt.Sprintf("decoding the reply of call %s: %v", key, err)
					return
				}
				f.done[key] = out
				delete(f.failed, key)
			case *historypb.HistoryEvent_MarkerRecordedEventAttributes:
				// A call made as a local activity (runLocalCalls): its
				// result names it. Other markers (versions) and a local
				// activity that failed without a result (cancelled) tell
				// nothing of a call.
				m := a.MarkerRecordedEventAttributes
				res, ok := m.GetDetails()[localActivityMarkerResult]
				if m.GetMarkerName() != localActivityMarker || !ok {
					return
				}
				var out CallOutput
				if err := dc.FromPayloads(res, &out); err != nil || out.Key == "" {
					f.readErr = fmt.Errorf("decoding a call's reply in the history of workflow %s (event %d): %v", f.id, ev.EventId, err)
					return
				}
				if out.Failed != "" {
					f.failed[out.Key] = out.Failed
					return
				}
				f.done[out.Key] = out
				delete(f.failed, out.Key)
			case *historypb.HistoryEvent_ActivityTaskFailedEventAttributes:
				key := f.scheduled[a.ActivityTaskFailedEventAttributes.ScheduledEventId]
				f.failed[key] = a.ActivityTaskFailedEventAttributes.GetFailure().GetMessage()
			case *historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes:
				if a.WorkflowExecutionSignaledEventAttributes.SignalName == SignalRetry {
					// The workflow tries every failed call again.
					clear(f.failed)
					f.retries++
				}
			case *historypb.HistoryEvent_WorkflowExecutionCompletedEventAttributes:
				f.ended = "completed"
			case *historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes:
				f.ended = "failed: " + a.WorkflowExecutionFailedEventAttributes.GetFailure().GetMessage()
			case *historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes:
				f.ended = "terminated: " + a.WorkflowExecutionTerminatedEventAttributes.GetReason()
			case *historypb.HistoryEvent_WorkflowExecutionCanceledEventAttributes:
				f.ended = "cancelled"
			case *historypb.HistoryEvent_WorkflowExecutionTimedOutEventAttributes:
				f.ended = "timed out"
			case *historypb.HistoryEvent_WorkflowExecutionContinuedAsNewEventAttributes:
				f.ended = "continued as new"
			}
		})
	}
	f.learn(func() {
		if f.ended == "" && f.readErr == nil {
			f.readErr = fmt.Errorf("the history of workflow %s ended early: %w", f.id, ctx.Err())
		}
	})
}

// caughtUp reports whether the follower has read every retry signal sent.
func (f *Follower) caughtUp() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.retries >= f.awaitRetries
}

// learn changes the follower's state and wakes the calls waiting on it.
func (f *Follower) learn(change func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change()
	close(f.changed)
	f.changed = make(chan struct{})
}

// Complete implements calls.Stage: it waits until the workers have made
// the call and returns their reply. A call that failed on the workers
// fails here as an endpoint failure (the workflow waits for `runner
// resume`, which asks it to try again).
func (f *Follower) Complete(ctx context.Context, c *calls.Call) (kit.Reply, calls.Source, error) {
	for {
		f.mu.Lock()
		out, ok := f.done[c.Key]
		failure, failed := f.failed[c.Key]
		ended, readErr, changed := f.ended, f.readErr, f.changed
		f.mu.Unlock()
		switch {
		case ok:
			for _, r := range out.Retries {
				if c.OnRetry != nil {
					c.OnRetry(llm.Attempt{N: r.N, Err: errors.New(r.Error), Status: r.Status, Retryable: true, Wait: time.Duration(r.WaitMS) * time.Millisecond})
				}
			}
			for _, n := range out.Notes {
				if c.OnNote != nil {
					c.OnNote(n)
				}
			}
			return out.Reply, calls.Source(out.Source), nil
		case failed && f.caughtUp():
			return kit.Reply{}, calls.Network, &calls.EndpointError{Key: c.Key, Err: fmt.Errorf("on the Temporal workers: %s", failure)}
		case ended != "":
			return kit.Reply{}, calls.Network, fmt.Errorf("workflow %s %s without making call %s", f.id, ended, c.Key)
		case readErr != nil:
			return kit.Reply{}, calls.Network, readErr
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return kit.Reply{}, calls.Network, ctx.Err()
		}
	}
}
