package runtime

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/drift"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
)

// replayedReply is a model_response event whose reply came from a replay
// or the cache rather than the network.
type replayedReply struct {
	kit.Reply
	Source string `json:"source"`
	// Human marks the message of a person at a seat (kit.Call.Seat),
	// however it was served: no model call.
	Human bool `json:"human,omitempty"`
}

// LoadReplay reads the model responses of a recorded run, from its journal
// file or its run directory, keyed by call key.
func LoadReplay(path string) (map[string]kit.Reply, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, &args.FlagError{Flag: "--replay", Err: args.UnwrapPathError(err)}
	}
	if info.IsDir() {
		path = filepath.Join(path, "journal.jsonl")
	}
	events, err := journal.Read(path)
	if err != nil {
		return nil, &args.FlagError{Flag: "--replay", Err: err}
	}
	out := map[string]kit.Reply{}
	for _, ev := range events {
		if ev.Type != event.ModelResponse {
			continue
		}
		var rep kit.Reply
		if err := json.Unmarshal(ev.Data, &rep); err != nil {
			return nil, &args.FlagError{Flag: "--replay", Err: fmt.Errorf("%s event %d: %w", path, ev.Seq, err)}
		}
		out[ev.Key] = rep
	}
	if len(out) == 0 {
		return nil, &args.FlagError{Flag: "--replay", Err: fmt.Errorf("%s holds no model responses", path)}
	}
	return out, nil
}

// CacheKey is the content address of a request: endpoint (name and the
// base URL it was reached at, which for the default endpoint comes from
// OPENAI_BASE_URL), model, parameters, messages and tools, plus a sample
// discriminator so that repeated samples at temperature > 0 stay distinct.
// The discriminator is the call key (with the sample index of a repeated
// run), which is the same for the same call across runs (so sweeps share
// early rounds) but differs between agents asking the same thing. At
// temperature 0 it is left out: any caller asking the same gets the same.
//
// What a request asks beyond the original parameters (an Azure deployment,
// reasoning_effort, pass-through fields, the reply's JSON Schema and JSON
// mode) goes in "extra", which is left out when empty, so keys of requests
// without them are what they always were. How the request is sent (which
// token-limit field, whether stream_options goes along) is left out: it
// changes no reply.
func CacheKey(model *spec.ModelPlan, baseURL string, req llm.Request, sampleKey string) string {
	return calls.RequestKey(model, baseURL, req, sampleKey)
}

// LoadReplayThreads reads the prompts of thread turns of a recorded run
// (see kit.Thread), from its journal file or its run directory, so that a
// replay rebuilds its threads as they were sent.
func LoadReplayThreads(path string) (map[string][]string, error) {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		path = filepath.Join(path, "journal.jsonl")
	}
	events, err := journal.Read(path)
	if err != nil {
		return nil, &args.FlagError{Flag: "--replay", Err: err}
	}
	out, err := threadPrompts(events)
	if err != nil {
		return nil, &args.FlagError{Flag: "--replay", Err: fmt.Errorf("%s: %w", path, err)}
	}
	return out, nil
}

// LoadRecording reads the recorded run a --replay path names (its journal
// file or its run directory): the replies and thread prompts that serve the
// run's calls, and the recording's run.json when it has one (false when
// not), whose values the replay defaults to (launch.Given.DefaultTo).
func LoadRecording(path string, missingLive bool) (launch.Recording, result.Manifest, bool, error) {
	rec := launch.Recording{ReplayFrom: path, ReplayMissingLive: missingLive}
	var err error
	if rec.Replay, err = LoadReplay(path); err != nil {
		return rec, result.Manifest{}, false, err
	}
	if rec.ReplayThreads, err = LoadReplayThreads(path); err != nil {
		return rec, result.Manifest{}, false, err
	}
	if rec.ReplayRequests, err = drift.LoadRequests(path); err != nil {
		return rec, result.Manifest{}, false, err
	}
	dir := path
	if info, err := os.Stat(path); err == nil && !info.IsDir() {
		dir = filepath.Dir(path)
	}
	m, err := result.ReadManifest(dir)
	return rec, m, err == nil, nil
}

// threadTurn is the payload of a thread_turn event: the user prompt of a
// thread's turn, as it was sent.
type threadTurn struct {
	Thread string `json:"thread"`
	Agent  string `json:"agent"`
	Goal   string `json:"goal,omitempty"`
	Turn   int    `json:"turn"`
	Prompt string `json:"prompt"`
}

// threadPrompts reads the prompts of thread turns from journal events.
func threadPrompts(events []journal.Event) (map[string][]string, error) {
	out := map[string][]string{}
	for _, ev := range events {
		if ev.Type != event.ThreadTurn {
			continue
		}
		var tt threadTurn
		if err := json.Unmarshal(ev.Data, &tt); err != nil {
			return nil, fmt.Errorf("journal event %d: %w", ev.Seq, err)
		}
		out[ev.Key] = append(out[ev.Key], tt.Prompt)
	}
	return out, nil
}
