package calls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
)

// Cache stores model replies by the content of their request.
// Implementations must be safe for concurrent use; errors are never stored.
type Cache interface {
	Get(key string) (kit.Reply, bool)
	Put(key string, rep kit.Reply)
}

// Cached answers a call from the cache when an identical request was
// answered before; otherwise it hands the call on, once however many
// callers ask for the same request at the same time (the others wait and
// share the reply: source Shared), and stores the reply. Failures are not
// stored.
func Cached(cache Cache, flights *Flights, next Stage) Stage {
	return StageFunc(func(ctx context.Context, c *Call) (kit.Reply, Source, error) {
		key := CacheKey(c)
		if rep, ok := cache.Get(key); ok {
			return rep, FromCache, nil
		}
		return flights.Do(ctx, key, func() (kit.Reply, Source, error) {
			// An identical call may have finished between the lookup above
			// and this flight; its reply was stored before its flight ended.
			if rep, ok := cache.Get(key); ok {
				return rep, FromCache, nil
			}
			rep, src, err := next.Complete(ctx, c)
			if err != nil {
				return kit.Reply{}, src, err
			}
			cache.Put(key, rep)
			return rep, src, nil
		})
	})
}

// CacheKey is the content address of a call's request: endpoint (name and
// the base URL it was reached at), model, parameters, messages and tools,
// plus the call's sample discriminator so that repeated samples at a
// temperature above 0 stay distinct. At temperature 0 the discriminator is
// left out: any caller asking the same gets the same reply. A resampled
// call (Resample > 0) has a key of its own at any temperature: it was asked
// afresh because the reply to its request was unusable, so being served
// that reply (or an earlier resample's) from the cache would be no new draw.
//
// A call with a Scope has a key of its own too: only calls of the same
// scope share its reply (see ScopedKey).
func CacheKey(c *Call) string {
	key := ScopedKey(RequestKey(c.Model, c.BaseURL, c.Request, c.Sample), c.Scope)
	if c.Resample > 0 {
		sum := sha256.Sum256([]byte(key + "\x00resample " + strconv.Itoa(c.Resample)))
		key = hex.EncodeToString(sum[:])
	}
	return key
}

// ScopedKey is a request's key kept to a scope: a sweep that keeps its
// samples its own is served only the replies to its own requests (a
// resume of it among them), never those of another sweep asking the same,
// whatever the temperature. An empty scope leaves the key as it is.
func ScopedKey(key, scope string) string {
	if scope == "" {
		return key
	}
	sum := sha256.Sum256([]byte(key + "\x00scope " + scope))
	return hex.EncodeToString(sum[:])
}

// RequestKey is CacheKey from its parts.
func RequestKey(model *spec.ModelPlan, baseURL string, req llm.Request, sampleKey string) string {
	endpoint := ""
	if model != nil && model.Endpoint != nil {
		endpoint = model.Endpoint.Name
		// The settings of the endpoint's kind (azure's api_version, the
		// offline model's seed) change its replies; endpoints without
		// any keep the keys of earlier versions.
		for _, k := range slices.Sorted(maps.Keys(model.Endpoint.Settings)) {
			endpoint += "\x00" + k + "=" + model.Endpoint.Settings[k]
		}
		if baseURL == "" {
			baseURL = model.Endpoint.BaseURL
		}
	}
	sample := ""
	if req.Temperature == nil || *req.Temperature > 0 {
		sample = sampleKey
	}
	body := struct {
		Endpoint string          `json:"endpoint"`
		BaseURL  string          `json:"base_url"`
		Model    string          `json:"model"`
		Temp     *float64        `json:"temperature"`
		TopP     *float64        `json:"top_p"`
		Max      int             `json:"max_tokens"`
		Seed     *int            `json:"seed"`
		JSON     bool            `json:"json"`
		Messages []llm.Message   `json:"messages"`
		Tools    []llm.Tool      `json:"tools"`
		Sample   string          `json:"sample"`
		Extra    json.RawMessage `json:"extra,omitempty"`
	}{
		Endpoint: endpoint, BaseURL: baseURL, Model: req.Model, Temp: req.Temperature, TopP: req.TopP,
		Max: req.MaxTokens, Seed: req.Seed, JSON: req.JSON != nil, Messages: req.Messages, Tools: req.Tools, Sample: sample,
		Extra: cacheExtra(&req),
	}
	data, _ := json.Marshal(body)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// cacheExtra is what else of a request changes its reply: a deployment, a
// reasoning effort, pass-through fields, the JSON schema and mode. It is
// nil for requests with none of them, so their keys are those of earlier
// versions.
func cacheExtra(req *llm.Request) json.RawMessage {
	x := struct {
		Deployment      string          `json:"deployment,omitempty"`
		ReasoningEffort string          `json:"reasoning_effort,omitempty"`
		Fields          json.RawMessage `json:"fields,omitempty"`
		Schema          json.RawMessage `json:"schema,omitempty"`
		JSONMode        llm.JSONMode    `json:"json_mode,omitempty"`
	}{Deployment: req.Deployment, ReasoningEffort: req.ReasoningEffort, Fields: ExtraObject(req.Extra)}
	if req.JSON != nil {
		x.Schema = req.JSON.Schema
		if x.JSONMode = req.JSON.Mode; x.JSONMode == llm.JSONAuto {
			x.JSONMode = ""
		}
	}
	if x.Deployment == "" && x.ReasoningEffort == "" && x.Fields == nil && x.Schema == nil && x.JSONMode == "" {
		return nil
	}
	data, _ := json.Marshal(x)
	return data
}

// ExtraObject writes pass-through request fields as one JSON object, in
// their order.
func ExtraObject(fields []llm.Field) json.RawMessage {
	if len(fields) == 0 {
		return nil
	}
	b := []byte{'{'}
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		name, _ := json.Marshal(f.Name)
		b = append(b, name...)
		b = append(b, ':')
		b = append(b, f.Value...)
	}
	return append(b, '}')
}

// Flights runs one function per key at a time; callers that arrive while it
// runs wait for its result instead of running their own. Runs that share a
// Flights (a sweep) share identical calls in flight.
type Flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

type flight struct {
	done   chan struct{}
	rep    kit.Reply
	source Source
	err    error
}

// Do runs fn for key unless a call for key is in flight, in which case it
// waits for that call and returns its reply with source Shared (or the
// leader's source when the leader found the reply in the cache). Errors are
// shared too, except a leader's cancellation: a waiter whose own context is
// alive tries again rather than failing for someone else's ^C.
func (g *Flights) Do(ctx context.Context, key string, fn func() (kit.Reply, Source, error)) (kit.Reply, Source, error) {
	for {
		g.mu.Lock()
		if g.m == nil {
			g.m = map[string]*flight{}
		}
		if f, ok := g.m[key]; ok {
			g.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return kit.Reply{}, Shared, ctx.Err()
			}
			if f.err != nil && (errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)) && ctx.Err() == nil {
				continue
			}
			src := f.source
			if src == Network {
				src = Shared
			}
			return f.rep, src, f.err
		}
		f := &flight{done: make(chan struct{})}
		g.m[key] = f
		g.mu.Unlock()

		func() {
			defer func() {
				g.mu.Lock()
				delete(g.m, key)
				g.mu.Unlock()
				close(f.done)
			}()
			f.rep, f.source, f.err = fn()
		}()
		return f.rep, f.source, f.err
	}
}
