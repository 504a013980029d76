# The operator-manager image with a container engine:
#
#   docker build -t operator-manager:dev .
#
# `make image` builds the same image without one (tools/image, internal/ociimage): the same
# static binary at /operator-manager, the same non-root numeric user, entrypoint and
# command. Keep the two in step.

FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# TARGETARCH is set by BuildKit (docker buildx build --platform linux/arm64 ...).
ARG TARGETARCH=amd64
# Static (no cgo, so no C library is needed at run time), no build paths, no symbol tables:
# what ociimage.BuildBinary builds.
RUN CGO_ENABLED=0 GOOS=linux GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/operator-manager ./cmd/operator-manager

# distroless/static:nonroot: CA certificates, /etc/passwd with nonroot (65532), /tmp, and
# nothing else (no shell, no package manager).
FROM gcr.io/distroless/static:nonroot
LABEL org.opencontainers.image.title="operator-manager" \
      org.opencontainers.image.description="Lifecycle manager for Kubernetes operators" \
      org.opencontainers.image.source="https://github.com/operator-manager/operator-manager"
COPY --from=build /out/operator-manager /operator-manager
WORKDIR /
# Numeric, so Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/operator-manager"]
CMD ["run"]
