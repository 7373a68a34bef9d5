// Package journal is the append-only event journal of a run
// (runs/<run-id>/journal.jsonl).
//
// Every event of a run is written here as it happens, before its effect is
// reported: a killed run resumes from it, a finished run replays from it. The
// format is JSON Lines, one [Event] per line, with Seq strictly increasing.
//
// A crash can leave the last line half written. Readers ([Read], [Scan])
// ignore such a torn last line and say so; [OpenAppend] cuts it off before
// appending. Any other damage is an error naming the line.
package journal

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/debate-runner/runner/internal/event"
)

// Event is one line of the journal.
type Event struct {
	// Seq is 1-based, assigned by the journal and strictly increasing.
	Seq int64 `json:"seq"`
	// Time is UTC, assigned by the journal unless set (see [Writer.AppendEvent]).
	// It is written as RFC 3339 with nanoseconds.
	Time time.Time `json:"time"`
	// Type names the kind of event (see package event).
	Type event.Type `json:"type"`
	// Key is the identity of the call or step the event belongs to, e.g.
	// "propose/r1/architect"; resume and replay look events up by it.
	Key string `json:"key,omitempty"`
	// Data is the payload, free-form JSON per event type.
	Data json.RawMessage `json:"data,omitempty"`
}

// LineError reports a line of a journal that cannot be used. Line is 1-based.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// Read returns every event of the journal at path. A torn last line is
// ignored; use [Scan] to learn whether there was one.
func Read(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	var events []Event
	if _, err := Scan(f, func(e Event) error {
		events = append(events, e)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	return events, nil
}

// Scan reads events from r one line at a time and calls fn for each, in order.
// fn may be nil to only check the journal.
//
// The last line is torn if it has no trailing newline (whatever its content:
// the writer puts the newline in the same write as the line, so a line without
// one was never acknowledged) or if it is not a valid event. A torn last line
// is skipped and reported with torn=true. An invalid line that is not the last,
// or a Seq that does not increase, is a *[LineError]. If fn returns an error,
// Scan stops and returns that error unchanged.
func Scan(r io.Reader, fn func(Event) error) (torn bool, err error) {
	res, err := scan(r, fn)
	return res.torn, err
}

// scanResult is what [OpenAppend] needs to know about an existing journal.
type scanResult struct {
	torn    bool
	lastSeq int64
	goodEnd int64 // byte offset just past the last good line
	size    int64 // bytes read in all
}

// errSyntax marks a line that does not decode: the only kind of damage that
// may be a torn tail, as opposed to a wrong but well-formed event.
var errSyntax = errors.New("invalid JSON")

func scan(r io.Reader, fn func(Event) error) (scanResult, error) {
	var (
		res     scanResult
		lr      = lineReader{r: bufio.NewReaderSize(r, 64<<10)}
		lineNo  int
		invalid *LineError // an undecodable line, torn if nothing follows it
	)
	for {
		line, complete, err := lr.next()
		if err != nil {
			return res, fmt.Errorf("read line %d: %w", lineNo+1, err)
		}
		if line == nil {
			break
		}
		lineNo++
		if invalid != nil {
			return res, invalid
		}
		res.size += int64(len(line))
		if !complete {
			res.torn = true
			break
		}
		res.size++ // the newline
		ev, err := decodeLine(line)
		if err != nil {
			invalid = &LineError{Line: lineNo, Err: err}
			continue
		}
		if ev.Seq <= res.lastSeq {
			return res, &LineError{Line: lineNo, Err: fmt.Errorf("seq %d does not follow seq %d", ev.Seq, res.lastSeq)}
		}
		if ev.Type == "" {
			return res, &LineError{Line: lineNo, Err: fmt.Errorf("seq %d has no type", ev.Seq)}
		}
		res.lastSeq = ev.Seq
		res.goodEnd = res.size
		if fn != nil {
			if err := fn(ev); err != nil {
				return res, err
			}
		}
	}
	if invalid != nil {
		res.torn = true
	}
	return res, nil
}

func decodeLine(line []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return Event{}, fmt.Errorf("%w: %w", errSyntax, err)
	}
	return ev, nil
}

// lineReader returns lines of any length. bufio.Scanner is not used because
// its token limit would reject large model replies.
type lineReader struct {
	r    *bufio.Reader
	long []byte // reused across lines longer than the bufio buffer
}

// next returns the next line without its newline, whether it had one, and a
// nil line at the end of input. The line is valid until the next call.
func (lr *lineReader) next() (line []byte, complete bool, err error) {
	frag, err := lr.r.ReadSlice('\n')
	if err == nil {
		return frag[:len(frag)-1], true, nil
	}
	if err != bufio.ErrBufferFull {
		if err == io.EOF {
			if len(frag) == 0 {
				return nil, false, nil
			}
			return frag, false, nil
		}
		return nil, false, err
	}
	lr.long = append(lr.long[:0], frag...)
	for {
		frag, err = lr.r.ReadSlice('\n')
		lr.long = append(lr.long, frag...)
		switch err {
		case nil:
			return lr.long[:len(lr.long)-1], true, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			return lr.long, false, nil
		default:
			return nil, false, err
		}
	}
}
