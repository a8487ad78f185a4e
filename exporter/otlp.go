package exporter

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// OTLP protocols a TraceExporter speaks.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// ServiceName is the service.name of readyline's telemetry.
const ServiceName = "readyline"

// grpcReconnectMax is the longest wait between two attempts of the OTLP/gRPC
// exporter to reconnect to an endpoint that is down.
const grpcReconnectMax = 5 * time.Second

// newOTLPExporter builds the OTLP/gRPC or OTLP/HTTP exporter cfg asks for
// and describes its endpoint for logs.
func newOTLPExporter(cfg TraceConfig) (sdktrace.SpanExporter, string, error) {
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = firstEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	protocol := cfg.Protocol
	if protocol == "" {
		protocol = firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol == "" {
		protocol = guessProtocol(endpoint)
	}
	desc := endpoint
	if desc == "" {
		desc = "OTLP default"
	}
	desc = protocol + " " + desc

	// With no explicit endpoint the exporters read OTEL_EXPORTER_OTLP_*
	// themselves; explicit options override those variables.
	ctx := context.Background()
	switch protocol {
	case ProtocolGRPC:
		opts := []otlptracegrpc.Option{
			otlptracegrpc.WithTimeout(cfg.ExportTimeout),
			// The export queue retries, with the whole batch.
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}),
			// gRPC's reconnection back-off would otherwise reach 120 s in a
			// long outage, and a request while it waits fails at once:
			// the traces would wait that long after the endpoint is back.
			// A connection attempt is cheap; at most grpcReconnectMax apart
			// the connection is up again by the queue's next try.
			otlptracegrpc.WithDialOption(grpc.WithConnectParams(grpc.ConnectParams{
				Backoff: backoff.Config{
					BaseDelay: cfg.RetryInitial, Multiplier: 1.6, Jitter: 0.2, MaxDelay: min(cfg.RetryMax, grpcReconnectMax),
				},
				MinConnectTimeout: cfg.ExportTimeout,
			})),
		}
		if cfg.Endpoint != "" {
			if hasScheme(cfg.Endpoint) {
				opts = append(opts, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
			} else {
				opts = append(opts, otlptracegrpc.WithEndpoint(cfg.Endpoint))
			}
		}
		if cfg.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(cfg.Headers))
		}
		exp, err := otlptracegrpc.New(ctx, opts...)
		if err != nil {
			return nil, "", fmt.Errorf("creating OTLP/gRPC trace exporter: %w", err)
		}
		return exp, desc, nil
	case ProtocolHTTP:
		opts := []otlptracehttp.Option{
			otlptracehttp.WithTimeout(cfg.ExportTimeout),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}), // the export queue retries
		}
		if cfg.Endpoint != "" {
			if hasScheme(cfg.Endpoint) {
				u, err := url.Parse(cfg.Endpoint)
				if err != nil {
					return nil, "", fmt.Errorf("parsing OTLP endpoint: %w", err)
				}
				if u.Path == "" || u.Path == "/" {
					u.Path = "/v1/traces"
				}
				opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
			} else {
				opts = append(opts, otlptracehttp.WithEndpoint(cfg.Endpoint))
			}
		}
		if cfg.Insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
		}
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, "", fmt.Errorf("creating OTLP/HTTP trace exporter: %w", err)
		}
		return exp, desc, nil
	default:
		return nil, "", fmt.Errorf("OTLP protocol %q: want %q or %q", protocol, ProtocolGRPC, ProtocolHTTP)
	}
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

func hasScheme(endpoint string) bool { return strings.Contains(endpoint, "://") }

// guessProtocol picks OTLP/HTTP for endpoints that look like one (port 4318,
// path /v1/traces) and gRPC otherwise.
func guessProtocol(endpoint string) string {
	hostPort, path := endpoint, ""
	if hasScheme(endpoint) {
		if u, err := url.Parse(endpoint); err == nil {
			hostPort, path = u.Host, u.Path
		}
	}
	if strings.HasSuffix(path, "/v1/traces") {
		return ProtocolHTTP
	}
	if _, port, err := net.SplitHostPort(hostPort); err == nil && port == "4318" {
		return ProtocolHTTP
	}
	return ProtocolGRPC
}

// newResource describes readyline: service.name, service.version,
// k8s.node.name, the SDK, and OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME
// (which win).
func newResource(cfg TraceConfig) (*resource.Resource, error) {
	attrs := resourceAttrs(cfg.NodeName, cfg.ServiceVersion)
	res, err := resource.New(context.Background(),
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attrs...),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("building trace resource: %w", err)
	}
	return res, nil
}

func resourceAttrs(node, version string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{semconv.ServiceName(ServiceName)}
	if version != "" {
		attrs = append(attrs, semconv.ServiceVersion(version))
	}
	if node != "" {
		attrs = append(attrs, semconv.K8SNodeName(node))
	}
	return attrs
}
