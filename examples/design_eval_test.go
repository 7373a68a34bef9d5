package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/shared"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
)

// evalRun is a design-debate result.json with two answered clarifying
// questions and one skipped.
const evalRun = `{
  "run_id": "r1", "spec": "design-debate", "status": "completed",
  "outputs": {"solution": "# Clinic booking\nA modular monolith on PostgreSQL.", "confidence": 80},
  "messages": [
    {"id": "m1", "node": "clarify", "from": "architect", "record": "clarification",
     "content": "Q (architect.q1): How many clinics?\nA: Forty, in one country.",
     "output": [{"id": "architect.q1", "question": "How many clinics?", "answer": "Forty, in one country."}]},
    {"id": "m2", "node": "clarify", "from": "security", "record": "clarification",
     "content": "...",
     "output": [{"id": "security.q1", "question": "Who may read the audit log?", "answer": "Only the data protection officer."},
                {"id": "security.q2", "question": "Is there a budget?", "answer": "NA"}]},
    {"id": "m3", "node": "propose", "from": "architect", "record": "proposal", "content": "PROPOSAL-TEXT"}
  ]
}`

// TestDesignEvalEvaluatorDownCLI is the case of issue 19: design-eval run
// by the runner binary, with evaluator 3's endpoint answering HTTP 500 on
// every attempt. The run completes (exit 0) with evaluator 3 absent, named
// in a warning on stderr, in result.json's absent list and in the report,
// and the outputs are the means of the two evaluators that answered; one
// of them leaves out a criterion, which is the other's score alone. The
// evaluators' prompts show the clarifications and not the debate's
// messages.
func TestDesignEvalEvaluatorDownCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the runner binary; skipped with -short")
	}
	bin := runnerBinary(t)
	var mu sync.Mutex
	var prompts []string
	grades := map[string]string{
		"1": `{"functional_completeness": {"score": 8, "reason": "a"}, "performance_scalability": {"score": 7, "reason": "b"},
		       "security": {"score": 6, "reason": "c"}, "maintainability": {"score": 7, "reason": "d"},
		       "regulatory_compliance": {"score": 9, "reason": "e"}, "testability": {"score": 5, "reason": "f"},
		       "requirements_fulfillment": {"score": 8, "reason": "g"}, "overall": {"score": 7, "reason": "h"}}`,
		// Evaluator 2 leaves out security.
		"2": `{"functional_completeness": {"score": 9, "reason": "a"}, "performance_scalability": {"score": 8, "reason": "b"},
		       "maintainability": {"score": 6, "reason": "d"},
		       "regulatory_compliance": {"score": 8, "reason": "e"}, "testability": {"score": 6, "reason": "f"},
		       "requirements_fulfillment": {"score": 7, "reason": "g"}, "overall": {"score": 8, "reason": "h"}}`,
	}
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		system := r.Messages[0].Content
		mu.Lock()
		prompts = append(prompts, r.LastUser())
		mu.Unlock()
		for n, g := range grades {
			if strings.HasPrefix(system, "You are Evaluator "+n+",") {
				return llmtest.Reply{Content: g}
			}
		}
		return llmtest.Reply{Status: http.StatusInternalServerError, ErrorMessage: "evaluator model crashed", RetryAfter: "0"}
	})
	tmp := t.TempDir()
	runFile := filepath.Join(tmp, "result.json")
	if err := os.WriteFile(runFile, []byte(evalRun), 0o644); err != nil {
		t.Fatal(err)
	}
	evaluate := func(srv *llmtest.Server) (code int, stdout, stderr bytes.Buffer) {
		cmd := exec.Command(bin, "run", filepath.Join("design-eval", "spec.yaml"),
			"--input", "problem=@"+filepath.Join("design-debate", "problem.md"), "--input", "run=@"+runFile,
			"--runs-dir", filepath.Join(tmp, "runs"))
		cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY="+testKey)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stdout, stderr
	}
	code, stdout, stderr := evaluate(srv)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	if !strings.Contains(stderr.String(), `agent "evaluator3" is left out (model call evaluate/-/evaluator3 failed`) ||
		!strings.Contains(stderr.String(), "evaluator model crashed") {
		t.Errorf("stderr does not warn that evaluator3 was left out and why:\n%s", stderr.String())
	}
	m := runLine.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no run directory in stderr:\n%s", stderr.String())
	}
	dir := m[1]
	var res result.Result
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil || json.Unmarshal(data, &res) != nil {
		t.Fatalf("result.json: %v", err)
	}
	want := map[string]any{
		"functional_completeness": 8.5, "performance_scalability": 7.5, "security": 6.0, "maintainability": 6.5,
		"regulatory_compliance": 8.5, "testability": 5.5, "requirements_fulfillment": 7.5, "overall": 7.5,
	}
	for k, v := range want {
		if got, ok := res.Outputs[k].(float64); !ok || got != v.(float64) {
			t.Errorf("outputs.%s = %v, want %v", k, res.Outputs[k], v)
		}
	}
	if res.Status != "completed" || len(res.Absent) != 1 || res.Absent[0].Agent != "evaluator3" || res.Absent[0].Node != "evaluate" ||
		!strings.Contains(res.Absent[0].Reason, "last status 500") || !strings.Contains(res.Absent[0].Reason, "evaluator model crashed") {
		t.Errorf("result.json: status %s, absent %+v", res.Status, res.Absent)
	}
	if n := res.Usage.ByAgent["evaluator3"].Calls; n != 0 {
		t.Errorf("evaluator3 counted %d calls", n)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(report), "## Absent agents") || !strings.Contains(string(report), "**Evaluator 3 (evaluator3)** (evaluate)") {
		t.Errorf("report.md does not show the absent evaluator (%v)", err)
	}
	// Evaluator 3's five attempts and one call each for 1 and 2, all with
	// the clarifications and none with the debate's messages.
	if len(prompts) != 7 {
		t.Errorf("%d requests, want 7 (evaluator 3 tried 5 times)", len(prompts))
	}
	for _, p := range prompts {
		for _, s := range []string{"- Q (architect): How many clinics?\n  A: Forty, in one country.",
			"- Q (security): Who may read the audit log?\n  A: Only the data protection officer.",
			"- Q (security): Is there a budget?\n  A: (the user did not answer)"} {
			if !strings.Contains(p, s) {
				t.Errorf("an evaluation prompt lacks %q", s)
			}
		}
		if strings.Contains(p, "PROPOSAL-TEXT") {
			t.Error("an evaluation prompt shows the debate's messages")
		}
	}

	// With every evaluator down the run fails as an endpoint failure.
	down := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Status: http.StatusInternalServerError, ErrorMessage: "evaluator model crashed", RetryAfter: "0"}
	})
	code, _, stderr = evaluate(down)
	if code != 3 || !strings.Contains(stderr.String(), "0 of 3 calls answered, fewer than its min_answers (1)") {
		t.Errorf("every evaluator down: exit %d, want 3; stderr:\n%s", code, stderr.String())
	}
}

// dlEval is a recorded evaluation of the original tool: the averages and
// each evaluator's parsed reply.
type dlEval struct {
	Evaluation struct {
		FunctionalCompleteness struct {
			Average *float64 `json:"average_score"`
		} `json:"functional_completeness"`
		NonFunctional map[string]struct {
			Average *float64 `json:"average_score"`
		} `json:"non_functional"`
	} `json:"evaluation"`
	Overall *float64                   `json:"overall_score"`
	Agents  map[string]json.RawMessage `json:"agents"`
}

// dlGrades is one evaluator's reply in the original's form.
type dlGrades struct {
	Evaluation struct {
		FunctionalCompleteness *dlGrade            `json:"functional_completeness"`
		NonFunctional          map[string]*dlGrade `json:"non_functional"`
	} `json:"evaluation"`
	OverallSummary struct {
		Overall any `json:"overall_score"`
	} `json:"overall_summary"`
}

type dlGrade struct {
	Score     any    `json:"score"`
	Reasoning string `json:"reasoning"`
}

// ourName is the design-eval criterion of an original one.
func ourName(original string) string {
	if original == "maintainability_evolvability" {
		return "maintainability"
	}
	return original
}

// TestDesignEvalReplaysRecordedEvaluations replays the original tool's 43
// recorded evaluations through design-eval: its two evaluators' replies
// (put in our reply format, each criterion the original gave a number)
// answer evaluators 1 and 2, an evaluator the recording lacks answers HTTP
// 500 on every attempt, and so does evaluator 3, which the original did
// not have. The outputs must be the recorded averages: the evaluators that
// answered, averaged; requirements_fulfillment, which the original did not
// grade, is missing from every reply and so null. The debates' recorded
// clarifications must reach every evaluator's prompt.
func TestDesignEvalReplaysRecordedEvaluations(t *testing.T) {
	dialectic := shared.Dir(t, dialecticDir)
	files, err := filepath.Glob(filepath.Join(dialectic, "*", "eval*.json"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(dialectic, "*", "*", "eval*.json"))
	files = append(files, more...)
	var evals []string
	for _, f := range files {
		if !strings.HasPrefix(filepath.Base(f), "eval_config") {
			evals = append(evals, f)
		}
	}
	sort.Strings(evals)
	if len(evals) != 43 {
		t.Fatalf("%d recorded evaluations, want 43", len(evals))
	}
	plan := load(t, "design-eval")
	absentSeen, clarified := 0, 0
	for _, path := range evals {
		name, _ := filepath.Rel(dialectic, path)
		t.Run(name, func(t *testing.T) {
			var rec dlEval
			readJSONFile(t, path, &rec)
			debatePath := debateOf(t, path)
			var debate dlState
			readJSONFile(t, debatePath, &debate)
			var problem struct {
				Problem string `json:"problem"`
			}
			readJSONFile(t, debatePath, &problem)

			replies := map[string]string{}
			for i, id := range []string{"eval-1", "eval-2"} {
				raw, ok := rec.Agents[id]
				if !ok {
					continue
				}
				var g dlGrades
				if err := json.Unmarshal(raw, &g); err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				out := map[string]any{}
				put := func(name string, gr *dlGrade) {
					if gr == nil {
						return
					}
					if s, ok := gr.Score.(float64); ok {
						out[ourName(name)] = map[string]any{"score": s, "reason": gr.Reasoning}
					}
				}
				put("functional_completeness", g.Evaluation.FunctionalCompleteness)
				for k, gr := range g.Evaluation.NonFunctional {
					put(k, gr)
				}
				if s, ok := g.OverallSummary.Overall.(float64); ok {
					out["overall"] = map[string]any{"score": s, "reason": "overall"}
				}
				data, _ := json.Marshal(out)
				replies[fmt.Sprintf("You are Evaluator %d,", i+1)] = string(data)
			}
			var mu sync.Mutex
			var prompts []string
			srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
				mu.Lock()
				prompts = append(prompts, r.LastUser())
				mu.Unlock()
				for prefix, reply := range replies {
					if strings.HasPrefix(r.Messages[0].Content, prefix) {
						return llmtest.Reply{Content: reply}
					}
				}
				return llmtest.Reply{Status: http.StatusInternalServerError, RetryAfter: "0"}
			})

			// The debate as design-debate's result.json would hold it: the
			// final solution and the clarification messages.
			result := map[string]any{"outputs": map[string]any{
				"solution": debate.FinalSolution.Description, "confidence": debate.FinalSolution.Confidence,
				"tradeoffs": debate.FinalSolution.Tradeoffs, "recommendations": debate.FinalSolution.Recommendations,
			}}
			var msgs []any
			var answered []string
			for _, c := range debate.Clarifications {
				var items []any
				for _, it := range c.Items {
					items = append(items, map[string]any{"id": it.ID, "question": it.Question, "answer": it.Answer})
					if it.Answer != "" && it.Answer != "NA" {
						answered = append(answered, "- Q ("+c.AgentID+"): "+it.Question+"\n  A: "+it.Answer)
					}
				}
				msgs = append(msgs, map[string]any{"from": c.AgentID, "record": "clarification", "output": items})
			}
			result["messages"] = msgs
			runJSON, _ := json.Marshal(result)

			run, err := runtime.Start(plan, runtime.Options{Launch: launch.Launch{Given: launch.Given{InputValues: map[string]any{"problem": problem.Problem, "run": string(runJSON)}}}, Settings: runtime.Settings{RunsDir: t.TempDir(), Getenv: serverEnv(srv)}, Seams: runtime.Seams{Sleep: noSleep}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := run.Execute(context.Background())
			if err != nil {
				t.Fatalf("evaluation failed: %v", err)
			}
			want := map[string]*float64{
				"functional_completeness":  rec.Evaluation.FunctionalCompleteness.Average,
				"overall":                  rec.Overall,
				"requirements_fulfillment": nil,
			}
			for k, v := range rec.Evaluation.NonFunctional {
				want[ourName(k)] = v.Average
			}
			if len(want) != 8 {
				t.Fatalf("the recording has %d criteria, want 8 with ours", len(want))
			}
			for k, w := range want {
				got, isNum := res.Outputs[k].(float64)
				switch {
				case w == nil && res.Outputs[k] != nil:
					t.Errorf("%s = %v, want null", k, res.Outputs[k])
				case w != nil && (!isNum || math.Abs(got-*w) > 0.005):
					t.Errorf("%s = %v, want the recorded average %v", k, res.Outputs[k], *w)
				}
			}
			missing := 3 - len(replies)
			if len(res.Absent) != missing {
				t.Errorf("%d evaluators absent, want %d", len(res.Absent), missing)
			}
			if missing > 1 {
				absentSeen++
			}
			for _, a := range answered {
				for _, p := range prompts {
					if !strings.Contains(p, a) {
						t.Errorf("an evaluator's prompt lacks the clarification %q", a)
						break
					}
				}
			}
			if len(answered) > 0 {
				clarified++
			}
		})
	}
	t.Logf("%d recordings lacked one of the original's evaluators; %d had clarifications", absentSeen, clarified)
	if absentSeen == 0 || clarified == 0 {
		t.Errorf("the recordings tested no missing evaluator (%d) or no clarifications (%d)", absentSeen, clarified)
	}
}

// debateOf is the recorded debate an evaluation graded: its file name
// without the eval_ or eval2_ prefix (kata1's debates add "-solution").
func debateOf(t *testing.T, evalPath string) string {
	t.Helper()
	dir, base := filepath.Split(evalPath)
	base = strings.TrimPrefix(strings.TrimPrefix(base, "eval2_"), "eval_")
	for _, name := range []string{base, strings.Replace(base, "_", "-solution_", 1)} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	t.Fatalf("no recorded debate for %s", evalPath)
	return ""
}
