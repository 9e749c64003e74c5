# hookrelay's image for builders with network access (docker build .).
# `make image` builds the same image without network or daemon
# (deploy/image); this file is not built in CI. Both give: a static binary,
# no shell, the non-root user 65532, `hookrelay serve` by default.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/hookrelay ./cmd/hookrelay \
 && mkdir -p /out/data

# distroless/static: CA certificates, tzdata, /etc/passwd with nonroot, no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hookrelay /usr/local/bin/hookrelay
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
WORKDIR /data
ENV HOOKRELAY_ADDR=0.0.0.0:8080 \
    HOOKRELAY_DATA_DIR=/data \
    HOOKRELAY_LOG_FORMAT=json
EXPOSE 8080
VOLUME ["/data"]
ENTRYPOINT ["/usr/local/bin/hookrelay"]
CMD ["serve"]
