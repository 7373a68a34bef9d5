// This file is the judged score (score: {judge: ...}): each judge, a
// model, grades a completed run against the spec's rubric. Its calls go
// through the run's chain like a node's (journal, resume, replay, cache,
// usage), under the pseudo-node JudgeNode, which no node id can be.

package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// JudgeNode is the node the judges' calls are counted under: a node id
// has no dot, so it is no node of the spec.
const JudgeNode = "score.judge"

// judgeSchema is the JSON Schema of a judge's reply: its reasoning, then
// one of the levels' names.
func judgeSchema(levels []value.JudgeLevel) json.RawMessage {
	names := make([]string, len(levels))
	for i, l := range levels {
		names[i] = l.Name
	}
	s, _ := json.Marshal(map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"reasoning", "level"},
		"properties": map[string]any{
			"reasoning": map[string]any{"type": "string", "description": "why the result earns the level"},
			"level":     map[string]any{"enum": names, "description": "the level the result earns"},
		},
	})
	return s
}

// judge asks every judge of the spec to grade the run's outputs, at once,
// and returns their judgements in the spec's order of judges. A judge
// whose call fails or whose reply names no level gives a judgement with
// its error and no score.
func (r *Run) judge(ctx context.Context, outputs map[string]any) []result.Judgement {
	jp := r.Plan.Judge
	h := &host{run: r, node: &spec.NodePlan{ID: JudgeNode}, scope: kit.Scope{Key: "-"}, prefix: JudgeNode + "/-", ctx: ctx}
	data := &value.JudgeData{Inputs: r.inputs, Vars: r.vars, Outputs: outputs, Expected: r.opts.Expected, HasExpected: r.opts.Expected != nil,
		Criterion: jp.Criterion, Levels: jp.Levels}
	out := make([]result.Judgement, len(jp.Models))
	for i, name := range jp.Names {
		out[i] = result.Judgement{Judge: name, Model: jp.Models[i].Model, Key: h.prefix + "/" + name}
	}
	prompt, err := h.Render(jp.Template, data)
	if err != nil {
		for i := range out {
			out[i].Error = err.Error()
		}
		return out
	}
	schema := judgeSchema(jp.Levels)
	_ = h.Parallel(ctx, len(out), func(ctx context.Context, i int) error {
		j := &out[i]
		// The judge is the call's agent (by its model name), so that its
		// calls are told apart in usage, the journal and spec tests.
		judge := &spec.AgentPlan{ID: jp.Names[i], Name: "judge " + jp.Names[i], Model: jp.Models[i]}
		rep, err := h.Complete(ctx, kit.Call{Key: jp.Names[i], Node: JudgeNode, Agent: judge, Model: jp.Models[i], Messages: kit.Messages("", prompt),
			JSONMode: true, JSONSchema: schema, SchemaName: "judgement", Shape: kit.Shape{Format: "json", Schema: schema}})
		if err != nil {
			j.Error = err.Error()
			return nil
		}
		reasoning, level, ok := readJudgement(rep.Content, jp.Levels)
		j.Reasoning = reasoning
		if !ok {
			j.Error = fmt.Sprintf("the reply names none of the levels (%s)", levelNames(jp.Levels))
			if reasoning == "" {
				j.Reasoning = rep.Content
			}
			return nil
		}
		s := 1.0
		if len(jp.Levels) > 1 {
			s = float64(level) / float64(len(jp.Levels)-1)
		}
		j.Level, j.LevelIndex, j.Score = jp.Levels[level].Name, &level, &s
		return nil
	})
	return out
}

// readJudgement reads a judge's reply: a JSON object (alone, or the
// first one in the text) with its reasoning and a level's name, matched
// without regard to case or surrounding space.
func readJudgement(text string, levels []value.JudgeLevel) (reasoning string, level int, ok bool) {
	var rep struct {
		Reasoning string `json:"reasoning"`
		Level     any    `json:"level"`
	}
	body := strings.TrimSpace(text)
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		start, end := strings.Index(body, "{"), strings.LastIndex(body, "}")
		if start < 0 || end < start || json.Unmarshal([]byte(body[start:end+1]), &rep) != nil {
			return "", 0, false
		}
	}
	name, isText := rep.Level.(string)
	if !isText {
		return rep.Reasoning, 0, false
	}
	for i, l := range levels {
		if strings.EqualFold(strings.TrimSpace(name), l.Name) {
			return rep.Reasoning, i, true
		}
	}
	return rep.Reasoning, 0, false
}

func levelNames(levels []value.JudgeLevel) string {
	names := make([]string, len(levels))
	for i, l := range levels {
		names[i] = l.Name
	}
	return strings.Join(names, ", ")
}
