package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/debate-runner/runner/runtime/digest"
	"os"
	"path/filepath"
	"strings"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
)

// Request drift: a replay serves recorded replies by call key, and a
// resume serves journaled ones. When the run's request for a key is not
// the recorded one (a newer runner, a changed built-in template, an
// edited spec), the reply answered other prompts. Each such call is named
// with the first message that differs, the run is marked as replayed with
// changed prompts, and --strict fails it instead.

// DriftError is a call whose request differs from the recorded one, under
// --strict.
type DriftError struct {
	Key, What string
}

func (e *DriftError) Error() string {
	return fmt.Sprintf("model call %s: %s (--strict serves a recorded reply only for the request it was recorded for)", e.Key, e.What)
}

// ExitCode makes a drift under --strict a failure (exit 1).
func (e *DriftError) ExitCode() int { return exitcode.Failure }

// LoadReplayRequests reads what a recorded run's journal says of each
// call's request, by call key (the last request of a key wins, as its
// reply does).
func LoadReplayRequests(path string) (map[string]launch.RecordedRequest, error) {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		path = filepath.Join(path, "journal.jsonl")
	}
	events, err := journal.Read(path)
	if err != nil {
		return nil, &args.FlagError{Flag: "--replay", Err: err}
	}
	out := map[string]launch.RecordedRequest{}
	for _, ev := range events {
		if ev.Type != event.ModelRequest {
			continue
		}
		var rec launch.RecordedRequest
		if err := json.Unmarshal(ev.Data, &rec); err != nil {
			return nil, &args.FlagError{Flag: "--replay", Err: fmt.Errorf("%s event %d: %w", path, ev.Seq, err)}
		}
		out[ev.Key] = rec
	}
	return out, nil
}

// requestDrift says how a call's request differs from a recorded one, or
// "" when it does not (or the record is too old to say: no digest).
func requestDrift(c *calls.Call, rec launch.RecordedRequest) string {
	if rec.Digest == "" || rec.Digest == requestDigest(c) {
		return ""
	}
	if rec.Prompt == "" || rec.Prompt == digest.Prompt(c.Kit.Messages) {
		return "its request differs from the recorded one in its parameters, reply format or tools, not its messages"
	}
	return firstMessageDrift(c.Kit.Messages, rec.Messages)
}

// firstMessageDrift names the first message of now that differs from the
// recorded ones.
func firstMessageDrift(now []kit.ChatMessage, was []launch.RecordedMessage) string {
	for i := 0; i < len(now) || i < len(was); i++ {
		switch {
		case i >= len(was):
			return fmt.Sprintf("its prompt differs from the recorded one: message %d (%s) is new; the recorded prompt had %d messages", i+1, now[i].Role, len(was))
		case i >= len(now):
			return fmt.Sprintf("its prompt differs from the recorded one: it has %d messages, the recorded one %d", len(now), len(was))
		}
		sum := sha256.Sum256([]byte(now[i].Content))
		digest := hex.EncodeToString(sum[:8])
		if now[i].Role == was[i].Role && digest == was[i].Digest {
			continue
		}
		what := fmt.Sprintf("its prompt differs from the recorded one from message %d (%s, %d chars; recorded: %s, %d chars)", i+1, now[i].Role, len(now[i].Content), was[i].Role, was[i].Chars)
		if was[i].Content != "" {
			what += fmt.Sprintf(", first at char %d: now %q, recorded %q", commonPrefix(now[i].Content, was[i].Content)+1,
				around(now[i].Content, commonPrefix(now[i].Content, was[i].Content)), around(was[i].Content, commonPrefix(now[i].Content, was[i].Content)))
		}
		return what
	}
	return "its prompt differs from the recorded one"
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// around is up to 40 bytes of s from i, on rune boundaries.
func around(s string, i int) string {
	for i > 0 && i < len(s) && s[i]&0xC0 == 0x80 {
		i--
	}
	end := i + 40
	if end >= len(s) {
		return s[i:]
	}
	for end > i && s[end]&0xC0 == 0x80 {
		end--
	}
	return strings.TrimRight(s[i:end], "\n") + "..."
}

// noteDrift records a call served despite a changed request: a warning
// naming it, and the call among the run's changed prompts.
func (r *Run) noteDrift(key, source, what string) {
	r.mu.Lock()
	r.drifted = append(r.drifted, key)
	r.mu.Unlock()
	r.warn("model call %s is served from the %s although %s", key, source, what)
}

// replayDrift checks the calls a replay serves against the recording's
// requests, before next (the replay stage) serves them.
func (r *Run) replayDrift(next calls.Stage) calls.Stage {
	return calls.StageFunc(func(ctx context.Context, c *calls.Call) (kit.Reply, calls.Source, error) {
		if _, served := r.opts.Replay[c.Key]; served {
			rec, ok := r.opts.ReplayRequests[c.Key]
			if !ok || rec.Digest == "" {
				// A recording of a runner from before request digests (or
				// of a call it did not journal): nothing to compare with.
				what := "the recording does not say what its request was (a runner from before request digests), so whether its prompt changed cannot be told"
				if r.opts.Strict {
					return kit.Reply{}, calls.FromReplay, &DriftError{Key: c.Key, What: what}
				}
				r.warnOnce("replay-unverified", "model call %s and others like it are served from the recording unchecked: %s", c.Key, what)
			}
			if ok {
				if what := requestDrift(c, rec); what != "" {
					if r.opts.Strict {
						return kit.Reply{}, calls.FromReplay, &DriftError{Key: c.Key, What: what}
					}
					r.noteDrift(c.Key, "recording", what)
				}
			}
		}
		return next.Complete(ctx, c)
	})
}

// journalDrift fails a resume under --strict at a call whose journaled
// request differs (without it, such a call is made again with a warning:
// see sameRequest).
func (r *Run) journalDrift(next calls.Stage) calls.Stage {
	if !r.opts.Strict {
		return next
	}
	return calls.StageFunc(func(ctx context.Context, c *calls.Call) (kit.Reply, calls.Source, error) {
		if _, ok := r.recorded[c.Key]; ok {
			if rec, ok := r.requests[c.Key]; ok {
				if what := requestDrift(c, launch.RecordedRequest{Digest: rec.Digest, Prompt: rec.Prompt, Messages: rec.Messages}); what != "" {
					return kit.Reply{}, calls.FromJournal, &DriftError{Key: c.Key, What: what}
				}
			}
		}
		return next.Complete(ctx, c)
	})
}

// CompletedError refuses to resume a run that completed: its result.json
// is there and stays as the runner that finished it wrote it.
type CompletedError struct {
	Dir, Status, Runner string
	// MissingReports are report files the run lacks (a run of a runner
	// from before reports, or killed while writing them).
	MissingReports []string
}

func (e *CompletedError) Error() string {
	by := ""
	if e.Runner != "" {
		by = ", by runner " + e.Runner
	}
	msg := fmt.Sprintf("the run already completed (status %s%s); nothing to resume, and nothing in %s was changed", e.Status, by, e.Dir)
	if len(e.MissingReports) > 0 {
		msg += fmt.Sprintf(" (it has no %s: runner show and runner view read the run as it is)", strings.Join(e.MissingReports, " or "))
	}
	return msg
}

// Is makes a CompletedError an ErrCompleted.
func (e *CompletedError) Is(target error) bool { return target == ErrCompleted }

func completedError(dir string, m result.Manifest, res *result.Result) error {
	e := &CompletedError{Dir: dir, Status: res.Status, Runner: m.RunnerVersion}
	if m.RunnerCommit != "" {
		e.Runner += " (commit " + m.RunnerCommit + ")"
	}
	for _, name := range []string{"report.md", "report.html"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.Size() == 0 {
			e.MissingReports = append(e.MissingReports, name)
		}
	}
	return e
}
