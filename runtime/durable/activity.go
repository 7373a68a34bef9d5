package durable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
)

// Activities make model calls on a worker: the cache and network stages of
// a run's call path, with the worker's API keys and response cache.
type Activities struct {
	// Getenv reads the worker's environment: API keys, OPENAI_BASE_URL,
	// what endpoints' URLs and headers name.
	Getenv func(string) string
	// Cache, when set, is the worker's response cache.
	Cache calls.Cache
	// HTTPClient is used for every endpoint (tests); nil is the default.
	HTTPClient *http.Client
	// Gates, when set, hold endpoints' limits for all workers together;
	// nil holds them for this worker alone.
	Gates *Gates

	mu      sync.Mutex
	clients map[string]*llm.Client
	flights calls.Flights
	sent    atomic.Int64
}

// Sent is how many calls this worker sent to endpoints.
func (a *Activities) Sent() int64 { return a.sent.Load() }

// Call makes one model call. A failure of the endpoint after the call's
// retries, and an endpoint this worker cannot reach (no key), are not
// retried by Temporal: the run waits for `runner resume`.
func (a *Activities) Call(ctx context.Context, in CallInput) (CallOutput, error) {
	if in.Endpoint == nil {
		return CallOutput{}, temporal.NewNonRetryableApplicationError("model call "+in.Key+" names no endpoint", ErrTypeWorker, nil)
	}
	client, base, err := a.client(in.Endpoint)
	if err != nil {
		return CallOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeWorker, nil)
	}
	var (
		mu  sync.Mutex
		out CallOutput
	)
	call := &calls.Call{
		Key: in.Key, Model: &spec.ModelPlan{Model: in.Request.Model, Endpoint: in.Endpoint},
		BaseURL: base, Request: in.Request, Sample: in.Sample, Scope: in.Scope,
		OnRetry: func(at llm.Attempt) {
			mu.Lock()
			defer mu.Unlock()
			r := Retry{N: at.N, Status: at.Status, WaitMS: at.Wait.Milliseconds()}
			if at.Err != nil {
				r.Error = at.Err.Error()
			}
			out.Retries = append(out.Retries, r)
		},
		OnNote: func(note string) {
			mu.Lock()
			defer mu.Unlock()
			out.Notes = append(out.Notes, note)
		},
	}
	var stage calls.Stage = calls.Send(func(string) calls.Client { return client }, &a.sent)
	if a.Cache != nil && !in.NoCache {
		stage = calls.Cached(a.Cache, &a.flights, stage)
	}
	defer heartbeat(ctx)()
	rep, src, err := stage.Complete(calls.WithKey(ctx, in.Key), call)
	if err != nil {
		var ee *calls.EndpointError
		if errors.As(err, &ee) {
			return CallOutput{}, temporal.NewNonRetryableApplicationError(ee.Err.Error(), ErrTypeEndpoint, nil)
		}
		return CallOutput{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	out.Reply, out.Source = rep, string(src)
	return out, nil
}

// CallLocal is Call as a local activity of the run workflow: a failure
// that is not retried comes back as CallOutput.Failed, so that the history
// names its call (a local activity's marker carries its result, not its
// id). Other errors are retried as the workflow's retry policy says.
func (a *Activities) CallLocal(ctx context.Context, in CallInput) (CallOutput, error) {
	out, err := a.Call(ctx, in)
	var app *temporal.ApplicationError
	if err != nil && errors.As(err, &app) && (app.Type() == ErrTypeEndpoint || app.Type() == ErrTypeWorker) {
		return CallOutput{Key: in.Key, Failed: app.Message()}, nil
	}
	out.Key = in.Key
	return out, err
}

// heartbeat tells Temporal the call is alive until the returned function
// is called: a worker that dies stops, and the call goes to another.
func heartbeat(ctx context.Context) (stop func()) {
	every := activity.GetInfo(ctx).HeartbeatTimeout / 3
	if every <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// client returns the worker's client for an endpoint, connected as a local
// run connects (the worker's environment gives the key, the URL's
// ${NAME}s and OPENAI_BASE_URL), and the base URL it reaches. Clients are
// shared by every call to the same endpoint with the same key.
func (a *Activities) client(ep *spec.EndpointPlan) (*llm.Client, string, error) {
	getenv := a.Getenv
	base := ep.BaseURL
	if ep.FromEnv {
		if v := getenv("OPENAI_BASE_URL"); v != "" {
			base = strings.TrimRight(v, "/")
		}
	}
	base, err := spec.ExpandEnv(base, getenv)
	if err != nil {
		return nil, "", fmt.Errorf("endpoint %q base_url %s on this worker: %w", ep.Name, ep.BaseURL, err)
	}
	proto, err := llm.ProtocolOf(ep)
	if err != nil {
		return nil, "", err
	}
	key := ""
	if ep.APIKeyEnv != "" {
		key = getenv(ep.APIKeyEnv)
	}
	if key == "" && !(proto == nil && llm.IsLocal(base) || proto != nil && proto.Local(base)) {
		return nil, "", fmt.Errorf("endpoint %q (%s) needs an API key: set %s in the environment of the workers", ep.Name, base, ep.APIKeyEnv)
	}
	var headers map[string]string
	names := make([]string, 0, len(ep.Headers))
	for name := range ep.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00", ep.Name, ep.Kind, base, settingsText(ep.Settings), ep.APIKeyHeader, key)
	for _, name := range names {
		v, err := spec.ExpandEnv(ep.Headers[name], getenv)
		if err != nil {
			return nil, "", fmt.Errorf("endpoint %q header %s on this worker: %w", ep.Name, name, err)
		}
		if headers == nil {
			headers = map[string]string{}
		}
		headers[name] = v
		fmt.Fprintf(h, "%s\x00%s\x00", name, v)
	}
	limits := GateLimits{MaxConcurrency: ep.MaxConcurrency, RequestsPerMinute: ep.RequestsPerMinute, TokensPerMinute: ep.TokensPerMinute}
	fmt.Fprintf(h, "%d\x00%d\x00%d\x00%s\x00%d", limits.MaxConcurrency, limits.RequestsPerMinute, limits.TokensPerMinute, ep.Timeout, ep.MaxRetries)
	id := hex.EncodeToString(h.Sum(nil))
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.clients[id]; ok {
		return c, base, nil
	}
	le := llm.Endpoint{
		Name: ep.Name, Provider: proto, BaseURL: base, Settings: ep.Settings, APIKey: key, KeyHeader: ep.APIKeyHeader,
		MaxConcurrency: ep.MaxConcurrency, RequestsPerMinute: ep.RequestsPerMinute, TokensPerMinute: ep.TokensPerMinute,
		Timeout: ep.Timeout, MaxRetries: ep.MaxRetries, Headers: headers, HTTPClient: a.HTTPClient,
	}
	if a.Gates != nil && limits.Set() {
		// The gate is the endpoint's and its key's, whatever the limits a
		// spec gives; each call brings its own.
		gh := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s", ep.Name, base, keyDigest(key))))
		timeout := ep.Timeout
		if timeout <= 0 {
			timeout = llm.DefaultTimeout
		}
		le.Gate = a.Gates.For(hex.EncodeToString(gh[:8]), limits, timeout)
	}
	if a.clients == nil {
		a.clients = map[string]*llm.Client{}
	}
	c := llm.New(le)
	a.clients[id] = c
	return c, base, nil
}

// settingsText is an endpoint's kind's settings as one text, in order.
func settingsText(s map[string]string) string {
	names := make([]string, 0, len(s))
	for k := range s {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "%s=%s\x00", k, s[k])
	}
	return b.String()
}

func keyDigest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}
