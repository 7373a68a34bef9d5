// Package drift says how a model call's request differs from the one a
// recording or a journal holds for its key: a replay serves recorded
// replies by call key, and a resume serves journaled ones; when the run's
// request for a key is not the recorded one (a newer runner, a changed
// built-in template, an edited spec), the reply answered other prompts.
// Each such call is named with the first message that differs; the run
// marks it (or, under --strict, fails with an Error).
package drift

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/debate-runner/runner/runtime/digest"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/launch"
)

// Error is a call whose request differs from the recorded one, under
// --strict.
type Error struct {
	Key, What string
}

func (e *Error) Error() string {
	return fmt.Sprintf("model call %s: %s (--strict serves a recorded reply only for the request it was recorded for)", e.Key, e.What)
}

// ExitCode makes a drift under --strict a failure (exit 1).
func (e *Error) ExitCode() int { return exitcode.Failure }

// LoadRequests reads what a recorded run's journal says of each
// call's request, by call key (the last request of a key wins, as its
// reply does).
func LoadRequests(path string) (map[string]launch.RecordedRequest, error) {
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

// RequestDigest names a call's request as the journal records it
// (request_digest): its model, parameters, messages and sample, in its
// cache scope.
func RequestDigest(c *calls.Call) string {
	return calls.ScopedKey(calls.RequestKey(c.Model, "", c.Request, c.Sample), c.Scope)
}

// Of says how a call's request differs from a recorded one, or "" when it
// does not (or the record is too old to say: no digest).
func Of(c *calls.Call, rec launch.RecordedRequest) string {
	if rec.Digest == "" || rec.Digest == RequestDigest(c) {
		return ""
	}
	if rec.Prompt == "" || rec.Prompt == digest.Prompt(c.Kit.Messages) {
		return "its request differs from the recorded one in its parameters, reply format or tools, not its messages"
	}
	return FirstMessage(c.Kit.Messages, rec.Messages)
}

// FirstMessage names the first message of now that differs from the
// recorded ones.
func FirstMessage(now []kit.ChatMessage, was []launch.RecordedMessage) string {
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
