package gemini_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/debate-runner/runner/providers/gemini"
	"github.com/debate-runner/runner/runtime/llm"
)

// TestGeminiBatchReadsEitherShape: Google's REST API names a batch's
// states BATCH_STATE_*, its SDKs JOB_STATE_*, and a done batch's inlined
// responses are under the operation's response (or the batch's output in
// its metadata). For generated batches (random requests, each answered or
// refused, a random final state, either prefix, either place), Poll says
// ended exactly for the final states and Results gives each answered
// request its reply and each refused one an error.
func TestGeminiBatchReadsEitherShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 40 {
		prefix := []string{"BATCH_STATE_", "JOB_STATE_"}[rng.IntN(2)]
		state := []string{"PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "EXPIRED"}[rng.IntN(6)]
		inMeta := rng.IntN(2) == 0
		n := 1 + rng.IntN(5)
		answered := map[string]bool{}
		var responses []any
		for j := range n {
			key := fmt.Sprintf("req%d-%d", i, j)
			if rng.IntN(3) > 0 {
				answered[key] = true
				responses = append(responses, map[string]any{"metadata": map[string]string{"key": key}, "response": map[string]any{
					"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]string{"text": "reply to " + key}}}, "finishReason": "STOP"}},
					"usageMetadata": map[string]any{"promptTokenCount": 7, "candidatesTokenCount": 3},
				}})
			} else {
				responses = append(responses, map[string]any{"metadata": map[string]string{"key": key}, "error": map[string]any{"code": 400, "message": "refused"}})
			}
		}
		ended := state != "PENDING" && state != "RUNNING"
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || r.URL.Path != "/v1beta/batches/77" || r.Header.Get("x-goog-api-key") != "k" {
				http.Error(w, "no", http.StatusNotFound)
				return
			}
			meta := map[string]any{"state": prefix + state, "batchStats": map[string]string{"requestCount": fmt.Sprint(n)}}
			op := map[string]any{"name": "batches/77", "metadata": meta, "done": ended && rng.IntN(2) == 0}
			output := map[string]any{"inlinedResponses": map[string]any{"inlinedResponses": responses}}
			if ended && inMeta {
				meta["output"] = output
			} else if ended {
				op["response"] = output
			}
			json.NewEncoder(w).Encode(op)
		}))
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1beta/models/gemini-2.5-flash:generateContent", nil)
		req.Header.Set("x-goog-api-key", "k")
		api, err := gemini.Kind{}.BatchAPI(req, srv.Client())
		if err != nil {
			t.Fatal(err)
		}
		st, err := api.Poll(context.Background(), "batches/77")
		if err != nil || st.Ended != ended || st.Total != n || st.Status != strings.ToLower(state) {
			t.Errorf("batch %d (%s%s): poll %+v, %v; want ended %v of %d", i, prefix, state, st, err, ended, n)
		}
		if !ended {
			srv.Close()
			continue
		}
		res, err := api.Results(context.Background(), "batches/77")
		srv.Close()
		if err != nil || len(res) != n {
			t.Fatalf("batch %d: %d results, %v; want %d", i, len(res), err, n)
		}
		for key, r := range res {
			var chat struct {
				Choices []struct {
					Message struct{ Content string } `json:"message"`
				} `json:"choices"`
			}
			_ = json.Unmarshal(r.Body, &chat)
			switch {
			case answered[key] && (r.Err != "" || len(chat.Choices) != 1 || chat.Choices[0].Message.Content != "reply to "+key):
				t.Errorf("batch %d: %s was answered, got %+v", i, key, r)
			case !answered[key] && r.Err == "":
				t.Errorf("batch %d: %s was refused, got a reply", i, key)
			}
		}
	}
}

var _ llm.Batcher = gemini.Kind{}
