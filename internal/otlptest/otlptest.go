// Package otlptest is an OpenTelemetry collector for tests: it receives
// OTLP trace exports over HTTP (protobuf) or gRPC, decodes them with the
// protocol's own generated types, and keeps the spans, the resources they
// came with and the headers of each export, for tests to check what a run
// sent.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// Span is a received span, its attributes flattened to Go values.
type Span struct {
	TraceID, ID, Parent string
	Name                string
	Kind                tracepb.Span_SpanKind
	Attrs               map[string]any
	Events              []Event
	// Status is the span's status code (unset, ok, error) and message.
	Status        tracepb.Status_StatusCode
	StatusMessage string
	Resource      map[string]any
	Scope         string
	Start, End    uint64
}

// Event is an event of a span.
type Event struct {
	Name  string
	Attrs map[string]any
}

// Receiver collects exported spans.
type Receiver struct {
	// Endpoint is what OTEL_EXPORTER_OTLP_ENDPOINT should be set to.
	Endpoint string

	mu      sync.Mutex
	spans   []Span
	headers []map[string]string
	raw     [][]byte
	exports int
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Headers returns the headers (gRPC metadata) of each export, names in
// lower case.
func (r *Receiver) Headers() []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]string(nil), r.headers...)
}

// Raw returns the encoded requests received, to search them for text that
// must not be there.
func (r *Receiver) Raw() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.raw...)
}

// Exports counts the export requests received.
func (r *Receiver) Exports() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exports
}

func (r *Receiver) add(req *collectortrace.ExportTraceServiceRequest, raw []byte, headers map[string]string) {
	var spans []Span
	for _, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					TraceID: hex.EncodeToString(s.GetTraceId()), ID: hex.EncodeToString(s.GetSpanId()),
					Parent: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Kind: s.GetKind(),
					Attrs: attrs(s.GetAttributes()), Resource: res, Scope: ss.GetScope().GetName(),
					Status: s.GetStatus().GetCode(), StatusMessage: s.GetStatus().GetMessage(),
					Start: s.GetStartTimeUnixNano(), End: s.GetEndTimeUnixNano(),
				}
				for _, e := range s.GetEvents() {
					sp.Events = append(sp.Events, Event{Name: e.GetName(), Attrs: attrs(e.GetAttributes())})
				}
				spans = append(spans, sp)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exports++
	r.spans = append(r.spans, spans...)
	r.headers = append(r.headers, headers)
	r.raw = append(r.raw, raw)
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = value(kv.GetValue())
	}
	return out
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	}
	return nil
}

// NewHTTP starts a receiver of OTLP/HTTP protobuf exports at /v1/traces;
// it stops when the test ends.
func NewHTTP(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Method != http.MethodPost {
			http.Error(w, "not an OTLP traces endpoint", http.StatusNotFound)
			return
		}
		if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
			http.Error(w, "content type "+ct+", want application/x-protobuf", http.StatusUnsupportedMediaType)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		data, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var msg collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(data, &msg); err != nil {
			http.Error(w, "not an ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
			return
		}
		headers := map[string]string{}
		for k, v := range req.Header {
			headers[strings.ToLower(k)] = strings.Join(v, ",")
		}
		r.add(&msg, data, headers)
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	r.Endpoint = srv.URL
	return r
}

// NewGRPC starts a receiver of OTLP/gRPC exports (the collector's
// TraceService, without TLS); it stops when the test ends.
func NewGRPC(t testing.TB) *Receiver {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{Endpoint: "http://" + lis.Addr().String()}
	s := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(s, &traceService{r: r})
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return r
}

type traceService struct {
	collectortrace.UnimplementedTraceServiceServer
	r *Receiver
}

func (s *traceService) Export(ctx context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	headers := map[string]string{}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, v := range md {
		headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	raw, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	s.r.add(req, raw, headers)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// Contains says whether any export held text anywhere in its encoding.
func (r *Receiver) Contains(text string) bool {
	for _, raw := range r.Raw() {
		if bytes.Contains(raw, []byte(text)) {
			return true
		}
	}
	return false
}

// Tree draws spans as an indented tree of their names, children in start
// order, for failure messages.
func Tree(spans []Span) string {
	byParent := map[string][]Span{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.ID] = true
	}
	for _, s := range spans {
		p := s.Parent
		if !ids[p] {
			p = ""
		}
		byParent[p] = append(byParent[p], s)
	}
	var b strings.Builder
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		kids := byParent[parent]
		sort.SliceStable(kids, func(i, j int) bool { return kids[i].Start < kids[j].Start })
		for _, k := range kids {
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), k.Name)
			walk(k.ID, depth+1)
		}
	}
	walk("", 0)
	return b.String()
}
