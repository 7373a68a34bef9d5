package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/connect"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/rundir"
)

// Secrets (API keys, header values taken from the environment) never reach
// a file or stream of the run: the journal's writer redacts its events, and
// every other file (run.json, the spec's copy, result.json, the reports,
// questions.yaml, cache entries) and every notice to the observer goes
// through the run's redactor here. A model that echoes a key, or an input
// that holds one, leaves [REDACTED] in its place.

// redaction is the part of a run that keeps its secrets out of what it
// writes and tells.
type redaction struct {
	// red holds the secrets of the endpoints connected so far.
	red *journal.Redactor
	// secrets are those of the endpoints connected so far, which red holds.
	secrets []string
}

// redactor returns the run's redactor, made when the run connected to its
// endpoints and learnt their secrets (nil redacts nothing).
func (r *redaction) redactor() *journal.Redactor { return r.red }

// Redact returns s with the run's secrets replaced by [REDACTED], for what
// the CLI prints about the run (errors, outputs).
func (r *redaction) Redact(s string) string { return r.redactor().Redact(s) }

// redactValue replaces secrets in v, a JSON-encodable value, by encoding
// it and decoding the redacted JSON into a fresh value. v is left alone
// when it holds no secret.
func redactValue[T any](red *journal.Redactor, v *T) error {
	if !red.Active() {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	clean := red.RedactJSON(data)
	if bytes.Equal(clean, data) {
		return nil
	}
	var out T
	if err := json.Unmarshal(clean, &out); err != nil {
		return fmt.Errorf("redacting secrets: %w", err)
	}
	*v = out
	return nil
}

// writeJSON writes v as indented JSON with the run's secrets redacted.
func (r *redaction) writeJSON(path string, v any) error {
	data, err := r.jsonFile(v)
	if err != nil {
		return err
	}
	return rundir.WriteFile(path, data)
}

// jsonFile is what writeJSON writes.
func (r *redaction) jsonFile(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	data = r.redactor().RedactJSON(data)
	var b bytes.Buffer
	if err := json.Indent(&b, data, "", "  "); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// textFile is a text file of the run with its secrets redacted.
func (r *redaction) textFile(data []byte) []byte {
	red := r.redactor()
	if red.Active() {
		data = []byte(red.Redact(string(data)))
	}
	return data
}

// redactNotice returns n with secrets redacted from what it says.
func (r *redaction) redactNotice(n Notice) Notice {
	red := r.redactor()
	if !red.Active() {
		return n
	}
	n.Message = red.Redact(n.Message)
	if n.Event != nil {
		ev := *n.Event
		ev.Data = red.RedactJSON(ev.Data)
		n.Event = &ev
	}
	return n
}

// redactingCache keeps secrets out of cache entries, and writes them in
// the background (see connect.WriteBehind).
type redactingCache struct {
	calls.Cache
	red    *journal.Redactor
	writes *connect.WriteBehind
	// run counts the run's own writes, which Execute waits for.
	run *sync.WaitGroup
}

func (c redactingCache) Get(key string) (kit.Reply, bool) {
	if rep, ok := c.writes.Get(key); ok {
		return rep, true
	}
	return c.Cache.Get(key)
}

func (c redactingCache) Put(key string, rep kit.Reply) {
	_ = redactValue(c.red, &rep)
	c.writes.Put(c.Cache, key, rep, c.run)
}
