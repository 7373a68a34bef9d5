package runtime

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/launch"
)

// The protocols of testdata/protocols (issue 38's ten, with those under
// examples/protocols and testdata/camel.yaml), each written from its
// paper's description: for generated values of their vars and generated
// points where a run stops early (a judge accepts, a self-critique finds
// nothing, a layer agrees), the dry run plans the calls the protocol's own
// formula gives at the vars' values, and a run against the local server
// makes the calls the formula gives for where it stopped.
func TestProtocolsPlanAndMakeTheirCalls(t *testing.T) {
	counter := regexp.MustCompile(`(?:round|step|layer|iteration)=(\d+)`)
	iterOf := func(key string) int {
		if m := counter.FindStringSubmatch(key); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
		return 0
	}
	type scenario struct {
		sets  []string
		plan  int // the dry run's calls
		calls int // the run's calls
		reply func(key, prompt string) string
		check func(t *testing.T, prompts map[string]string)
	}
	pool := []string{"Mathematician", "Programmer", "Teacher", "Skeptic"}
	protocols := map[string]func(rng *rand.Rand) scenario{
		// Two debaters argue R rounds at once; one judge decides.
		"khan-debate": func(rng *rand.Rand) scenario {
			r := 1 + rng.IntN(6)
			return scenario{sets: []string{"rounds=" + strconv.Itoa(r)}, plan: 2*r + 1, calls: 2*r + 1,
				reply: func(key, _ string) string {
					if strings.HasPrefix(key, "decide/") {
						return "B is better supported. ANSWER: B"
					}
					return "the story says so"
				}}
		},
		// A draft, then feedback and a rewrite per step until the
		// feedback says STOP (at step stop, or never).
		"self-refine": func(rng *rand.Rand) scenario {
			r := 1 + rng.IntN(8)
			stop := 1 + rng.IntN(r+1)
			calls := 1 + 2*r
			if stop <= r {
				calls = 2 * stop
			}
			return scenario{sets: []string{"refinements=" + strconv.Itoa(r)}, plan: 1 + 2*r, calls: calls,
				reply: func(key, _ string) string {
					if strings.HasPrefix(key, "feedback/") && iterOf(key) == stop {
						return "Nothing to change. STOP"
					}
					return "text for " + key
				}}
		},
		// An answer, then attack, judgement and revision per round
		// until the judge accepts (at round accept, or never).
		"adversarial-judge": func(rng *rand.Rand) scenario {
			r := 1 + rng.IntN(6)
			accept := 1 + rng.IntN(r+1)
			calls := 1 + 3*r
			if accept <= r {
				calls = 3 * accept
			}
			return scenario{sets: []string{"rounds=" + strconv.Itoa(r)}, plan: 1 + 3*r, calls: calls,
				reply: func(key, _ string) string {
					if strings.HasPrefix(key, "judge/") {
						if iterOf(key) == accept {
							return "VERDICT: ACCEPT"
						}
						return "VERDICT: REVISE"
					}
					return "text for " + key
				}}
		},
		// The pool of four answers in layers 1 and 2, a ranker keeps k
		// after layer 2, and they answer the layers left; a layer that
		// agrees ends the network.
		"dylan": func(rng *rand.Rand) scenario {
			k, layers := 1+rng.IntN(4), 2+rng.IntN(5)
			agree := 1 + rng.IntN(layers+1)
			if k == 1 && agree > 2 {
				agree = layers + 1 // one agent alone never agrees
			}
			keep := slices.Clone(pool)
			rng.Shuffle(len(keep), func(i, j int) { keep[i], keep[j] = keep[j], keep[i] })
			keep = keep[:k]
			calls := 0
			for l := 1; l <= min(agree, layers); l++ {
				if l <= 2 {
					calls += 4
				} else {
					calls += k
				}
				if l == 2 && agree != 2 {
					calls++ // the ranker
				}
			}
			return scenario{sets: []string{"k=" + strconv.Itoa(k), "layers=" + strconv.Itoa(layers)}, plan: 2*4 + 1 + (layers-2)*k, calls: calls,
				reply: func(key, prompt string) string {
					if strings.HasPrefix(key, "rank/") {
						return fmt.Sprintf(`{"keep": ["%s"]}`, strings.Join(keep, `", "`))
					}
					if iterOf(key) == agree {
						return "ANSWER: 408"
					}
					return "ANSWER: " + key // every agent its own
				},
				check: func(t *testing.T, prompts map[string]string) {
					for key, p := range prompts {
						if !strings.HasPrefix(key, "answer_top/") {
							continue
						}
						var slot int
						_, _ = fmt.Sscanf(key[strings.LastIndex(key, "/top_")+len("/top_"):], "%d", &slot)
						if slot < 1 || slot > k {
							t.Errorf("%s: no member of the kept %d", key, k)
							continue
						}
						// The top group is recruited in the pool's order.
						var kept []string
						for _, n := range pool {
							if slices.Contains(keep, n) {
								kept = append(kept, n)
							}
						}
						want := kept[slot-1]
						if !strings.Contains(p, "You are the "+want+":") {
							t.Errorf("%s: prompt %q; want the kept %s", key, p, want)
						}
					}
				}}
		},
	}
	rng := rand.New(rand.NewPCG(38, 10))
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range protocols {
			if !yield(n) {
				return
			}
		}
	}) {
		plan := loadPlan(t, "testdata/protocols/"+name+".yaml")
		for trial := range 2 {
			sc := protocols[name](rng)
			dry, err := NewDry(plan, Options{Launch: launch.Launch{Given: launch.Given{Sets: sc.sets}}}, Dry{Stage: &calls.Placeholders{}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dry.Execute(context.Background()); err != nil {
				t.Fatalf("%s %v: dry run: %v", name, sc.sets, err)
			}
			if got := int(dry.dry.worst()); got != sc.plan {
				t.Errorf("%s %v: the dry run plans %d calls, want %d", name, sc.sets, got, sc.plan)
			}
			var mu sync.Mutex
			prompts := map[string]string{}
			srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
				key := r.Header.Get("X-Call-Key")
				mu.Lock()
				prompts[key] = r.LastUser()
				mu.Unlock()
				return llmtest.Reply{Content: sc.reply(key, r.LastUser())}
			})
			_, res, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Launch: launch.Launch{Given: launch.Given{Sets: sc.sets}}, Seams: keyedSeams})
			if err != nil {
				t.Fatalf("%s %v (trial %d): %v", name, sc.sets, trial, err)
			}
			if res.Usage.Total.Calls != sc.calls {
				t.Errorf("%s %v (trial %d): %d calls, want %d", name, sc.sets, trial, res.Usage.Total.Calls, sc.calls)
			}
			if sc.check != nil {
				sc.check(t, prompts)
			}
		}
	}
}
