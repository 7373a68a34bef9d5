package difffuzz

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The checks run in worker processes (the test binary started again with
// WorkerEnv set): a panic in one of the engine's goroutines, or a run that
// ignores its cancelled context, ends or stalls the worker, not the fuzzer,
// which counts it as a panic or a hang and starts another worker.

// WorkerEnv, set in a test binary's environment, makes it a worker:
// TestMain calls ServeWorker instead of running tests.
const WorkerEnv = "RUNNER_DIFFFUZZ_WORKER"

// workDirEnv names the folder a worker works in, made by the pool.
const workDirEnv = "RUNNER_DIFFFUZZ_WORK"

type job struct {
	Mutant    Mutant    `json:"mutant"`
	ChecksOff bool      `json:"checks_off"`
	Only      []Profile `json:"only,omitempty"`
}

// ServeWorker reads jobs on stdin and writes their verdicts, one JSON
// line each, to file descriptor 3; it returns when stdin ends.
func ServeWorker() error {
	root, err := Root()
	if err != nil {
		return err
	}
	// The pool makes the worker's folder and removes it once the worker
	// has ended, killed or not (a worker its watchdog or the pool ends
	// runs no deferred call: its folder, up to hundreds of megabytes of
	// copied seeds and runs, was left behind).
	work := os.Getenv(workDirEnv)
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "difffuzz-worker-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	c, err := NewChecker(root, work)
	if err != nil {
		return err
	}
	if d, err := time.ParseDuration(os.Getenv("RUNNER_FUZZ_RUN_TIMEOUT")); err == nil {
		c.RunTimeout = d
	}
	mem := uint64(2 << 30)
	if n, err := strconv.ParseUint(os.Getenv("RUNNER_FUZZ_MEMORY_MB"), 10, 64); err == nil && n > 0 {
		mem = n << 20
	}
	// a phase's budget is the run timeout in CPU time, and as much wall
	// time without any CPU used
	c.dog = newWatchdog(Limits{CPU: c.RunTimeout, Idle: c.RunTimeout, Memory: mem})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go c.dog.run(ctx, 200*time.Millisecond)
	if err := checkSeam(root); err == nil {
		seamChecked = true
	}
	out := os.NewFile(3, "verdicts")
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	enc := json.NewEncoder(out)
	for in.Scan() {
		var j job
		if err := json.Unmarshal(in.Bytes(), &j); err != nil {
			return err
		}
		if err := enc.Encode(c.Check(j.Mutant, j.ChecksOff, j.Only...)); err != nil {
			return err
		}
	}
	return in.Err()
}

// Pool hands mutants to worker processes.
type Pool struct {
	// Bin is the program to start as a worker (the test binary) with
	// Args.
	Bin  string
	Args []string
	// RunTimeout is each run's; a worker that does not answer within
	// the time its runs may take is a hang.
	RunTimeout time.Duration
	idle       chan *worker
	mu         sync.Mutex
	all        []*worker
}

type worker struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	outF   *os.File
	stderr *tailBuffer
	// work is the worker's folder, removed once it has ended.
	work string
}

// NewPool starts no worker yet; n may run at once.
func NewPool(bin string, args []string, n int, runTimeout time.Duration) *Pool {
	p := &Pool{Bin: bin, Args: args, RunTimeout: runTimeout, idle: make(chan *worker, n)}
	for i := 0; i < n; i++ {
		p.idle <- nil
	}
	return p
}

func (p *Pool) start() (*worker, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "difffuzz-worker-")
	if err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, err
	}
	cmd := exec.Command(p.Bin, p.Args...)
	cmd.Env = append(os.Environ(), WorkerEnv+"=1", "RUNNER_FUZZ_RUN_TIMEOUT="+p.RunTimeout.String(), workDirEnv+"="+work)
	cmd.ExtraFiles = []*os.File{w}
	tb := &tailBuffer{}
	cmd.Stderr = tb
	cmd.Stdout = tb
	in, err := cmd.StdinPipe()
	if err != nil {
		_ = os.RemoveAll(work)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(work)
		return nil, err
	}
	w.Close()
	wk := &worker{cmd: cmd, in: in, out: bufio.NewReaderSize(r, 1<<20), outF: r, stderr: tb, work: work}
	p.mu.Lock()
	p.all = append(p.all, wk)
	p.mu.Unlock()
	return wk, nil
}

func (w *worker) kill() {
	_ = w.cmd.Process.Kill()
	_ = w.in.Close()
	_ = w.cmd.Wait()
	_ = w.outF.Close()
	_ = os.RemoveAll(w.work)
}

// Close ends every worker.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.all {
		_ = w.in.Close()
		done := make(chan struct{})
		go func() { _ = w.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = w.cmd.Process.Kill()
			<-done
		}
		_ = w.outF.Close()
		_ = os.RemoveAll(w.work)
	}
	p.all = nil
}

// Warm starts the pool's workers now, at once, rather than at their first
// check: each copies the seeds' folders as it starts, which then overlaps
// the loading of the seeds.
func (p *Pool) Warm() error {
	var ws []*worker
	for len(ws) < cap(p.idle) {
		w := <-p.idle
		if w == nil {
			var err error
			if w, err = p.start(); err != nil {
				p.idle <- nil
				for _, w := range ws {
					p.idle <- w
				}
				return err
			}
		}
		ws = append(ws, w)
	}
	for _, w := range ws {
		p.idle <- w
	}
	return nil
}

// ErrCut is CheckContext's error when its context ended before the verdict:
// the check was stopped (its worker ended) and the mutant has no verdict.
var ErrCut = errors.New("the check was cut off")

// Check checks a mutant in a worker, under every profile or those only.
func (p *Pool) Check(m Mutant, checksOff bool, only ...Profile) (Verdict, error) {
	return p.CheckContext(context.Background(), m, checksOff, only...)
}

// CheckContext is Check, cut off when ctx ends (ErrCut): a timed campaign
// ends at its deadline rather than after the checks under way.
func (p *Pool) CheckContext(ctx context.Context, m Mutant, checksOff bool, only ...Profile) (Verdict, error) {
	if ctx.Err() != nil {
		return Verdict{}, ErrCut
	}
	var w *worker
	select {
	case w = <-p.idle:
	case <-ctx.Done():
		return Verdict{}, ErrCut
	}
	if w == nil {
		var err error
		if w, err = p.start(); err != nil {
			p.idle <- nil
			return Verdict{}, err
		}
	}
	data, _ := json.Marshal(job{Mutant: m, ChecksOff: checksOff, Only: only})
	type answer struct {
		v   Verdict
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		line, err := w.out.ReadBytes('\n')
		if err != nil {
			ch <- answer{err: err}
			return
		}
		var v Verdict
		ch <- answer{v: v, err: json.Unmarshal(line, &v)}
	}()
	if _, err := w.in.Write(append(data, '\n')); err != nil {
		w.kill()
		p.idle <- nil
		return Verdict{Panic: "the worker ended: " + w.stderr.String()}, nil
	}
	// the worker's watchdog ends a check that makes no progress (by CPU
	// time, not wall time); this is the backstop should the worker itself
	// stall: the seed's runs and the mutant's, each within its budget and
	// its grace, on a machine four times as busy as the budget allows for
	deadline := time.Duration(2*len(Profiles)+2)*4*(2*p.RunTimeout+5*time.Second) + 20*time.Second
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		w.kill()
		p.idle <- nil
		return Verdict{}, ErrCut
	case a := <-ch:
		if a.err != nil {
			w.kill()
			p.idle <- nil
			if errors.Is(a.err, io.EOF) {
				if v, ok := watchdogVerdict(w.stderr.All()); ok {
					return v, nil
				}
				return Verdict{Panic: "the worker died: " + w.stderr.String()}, nil
			}
			return Verdict{}, a.err
		}
		p.idle <- w
		return a.v, nil
	case <-timer.C:
		w.kill()
		p.idle <- nil
		return Verdict{Runs: []Outcome{{Status: "hang", Error: fmt.Sprintf("the worker gave no verdict within %s", deadline)}}}, nil
	}
}

// tailBuffer keeps the last 8 KB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(b)
	if t.buf.Len() > 16<<10 {
		keep := t.buf.Bytes()[t.buf.Len()-8<<10:]
		t.buf = *bytes.NewBuffer(append([]byte(nil), keep...))
	}
	return len(b), nil
}

// All is what the buffer keeps.
func (t *tailBuffer) All() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.buf.String()
	if i := strings.Index(s, "panic:"); i >= 0 {
		s = s[i:]
	}
	if len(s) > 3000 {
		s = s[:3000]
	}
	return s
}
