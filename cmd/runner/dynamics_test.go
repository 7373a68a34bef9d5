package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/dynamics"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/sweep"
)

// panelists answers a chain-of-debate panel at random (seeded by the
// request): speaking to everyone or one other member, whispering, giving,
// keeping or changing a verdict, and withdrawing once it has one.
func panelists(ids map[string]string) func(llmtest.Request) llmtest.Reply {
	turn := regexp.MustCompile(`## Your turn, (.+)\n`)
	return func(req llmtest.Request) llmtest.Reply {
		last := req.Messages[len(req.Messages)-1].Content
		h := fnv.New64a()
		h.Write([]byte(last))
		r := rand.New(rand.NewPCG(h.Sum64(), 7))
		me := ""
		if m := turn.FindStringSubmatch(last); m != nil {
			me = ids[m[1]]
		}
		to, whisper := "All", false
		if r.IntN(2) == 0 {
			for id := range ids {
				if ids[id] != me && r.IntN(2) == 0 {
					to, whisper = ids[id], r.IntN(2) == 0
					break
				}
			}
		}
		reply := fmt.Sprintf("<SpeakingTo>%s</SpeakingTo><Whisper>%v</Whisper><PrivateThoughts>hm</PrivateThoughts><Content>said %d</Content>", to, whisper, r.IntN(1000))
		if r.IntN(3) > 0 {
			reply += fmt.Sprintf("<Verdict>%s</Verdict><VerdictReasoning>because</VerdictReasoning><Withdrawn>%v</Withdrawn>", []string{"YES", "NO", "MAYBE"}[r.IntN(3)], r.IntN(6) == 0)
		} else {
			reply += "<Withdrawn>false</Withdrawn>"
		}
		return llmtest.Reply{Content: reply}
	}
}

// TestDynamicsOfARunAndASweep runs a three-member panel on two goals
// against a local server whose members whisper and change their minds at
// random, twice as a sweep, and reads the dynamics: of each run, its
// whispers are the run's whispered messages and its threads its goals; of
// the sweep, the totals are the sum of its runs'.
func TestDynamicsOfARunAndASweep(t *testing.T) {
	srv := llmtest.New(t, panelists(map[string]string{"Ana Lima": "ana", "Bo Chen": "bo", "Cy Marlowe Tate": "cy"}))
	data, err := os.ReadFile("../../nodes/converse/testdata/panel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(t.TempDir(), "panel.yaml")
	if err := os.WriteFile(spec, []byte(strings.Replace(string(data), "max_turns: 30", "max_turns: 12", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	code, _, stderr := invoke(t, e2eEnv(srv), "run", spec, "--repeat", "2", "--runs-dir", runs, "--no-cache", "-q")
	if code != exitcode.OK && code != exitcode.Inconclusive {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	sweeps, _ := filepath.Glob(filepath.Join(runs, "sweep-*"))
	if len(sweeps) != 1 {
		t.Fatalf("want one sweep directory, found %v\n%s", sweeps, stderr)
	}
	runDirs, _ := filepath.Glob(filepath.Join(sweeps[0], "*", "result.json"))
	if len(runDirs) != 2 {
		t.Fatalf("want two finished runs in the sweep, found %v", runDirs)
	}
	var each [][]result.GoalDynamics
	whispered := 0
	for _, rj := range runDirs {
		dir := filepath.Dir(rj)
		code, out, errOut := invoke(t, nil, "dynamics", dir, "--json")
		if code != exitcode.OK {
			t.Fatalf("dynamics %s: exit %d\n%s", dir, code, errOut)
		}
		var rep dynamics.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("dynamics --json: %v\n%s", err, out)
		}
		res, err := result.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range res.Messages {
			if m.Whisper && m.To != "" && m.To != m.From && !m.Private {
				n++
			}
		}
		whispered += n
		// The command prints result.json's dynamics, computed again from
		// the run's messages by the one definition.
		if !reflect.DeepEqual(rep.Threads, result.Dynamics(res.Messages)) || !reflect.DeepEqual(rep.Threads, res.Dynamics) {
			t.Errorf("%s: the command's threads are not result.json's dynamics", dir)
		}
		if rep.Totals.Whispers.Count != n || rep.Totals.Threads != 2 || rep.Sweep {
			t.Errorf("%s: totals %+v for %d whispers over 2 goals", dir, rep.Totals, n)
		}
		each = append(each, res.Dynamics)
		code, text, _ := invoke(t, nil, "dynamics", dir)
		if code != exitcode.OK || !strings.Contains(text, "goal first (node panel)") || !strings.Contains(text, "goal second (node panel)") {
			t.Errorf("dynamics %s: exit %d\n%s", dir, code, text)
		}
	}
	if whispered == 0 {
		t.Error("the panel never whispered: the test checks nothing of whispers")
	}
	code, out, errOut := invoke(t, nil, "dynamics", sweeps[0], "--json")
	if code != exitcode.OK {
		t.Fatalf("dynamics of the sweep: exit %d\n%s", code, errOut)
	}
	var rep dynamics.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if want := sweep.SumDynamics(each); !rep.Sweep || rep.Runs != 2 || !reflect.DeepEqual(rep.Goals, want) {
		t.Errorf("the sweep's dynamics %+v are not its runs' summed, %+v", rep.Goals, want)
	}
	if rep.Totals.Threads != 4 || rep.Totals.Whispers.Count != whispered || rep.Totals.ConsensusRate == nil {
		t.Errorf("the sweep's totals %+v, want 4 threads and %d whispers", rep.Totals, whispered)
	}
	code, _, errOut = invoke(t, nil, "dynamics", t.TempDir())
	if code != exitcode.Usage || !strings.Contains(errOut, "neither a run's result.json nor a sweep's summary.json") {
		t.Errorf("an empty folder: exit %d\n%s", code, errOut)
	}
}
