package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/debate-runner/runner/spec/value"
)

// MessageJSON is m as result.json writes it, compact: its output left out
// when it is its own text (see Result.MarshalJSON).
func MessageJSON(m value.Message) ([]byte, error) {
	x := message(m)
	if OutputIsContent(m) {
		x.Output = nil
	}
	return json.Marshal(x)
}

// WriteJSON writes r to w as result.json holds it, the bytes of
// json.Marshal(r) passed through clean and indented by two spaces, with a
// final newline, but a message at a time: the rest of the result, then
// each message, each piece passed through clean on its own, so that what
// is in memory at once is one message's JSON rather than the whole file's
// (5 MB at 20,000 messages, twice over with the indented copy). clean
// (the run's redaction of secrets) must change a JSON text only inside its
// strings and numbers, as journal.Redactor.RedactJSON does; nil leaves the
// text alone.
func (r Result) WriteJSON(w io.Writer, clean func([]byte) []byte) error {
	if clean == nil {
		clean = func(b []byte) []byte { return b }
	}
	msgs := r.Messages
	r.Messages = []value.Message{}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var head bytes.Buffer
	if err := json.Indent(&head, clean(data), "", "  "); err != nil {
		return err
	}
	// The messages' key is one of the top object's, whose keys alone
	// begin a line after two spaces; a string holds no raw newline.
	const key = "\n  \"messages\": []"
	at := bytes.Index(head.Bytes(), []byte(key))
	if at < 0 {
		return errors.New("result.json: no messages key")
	}
	cut := at + len(key) - len("[]")
	if _, err := w.Write(head.Bytes()[:cut]); err != nil {
		return err
	}
	if len(msgs) == 0 {
		_, err = io.WriteString(w, "[]")
	} else {
		err = writeMessages(w, msgs, clean)
	}
	if err != nil {
		return err
	}
	if _, err := w.Write(head.Bytes()[cut+len("[]"):]); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\n")
	return err
}

// writeMessages writes msgs as the indented array of result.json's
// messages key, its elements at depth 2.
func writeMessages(w io.Writer, msgs []value.Message, clean func([]byte) []byte) error {
	var b bytes.Buffer
	for i, m := range msgs {
		data, err := MessageJSON(m)
		if err != nil {
			return err
		}
		b.Reset()
		if i == 0 {
			b.WriteString("[\n    ")
		} else {
			b.WriteString(",\n    ")
		}
		if err := json.Indent(&b, clean(data), "    ", "  "); err != nil {
			return err
		}
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "\n  ]")
	return err
}
