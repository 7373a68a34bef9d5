package llmtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

func user(msgs ...string) Request {
	r := Request{}
	for _, m := range msgs {
		r.Messages = append(r.Messages, Message{Role: "user", Content: m}, Message{Role: "assistant", Content: "ack " + m})
	}
	return r
}

// describe reduces a reply to what the script tests compare.
func describe(r Reply) string {
	if r.Status != 0 {
		return fmt.Sprintf("%d:%s", r.Status, r.ErrorMessage)
	}
	return r.Content
}

func TestSequence(t *testing.T) {
	h := Sequence(Reply{Content: "a"}, Reply{Content: "b"})
	var got []string
	for range 4 {
		got = append(got, describe(h(Request{})))
	}
	want := []string{"a", "b", "500:" + ExhaustedMessage, "500:" + ExhaustedMessage}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSequenceConcurrentHandsOutEachReplyOnce(t *testing.T) {
	const n = 100
	replies := make([]Reply, n)
	for i := range replies {
		replies[i] = Reply{Content: fmt.Sprint(i)}
	}
	h := Sequence(replies...)
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		wg   sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			c := h(Request{}).Content
			mu.Lock()
			seen[c]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct replies handed out, want %d", len(seen), n)
	}
	if got := describe(h(Request{})); got != "500:"+ExhaustedMessage {
		t.Errorf("after exhaustion: %q", got)
	}
}

func TestFailEvery(t *testing.T) {
	fail := Reply{Status: http.StatusTooManyRequests, ErrorMessage: "busy"}
	tests := []struct {
		n     int
		calls int
		want  []string
	}{
		{n: 1, calls: 3, want: []string{"429:busy", "429:busy", "429:busy"}},
		{n: 2, calls: 6, want: []string{"a", "429:busy", "b", "429:busy", "c", "429:busy"}},
		{n: 3, calls: 7, want: []string{"a", "b", "429:busy", "c", "d", "429:busy", "500:" + ExhaustedMessage}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("n=", tt.n), func(t *testing.T) {
			h := FailEvery(tt.n, fail, Sequence(Reply{Content: "a"}, Reply{Content: "b"}, Reply{Content: "c"}, Reply{Content: "d"}))
			var got []string
			for range tt.calls {
				got = append(got, describe(h(Request{})))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("n<1 panics", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("FailEvery(0, ...) did not panic")
			}
		}()
		FailEvery(0, fail, Echo())
	})
}

func TestFailEveryThroughServer(t *testing.T) {
	s := New(t, FailEvery(2, Reply{Status: http.StatusServiceUnavailable}, Echo()))
	client := newClient(s)
	for i := 1; i <= 4; i++ {
		resp, err := client.CreateChatCompletion(context.Background(), userRequest(fmt.Sprint("m", i)))
		var apiErr *openai.APIError
		switch {
		case i%2 == 0 && (!errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusServiceUnavailable):
			t.Errorf("call %d: error %v, want 503", i, err)
		case i%2 == 1 && (err != nil || resp.Choices[0].Message.Content != fmt.Sprint("echo: m", i)):
			t.Errorf("call %d: %v", i, err)
		}
	}
}

func TestByLastUser(t *testing.T) {
	m := map[string]Reply{
		"apple":  {Content: "APPLE"},
		"app":    {Content: "APP"},
		"banana": {Content: "BANANA"},
	}
	fallback := func(Request) Reply { return Reply{Content: "FALLBACK"} }
	tests := []struct {
		name     string
		req      Request
		fallback Handler
		want     string
	}{
		{"sorted first key wins", user("I like apples"), fallback, "APP"},
		{"single match", user("banana split"), fallback, "BANANA"},
		{"only last user message counts", user("banana", "cherry"), fallback, "FALLBACK"},
		{"last user message, not assistant", user("cherry", "apple pie"), fallback, "APP"},
		{"no match goes to fallback", user("cherry"), fallback, "FALLBACK"},
		{"no match without fallback", user("cherry"), nil, `500:llmtest: no scripted reply matches last user message "cherry"`},
		{"no user message", Request{Messages: []Message{{Role: "system", Content: "apple"}}}, fallback, "FALLBACK"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe(ByLastUser(m, tt.fallback)(tt.req)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("map changes after construction are ignored", func(t *testing.T) {
		mm := map[string]Reply{"x": {Content: "X"}}
		h := ByLastUser(mm, nil)
		mm["x"] = Reply{Content: "changed"}
		if got := h(user("x")).Content; got != "X" {
			t.Errorf("got %q", got)
		}
	})
}

func TestEcho(t *testing.T) {
	if got := Echo()(user("first", "second")).Content; got != "echo: second" {
		t.Errorf("Echo = %q", got)
	}
}

// recordingTB captures Errorf so that a test can check NewQueue fails the
// test that owns it; everything else goes to the real testing.TB.
type recordingTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestNewQueueExhaustionFailsTest(t *testing.T) {
	rec := &recordingTB{TB: t}
	s := NewQueue(rec, Reply{Content: "only"})
	client := newClient(s)
	if _, err := client.CreateChatCompletion(context.Background(), userRequest("one")); err != nil {
		t.Fatal(err)
	}
	if len(rec.errors) != 0 {
		t.Fatalf("errors before exhaustion: %q", rec.errors)
	}
	_, err := client.CreateChatCompletion(context.Background(), userRequest("two"))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusInternalServerError || apiErr.Message != ExhaustedMessage {
		t.Errorf("error = %v, want 500 %q", err, ExhaustedMessage)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "script exhausted") {
		t.Errorf("recorded test errors %q, want one about exhaustion", rec.errors)
	}
}
