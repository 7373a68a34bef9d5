package view

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/answers"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/executor"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
	"gopkg.in/yaml.v3"
)

// This file is what the view does besides reading, when it is asked to
// (Server.Act): start a run of a spec from a folder, answer a waiting
// run's questions, cancel a run it started and resume one. Every run goes
// through the executor registry as runner run and runner resume do, so it
// leaves the same run directory. Every such request is a POST that must
// carry the token the view printed at its start (a header, never a
// cookie, so another site's page cannot send it), come from the view's
// own origin, and be JSON (which a cross-site form cannot send).

// TokenHeader is the header that carries the view's token.
const TokenHeader = "X-Runner-Token"

// MaxActBody is the largest request body an acting request may have:
// inputs given as text, files read into them by the page included.
const MaxActBody = 4 << 20

// Acting is what the view needs to act.
type Acting struct {
	// Token is the secret every acting request carries; NewToken makes one.
	Token string
	// Specs is the folder whose specs the start form lists ("": the form
	// lists none; waiting runs can still be answered).
	Specs string
	// Getenv reads the environment runs are made with: API keys stay in
	// the server's environment and never reach the page.
	Getenv func(string) string
	// Version is the runner version recorded in the runs.
	Version string
	// Cache is the response cache runs started here use, as runner run's
	// (nil: none).
	Cache calls.Cache
}

// NewToken is a fresh random token (256 bits, hex).
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// MinTokenLen is the shortest token the view accepts.
const MinTokenLen = 16

type actor struct {
	Acting
	specs  string // absolute, or ""
	digest [32]byte
	ctx    context.Context
	stop   context.CancelFunc

	mu    sync.Mutex
	going map[string]context.CancelFunc // run dir → its cancel
	wg    sync.WaitGroup
	// listed caches the specs found, by path and modification time.
	listed map[string]specEntry
}

type specEntry struct {
	mtime time.Time
	info  SpecInfo
	// plan and diags are the spec compiled (with its paths checked):
	// starting it does not compile it again while the file is unchanged.
	plan  *spec.Plan
	diags syntax.Diagnostics
}

// Act lets the view act (see Acting). It is refused when the view answers
// hosts other than this machine's (Hosts unset): its token would cross the
// network in clear.
func (s *Server) Act(a Acting) error {
	if len(a.Token) < MinTokenLen {
		return fmt.Errorf("the view's token has %d characters; give at least %d", len(a.Token), MinTokenLen)
	}
	if len(s.Hosts) == 0 {
		return errors.New("a view that starts and answers runs answers only this machine's addresses (127.0.0.1, localhost)")
	}
	act := &actor{Acting: a, digest: sha256.Sum256([]byte(a.Token)), going: map[string]context.CancelFunc{}, listed: map[string]specEntry{}}
	if a.Specs != "" {
		abs, err := filepath.Abs(a.Specs)
		if err != nil {
			return err
		}
		if info, err := os.Stat(abs); err != nil || !info.IsDir() {
			if err == nil {
				err = errors.New("not a folder")
			}
			return fmt.Errorf("--specs %s: %v", a.Specs, args.UnwrapPathError(err))
		}
		act.specs = abs
	}
	act.ctx, act.stop = context.WithCancel(context.Background())
	s.act = act
	return nil
}

// Close stops the runs the view started (they stop as a killed run does,
// and can be resumed) and waits for them.
func (s *Server) Close() {
	if s.act == nil {
		return
	}
	s.act.stop()
	s.act.wg.Wait()
}

// Wait waits for the runs the view started to end (tests).
func (s *Server) Wait() {
	if s.act != nil {
		s.act.wg.Wait()
	}
}

// allowed checks an acting request: the token, the origin, the kind of
// body. It answers the refusal itself and reports false.
func (s *Server) allowed(w http.ResponseWriter, r *http.Request) bool {
	refuse := func(code int, why string) bool {
		http.Error(w, why, code)
		return false
	}
	if s.act == nil {
		return refuse(http.StatusMethodNotAllowed, "the view only reads (it was started read-only, or listens beyond this machine)")
	}
	if len(s.Hosts) == 0 || !contains(s.Hosts, r.Host) {
		return refuse(http.StatusForbidden, "unknown host "+r.Host)
	}
	// A browser says where a request comes from: only the view's own
	// pages may act. (A client that is not a browser sends neither and
	// needs the token all the same.)
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return refuse(http.StatusForbidden, "a request from another site ("+site+") cannot act")
	}
	if origin, ok := r.Header["Origin"]; ok {
		if len(origin) != 1 || !strings.EqualFold(origin[0], "http://"+r.Host) {
			return refuse(http.StatusForbidden, "a request from another origin cannot act")
		}
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return refuse(http.StatusUnsupportedMediaType, "an acting request is JSON (Content-Type: application/json)")
	}
	got := sha256.Sum256([]byte(r.Header.Get(TokenHeader)))
	if subtle.ConstantTimeCompare(got[:], s.act.digest[:]) != 1 {
		return refuse(http.StatusForbidden, "the view's token is missing or wrong: open the address runner view printed (it carries the token)")
	}
	if r.ContentLength > MaxActBody {
		// Said to be too big: refused before a byte of it is read.
		return refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("the request is over %d MB", MaxActBody>>20))
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxActBody)
	return true
}

// acting wraps an acting handler with the checks.
func (s *Server) acting(h func(http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.allowed(w, r) {
			h(w, r)
		}
	}
}

// decode reads a request's JSON body into v, refusing unknown fields and
// bodies over MaxActBody.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("the request is over %d MB", MaxActBody>>20), http.StatusRequestEntityTooLarge)
			return false
		}
		http.Error(w, "the request is not what the view expects: "+err.Error(), http.StatusBadRequest)
		return false
	}
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		http.Error(w, fmt.Sprintf("the request is over %d MB", MaxActBody>>20), http.StatusRequestEntityTooLarge)
		return false
	}
	return true
}

// FieldError is a problem with one field of the start form ("" for the
// form as a whole): "input:NAME", "var:NAME", "model:NAME", "budget",
// "seed", "spec".
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func writeProblems(w http.ResponseWriter, code int, problems ...FieldError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"problems": problems})
}

// SpecInfo is a spec the start form offers.
type SpecInfo struct {
	// Path is the spec's path in the specs folder (slashes).
	Path        string       `json:"path"`
	Name        string       `json:"name"`
	Description string       `json:"description,omitempty"`
	Inputs      []InputField `json:"inputs"`
	Vars        []VarField   `json:"vars"`
	Models      []ModelField `json:"models"`
	Offline     bool         `json:"offline"`
	// Problems are the spec's errors as runner validate reports them;
	// a spec with problems cannot be started.
	Problems string `json:"problems,omitempty"`
}

// InputField is an input of a spec.
type InputField struct {
	Name        string `json:"name"`
	Required    bool   `json:"required"`
	Description string `json:"description,omitempty"`
	Default     string `json:"default,omitempty"`
	MaxChars    int    `json:"max_chars,omitempty"`
	// Domain is what values it may take (enum, minimum, maximum, pattern),
	// nil for any: the form offers them, and a start checks them.
	Domain *spec.Domain `json:"domain,omitempty"`
}

// VarField is a var of a spec: its type is its default's.
type VarField struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Default string `json:"default"`
	// Domain is what values it may take, nil for any.
	Domain *spec.Domain `json:"domain,omitempty"`
}

// ModelField is a model the spec declares: its name, the model id and the
// endpoint's name and kind (never its key, nor the variable that holds it).
type ModelField struct {
	Name     string `json:"name"`
	Model    string `json:"model"`
	Endpoint string `json:"endpoint,omitempty"`
	Kind     string `json:"kind,omitempty"`
}

// looksLikeSpec tells a spec from the other YAML files beside it (test
// cases, studies, datasets).
var looksLikeSpec = regexp.MustCompile(`(?m)^flow:`)

// listSpecs lists the specs in the specs folder (three levels deep);
// unlike walkSpecs it keeps links, which specHead follows.
func (s *Server) listSpecs() []SpecInfo {
	var paths []string
	s.walkSpecFolder(func(path, _ string, d fs.DirEntry) {
		name := d.Name()
		if (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) && !strings.Contains(name, ".test.") {
			paths = append(paths, path)
		}
	})
	out := []SpecInfo{}
	for _, p := range paths {
		if info, ok := s.specHead(p); ok {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// specHead reads what the list of specs shows of one file: its name and
// description, without compiling it (false: not a spec).
func (s *Server) specHead(path string) (SpecInfo, bool) {
	st, err := os.Stat(path)
	if err != nil || st.Size() > 1<<20 {
		return SpecInfo{}, false
	}
	source, err := os.ReadFile(path)
	if err != nil || !looksLikeSpec.Match(source) {
		return SpecInfo{}, false
	}
	var head struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
	}
	_ = yaml.Unmarshal(source, &head)
	rel, _ := filepath.Rel(s.act.specs, path)
	info := SpecInfo{Path: filepath.ToSlash(rel), Name: head.Name, Description: strings.TrimSpace(head.Description)}
	if info.Name == "" {
		info.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return info, true
}

// specPath is the file of a spec the list offers ("" when none).
func (s *Server) specPath(rel string) string {
	for _, sp := range s.listSpecs() {
		if sp.Path == rel {
			return filepath.Join(s.act.specs, filepath.FromSlash(sp.Path))
		}
	}
	return ""
}

// specInfo compiles one spec of the folder for its form (false: not a
// spec), kept while the file is unchanged.
func (s *Server) specInfo(path string) (SpecInfo, bool) {
	a := s.act
	st, err := os.Stat(path)
	if err != nil || st.Size() > 1<<20 {
		return SpecInfo{}, false
	}
	a.mu.Lock()
	e, ok := a.listed[path]
	a.mu.Unlock()
	if ok && e.mtime.Equal(st.ModTime()) {
		return e.info, true
	}
	source, err := os.ReadFile(path)
	if err != nil || !looksLikeSpec.Match(source) {
		return SpecInfo{}, false
	}
	rel, _ := filepath.Rel(a.specs, path)
	info := SpecInfo{Path: filepath.ToSlash(rel), Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), Inputs: []InputField{}, Vars: []VarField{}, Models: []ModelField{}}
	plan, diags := runtime.Load(path, s.reg)
	if plan == nil || diags.HasErrors() {
		info.Problems = diags.Format()
	} else {
		info.Name = plan.Name
		if plan.File != nil {
			info.Description = strings.TrimSpace(plan.File.Description)
		}
		for _, in := range plan.Inputs {
			f := InputField{Name: in.Name, Required: in.Required, Description: in.Description, MaxChars: in.MaxChars, Domain: in.Domain}
			if in.HasDefault && in.Default != nil {
				f.Default = fmt.Sprint(in.Default)
			}
			info.Inputs = append(info.Inputs, f)
		}
		for _, v := range plan.Vars {
			info.Vars = append(info.Vars, VarField{Name: v.Name, Type: typeOf(v.Default), Default: formatVar(v.Default), Domain: v.Domain})
		}
		for _, name := range modelNames(plan) {
			m := plan.Models[name]
			f := ModelField{Name: name, Model: m.Model}
			if m.Endpoint != nil {
				f.Endpoint, f.Kind = m.Endpoint.Name, m.Endpoint.Kind
			}
			info.Models = append(info.Models, f)
		}
		_, err := args.Offline(plan)
		info.Offline = err == nil
	}
	a.mu.Lock()
	a.listed[path] = specEntry{mtime: st.ModTime(), info: info, plan: plan, diags: diags}
	a.mu.Unlock()
	return info, true
}

// load is the spec at path compiled, as runner run loads it, from the
// form's cache while the file is unchanged.
func (s *Server) load(path string) (*spec.Plan, syntax.Diagnostics) {
	if _, ok := s.specInfo(path); ok {
		a := s.act
		a.mu.Lock()
		e := a.listed[path]
		a.mu.Unlock()
		if e.plan != nil || len(e.diags) > 0 {
			return e.plan, e.diags
		}
	}
	return runtime.Load(path, s.reg)
}

// modelNames are the models a run of plan may be given: those it
// declares (and the default), not the built-in offline one.
func modelNames(plan *spec.Plan) []string {
	var out []string
	for name, m := range plan.Models {
		if name == "offline" && m.Endpoint != nil && m.Endpoint.Kind == "offline" {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func typeOf(v any) string {
	switch v.(type) {
	case bool:
		return "bool"
	case int, int64, uint64:
		return "int"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "list"
	case map[string]any:
		return "map"
	}
	return "string"
}

// formatVar is a var's default as --set takes it.
func formatVar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any, map[string]any:
		data, _ := json.Marshal(x)
		return string(data)
	}
	return fmt.Sprint(v)
}

// apiSpecs lists the specs the start form offers, by name; with ?path=,
// one of them compiled, with its inputs, vars and models.
func (s *Server) apiSpecs(w http.ResponseWriter, r *http.Request) {
	if s.act == nil {
		writeJSON(w, map[string]any{"acting": false, "specs": []SpecInfo{}})
		return
	}
	if rel := r.URL.Query().Get("path"); rel != "" {
		path := s.specPath(rel)
		info, ok := s.specInfo(path)
		if path == "" || !ok {
			http.Error(w, "no spec "+rel, http.StatusNotFound)
			return
		}
		writeJSON(w, info)
		return
	}
	writeJSON(w, map[string]any{"acting": true, "folder": s.act.specs, "specs": s.listSpecs(), "datasets": s.listDatasets(), "studies": s.listStudyFiles()})
}

// StartRequest is the start form as the page sends it.
type StartRequest struct {
	Spec   string            `json:"spec"`
	Inputs map[string]string `json:"inputs"`
	// Vars are the vars changed from their defaults, as --set takes them.
	Vars map[string]string `json:"vars"`
	// Models puts a declared model (or "offline") in place of each model
	// named; every one offline is --offline.
	Models map[string]string `json:"models"`
	// Budget is as --budget takes it, limits separated by commas or
	// spaces: "cost=1, calls=200".
	Budget string `json:"budget"`
	Seed   string `json:"seed"`

	// A sweep, as runner run's flags ask for one: Dataset is a dataset
	// file of the specs folder (its path there) or gen:...; Matrix is
	// --matrix NAME=V1,V2 flags, one a line; Repeat and Parallel are
	// --repeat and --parallel (0: 1 and 4).
	Dataset  string `json:"dataset,omitempty"`
	Matrix   string `json:"matrix,omitempty"`
	Repeat   int    `json:"repeat,omitempty"`
	Parallel int    `json:"parallel,omitempty"`

	// Files are the run's context folder (see UploadFile).
	Files []UploadFile `json:"files,omitempty"`
}

func (s *Server) apiStart(w http.ResponseWriter, r *http.Request) {
	var req StartRequest
	if !decode(w, r, &req) {
		return
	}
	a := s.act
	path := s.specPath(req.Spec)
	if path == "" {
		writeProblems(w, http.StatusUnprocessableEntity, FieldError{Field: "spec", Message: fmt.Sprintf("no spec %q in %s", req.Spec, a.specs)})
		return
	}
	plan, diags := s.load(path)
	if plan != nil && !diags.HasErrors() {
		diags = append(slices.Clip(diags), spec.UnpinnedLibraries(plan)...)
	}
	if plan == nil || diags.HasErrors() {
		writeProblems(w, http.StatusUnprocessableEntity, FieldError{Field: "spec", Message: diags.Format()})
		return
	}
	sw, problems := s.sweepFlags(req)
	given, more := startGiven(plan, req, sw.Sweeping())
	problems = append(problems, more...)
	if problems = append(problems, checkUploads(req.Files)...); len(req.Files) > 0 && sw.Sweeping() {
		problems = append(problems, FieldError{Field: "files", Message: "files go to a single run's context, not a sweep's"})
	}
	if len(problems) > 0 {
		writeProblems(w, http.StatusUnprocessableEntity, problems...)
		return
	}
	opts := runtime.Options{
		Launch:   launch.Launch{Given: given, Cache: a.Cache},
		Settings: runtime.Settings{RunsDir: s.root, Getenv: a.Getenv, Version: a.Version},
	}
	x, err := executor.Lookup("local")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	l := &executor.Launch{Plan: plan, Registry: s.reg, Run: opts}
	kind := "run"
	if sw.Sweeping() {
		l.Sweep, l.Out, kind = sw, quiet, "sweep"
		if err := sw.Check(plan); err != nil {
			writeProblems(w, http.StatusUnprocessableEntity, fieldOf(err))
			return
		}
	}
	if err := executor.Validate("local", x, l); err != nil {
		writeProblems(w, http.StatusUnprocessableEntity, fieldOf(err))
		return
	}
	ctx, cancel := s.runContext()
	if kind == "sweep" {
		s.startSweep(ctx, cancel, w, x, l)
		return
	}
	if len(req.Files) > 0 {
		dir, err := writeUploads(s.root, req.Files)
		if err != nil {
			cancel()
			http.Error(w, "the files could not be written: "+err.Error(), http.StatusInternalServerError)
			return
		}
		l.Run.ContextFrom = dir
		// Start moves the folder into the run; what is left is removed.
		defer os.RemoveAll(dir)
	}
	h, err := x.Start(ctx, l)
	if err != nil {
		cancel()
		writeProblems(w, http.StatusUnprocessableEntity, fieldOf(err))
		return
	}
	s.follow(ctx, h, cancel)
	writeJSON(w, map[string]any{"id": filepath.Base(h.Dir()), "kind": kind})
}

// startGiven turns the form into what runner run's flags give, checking
// what the flags' parsing would refuse at the field it concerns.
// A sweep's runs take their inputs from its dataset and matrix too: its
// required inputs are checked for each run as the sweep is planned.
func startGiven(plan *spec.Plan, req StartRequest, sweeping bool) (launch.Given, []FieldError) {
	var g launch.Given
	var problems []FieldError
	declared := map[string]*spec.InputPlan{}
	for _, in := range plan.Inputs {
		declared[in.Name] = in
	}
	for _, name := range slices.Sorted(mapsKeys(req.Inputs)) {
		if _, ok := declared[name]; !ok {
			problems = append(problems, FieldError{Field: "input:" + name, Message: fmt.Sprintf("the spec declares no input %q", name)})
			continue
		}
		if v := req.Inputs[name]; v != "" {
			if g.InputValues == nil {
				g.InputValues = map[string]any{}
			}
			g.InputValues[name] = v
		}
	}
	for _, in := range plan.Inputs {
		if in.Required && req.Inputs[in.Name] == "" && !sweeping {
			problems = append(problems, FieldError{Field: "input:" + in.Name, Message: "required"})
		}
	}
	vars := map[string]bool{}
	for _, v := range plan.Vars {
		vars[v.Name] = true
	}
	for _, name := range slices.Sorted(mapsKeys(req.Vars)) {
		if !vars[name] {
			problems = append(problems, FieldError{Field: "var:" + name, Message: fmt.Sprintf("the spec declares no var %q", name)})
			continue
		}
		g.Sets = append(g.Sets, name+"="+req.Vars[name])
	}
	models := map[string]bool{"offline": true}
	for _, name := range modelNames(plan) {
		models[name] = true
	}
	offline := len(req.Models) > 0
	for _, name := range slices.Sorted(mapsKeys(req.Models)) {
		to := req.Models[name]
		switch {
		case !models[name] || name == "offline":
			problems = append(problems, FieldError{Field: "model:" + name, Message: fmt.Sprintf("the spec declares no model %q", name)})
		case !models[to]:
			problems = append(problems, FieldError{Field: "model:" + name, Message: fmt.Sprintf("%q is not a model of the spec (nor offline)", to)})
		case to != name:
			if g.Models == nil {
				g.Models = map[string]string{}
			}
			g.Models[name] = to
		}
		offline = offline && to == "offline"
	}
	if offline && len(req.Models) == len(modelNames(plan)) {
		// Every model offline is what --offline gives (the implicit
		// default and a panel's copies included).
		m, err := args.Offline(plan)
		if err != nil {
			problems = append(problems, fieldOf(err))
		}
		g.Models = m
	}
	g.Budget = strings.FieldsFunc(req.Budget, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' })
	if req.Seed != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(req.Seed), 10, 64)
		if err != nil {
			problems = append(problems, FieldError{Field: "seed", Message: "a whole number"})
		} else {
			g.Seed = &n
		}
	}
	if len(problems) == 0 && !sweeping {
		// What runner run checks before a run starts, said at its field.
		if _, err := launch.Prepare(plan, g); err != nil {
			problems = append(problems, fieldOf(err))
		}
	}
	return g, problems
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// fieldOf is the field a flag's error concerns.
func fieldOf(err error) FieldError {
	var fe *args.FlagError
	if !errors.As(err, &fe) {
		return FieldError{Message: err.Error()}
	}
	flag := fe.Flag
	name := func(rest string) string {
		n, _, _ := strings.Cut(strings.TrimSpace(rest), "=")
		return n
	}
	switch {
	case strings.HasPrefix(flag, "input "):
		return FieldError{Field: "input:" + name(flag[len("input "):]), Message: fe.Err.Error()}
	case strings.HasPrefix(flag, "--input "):
		return FieldError{Field: "input:" + name(flag[len("--input "):]), Message: fe.Err.Error()}
	case strings.HasPrefix(flag, "--set "):
		return FieldError{Field: "var:" + name(flag[len("--set "):]), Message: fe.Err.Error()}
	case strings.HasPrefix(flag, "--budget"):
		return FieldError{Field: "budget", Message: fe.Err.Error()}
	case strings.HasPrefix(flag, "--model"), flag == "--offline":
		return FieldError{Field: "models", Message: fe.Err.Error()}
	}
	if f, ok := sweepField(flag); ok {
		return FieldError{Field: f, Message: fe.Err.Error()}
	}
	return FieldError{Message: fe.Error()}
}

// follow makes a started or resumed run to its end in the background.
func (s *Server) follow(ctx context.Context, h executor.Handle, cancel context.CancelFunc) {
	a := s.act
	dir := h.Dir()
	a.mu.Lock()
	a.going[dir] = cancel
	a.mu.Unlock()
	s.finish(ctx, h, cancel, func() string { return dir }) // the outcome is in the run's directory
}

// finish makes what h started to its end in the background, counted in
// the view's wait group, then calls cancel and takes the folder dir names
// off what the view is making; dir is asked once h has ended (a sweep's
// folder is known only once it is made). The channel gets what the wait
// returned.
func (s *Server) finish(ctx context.Context, h executor.Handle, cancel context.CancelFunc, dir func() string) <-chan error {
	a := s.act
	ended := make(chan error, 1)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer cancel()
		err := h.Wait(ctx)
		a.mu.Lock()
		delete(a.going, dir())
		a.mu.Unlock()
		ended <- err
	}()
	return ended
}

// going reports whether the view is making the run in dir.
func (s *Server) going(dir string) bool {
	if s.act == nil {
		return false
	}
	s.act.mu.Lock()
	defer s.act.mu.Unlock()
	_, ok := s.act.going[dir]
	return ok
}

// RunRequest names a run to answer, cancel or resume.
type RunRequest struct {
	ID      string            `json:"id"`
	Answers map[string]string `json:"answers,omitempty"`
}

// maxAnswer is the longest answer the page may give.
const maxAnswer = 20000

// runRequest reads a request naming a run and finds the run's folder; it
// answers the request itself (400, 404) when it cannot.
func (s *Server) runRequest(w http.ResponseWriter, r *http.Request) (RunRequest, string, bool) {
	var req RunRequest
	if !decode(w, r, &req) {
		return req, "", false
	}
	dir, err := s.resolve(req.ID)
	if err != nil {
		http.Error(w, req.ID+": no such run", http.StatusNotFound)
		return req, "", false
	}
	return req, dir, true
}

func (s *Server) apiAnswer(w http.ResponseWriter, r *http.Request) {
	req, dir, ok := s.runRequest(w, r)
	if !ok {
		return
	}
	open, err := OpenQuestions(dir)
	if len(open) == 0 {
		if posted, _ := PostedQuestions(dir); len(posted) > 0 {
			s.answerPosted(w, req, dir, posted)
			return
		}
	}
	if err != nil || len(open) == 0 {
		http.Error(w, req.ID+" is not waiting for answers (answered from elsewhere, or resumed)", http.StatusConflict)
		return
	}
	asked := map[string]bool{}
	for _, q := range open {
		asked[q.ID] = true
	}
	var problems []FieldError
	for id, ans := range req.Answers {
		switch {
		case !asked[id]:
			problems = append(problems, FieldError{Field: "answer:" + id, Message: "the run asks no question " + strconv.Quote(id)})
		case len([]rune(ans)) > maxAnswer:
			problems = append(problems, FieldError{Field: "answer:" + id, Message: fmt.Sprintf("at most %d characters", maxAnswer)})
		}
	}
	if len(problems) > 0 {
		writeProblems(w, http.StatusUnprocessableEntity, problems...)
		return
	}
	// The answers the run had (questions.yaml holds them all), with the
	// new ones over them.
	answers := map[string]string{}
	for _, q := range open {
		if q.Answer != "" {
			answers[q.ID] = q.Answer
		}
	}
	for id, ans := range req.Answers {
		answers[id] = ans
	}
	s.resume(w, req.ID, dir, answers)
}

func (s *Server) apiResume(w http.ResponseWriter, r *http.Request) {
	req, dir, ok := s.runRequest(w, r)
	if !ok {
		return
	}
	s.resume(w, req.ID, dir, nil)
}

// resume continues the run in dir as runner resume does, with answers.
func (s *Server) resume(w http.ResponseWriter, id, dir string, answers map[string]string) {
	// A run this view resumed that has just asked new questions is
	// ending (a run waits for answers by stopping): the page can show its
	// questions, and be answered, before it has ended. Wait for it a
	// little rather than refuse answers to the questions on the page.
	// (A plain resume of a run the view makes is refused at once.)
	for deadline := time.Now().Add(10 * time.Second); answers != nil && s.going(dir) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if s.going(dir) {
		http.Error(w, id+" is running in this view already", http.StatusConflict)
		return
	}
	a := s.act
	_, x, err := executor.ForDir(dir)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	opts := runtime.Options{Settings: runtime.Settings{Getenv: a.Getenv, Version: a.Version}}
	opts.Answers = answers
	l := &executor.Launch{Registry: s.reg, Run: opts, Out: quiet}
	ctx, cancel := s.runContext()
	h, err := x.Resume(ctx, dir, l)
	if err != nil {
		cancel()
		code := http.StatusUnprocessableEntity
		if errors.Is(err, rundir.ErrLocked) || errors.Is(err, runtime.ErrCompleted) {
			code = http.StatusConflict // answered or resumed elsewhere first
		}
		http.Error(w, err.Error(), code)
		return
	}
	s.follow(ctx, h, cancel)
	writeJSON(w, map[string]any{"id": id})
}

func (s *Server) apiCancel(w http.ResponseWriter, r *http.Request) {
	req, dir, ok := s.runRequest(w, r)
	if !ok {
		return
	}
	a := s.act
	a.mu.Lock()
	cancel, ok := a.going[dir]
	a.mu.Unlock()
	if !ok {
		http.Error(w, req.ID+" is not running in this view (a run started from a terminal stops there, with Ctrl-C)", http.StatusConflict)
		return
	}
	cancel()
	writeJSON(w, map[string]any{"id": req.ID})
}

// answerPosted answers questions a terminal asks as the run goes: each
// answer is claimed against the terminal's, and the first wins.
func (s *Server) answerPosted(w http.ResponseWriter, req RunRequest, dir string, posted []Question) {
	asked := map[string]bool{}
	for _, q := range posted {
		asked[q.ID] = true
	}
	var problems []FieldError
	for id, ans := range req.Answers {
		switch {
		case !asked[id]:
			problems = append(problems, FieldError{Field: "answer:" + id, Message: "the run asks no question " + strconv.Quote(id) + " (answered at the terminal, or asked no more)"})
		case len([]rune(ans)) > maxAnswer:
			problems = append(problems, FieldError{Field: "answer:" + id, Message: fmt.Sprintf("at most %d characters", maxAnswer)})
		}
	}
	if len(problems) > 0 {
		writeProblems(w, http.StatusUnprocessableEntity, problems...)
		return
	}
	var lost []string
	for _, id := range slices.Sorted(mapsKeys(req.Answers)) {
		err := answers.AnswerPosted(dir, id, req.Answers[id])
		switch {
		case errors.Is(err, answers.ErrAnswered):
			lost = append(lost, id)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	if len(lost) > 0 {
		http.Error(w, fmt.Sprintf("%s: answered at the terminal first (%s); the run goes on with the terminal's answer", req.ID, strings.Join(lost, ", ")), http.StatusConflict)
		return
	}
	writeJSON(w, map[string]any{"id": req.ID})
}

// PostedQuestions are the questions a terminal asks in the run in dir as
// it goes (answers.OpenPosted), with the turns among them.
func PostedQuestions(dir string) ([]Question, []answers.Turn) {
	var qs []Question
	var turns []answers.Turn
	for _, p := range answers.OpenPosted(dir) {
		qs = append(qs, Question{ID: p.Question.ID, Agent: p.Question.Agent, Question: p.Question.Question, Terminal: true})
		if p.Turn != nil {
			turns = append(turns, *p.Turn)
		}
	}
	return qs, turns
}

// Question is an open question of a waiting run, as questions.yaml holds
// it: its id, who asks what, and its answer so far.
type Question struct {
	ID       string `json:"id"`
	Agent    string `json:"agent"`
	Question string `json:"question"`
	Answer   string `json:"answer,omitempty"`
	Answered bool   `json:"answered"`
	// Terminal says a terminal asks it as the run goes (the run has not
	// stopped): the page may answer it first.
	Terminal bool `json:"terminal,omitempty"`
}

// OpenQuestions reads the questions a waiting run needs answered (its
// questions.yaml); none when it waits for nothing.
func OpenQuestions(dir string) ([]Question, error) {
	res, err := result.Read(dir)
	if err != nil || res.Status != result.StatusWaiting {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, "questions.yaml"))
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil
	}
	m := doc.Content[0]
	var out []Question
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		q := Question{ID: k.Value, Answer: v.Value}
		comment := questionComment(k.HeadComment)
		if strings.HasSuffix(comment, " (answered)") {
			comment, q.Answered = strings.TrimSuffix(comment, " (answered)"), true
		}
		q.Agent, q.Question, _ = strings.Cut(comment, " asks: ")
		out = append(out, q)
	}
	return out, nil
}

// OpenTurns reads the turns of agents a person plays that a waiting run
// needs taken (its turns.json), each with the prompt its model would have
// been sent; none when it waits for none. They are among its open
// questions, by the same ids, and answered as they are.
func OpenTurns(dir string, open []Question) ([]answers.Turn, error) {
	asked := map[string]bool{}
	for _, q := range open {
		if !q.Answered {
			asked[q.ID] = true
		}
	}
	if len(asked) == 0 {
		return nil, nil
	}
	turns, err := answers.ReadTurns(filepath.Join(dir, answers.TurnsFile))
	if err != nil {
		return nil, err
	}
	var out []answers.Turn
	for _, t := range turns {
		if asked[t.ID] {
			out = append(out, t)
		}
	}
	return out, nil
}

// questionComment is the comment above a question in questions.yaml,
// without the file's header.
func questionComment(c string) string {
	var keep []string
	for _, line := range strings.Split(c, "\n") {
		line = strings.TrimPrefix(strings.TrimPrefix(line, "#"), " ")
		if strings.HasPrefix(line, "Answer the questions below") || strings.HasPrefix(strings.TrimSpace(line), "runner resume ") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}
