// Package otlptest is an OTLP/HTTP receiver for tests: an httptest server
// that decodes the protobuf export requests of traces and metrics, as an
// OpenTelemetry Collector would receive them, and keeps what it got.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened.
type Span struct {
	Name         string
	Kind         string // SPAN_KIND_SERVER, …
	TraceID      string // hex
	SpanID       string
	ParentSpanID string
	Attrs        map[string]string
	StatusError  bool
	Service      string // the resource's service.name
}

// Point is one data point of a histogram, flattened.
type Point struct {
	Metric  string
	Unit    string
	Attrs   map[string]string
	Count   uint64
	Service string
}

// Receiver is an OTLP/HTTP endpoint: point OTEL_EXPORTER_OTLP_ENDPOINT at
// URL.
type Receiver struct {
	URL string
	srv *httptest.Server

	mu      sync.Mutex
	spans   []Span
	points  []Point
	exports int
}

// New starts a receiver that decodes and keeps what it receives; Close
// stops it.
func New() *Receiver { return start(true) }

// NewCounting starts a receiver that reads each export whole and answers
// it as New's does, but only counts it: a benchmark's receiver, whose
// decoding would be counted as the server's cost.
func NewCounting() *Receiver { return start(false) }

func start(keep bool) *Receiver {
	r := &Receiver{}
	mux := http.NewServeMux()
	if keep {
		mux.HandleFunc("POST /v1/traces", receive(r.addSpans, &colltrace.ExportTraceServiceResponse{}))
		mux.HandleFunc("POST /v1/metrics", receive(r.addMetrics, &collmetrics.ExportMetricsServiceResponse{}))
	} else {
		mux.HandleFunc("POST /v1/traces", r.count)
		mux.HandleFunc("POST /v1/metrics", r.count)
	}
	r.srv = httptest.NewServer(mux)
	r.URL = r.srv.URL
	return r
}

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Points returns the histogram data points received so far.
func (r *Receiver) Points() []Point {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Point(nil), r.points...)
}

// Exports counts the export requests received.
func (r *Receiver) Exports() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exports
}

func (r *Receiver) count(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	r.mu.Lock()
	r.exports++
	r.mu.Unlock()
	// An empty body is an empty response message in protobuf.
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// receive handles one kind of export: it decodes the request, hands it
// to add and answers with resp.
func receive[T any, M interface {
	*T
	proto.Message
}](add func(M), resp proto.Message) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		in := M(new(T))
		if decode(w, req, in) {
			add(in)
			reply(w, resp)
		}
	}
}

func decode(w http.ResponseWriter, req *http.Request, m proto.Message) bool {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err == nil {
		err = proto.Unmarshal(data, m)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func reply(w http.ResponseWriter, m proto.Message) {
	data, _ := proto.Marshal(m)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(data)
}

func attrs(kvs []*common.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = valueText(kv.GetValue())
	}
	return out
}

func valueText(v *common.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	default:
		return v.String()
	}
}

func (r *Receiver) addSpans(in *colltrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exports++
	for _, rs := range in.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, Span{Name: s.GetName(), Kind: s.GetKind().String(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), Attrs: attrs(s.GetAttributes()),
					StatusError: s.GetStatus().GetCode().String() == "STATUS_CODE_ERROR", Service: service})
			}
		}
	}
}

func (r *Receiver) addMetrics(in *collmetrics.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exports++
	for _, rm := range in.GetResourceMetrics() {
		service := attrs(rm.GetResource().GetAttributes())["service.name"]
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				for _, dp := range m.GetHistogram().GetDataPoints() {
					r.points = append(r.points, Point{Metric: m.GetName(), Unit: m.GetUnit(), Attrs: attrs(dp.GetAttributes()),
						Count: dp.GetCount(), Service: service})
				}
			}
		}
	}
}
