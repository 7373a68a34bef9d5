package llm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// benchRequest is a debate-sized call: a system prompt, some history and a
// question.
func benchRequest() Request {
	return Request{
		Model: "gpt-4o-mini",
		Messages: []Message{
			{Role: "system", Content: strings.Repeat("You are a careful software architect. ", 20)},
			{Role: "user", Content: strings.Repeat("Earlier proposal text with tradeoffs. ", 50)},
			{Role: "user", Content: "Critique the proposal above."},
		},
		Temperature: ptr(0.2),
		MaxTokens:   800,
	}
}

// BenchmarkComplete measures one call against an instant local server, the
// HTTP round trip over loopback included (the server runs in-process).
func BenchmarkComplete(b *testing.B) {
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "stream"
		}
		b.Run(name, func(b *testing.B) {
			s := newServer(b, reply{content: strings.Repeat("A considered answer. ", 40)})
			c := New(Endpoint{Name: "bench", BaseURL: s.base(), APIKey: "k", MaxConcurrency: 8, RequestsPerMinute: 1e9, TokensPerMinute: 1e12, MaxRetries: 4})
			req := benchRequest()
			req.Stream = stream
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Complete(ctx, req, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cannedTransport answers every request in memory, so that
// BenchmarkCompleteNoNetwork measures the client alone: request building,
// limits, encoding and decoding.
type cannedTransport struct{ body string }

func (t cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}},
		Body:    io.NopCloser(strings.NewReader(t.body)),
		Request: r,
	}, nil
}

func BenchmarkCompleteNoNetwork(b *testing.B) {
	rep := reply{content: strings.Repeat("A considered answer. ", 40)}
	rec := httptest.NewRecorder()
	writeStream(rec, rep)
	bodies := map[bool]string{false: completionJSON(rep), true: rec.Body.String()}
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "stream"
		}
		b.Run(name, func(b *testing.B) {
			c := New(Endpoint{
				Name: "bench", BaseURL: "http://127.0.0.1:1/v1", APIKey: "k",
				MaxConcurrency: 8, RequestsPerMinute: 1e9, TokensPerMinute: 1e12, MaxRetries: 4,
				HTTPClient: &http.Client{Transport: cannedTransport{body: bodies[stream]}},
			})
			req := benchRequest()
			req.Stream = stream
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Complete(ctx, req, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWireAgainstGoOpenAI measures one call's client-side cost
// (encoding, the exchange with an in-memory transport, decoding) through
// this package's own HTTP path and, as the baseline in the same run,
// through go-openai's client, whose types the path uses. Compare
// runner/* with go-openai/* of the same mode as a ratio.
func BenchmarkWireAgainstGoOpenAI(b *testing.B) {
	rep := reply{content: strings.Repeat("A considered answer. ", 40)}
	rec := httptest.NewRecorder()
	writeStream(rec, rep)
	bodies := map[bool]string{false: completionJSON(rep), true: rec.Body.String()}
	for _, stream := range []bool{false, true} {
		mode := "json"
		if stream {
			mode = "stream"
		}
		hc := &http.Client{Transport: cannedTransport{body: bodies[stream]}}
		b.Run("runner/"+mode, func(b *testing.B) {
			c := New(Endpoint{Name: "bench", BaseURL: "http://127.0.0.1:1/v1", APIKey: "k", HTTPClient: hc})
			req := benchRequest()
			req.Stream = stream
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Complete(ctx, req, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("go-openai/"+mode, func(b *testing.B) {
			cfg := openai.DefaultConfig("k")
			cfg.BaseURL, cfg.HTTPClient = "http://127.0.0.1:1/v1", hc
			c := openai.NewClientWithConfig(cfg)
			r := benchRequest()
			// The same body as ours: max_tokens, which go-openai deprecates
			// but every compatible server takes.
			//lint:ignore SA1019 see above
			req := openai.ChatCompletionRequest{Model: r.Model, Temperature: float32(*r.Temperature), MaxTokens: r.MaxTokens}
			for _, m := range r.Messages {
				req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: m.Role, Content: m.Content})
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if !stream {
					if _, err := c.CreateChatCompletion(ctx, req); err != nil {
						b.Fatal(err)
					}
					continue
				}
				s, err := c.CreateChatCompletionStream(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := s.Recv(); err != nil {
						break
					}
				}
				s.Close()
			}
		})
	}
}
