package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/durable"
)

// BenchmarkTemporalSweep runs a dataset sweep of the reasoning debate (two
// rounds of three agents asked at once) with a fixed latency per call,
// locally and on a Temporal dev server with 1 and 2 workers (the counts in
// $RUNNER_BENCH_WORKERS, default "1,2"), and reports each wall time against
// the critical path (rounds x latency x batches of --parallel runs) and
// the local sweep's, each worker count's against the one before, and the
// requests per minute achieved against the endpoint's declared limit.
// Where each Temporal sweep's time goes per call is read from its
// workflows' histories (see sweepProfile) and reported too. Runs:
// $RUNNER_BENCH_RUNS (default 40); workers get $RUNNER_BENCH_WORKER_ARGS
// (e.g. --local-limits). Needs the Temporal CLI (see temporalCLI); run with
// -benchtime=1x.
func BenchmarkTemporalSweep(b *testing.B) {
	runs := 40
	if v, err := strconv.Atoi(os.Getenv("RUNNER_BENCH_RUNS")); err == nil && v > 0 {
		runs = v
	}
	var counts []int
	for _, f := range strings.Split(cmp.Or(os.Getenv("RUNNER_BENCH_WORKERS"), "1,2"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("RUNNER_BENCH_WORKERS=%q: want worker counts such as 1,2", os.Getenv("RUNNER_BENCH_WORKERS"))
		}
		counts = append(counts, n)
	}
	const (
		latency  = 100 * time.Millisecond
		parallel = 8
		rpm      = 3000
		rounds   = 2
	)
	goTool, err := exec.LookPath("go")
	if err != nil {
		b.Skip("go tool not on PATH")
	}
	addr := devServer(b, strings.Fields(os.Getenv("RUNNER_BENCH_SERVER_ARGS"))...)
	bin := filepath.Join(b.TempDir(), "runner")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	dataset := filepath.Join(b.TempDir(), "dataset.jsonl")
	var lines []string
	for i := range runs {
		lines = append(lines, fmt.Sprintf(`{"question":"What is the result of %d+2*3+4-5*6?","expected":%d}`, i+1, i+1+6+4-30))
	}
	if err := os.WriteFile(dataset, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	spec := filepath.Join(b.TempDir(), "spec.yaml")
	// The example's library is embedded; only the endpoint changes.
	src, err := os.ReadFile(debateSpec)
	if err != nil {
		b.Fatal(err)
	}
	src = append(src, []byte(fmt.Sprintf(`
endpoints:
  local: {base_url: "${OPENAI_BASE_URL}", api_key_env: OPENAI_API_KEY, requests_per_minute: %d}
models:
  default: {model: test-model, endpoint: local}
`, rpm))...)
	if err := os.WriteFile(spec, src, 0o644); err != nil {
		b.Fatal(err)
	}
	calls := runs * rounds * 3
	critical := time.Duration((runs+parallel-1)/parallel*rounds) * latency
	// sweep runs the sweep with workers on Temporal (0: locally) and
	// returns its wall time and, on Temporal, the sweep workflow's id.
	var start time.Time // of the last sweep
	// recorded: when the last sweep's client recorded each run, by its
	// workflow id.
	var recorded, following map[string]time.Time
	sweep := func(b *testing.B, workers int) (time.Duration, string) {
		srv := llmtest.New(b, func(r llmtest.Request) llmtest.Reply {
			rep := solver(r)
			rep.Delay = latency
			return rep
		})
		runsDir := b.TempDir()
		var started []*syncBuffer
		args := []string{"run", spec, "--dataset", dataset, "--runs-dir", runsDir, "-q", "--no-cache", "--parallel", strconv.Itoa(parallel)}
		if workers > 0 {
			queue := fmt.Sprintf("bench-%d", workers)
			args = append(args, "--temporal", addr, "--task-queue", queue)
			for range workers {
				cmd := exec.Command(bin, append([]string{"worker", "--temporal", addr, "--task-queue", queue}, strings.Fields(os.Getenv("RUNNER_BENCH_WORKER_ARGS"))...)...)
				cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY="+e2eKey, "RUNNER_CACHE_DIR="+b.TempDir())
				out := &syncBuffer{}
				cmd.Stdout, cmd.Stderr = out, out
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				})
				started = append(started, out)
			}
		}
		// Workers of a deployment run before the sweeps they take: the
		// clock starts once they poll, as the local sweep's starts with
		// nothing to wait for.
		for _, out := range started {
			waitForOutput(b, out, "polling task queue")
		}
		start = time.Now()
		var stdout, stderr strings.Builder
		vars := e2eEnv(srv)
		code := run(args, &env{stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(""), getenv: func(k string) string { return vars[k] }})
		wall := time.Since(start)
		if code != exitcode.OK || srv.Count() != calls {
			b.Fatalf("sweep on %d workers: exit %d, %d requests (want %d)\n%s\n%s", workers, code, srv.Count(), calls, stdout.String(), stderr.String())
		}
		if workers == 0 {
			return wall, ""
		}
		recs, _ := filepath.Glob(filepath.Join(runsDir, "*", "*", durable.RecordFile))
		if len(recs) == 0 {
			b.Fatalf("no %s under %s", durable.RecordFile, runsDir)
		}
		rec, _, err := durable.ReadRecord(filepath.Dir(recs[0]))
		if err != nil || rec.Sweep == "" {
			b.Fatalf("%s names no sweep: %v", recs[0], err)
		}
		// When the client finished recording each run (its result.json).
		recorded, following = map[string]time.Time{}, map[string]time.Time{}
		for _, f := range recs {
			r, _, err := durable.ReadRecord(filepath.Dir(f))
			if st, serr := os.Stat(filepath.Join(filepath.Dir(f), "result.json")); err == nil && serr == nil {
				recorded[r.WorkflowID] = st.ModTime()
			}
			if st, serr := os.Stat(f); err == nil && serr == nil {
				following[r.WorkflowID] = st.ModTime()
			}
		}
		return wall, rec.Sweep
	}
	local, _ := sweep(b, 0)
	b.ReportMetric(local.Seconds(), "local-s")
	b.ReportMetric(float64(local)/float64(critical), "local/critical")
	b.ReportMetric(float64(calls)/local.Minutes()/rpm, "local-rpm/limit")
	b.Logf("local: %.2fs, %.2f of the critical path, %.2f of the declared rate", local.Seconds(), float64(local)/float64(critical), float64(calls)/local.Minutes()/rpm)
	var prev time.Duration
	for i, workers := range counts {
		wall, id := sweep(b, workers)
		name := fmt.Sprintf("w%d", workers)
		b.ReportMetric(wall.Seconds(), name+"-s")
		b.ReportMetric(float64(wall)/float64(local), name+"/local")
		b.ReportMetric(float64(calls)/wall.Minutes()/rpm, name+"-rpm/limit")
		line := fmt.Sprintf("%d worker(s): %.2fs, %.2fx the local sweep, %.2f of the declared rate", workers, wall.Seconds(), float64(wall)/float64(local), float64(calls)/wall.Minutes()/rpm)
		if i > 0 {
			b.ReportMetric(float64(prev)/float64(wall), fmt.Sprintf("w%d-speedup-over-w%d", workers, counts[i-1]))
			line += fmt.Sprintf(", %.2fx the speed of %d", float64(prev)/float64(wall), counts[i-1])
		}
		prev = wall
		p := sweepProfile(b, addr, fmt.Sprintf("bench-%d", workers), id, runs, latency)
		p.submitS = p.sweepStart.Sub(start).Seconds()
		var lag, lastLag, followLag, inClient float64
		for i := 1; i <= runs; i++ {
			if at, ok := following[durable.ChildID(id, i)]; ok && !p.began[i].IsZero() {
				followLag += float64(at.Sub(p.began[i])) / float64(time.Millisecond) / float64(runs)
				if end, ok := recorded[durable.ChildID(id, i)]; ok {
					from := at
					if p.ended[i].After(from) {
						from = p.ended[i]
					}
					inClient += float64(end.Sub(from)) / float64(time.Millisecond) / float64(runs)
				}
			}
			if at, ok := recorded[durable.ChildID(id, i)]; ok && !p.ended[i].IsZero() {
				d := float64(at.Sub(p.ended[i])) / float64(time.Millisecond)
				lag += d / float64(runs)
				lastLag = max(lastLag, d)
			}
		}
		line += fmt.Sprintf("\n  client: a run followed %.0f ms after its workflow's start, recorded %.0f ms after its end (at most %.0f ms; %.0f ms after the later of its end and the client's following it); the sweep ended %.2fs after the client's start", followLag, lag, lastLag, inClient, p.sweepStart.Add(time.Duration(p.sweepS*float64(time.Second))).Sub(start).Seconds())
		b.ReportMetric(p.dispatch, name+"-dispatch-ms")
		b.ReportMetric(p.inActivity, name+"-in-activity-ms")
		b.ReportMetric(p.between, name+"-between-calls-ms")
		b.ReportMetric(p.runMS, name+"-run-ms")
		line += fmt.Sprintf("\n  per run: %.0f ms from its start to its end (%d rounds of %v), %.1f workflow tasks; %.0f%% of the calls made as local activities", p.runMS, rounds, latency, p.tasks, 100*p.local)
		if p.local < 1 {
			line += fmt.Sprintf("\n  per call: %.1f ms from scheduled to started, %.1f ms in the activity beyond the endpoint's latency; %.1f ms from a round's last reply to the next round's first call (a workflow task: %.1f ms dispatch, %.1f ms on the worker; a run's first: %.1f ms)",
				p.dispatch, p.inActivity, p.between, p.taskWait, p.taskRun, p.firstRun)
		}
		b.Logf("%s\n  per run: %.0f history events, %.1f KB; %.1f ms between a run's end and the next run's start\n  sweep workflow: %.2fs from the client's start to its start, %.2fs from its start to its end, %.2fs from its start to the gate's; gate: %d workflow tasks for %d calls; workflow tasks failed or timed out: %d in gates, %d in runs",
			line, p.events, p.historyKB, p.childGap, p.submitS, p.sweepS, p.toGateS, p.gateTasks, calls, p.gateFailed, p.runFailed)
		b.ReportMetric(float64(p.gateFailed+p.runFailed), name+"-failed-tasks")
		b.Logf("start-up (ms from the sweep's start): %s", p.startup)
	}
}

// profile is where a Temporal sweep's time went, read from its histories
// (means, in milliseconds unless said).
type profile struct {
	// dispatch: a call activity from scheduled to started.
	dispatch float64
	// inActivity: from started to completed, less the endpoint's latency
	// (waiting for the endpoint's gate, the request itself).
	inActivity float64
	// between: from a call's completion to the first call scheduled after
	// it in its run (the workflow's turn between rounds).
	between float64
	// events and historyKB per run workflow.
	events, historyKB float64
	// childGap: from a run workflow's completion to the next started in
	// the sweep workflow.
	childGap float64
	// taskWait and taskRun: a run's workflow task from scheduled to
	// started (the server's dispatch) and from started to completed (the
	// worker's turn of the engine).
	taskWait, taskRun float64
	// firstRun: a run's first workflow task on the worker (the spec
	// compiled, the flow started).
	firstRun float64
	// gateTasks: the gates' workflow tasks.
	gateTasks int
	// local: the share of calls made as local activities; runMS: a run
	// workflow from its start to its end; tasks: its workflow tasks.
	local, runMS, tasks float64
	// sweepS: the sweep workflow from its start to its end; toGateS: from
	// its start to the first gate's.
	sweepS, toGateS float64
	// gateFailed, runFailed: workflow tasks that failed or timed out
	// (temporalio/temporal#7741 fails a gate's).
	gateFailed, runFailed int
	// startup: when the sweep's and its first run's first events came.
	startup string
	// sweepStart: the sweep workflow's start; submitS: from the client's
	// start to it.
	sweepStart time.Time
	submitS    float64
	// ended: when each run workflow ended (by index from 1).
	ended, began map[int]time.Time
}

func sweepProfile(b *testing.B, addr, queue, sweepID string, runs int, latency time.Duration) profile {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := durable.Dial(ctx, durable.Connect{Address: addr})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	var p profile
	var nCalls, nBetween, nTasks, nLocal int
	var run1 []*historypb.HistoryEvent
	for i := 1; i <= runs; i++ {
		evs := historyOf(ctx, b, c, durable.ChildID(sweepID, i), "")
		if i == 1 {
			run1 = evs
		}
		p.events += float64(len(evs))
		for _, ev := range evs {
			p.historyKB += float64(proto.Size(ev)) / 1024
		}
		scheduled := map[int64]time.Time{}
		started := map[int64]time.Time{}
		var lastDone time.Time
		var taskAt time.Time
		for _, ev := range evs {
			at := ev.GetEventTime().AsTime()
			switch {
			case ev.GetWorkflowTaskScheduledEventAttributes() != nil:
				taskAt = at
			case ev.GetWorkflowTaskStartedEventAttributes() != nil:
				p.taskWait += ms(at.Sub(taskAt))
				taskAt = at
			case ev.GetWorkflowTaskCompletedEventAttributes() != nil:
				if ev.EventId <= 4 {
					p.firstRun += ms(at.Sub(taskAt))
					break
				}
				p.taskRun += ms(at.Sub(taskAt))
				nTasks++
			case ev.GetActivityTaskScheduledEventAttributes() != nil:
				scheduled[ev.EventId] = at
				if !lastDone.IsZero() {
					p.between += ms(at.Sub(lastDone))
					nBetween++
					lastDone = time.Time{}
				}
			case ev.GetActivityTaskStartedEventAttributes() != nil:
				a := ev.GetActivityTaskStartedEventAttributes()
				started[a.ScheduledEventId] = at
				p.dispatch += ms(at.Sub(scheduled[a.ScheduledEventId]))
			case ev.GetActivityTaskCompletedEventAttributes() != nil:
				a := ev.GetActivityTaskCompletedEventAttributes()
				p.inActivity += ms(at.Sub(started[a.ScheduledEventId]) - latency)
				nCalls++
				lastDone = at
			case ev.GetWorkflowTaskFailedEventAttributes() != nil || ev.GetWorkflowTaskTimedOutEventAttributes() != nil:
				p.runFailed++
			case ev.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity":
				// A call made as a local activity: no dispatch, and its
				// times are not in the history.
				nLocal++
			}
		}
		if len(evs) > 0 {
			if p.ended == nil {
				p.ended, p.began = map[int]time.Time{}, map[int]time.Time{}
			}
			p.began[i] = evs[0].GetEventTime().AsTime()
			p.ended[i] = evs[len(evs)-1].GetEventTime().AsTime()
			p.runMS += ms(evs[len(evs)-1].GetEventTime().AsTime().Sub(evs[0].GetEventTime().AsTime()))
		}
	}
	var completed time.Time
	var gaps int
	sweepEvs := historyOf(ctx, b, c, sweepID, "")
	var sweepStart time.Time
	if len(sweepEvs) > 0 {
		sweepStart = sweepEvs[0].GetEventTime().AsTime()
		p.sweepStart = sweepStart
		p.sweepS = sweepEvs[len(sweepEvs)-1].GetEventTime().AsTime().Sub(sweepStart).Seconds()
	}
	// The start-up: milestones of the sweep's first workflow task and of
	// its first run's, from the sweep's start.
	since := func(label string, evs []*historypb.HistoryEvent, first int) string {
		var parts []string
		for j, ev := range evs {
			if j > first+3 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %.0f", strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_"), ms(ev.GetEventTime().AsTime().Sub(sweepStart))))
		}
		return label + ": " + strings.Join(parts, ", ")
	}
	p.startup = since("sweep", sweepEvs, 0) + "\n    " + since("run 1", run1, 0)
	for _, ev := range sweepEvs {
		at := ev.GetEventTime().AsTime()
		if ev.GetChildWorkflowExecutionCompletedEventAttributes() != nil {
			completed = at
		}
		if ev.GetStartChildWorkflowExecutionInitiatedEventAttributes() != nil && !completed.IsZero() {
			p.childGap += ms(at.Sub(completed))
			gaps++
			completed = time.Time{}
		}
	}
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: "default", Query: fmt.Sprintf("WorkflowType = %q AND TaskQueue = %q", durable.GateWorkflowName, queue),
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range resp.Executions {
		evs := historyOf(ctx, b, c, e.Execution.WorkflowId, e.Execution.RunId)
		if len(evs) > 0 {
			if d := evs[0].GetEventTime().AsTime().Sub(sweepStart).Seconds(); p.toGateS == 0 || d < p.toGateS {
				p.toGateS = d
			}
		}
		for _, ev := range evs {
			if ev.GetWorkflowTaskCompletedEventAttributes() != nil {
				p.gateTasks++
			}
			if ev.GetWorkflowTaskFailedEventAttributes() != nil || ev.GetWorkflowTaskTimedOutEventAttributes() != nil {
				p.gateFailed++
			}
		}
	}
	p.dispatch /= float64(max(nCalls, 1))
	p.inActivity /= float64(max(nCalls, 1))
	p.between /= float64(max(nBetween, 1))
	p.events /= float64(runs)
	p.historyKB /= float64(runs)
	p.childGap /= float64(max(gaps, 1))
	p.local = float64(nLocal) / float64(max(nLocal+nCalls, 1))
	p.runMS /= float64(runs)
	p.tasks = float64(nTasks)/float64(runs) + 1
	p.taskWait /= float64(max(nTasks, 1))
	p.taskRun /= float64(max(nTasks, 1))
	p.firstRun /= float64(runs)
	return p
}

func historyOf(ctx context.Context, b *testing.B, c client.Client, id, runID string) []*historypb.HistoryEvent {
	var evs []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			b.Fatalf("history of %s: %v", id, err)
		}
		evs = append(evs, ev)
	}
	return evs
}
