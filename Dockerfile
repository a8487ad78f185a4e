# readyline's container image: one static binary on distroless/static.
#
#   make image         docker build (needs a Docker engine)
#   make node-image    the same image without Docker, for deploy/node
#
# amd64 only: the kubelet probes decode amd64 machine code and read the Go
# amd64 register ABI.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first: this layer stays cached while only the sources change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
# Static (no libc in the final image); the compiled eBPF objects are
# committed and embedded, so the build needs no clang.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=linux GOARCH=amd64 \
    go build -trimpath -tags grpcnotrace -ldflags "-s -w -X main.version=${VERSION}" -o /out/readyline ./cmd/readyline && \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/readyline-api ./cmd/readyline-api

# distroless/static: CA certificates (OTLP over TLS), /tmp, tzdata, no shell.
FROM gcr.io/distroless/static-debian12
ARG VERSION=dev
LABEL org.opencontainers.image.title="readyline" \
      org.opencontainers.image.description="Where did the time between created and Ready go? Pod startup traces from eBPF, the CRI and the API." \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/readyline /readyline
# The aggregated API server (kubectl get podstarts): deploy/aggregated's Deployment.
COPY --from=build /out/readyline-api /readyline-api
# Root, on purpose. readyline loads eBPF programs, attaches uprobes to the
# kubelet and reads other processes' /proc/<pid>/exe: that takes CAP_BPF,
# CAP_PERFMON, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH in the initial user
# namespace. Kubernetes grants a container's capabilities (privileged, or
# securityContext.capabilities.add) to uid 0 only: a non-root process keeps
# them in its bounding set but not in its effective set (no ambient
# capabilities), and file capabilities on the binary are void under
# allowPrivilegeEscalation: false. So the DaemonSet confines readyline with
# capabilities (deploy/capabilities), not with a user id.
USER 0:0
EXPOSE 9464
ENTRYPOINT ["/readyline"]
CMD ["run"]
