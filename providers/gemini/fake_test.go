package gemini_test

import (
	"testing"

	"github.com/debate-runner/runner/internal/nativetest"
)

// The fake gemini server is internal/nativetest's, shared with the tests of
// the examples on every native kind.
type (
	fakeRequest = nativetest.Request
	fakeReply   = nativetest.Reply
	fakeTool    = nativetest.Tool
)

func newFake(t testing.TB, key string, reply func(fakeRequest) fakeReply) *nativetest.Server {
	return nativetest.New(t, "gemini", key, reply)
}
