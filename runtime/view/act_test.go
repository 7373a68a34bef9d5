package view_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/callview"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/runtime/view"
)

func runtimeGOOS() string { return goruntime.GOOS }

const testToken = "0123456789abcdef0123456789abcdef"

// designDebate is the folder of the example whose runs ask clarifying
// questions; the start form lists it.
func designDebate(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "design-debate"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// actingServer is a view of root that acts, listening on a loopback port
// (as runner view does), its specs those of the specs folder. getenv is
// the environment its runs are made with (nil: none).
// wrap, when given, wraps the view's handler.
func actingServer(t testing.TB, root, specs string, getenv func(string) string, wrap ...func(http.Handler) http.Handler) (*httptest.Server, *view.Server) {
	t.Helper()
	v, err := view.New(root, nodes.Registry())
	if err != nil {
		t.Fatal(err)
	}
	v.Poll = 50 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	v.Hosts = view.HostsFor(ln.Addr())
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if err := v.Act(view.Acting{Token: testToken, Specs: specs, Getenv: getenv, Version: "test"}); err != nil {
		t.Fatal(err)
	}
	h := v.Handler()
	for _, w := range wrap {
		h = w(h)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.Listener = ln
	ts.Start()
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		v.Close() // the runs it started stop, and are waited for
	})
	return ts, v
}

// act sends an acting request as the view's page does (the token, the
// view's own origin, JSON) straight to the handler.
func act(t testing.TB, v *view.Server, host, path string, body any) *httptest.ResponseRecorder {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "http://"+host+path, strings.NewReader(string(data)))
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://"+host)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set(view.TokenHeader, testToken)
	rec := httptest.NewRecorder()
	v.Handler().ServeHTTP(rec, req)
	return rec
}

// offlineStart is the start form of design-debate with every model
// offline: a run that ends waiting for answers.
var offlineStart = view.StartRequest{Spec: "spec.yaml", Inputs: map[string]string{"problem": "A URL shortener for 100 requests a second"},
	Vars: map[string]string{"max_rounds": "1"}, Models: map[string]string{"default": "offline", "judge": "offline"}}

// snapshot is every file under root: its path, size and content digest.
func snapshot(t testing.TB, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			lines = append(lines, rel+"/")
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		lines = append(lines, fmt.Sprintf("%s %d %s", rel, len(data), hex.EncodeToString(sum[:8])))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// guardCase is one acting request, each of its parts right or not.
type guardCase struct {
	Endpoint uint8  // which acting request (start, answer, resume, cancel, study, sweep, start with files)
	Token    string // X-Runner-Token ("-": none)
	Origin   string // Origin ("-": none)
	Host     string // Host ("": the view's)
	Site     string // Sec-Fetch-Site ("": none)
	Type     string // Content-Type
}

var endpoints = []string{"/api/act/start", "/api/act/answer", "/api/act/resume", "/api/act/cancel", "/api/act/study", "/api/act/start", "/api/act/start"}

// legit reports whether a request carries everything an acting request
// needs: the token, the view's own host and origin, JSON.
func (c guardCase) legit(host string) bool {
	h := c.Host
	if h == "" {
		h = host
	}
	return c.Token == testToken && h == host && (c.Origin == "-" || c.Origin == "http://"+h) &&
		(c.Site == "" || c.Site == "same-origin" || c.Site == "none") && c.Type == "application/json"
}

// guardFixture is a view that acts over a runs folder holding a run that
// waits for answers: a request let through would start a run, answer or
// resume that one, so that it changes what is on disk.
type guardFixture struct {
	ts       *httptest.Server
	v        *view.Server
	host, id string
	root     string
	before   string
}

func newGuardFixture(t testing.TB) *guardFixture {
	root := t.TempDir()
	ts, v := actingServer(t, root, designDebate(t), nil)
	host := strings.TrimPrefix(ts.URL, "http://")
	rec := act(t, v, host, "/api/act/start", offlineStart)
	if rec.Code != http.StatusOK {
		t.Fatalf("starting a run: %d %s", rec.Code, rec.Body)
	}
	var started struct{ ID string }
	_ = json.Unmarshal(rec.Body.Bytes(), &started)
	v.Wait()
	if res, err := result.Read(filepath.Join(root, started.ID)); err != nil || res.Status != result.StatusWaiting {
		t.Fatalf("the fixture run does not wait for answers: %v %v", res, err)
	}
	return &guardFixture{ts: ts, v: v, host: host, id: started.ID, root: root, before: snapshot(t, root)}
}

// check sends c and, unless c is legit, wants it refused with nothing
// changed on disk.
func (g *guardFixture) check(t *testing.T, c guardCase) {
	t.Helper()
	if c.legit(g.host) {
		return
	}
	sweepStart := offlineStart
	sweepStart.Repeat = 2
	uploadStart := offlineStart // a start with files (uploads)
	uploadStart.Files = []view.UploadFile{{Name: "notes.md", Data: []byte("the notes")}}
	bodies := []any{offlineStart, view.RunRequest{ID: g.id, Answers: map[string]string{"architect.q1": "yes"}}, view.RunRequest{ID: g.id}, view.RunRequest{ID: g.id},
		view.StudyRequest{Path: "study.yaml"}, sweepStart, uploadStart}
	path := endpoints[int(c.Endpoint)%len(endpoints)]
	data, _ := json.Marshal(bodies[int(c.Endpoint)%len(bodies)])
	host := c.Host
	if host == "" {
		host = g.host
	}
	req := httptest.NewRequest(http.MethodPost, "http://"+g.host+path, strings.NewReader(string(data)))
	req.Host = host
	if c.Type != "" {
		req.Header.Set("Content-Type", c.Type)
	}
	if c.Origin != "-" {
		req.Header.Set("Origin", c.Origin)
	}
	if c.Site != "" {
		req.Header.Set("Sec-Fetch-Site", c.Site)
	}
	if c.Token != "-" {
		req.Header.Set(view.TokenHeader, c.Token)
	}
	rec := httptest.NewRecorder()
	g.v.Handler().ServeHTTP(rec, req)
	g.v.Wait()
	if rec.Code != http.StatusForbidden && rec.Code != http.StatusUnsupportedMediaType {
		t.Fatalf("%+v: %d %s, want it refused", c, rec.Code, rec.Body)
	}
	if after := snapshot(t, g.root); after != g.before {
		t.Fatalf("%+v was refused (%d) but changed the runs folder", c, rec.Code)
	}
}

// FuzzActingRefused: any acting request without the right token, or from
// another origin, host or site, or not JSON (a cross-site form's post),
// is refused and changes nothing on disk.
func FuzzActingRefused(f *testing.F) {
	f.Add(uint8(0), "-", "-", "", "", "application/json")
	f.Add(uint8(0), testToken[:31], "-", "", "", "application/json")
	f.Add(uint8(1), testToken+"0", "-", "", "", "application/json")
	f.Add(uint8(2), testToken, "http://evil.example", "", "cross-site", "application/json")
	f.Add(uint8(1), testToken, "null", "", "", "application/json")
	f.Add(uint8(0), testToken, "-", "evil.example:80", "", "application/json")
	f.Add(uint8(2), testToken, "-", "", "", "application/x-www-form-urlencoded")
	f.Add(uint8(1), testToken, "-", "", "", "text/plain")
	f.Add(uint8(3), testToken, "-", "", "same-site", "application/json")
	g := newGuardFixture(f)
	f.Fuzz(func(t *testing.T, endpoint uint8, token, origin, host, site, ctype string) {
		g.check(t, guardCase{endpoint, token, origin, host, site, ctype})
	})
}

// TestActingRefusedProperty draws acting requests with one or more parts
// wrong (each part right or wrong at random) and checks each is refused
// with nothing written; the same requests with every part right act.
func TestActingRefusedProperty(t *testing.T) {
	g := newGuardFixture(t)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("seed %d", seed)
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	randText := func() string {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(33 + rng.IntN(94))
		}
		return string(b)
	}
	refused := 0
	for i := 0; i < 150; i++ {
		c := guardCase{Endpoint: uint8(rng.IntN(len(endpoints))), Token: testToken, Origin: pick("-", "http://"+g.host), Site: pick("", "same-origin", "none"), Type: "application/json"}
		// Make one to three parts wrong.
		for n := 1 + rng.IntN(3); n > 0; n-- {
			switch rng.IntN(5) {
			case 0:
				c.Token = pick("-", "", randText(), testToken[:rng.IntN(len(testToken))], strings.ToUpper(testToken), testToken[1:]+"0")
			case 1:
				c.Origin = pick("http://evil.example", "https://"+g.host, "null", "http://"+randText(), "http://localhost.evil.example")
			case 2:
				c.Host = pick("evil.example", "attacker.test:"+strings.Split(g.host, ":")[1], randText()+".example")
			case 3:
				c.Site = pick("cross-site", "same-site")
			case 4:
				c.Type = pick("", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx")
			}
		}
		if !c.legit(g.host) {
			refused++
		}
		g.check(t, c)
	}
	if refused < 120 {
		t.Fatalf("only %d of 150 generated requests were wrong", refused)
	}
	// Answered from a terminal first (a resume holds the run's lock): the
	// page's answer is refused, and told why.
	lock, err := rundir.TakeLock(filepath.Join(g.root, g.id))
	if err != nil {
		t.Fatal(err)
	}
	rec := act(t, g.v, g.host, "/api/act/answer", view.RunRequest{ID: g.id, Answers: map[string]string{"architect.q1": "yes"}})
	g.v.Wait()
	if rec.Code != http.StatusConflict || rec.Body.Len() == 0 {
		t.Errorf("an answer while a terminal resumes the run: %d %s", rec.Code, rec.Body)
	}
	if snapshot(t, g.root) != g.before {
		t.Error("an answer refused while a terminal resumes the run changed the runs folder")
	}
	_ = lock.Unlock()

	// The control: with everything right the same requests act.
	rec = act(t, g.v, g.host, "/api/act/answer", view.RunRequest{ID: g.id, Answers: map[string]string{"architect.q1": "yes"}})
	g.v.Wait()
	if rec.Code != http.StatusOK || snapshot(t, g.root) == g.before {
		t.Fatalf("a right request did not act: %d %s", rec.Code, rec.Body)
	}
}

// TestActingLimits: a body over the limit is refused without a run; a
// spec outside the folder or an unknown one is refused at its field; a
// view listening beyond this machine does not act.
func TestActingLimits(t *testing.T) {
	root := t.TempDir()
	ts, v := actingServer(t, root, designDebate(t), nil)
	host := strings.TrimPrefix(ts.URL, "http://")
	big := offlineStart
	big.Inputs = map[string]string{"problem": strings.Repeat("x", view.MaxActBody)}
	if rec := act(t, v, host, "/api/act/start", big); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the limit: %d %s", rec.Code, rec.Body)
	}
	// A 1 GB body, sent as a stream: refused once the limit is read,
	// the rest never read.
	huge := &endlessInput{size: 1 << 30, stop: 2 * view.MaxActBody}
	req := httptest.NewRequest(http.MethodPost, "http://"+host+"/api/act/start", huge)
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://"+host)
	req.Header.Set(view.TokenHeader, testToken)
	rec := httptest.NewRecorder()
	v.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || huge.read > view.MaxActBody+1<<16 {
		t.Errorf("a 1 GB body: %d %s, %d bytes of it read (the limit is %d)", rec.Code, rec.Body, huge.read, view.MaxActBody)
	}
	for _, spec := range []string{"../reasoning-debate/spec.yaml", "/etc/passwd", "nothing.yaml", "spec.test.yaml"} {
		req := offlineStart
		req.Spec = spec
		if rec := act(t, v, host, "/api/act/start", req); rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), `"field":"spec"`) {
			t.Errorf("spec %q: %d %s", spec, rec.Code, rec.Body)
		}
	}
	v.Wait()
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("refused starts left %d entries in the runs folder", len(entries))
	}
	// Not on loopback: refused.
	wide, err := view.New(root, nodes.Registry())
	if err != nil {
		t.Fatal(err)
	}
	if err := wide.Act(view.Acting{Token: testToken}); err == nil {
		t.Error("a view that answers any host was let act")
	}
	if _, err := view.ListenActing(root, "0.0.0.0:0", nodes.Registry(), func(string) {}, &view.Acting{Token: testToken}); err == nil || !strings.Contains(err.Error(), "--read-only") {
		t.Errorf("listening beyond this machine to act: %v", err)
	}
}

// TestCancelAndResumeFromTheView: a run started from the view against the
// local OpenAI-compatible server is cancelled (it stops, resumable), then
// resumed from the view to its end; a resume asked while the view makes
// the run, or of a completed run, is refused and says why.
func TestCancelAndResumeFromTheView(t *testing.T) {
	root := t.TempDir()
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		select {
		case <-release:
		case <-time.After(20 * time.Second):
		}
		return llmtest.Reply{Content: "The answer is B."}
	})
	// One call: the run waits in it until released.
	single, err := filepath.Abs(filepath.Join("..", "..", "examples", "protocols", "single-agent"))
	if err != nil {
		t.Fatal(err)
	}
	ts, v := actingServer(t, root, single, runtest.Env(srv.URL, "sk-view-test"))
	host := strings.TrimPrefix(ts.URL, "http://")
	rec := act(t, v, host, "/api/act/start", view.StartRequest{Spec: "spec.yaml", Inputs: map[string]string{"question": "Which is a prime?", "options": "4\n7\n9"}})
	if rec.Code != http.StatusOK {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	var started struct{ ID string }
	_ = json.Unmarshal(rec.Body.Bytes(), &started)
	dir := filepath.Join(root, started.ID)
	if rec := act(t, v, host, "/api/act/resume", view.RunRequest{ID: started.ID}); rec.Code != http.StatusConflict {
		t.Errorf("resuming a run the view is making: %d %s", rec.Code, rec.Body)
	}
	if rec := act(t, v, host, "/api/act/cancel", view.RunRequest{ID: started.ID}); rec.Code != http.StatusOK {
		t.Fatalf("cancel: %d %s", rec.Code, rec.Body)
	}
	v.Wait()
	if res, err := result.Read(dir); err == nil && res.Status == result.StatusCompleted {
		t.Fatalf("the cancelled run completed")
	}
	if rec := act(t, v, host, "/api/act/cancel", view.RunRequest{ID: started.ID}); rec.Code != http.StatusConflict {
		t.Errorf("cancelling a run that is not going: %d %s", rec.Code, rec.Body)
	}
	once.Do(func() { close(release) })
	if rec := act(t, v, host, "/api/act/resume", view.RunRequest{ID: started.ID}); rec.Code != http.StatusOK {
		t.Fatalf("resume: %d %s", rec.Code, rec.Body)
	}
	v.Wait()
	res, err := result.Read(dir)
	if err != nil || res.Status != result.StatusCompleted || res.Outputs["answer"] != "B" {
		t.Fatalf("the resumed run: %v %v", res, err)
	}
	if rec := act(t, v, host, "/api/act/resume", view.RunRequest{ID: started.ID}); rec.Code != http.StatusConflict {
		t.Errorf("resuming a completed run: %d %s", rec.Code, rec.Body)
	}
}

// listTellsARunAsItsPageDoes: the list's line of a run without a
// result (killed, or running) counts its calls, tokens and time from its
// journal as the run's page does, not 0 s and 0 tokens beside its calls;
// and a failed run that a resume works on is listed running, without its
// old result.
// (TestRunsAndSweepsList calls it with its fixtures.)
func listTellsARunAsItsPageDoes(t *testing.T, f *fixtures, ts *httptest.Server) {
	calls, err := callview.Read(filepath.Join(f.root, f.killed))
	if err != nil {
		t.Fatal(err)
	}
	want := view.RunInfo{}
	for _, c := range calls.Calls {
		if !c.Done {
			continue
		}
		want.Calls++
		want.Tokens += c.PromptTokens + c.CompletionTokens
	}
	events, err := journal.Read(filepath.Join(f.root, f.killed, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first, last := events[0].Time, events[len(events)-1].Time
	row := listed(t, ts, f.killed)
	if row.Status != view.StatusIncomplete || row.Calls != want.Calls || row.Tokens != want.Tokens || row.Tokens == 0 {
		t.Errorf("the killed run's line: %s, %d calls, %d tokens; its journal: %d calls, %d tokens", row.Status, row.Calls, row.Tokens, want.Calls, want.Tokens)
	}
	if d := last.Sub(first).Milliseconds(); row.DurationMS != d || d <= 0 {
		t.Errorf("the killed run's line lasts %d ms; its journal %d ms", row.DurationMS, d)
	}

	// A run going on (its directory locked) is running, and its time grows.
	lock, err := rundir.TakeLock(filepath.Join(f.root, f.killed))
	if err != nil {
		t.Fatal(err)
	}
	row = listed(t, ts, f.killed)
	if row.Status != view.StatusRunning || row.DurationMS < time.Since(first).Milliseconds()-1000 {
		t.Errorf("a running run's line: %s, %d ms since its start %s", row.Status, row.DurationMS, first)
	}
	_ = lock.Unlock()

	// A failed run a resume works on.
	if row := listed(t, ts, f.failed); row.Status != result.StatusFailed {
		t.Fatalf("the failed run is listed %s", row.Status)
	}
	lock, err = rundir.TakeLock(filepath.Join(f.root, f.failed))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	if runtimeGOOS() == "linux" {
		if row := listed(t, ts, f.failed); row.Status != view.StatusRunning {
			t.Errorf("a failed run being resumed is listed %s", row.Status)
		}
		if code, body := get(t, ts, "/api/run?id="+f.failed); code != http.StatusOK || strings.Contains(string(body), `"result"`) {
			t.Errorf("a failed run being resumed is shown with its old result: %d", code)
		}
	}
}

// listed is the list's line of run id.
func listed(t *testing.T, ts *httptest.Server, id string) view.RunInfo {
	t.Helper()
	code, body := get(t, ts, "/api/runs")
	if code != http.StatusOK {
		t.Fatalf("/api/runs: %d", code)
	}
	var list struct{ Runs []view.RunInfo }
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	for _, r := range list.Runs {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("%s is not listed", id)
	return view.RunInfo{}
}

// endlessInput is the start of a start request whose input never ends:
// size bytes in all, made as they are read; reading past stop fails (a
// view without its limit would hold them all).
type endlessInput struct {
	size, stop, read int
}

func (e *endlessInput) Read(p []byte) (int, error) {
	const head = `{"spec":"spec.yaml","inputs":{"problem":"`
	if e.read >= e.size {
		return 0, io.EOF
	}
	if e.read >= e.stop {
		return 0, errors.New("read past twice the limit")
	}
	n := 0
	for n < len(p) && e.read < e.size {
		if e.read < len(head) {
			p[n] = head[e.read]
		} else {
			p[n] = 'x'
		}
		n++
		e.read++
	}
	return n, nil
}
