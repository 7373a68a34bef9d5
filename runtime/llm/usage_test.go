package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
)

// usageField is one generated count of a usage payload: its JSON text and
// what an honest reader makes of it (ok false: it must not be counted).
type usageField struct {
	text  string
	value int
	ok    bool
}

// genCount makes a count as servers send them, right and wrong.
func genCount(r *rand.Rand) usageField {
	n := r.IntN(5000)
	switch r.IntN(11) {
	case 0:
		return usageField{strconv.Itoa(n), n, true}
	case 1:
		return usageField{strconv.Itoa(n) + ".0", n, true}
	case 2:
		return usageField{`"` + strconv.Itoa(n) + `"`, n, true}
	case 3:
		return usageField{fmt.Sprintf("%de0", n), n, true}
	case 4:
		return usageField{"-" + strconv.Itoa(n+1), 0, false}
	case 5:
		return usageField{strconv.Itoa(n) + ".5", 0, false}
	case 6:
		return usageField{`"` + strconv.Itoa(n) + ` tokens"`, 0, false}
	case 7:
		return usageField{"1e12", 0, false}
	case 8:
		return usageField{"null", 0, true}
	case 9:
		return usageField{`{"n":1}`, 0, false}
	default:
		return usageField{"true", 0, false}
	}
}

// genUsage makes a usage member: prompt, completion and cached counts,
// each maybe left out (0), or something that is not an object at all.
func genUsage(r *rand.Rand) (raw string, prompt, completion, cached int, ok bool) {
	switch r.IntN(12) {
	case 0:
		return `"lots"`, 0, 0, 0, false
	case 1:
		return `[1,2]`, 0, 0, 0, false
	}
	ok = true
	var fields []string
	field := func(name string, into *int) {
		if r.IntN(8) == 0 {
			return // left out
		}
		f := genCount(r)
		fields = append(fields, name+f.text)
		*into = f.value
		ok = ok && f.ok
	}
	field(`"prompt_tokens":`, &prompt)
	field(`"completion_tokens":`, &completion)
	if r.IntN(3) == 0 {
		var text []string
		saved := fields
		fields = nil
		field(`"cached_tokens":`, &cached)
		text, fields = fields, saved
		fields = append(fields, `"prompt_tokens_details":{`+strings.Join(text, ",")+`}`)
		ok = ok && cached <= prompt
	}
	r.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	return "{" + strings.Join(fields, ",") + "}", prompt, completion, cached, ok
}

// TestUsagePayloadsProperty sends generated usage members from the local
// server, streamed and not: every reply is kept on its first attempt
// (usage never makes a call fail or retry); usage an honest reader counts
// is counted exactly; any other is kept as sent with why, never counted
// (no negative or absurd figure), and the reply's tokens are estimated.
func TestUsagePayloadsProperty(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	type gen struct {
		raw                        string
		prompt, completion, cached int
		ok                         bool
	}
	var cases []gen
	for i := 0; i < 200; i++ {
		var g gen
		g.raw, g.prompt, g.completion, g.cached, g.ok = genUsage(r)
		cases = append(cases, g)
	}
	next := make(chan gen, 1)
	srv := llmtest.New(t, func(llmtest.Request) llmtest.Reply {
		g := <-next
		return llmtest.Reply{Content: "kept", Usage: json.RawMessage(g.raw)}
	})
	c := New(Endpoint{Name: "local", BaseURL: srv.URL, MaxRetries: 3, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	for i, g := range cases {
		req := simple("gpt-4o-mini")
		req.Stream = i%2 == 1
		next <- g
		resp, err := c.Complete(context.Background(), req, func(a Attempt) { t.Errorf("usage %s: retried: %v", g.raw, a.Err) })
		if err != nil {
			t.Errorf("usage %s (stream %v): the call failed: %v", g.raw, req.Stream, err)
			continue
		}
		if resp.Content != "kept" || resp.Attempts != 1 {
			t.Errorf("usage %s: content %q after %d attempts, want the reply on the first", g.raw, resp.Content, resp.Attempts)
		}
		if resp.PromptTokens < 0 || resp.CompletionTokens < 0 || resp.CachedTokens < 0 || resp.PromptTokens > MaxUsageTokens || resp.CompletionTokens > MaxUsageTokens {
			t.Errorf("usage %s: counted %d/%d/%d", g.raw, resp.PromptTokens, resp.CompletionTokens, resp.CachedTokens)
		}
		switch {
		case g.ok && (g.prompt > 0 || g.completion > 0):
			if resp.UsageError != "" || resp.PromptTokens != g.prompt || resp.CompletionTokens != g.completion || resp.CachedTokens != g.cached || resp.UsageEstimated {
				t.Errorf("usage %s: read %d/%d/%d (error %q, estimated %v), want %d/%d/%d", g.raw, resp.PromptTokens, resp.CompletionTokens, resp.CachedTokens, resp.UsageError, resp.UsageEstimated, g.prompt, g.completion, g.cached)
			}
		case g.ok:
			// All zero: as a server that sends no usage, estimated.
			if resp.UsageError != "" || !resp.UsageEstimated {
				t.Errorf("usage %s: error %q, estimated %v; want zero usage estimated", g.raw, resp.UsageError, resp.UsageEstimated)
			}
		default:
			if resp.UsageError == "" || string(resp.UsageRaw) != g.raw || !resp.UsageEstimated {
				t.Errorf("usage %s: error %q, raw %s, estimated %v; want it kept as unreadable and the tokens estimated", g.raw, resp.UsageError, resp.UsageRaw, resp.UsageEstimated)
			}
		}
	}
	if n := srv.Count(); n != len(cases) {
		t.Errorf("the server answered %d requests for %d calls", n, len(cases))
	}
}

// FuzzDecodeUsage holds DecodeUsage to what it promises for any input:
// no panic; counts it returns are whole, not negative and within bounds,
// the cached and written ones within the prompt; an error keeps the raw.
func FuzzDecodeUsage(f *testing.F) {
	for _, s := range []string{`{"prompt_tokens":12.0,"completion_tokens":"7"}`, `{"prompt_tokens":-40000000}`, `{"prompt_tokens":5,"prompt_tokens_details":{"cached_tokens":9}}`, `"x"`, `{}`, `{"prompt_tokens":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		u, err := DecodeUsage(raw)
		if err != nil {
			var ue *UsageError
			if !errors.As(err, &ue) || string(ue.Raw) != string(raw) {
				t.Fatalf("error %v does not keep the raw usage", err)
			}
			if u != (Usage{}) {
				t.Fatalf("an error returned counts %+v", u)
			}
			return
		}
		for _, n := range []int{u.PromptTokens, u.CompletionTokens, u.CachedTokens, u.CacheWriteTokens} {
			if n < 0 || n > MaxUsageTokens {
				t.Fatalf("count %d out of bounds from %q", n, raw)
			}
		}
		if u.CachedTokens > u.PromptTokens || u.CacheWriteTokens > u.PromptTokens {
			t.Fatalf("cached or written beyond the prompt: %+v from %q", u, raw)
		}
	})
}
