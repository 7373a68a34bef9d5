package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/launch"
)

// Agents made at run time (testdata/protocols/agentverse.yaml): for
// generated runs (how many experts the recruiter names in each
// iteration, their models, when the evaluator is satisfied, the vars'
// bounds), the run makes exactly the calls the recruited members give
// (1 + k + 3 per iteration), each expert's review goes to the model its
// recruitment chose and names the expert, a replay of the run makes no
// request and gives the same outputs, and the dry run plans every
// iteration with the most experts the var allows.
func TestRecruitedAgentsRunAsTheListSays(t *testing.T) {
	plan := loadPlan(t, "testdata/protocols/agentverse.yaml")
	rng := rand.New(rand.NewPCG(38, 1))
	for trial := range 6 {
		maxExperts, maxIter := 1+rng.IntN(5), 1+rng.IntN(4)
		sets := []string{fmt.Sprintf("experts=%d", maxExperts), fmt.Sprintf("iterations=%d", maxIter)}
		dry, err := NewDry(plan, Options{Launch: launch.Launch{Given: launch.Given{Sets: sets}}}, Dry{Stage: &calls.Placeholders{}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dry.Execute(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got, want := int(dry.dry.worst()), maxIter*(maxExperts+4); got != want {
			t.Errorf("trial %d %v: the dry run plans %d calls, want %d", trial, sets, got, want)
		}

		// What the model says, by iteration: the experts it names (each
		// with a model) and whether the evaluator is satisfied.
		doneAt := 1 + rng.IntN(maxIter)
		type expert struct{ name, model string }
		team := map[int][]expert{}
		for it := 1; it <= maxIter; it++ {
			for j := range 1 + rng.IntN(maxExperts) {
				team[it] = append(team[it], expert{fmt.Sprintf("E%d-%d", it, j+1), []string{"default", "strong"}[rng.IntN(2)]})
			}
		}
		var mu sync.Mutex
		var reqs []llmtest.Request
		srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
			mu.Lock()
			reqs = append(reqs, r)
			mu.Unlock()
			key := r.Header.Get("X-Call-Key")
			it := 0
			if i := strings.Index(key, "iteration="); i >= 0 {
				_, _ = fmt.Sscanf(key[i+len("iteration="):], "%d", &it)
			}
			switch {
			case strings.HasPrefix(key, "recruit_roles/"):
				var list []map[string]string
				for _, e := range team[it] {
					list = append(list, map[string]string{"name": e.name, "role": "role of " + e.name, "model": e.model})
				}
				b, _ := json.Marshal(map[string]any{"experts": list})
				return llmtest.Reply{Content: string(b)}
			case strings.HasPrefix(key, "evaluate/"):
				return llmtest.Reply{Content: fmt.Sprintf(`{"done": %v, "feedback": "f%d"}`, it == doneAt, it)}
			}
			return llmtest.Reply{Content: "reply to " + key}
		})
		run, res, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Launch: launch.Launch{Given: launch.Given{Sets: sets}}, Seams: keyedSeams})
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		want := 0
		for it := 1; it <= doneAt; it++ {
			want += len(team[it]) + 4
		}
		if res.Usage.Total.Calls != want || len(reqs) != want {
			t.Errorf("trial %d: %d calls (%d requests), want %d", trial, res.Usage.Total.Calls, len(reqs), want)
		}
		for _, r := range reqs {
			key := r.Header.Get("X-Call-Key")
			if !strings.HasPrefix(key, "review/") {
				continue
			}
			it, slot := 0, 0
			_, _ = fmt.Sscanf(key, "review/iteration=%d/expert_%d", &it, &slot)
			if slot < 1 || slot > len(team[it]) {
				t.Errorf("trial %d: review call %s names no recruited member", trial, key)
				continue
			}
			e := team[it][slot-1]
			model := map[string]string{"default": "gpt-4o-mini", "strong": "gpt-4o"}[e.model]
			if r.Model != model || !strings.Contains(r.LastUser(), "You are "+e.name+", role of "+e.name) {
				t.Errorf("trial %d: %s went to %s with %q; want %s naming %s", trial, key, r.Model, r.LastUser(), model, e.name)
			}
		}
		var names []any
		for _, e := range team[doneAt] {
			names = append(names, e.name)
		}
		if !reflect.DeepEqual(res.Outputs["experts"], names) {
			t.Errorf("trial %d: experts %v, want %v", trial, res.Outputs["experts"], names)
		}

		// A replay of the run recruits the same members from the recording.
		replies, err := LoadReplay(run.Dir)
		if err != nil {
			t.Fatal(err)
		}
		before := len(reqs)
		_, replayed, err := execute(t, plan, Options{Launch: launch.Launch{Given: launch.Given{Sets: sets}, Recording: launch.Recording{Replay: replies, ReplayFrom: run.Dir}}, Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
		if err != nil {
			t.Fatalf("trial %d: replay: %v", trial, err)
		}
		if len(reqs) != before || !reflect.DeepEqual(replayed.Outputs, res.Outputs) {
			t.Errorf("trial %d: the replay sent %d requests and gave %v, want none and %v", trial, len(reqs)-before, replayed.Outputs, res.Outputs)
		}
	}
}

// keyedSeams send each request with its call key in an X-Call-Key header,
// so the test's server answers by key.
var keyedSeams = Seams{Sleep: noSleep, HTTPClient: &http.Client{Transport: keyHeader{http.DefaultTransport}}}

type keyHeader struct{ next http.RoundTripper }

func (k keyHeader) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("X-Call-Key", calls.KeyFrom(req.Context()))
	return k.next.RoundTrip(req)
}
