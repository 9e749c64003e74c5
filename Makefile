# hookrelay — two commands on a fresh machine: `make run` and `make test`.
GO      ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
SQLC    := $(GO) tool -modfile=tools/go.mod sqlc

.PHONY: build run test test-faults generate check-generated vet fmt clean

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/hookrelay ./cmd/hookrelay

run: build
	scripts/run.sh

test:
	scripts/test.sh

# The end-to-end fault suite: real hookrelay processes killed, paused and
# restarted, PostgreSQL and the S3 store stopped under load (docs/reliability.md).
test-faults:
	scripts/test-faults.sh

generate:
	$(SQLC) generate

# Fails when the committed sqlc output differs from what the queries generate.
check-generated:
	$(SQLC) diff

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '^tools/')

clean:
	rm -rf bin
