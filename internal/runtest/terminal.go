package runtest

import (
	"io"
	"strings"
	"sync"
	"testing"
)

// Output collects what a terminal, or a process, prints; the test may read
// it while it is being written.
type Output struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write implements io.Writer.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String is everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// Terminal is a person at a terminal, for tests of the questions a run asks
// there as it goes (runtime/answers.Terminal(in, out)): what the test writes
// to typed is read from in, and out collects what the terminal prints.
// typed is closed when the test ends, so that a question still waiting at
// the terminal sees the end of its input.
func Terminal(t testing.TB) (in io.Reader, typed io.Writer, out *Output) {
	r, w := io.Pipe()
	t.Cleanup(func() { _ = w.Close() })
	return r, w, &Output{}
}
