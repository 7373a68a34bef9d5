// Package view serves `runner view`: a local web app over a folder of runs.
// It lists runs and sweeps, shows a run (live while it runs, following its
// journal with server-sent events), draws its flow and charts, shows a
// sweep's accuracy and compares two runs. It reads, and never serves a
// file outside the folder it was given; asked to (Server.Act), it also
// starts runs of a folder's specs, answers waiting runs, cancels and
// resumes them, each request checked for the token it printed (act.go). Its page and
// scripts are embedded, so it works offline.
package view

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/debate-runner/runner/runtime/callview"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

//go:embed assets
var assets embed.FS

// Server serves the view of one runs folder.
type Server struct {
	root string // absolute, symbolic links resolved
	reg  *spec.Registry
	// Poll is how often a followed journal is checked for new events.
	Poll time.Duration
	// Hosts, when set, are the only Host headers served (the address the
	// server listens on, by name and number): a page of another site that
	// points a name at 127.0.0.1 cannot read the runs.
	Hosts []string

	mu    sync.Mutex
	cache map[string]cachedRun
	plans map[string]*planEntry
	calls map[string]cachedCalls
	// act, when set, lets the view start, answer, cancel and resume runs.
	act *actor
}

// cachedCalls are a run's calls as read from its journal, kept while the
// journal keeps its size and time: paging through the calls of a long run
// reads its journal once.
type cachedCalls struct {
	size  int64
	mtime time.Time
	run   *callview.Run
}

type planEntry struct {
	plan *spec.Plan
	err  string
}

// New returns a server of the runs in root (a runs folder, as --runs-dir;
// it may not exist yet). reg compiles the specs saved in run directories
// to draw their flows.
func New(root string, reg *spec.Registry) (*Server, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return &Server{root: abs, reg: reg, Poll: 100 * time.Millisecond, cache: map[string]cachedRun{}, plans: map[string]*planEntry{}, calls: map[string]cachedCalls{}}, nil
}

// Root is the folder served.
func (s *Server) Root() string { return s.root }

// Handler serves the page, its assets and its API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		page, _ := assets.ReadFile("assets/index.html")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(page)
	})
	mux.HandleFunc("GET /api/runs", s.apiRuns)
	mux.HandleFunc("GET /api/run", s.apiRun)
	mux.HandleFunc("GET /api/events", s.apiEvents)
	mux.HandleFunc("GET /api/sweep", s.apiSweep)
	mux.HandleFunc("GET /api/file", s.apiFile)
	mux.HandleFunc("GET /api/call", s.apiCall)
	mux.HandleFunc("GET /api/study", s.apiStudy)
	mux.HandleFunc("GET /api/study/file", s.apiStudyFile)
	mux.HandleFunc("GET /api/specs", s.apiSpecs)
	mux.HandleFunc("GET /api/kind", s.apiKind)
	mux.HandleFunc("POST /api/act/start", s.acting(s.apiStart))
	mux.HandleFunc("POST /api/act/answer", s.acting(s.apiAnswer))
	mux.HandleFunc("POST /api/act/resume", s.acting(s.apiResume))
	mux.HandleFunc("POST /api/act/cancel", s.acting(s.apiCancel))
	mux.HandleFunc("POST /api/act/study", s.acting(s.apiStartStudy))
	return s.guard(mux)
}

// guard refuses other hosts and anything but reading, and sets headers
// that keep the page to its own content.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(s.Hosts) > 0 && !contains(s.Hosts, r.Host) {
			http.Error(w, "unknown host "+r.Host, http.StatusForbidden)
			return
		}
		// Only the acting requests change anything, each checked for the
		// token and its origin (Server.allowed).
		acting := r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/act/")
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !acting {
			http.Error(w, "the view only reads", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// HostsFor lists the Host headers a server listening on addr answers:
// for a loopback address, the address and localhost at its port.
func HostsFor(addr net.Addr) []string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return nil
	}
	port := strconv.Itoa(tcp.Port)
	return []string{net.JoinHostPort(tcp.IP.String(), port), net.JoinHostPort("localhost", port), net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("::1", port)}
}

// safeName is one part of a run id: a run or sweep directory's name.
var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// errNotFound is a run id that names no run inside the root.
var errNotFound = errors.New("no such run")

// resolve turns an id ("RUN" or "SWEEP/RUN", and in a study
// "STUDY/SWEEP" or "STUDY/SWEEP/RUN") into its directory, which must be
// inside the root, symbolic links followed.
func (s *Server) resolve(id string) (string, error) {
	parts := strings.Split(id, "/")
	if id == "" || len(parts) > 3 || (len(parts) == 3 && !s.isStudy(parts[0])) {
		return "", errNotFound
	}
	for _, p := range parts {
		if !safeName.MatchString(p) || strings.Contains(p, "..") {
			return "", errNotFound
		}
	}
	return s.inside(filepath.Join(s.root, filepath.FromSlash(id)))
}

// inside returns path with links resolved when it is within the root.
func (s *Server) inside(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", errNotFound
	}
	rel, err := filepath.Rel(s.root, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", errNotFound
	}
	return real, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	runs, sweeps, err := s.listRuns()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if runs == nil {
		runs = []RunInfo{}
	}
	if sweeps == nil {
		sweeps = []SweepInfo{}
	}
	studies := s.listStudies()
	if studies == nil {
		studies = []StudyInfo{}
	}
	writeJSON(w, map[string]any{"root": s.root, "runs": runs, "sweeps": sweeps, "studies": studies, "acting": s.act != nil, "can_start": s.act != nil && s.act.specs != ""})
}

// AgentInfo is an agent as the page shows it.
type AgentInfo struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Role  string `json:"role,omitempty"`
	Model string `json:"model,omitempty"`
	// Human says a person plays the agent (human: true).
	Human bool `json:"human,omitempty"`
}

// NodeInfo is a node as the page shows it.
type NodeInfo struct {
	ID          string   `json:"id"`
	Kind        string   `json:"kind"`
	Description string   `json:"description,omitempty"`
	Agents      []string `json:"agents"`
}

func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	dir, err := s.resolve(id)
	if err != nil {
		http.Error(w, fmt.Sprintf("%s: %v", id, err), http.StatusNotFound)
		return
	}
	m, err := result.ReadManifest(dir)
	if err != nil {
		http.Error(w, fmt.Sprintf("%s: %v", id, err), http.StatusNotFound)
		return
	}
	info, _ := s.runInfo(id, dir)
	out := map[string]any{"id": id, "manifest": m, "status": info.Status, "files": files(dir), "acting": s.act != nil, "going": s.going(dir)}
	if qs, _ := OpenQuestions(dir); len(qs) > 0 {
		out["open_questions"] = qs
		if turns, _ := OpenTurns(dir, qs); len(turns) > 0 {
			out["open_turns"] = turns
		}
	} else if qs, turns := PostedQuestions(dir); len(qs) > 0 && info.Status == StatusRunning {
		// A terminal asks them as the run goes: the page may answer.
		out["open_questions"], out["open_turns"] = qs, turns
	}
	if res, err := result.Read(dir); err == nil && info.Status != StatusRunning {
		out["result"] = res // (a run resumed from it runs again)
	}
	plan, perr := s.plan(dir, m)
	if plan != nil {
		out["graph"] = FlowSVG(plan)
		var agents []AgentInfo
		for _, a := range plan.Agents {
			ai := AgentInfo{ID: a.ID, Name: a.Name, Role: a.Role, Human: a.Human}
			if a.Model != nil {
				ai.Model = a.Model.Model
			}
			agents = append(agents, ai)
		}
		var nodes []NodeInfo
		for _, nid := range plan.NodeOrder {
			n := plan.Nodes[nid]
			ni := NodeInfo{ID: n.ID, Kind: n.Kind, Description: n.Description, Agents: []string{}}
			for _, a := range n.Agents {
				ni.Agents = append(ni.Agents, a.ID)
			}
			nodes = append(nodes, ni)
		}
		out["agents"], out["nodes"], out["goals"], out["description"] = agents, nodes, plan.Goals, plan.File.Description
	} else {
		out["plan_error"] = perr
	}
	writeJSON(w, out)
}

// files lists the files of a run directory the page links to.
func files(dir string) []string {
	var out []string
	for _, f := range servable {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			out = append(out, f)
		}
	}
	return out
}

// servable are the files of a run directory the view serves as they are.
var servable = []string{"report.html", "report.md", "result.json", "run.json", "journal.jsonl", "spec.yaml", "questions.yaml", "turns.json"}

// plan compiles the spec saved in a run directory, under its original
// path so that template folders next to it are found; nil when it no
// longer compiles (the page then does without the flow).
func (s *Server) plan(dir string, m result.Manifest) (*spec.Plan, string) {
	s.mu.Lock()
	e, ok := s.plans[dir]
	s.mu.Unlock()
	if ok {
		return e.plan, e.err
	}
	e = &planEntry{}
	source, err := os.ReadFile(filepath.Join(dir, "spec.yaml"))
	switch {
	case err != nil:
		e.err = err.Error()
	case s.reg == nil:
		e.err = "no registry of node kinds"
	default:
		plan, diags := spec.Compile(m.SpecPath, source, s.reg)
		if diags.HasErrors() {
			e.err = "the saved spec no longer compiles:\n" + diags.Format()
			break
		}
		// The run's vars and models: a panel or replica count it set
		// shows as it ran, each agent with its model.
		if sp, err := plan.SpecializeFor(spec.Overrides{Vars: m.Vars, Models: m.ModelOverrides, Inputs: m.Inputs}); err == nil {
			plan = sp
		}
		e.plan = plan
	}
	s.mu.Lock()
	s.plans[dir] = e
	s.mu.Unlock()
	return e.plan, e.err
}

// apiKind says what an id names: "run", "sweep", "study" or "" (none), so
// that the page asks for a sweep only when there is one.
func (s *Server) apiKind(w http.ResponseWriter, r *http.Request) {
	kind := ""
	if dir, err := s.resolve(r.URL.Query().Get("id")); err == nil {
		switch {
		case fileExists(filepath.Join(dir, "run.json")):
			kind = "run"
		case fileExists(filepath.Join(dir, "summary.json")):
			kind = "sweep"
		case fileExists(filepath.Join(dir, "study.json")):
			kind = "study"
		}
	}
	writeJSON(w, map[string]any{"kind": kind})
}

func (s *Server) apiSweep(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	dir, err := s.resolve(id)
	if parts := strings.Split(id, "/"); err != nil || len(parts) > 2 || (len(parts) == 2 && !s.isStudy(parts[0])) {
		http.Error(w, id+": no such sweep", http.StatusNotFound)
		return
	}
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		http.Error(w, id+": no such sweep (no summary.json)", http.StatusNotFound)
		return
	}
	var sum sweepSummary
	if err := json.Unmarshal(data, &sum); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// A run is linked by its id here, whatever folder the sweep ran from.
	ids := make([]string, len(sum.Runs))
	for i, run := range sum.Runs {
		if run.Dir != "" {
			ids[i] = id + "/" + filepath.Base(run.Dir)
		}
	}
	// A sweep being made: the page asks again as its runs end.
	writeJSON(w, map[string]any{"id": id, "summary": json.RawMessage(data), "run_ids": ids, "running": s.sweepRunning(dir, &sum), "acting": s.act != nil, "going": s.going(dir)})
}

func (s *Server) apiFile(w http.ResponseWriter, r *http.Request) {
	id, name := r.URL.Query().Get("id"), r.URL.Query().Get("name")
	dir, err := s.resolve(id)
	if err != nil || !contains(servable, name) {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	path, err := s.inside(filepath.Join(dir, name))
	if err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	switch filepath.Ext(name) {
	case ".html":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// report.html has no script; keep it that way in the view.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	case ".json":
		w.Header().Set("Content-Type", "application/json")
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	http.ServeFile(w, r, path)
}

// apiEvents streams a run's journal as server-sent events: every event
// after the one given (Last-Event-ID, or ?after=), then each new one as
// it is appended. A "caught_up" event marks the end of what was there
// when the page asked.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	dir, err := s.resolve(id)
	if err != nil {
		http.Error(w, id+": no such run", http.StatusNotFound)
		return
	}
	m, err := result.ReadManifest(dir)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	path, err := s.inside(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		http.Error(w, id+": no journal", http.StatusNotFound)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	after, _ := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64)
	if a := r.URL.Query().Get("after"); a != "" {
		after, _ = strconv.ParseInt(a, 10, 64)
	}
	plan, _ := s.plan(dir, m)
	norm := newNormalizer(m, plan)
	t := &tail{path: path}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n\n")
	flusher.Flush()

	poll := s.Poll
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	caughtUp := false
	lastWrite := time.Now()
	for {
		evs, err := t.next()
		if errors.Is(err, errShrunk) {
			// The journal was cut (a resume dropped a torn line): the
			// page starts over.
			fmt.Fprint(w, "event: reset\ndata: {}\n\n")
			flusher.Flush()
			return
		}
		if err != nil {
			fmt.Fprintf(w, "event: problem\ndata: %s\n\n", mustJSON(err.Error()))
			flusher.Flush()
			return
		}
		wrote := false
		for _, ev := range evs {
			out, ok := norm.event(ev)
			if !ok || ev.Seq <= after {
				continue
			}
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", ev.Seq, mustJSON(out))
			wrote = true
		}
		if !caughtUp {
			caughtUp = true
			fmt.Fprint(w, "event: caught_up\ndata: {}\n\n")
			wrote = true
		}
		if !wrote && time.Since(lastWrite) > 15*time.Second {
			fmt.Fprint(w, ": keep-alive\n\n")
			wrote = true
		}
		if wrote {
			flusher.Flush()
			lastWrite = time.Now()
		}
		select {
		case <-r.Context().Done():
			return
		case <-ticker.C:
		}
	}
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(err.Error())
	}
	return data
}

// apiCall serves one call of a run as callview reads it from the journal
// (?key=), or the list of its calls (no key). The reply is also rendered
// as the transcript renders a message.
func (s *Server) apiCall(w http.ResponseWriter, r *http.Request) {
	id, key := r.URL.Query().Get("id"), r.URL.Query().Get("key")
	dir, err := s.resolve(id)
	if err != nil {
		http.Error(w, id+": no such run", http.StatusNotFound)
		return
	}
	run, err := s.callsOf(dir)
	if err != nil {
		http.Error(w, fmt.Sprintf("%s: %v", id, err), http.StatusNotFound)
		return
	}
	if key == "" {
		writeJSON(w, map[string]any{"id": id, "spec": run.Spec, "calls": run.Summaries()})
		return
	}
	c, ok := run.Call(key)
	if !ok {
		http.Error(w, fmt.Sprintf("run %s has no call %s", id, key), http.StatusNotFound)
		return
	}
	if !c.Requested && c.Source == "replay" {
		// The request of a replayed reply is the recording's, when the
		// recording is in the folder served (the view reads nothing
		// outside it). A relative path is taken from the runs folder's
		// parent, where runs are usually started.
		if rec, err := s.inside(run.RecordingDir(filepath.Dir(s.root))); err == nil {
			if recorded, err := s.callsOf(rec); err == nil {
				cc := *c
				one := &callview.Run{Calls: []*callview.Call{&cc}}
				one.FillFromRecording(recorded)
				c = &cc
			}
		}
	}
	keys := run.Keys()
	out := map[string]any{"id": id, "spec": run.Spec, "call": c, "count": len(keys)}
	if i := c.Index - 1; i > 0 {
		out["prev"] = keys[i-1]
	}
	if c.Index < len(keys) {
		out["next"] = keys[c.Index]
	}
	if c.Done && c.Reply != "" {
		n := &normalizer{}
		out["reply_html"] = n.html(c.Reply)
	}
	if m, err := result.ReadManifest(dir); err == nil {
		if plan, _ := s.plan(dir, m); plan != nil {
			for _, a := range plan.Agents {
				if a.ID == c.Agent {
					out["agent_name"] = a.Name
				}
			}
		}
	}
	writeJSON(w, out)
}

// callsOf reads the calls of a run directory, or returns them as read
// before when its journal has not changed.
func (s *Server) callsOf(dir string) (*callview.Run, error) {
	info, err := os.Stat(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		return callview.Read(dir) // says what is missing
	}
	s.mu.Lock()
	c, ok := s.calls[dir]
	s.mu.Unlock()
	if ok && c.size == info.Size() && c.mtime.Equal(info.ModTime()) {
		return c.run, nil
	}
	run, err := callview.Read(dir)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.calls) > 64 {
		clear(s.calls) // a view is looked at a few runs at a time
	}
	s.calls[dir] = cachedCalls{size: info.Size(), mtime: info.ModTime(), run: run}
	s.mu.Unlock()
	return run, nil
}
