# hookrelay — two commands on a fresh machine: `make run` and `make test`.
# `make help` lists the targets (each documents itself with a ## comment).
GO      ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
TOOLS   := $(CURDIR)/tools/go.mod
SQLC    := $(GO) tool -modfile=$(TOOLS) sqlc
STATICCHECK := $(GO) tool -modfile=$(TOOLS) staticcheck
OAPI    := $(GO) tool -modfile=$(TOOLS) oapi-codegen
# The Go client (package client) from openapi/openapi.json, written to $(1):
# the document in the OpenAPI 3.0 dialect oapi-codegen reads
# (client/internal/openapi30), then the generator.
GEN_CLIENT = tmp=$$(mktemp -d) && $(GO) run ./client/internal/openapi30 openapi/openapi.json > $$tmp/openapi30.json && \
	$(OAPI) -config client/oapi-codegen.yaml -o $(1) $$tmp/openapi30.json && rm -r $$tmp

.PHONY: help build run demo test lint test-faults failover-drill bench bench-cluster bench-search soak screenshots generate check-generated vet fmt clean image

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{ printf "  %-16s %s\n", $$1, $$2 }'

build: ## build the product binary bin/hookrelay
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/hookrelay ./cmd/hookrelay

IMAGE_ARCH ?= $(shell $(GO) env GOARCH)

image: ## container image build/hookrelay-image.tar from a static binary, no network (docker load -i ...)
	mkdir -p build/image
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" \
		-o build/image/hookrelay ./cmd/hookrelay
	cd deploy && $(GO) run ./cmd/hookrelay-image -binary $(CURDIR)/build/image/hookrelay -arch $(IMAGE_ARCH) \
		-version $(VERSION) -out $(CURDIR)/build/hookrelay-image.tar

run: build ## run hookrelay locally against a PostgreSQL (scripts/run.sh)
	scripts/run.sh

# The README's walkthrough registers an endpoint on 127.0.0.1, which the SSRF
# guard refuses unless private targets are allowed.
demo: build ## make run with endpoints on this machine allowed (HOOKRELAY_ALLOW_PRIVATE_TARGETS=true), for the README's walkthrough
	@echo "hookrelay: demo: HOOKRELAY_ALLOW_PRIVATE_TARGETS=true: endpoints on loopback and private addresses are allowed (not for production)"
	HOOKRELAY_ALLOW_PRIVATE_TARGETS=true scripts/run.sh

test: ## vet, gofmt and race tests of the product, bench and deploy modules; vet of the fault suite
	scripts/test.sh

lint: ## staticcheck the product, bench, e2e and deploy modules (tools/go.mod pins it)
	$(STATICCHECK) ./...
	cd bench && $(STATICCHECK) ./...
	cd e2e && $(STATICCHECK) -tags faults ./...
	cd deploy && $(STATICCHECK) ./...

test-faults: ## the end-to-end fault suite, e2e module (docs/reliability.md)
	scripts/test-faults.sh

failover-drill: ## the cluster scenarios of the fault suite, COUNT (5) times each (scripts/pg-cluster.sh; docs/reliability.md)
	scripts/test-faults.sh -run 'TestFailover|TestSyncStandbyBlocked|TestReplicaReads' -count=$${COUNT:-5}

bench-cluster: ## ingest with and without the synchronous standby, alternated (scripts/bench-cluster.sh; ROUNDS, DURATION)
	scripts/bench-cluster.sh $(ARGS)

bench: ## build bin/hookrelay and bin/hookrelay-bench, run the load benchmark (ARGS="--phases max ...")
	scripts/bench.sh $(ARGS)

bench-search: ## message search on 50 million messages in a private cluster (scripts/bench-search.sh; ARGS="measure", "--drop")
	scripts/bench-search.sh $(ARGS)

soak: ## soak of the hot queue table through the real binary (scripts/soak.sh)
	scripts/soak.sh

screenshots: ## retake docs/screenshots/*.png with the dashboard's browser test (needs chromium)
	scripts/browser-deps.sh
	HOOKRELAY_SCREENSHOT_DIR=$(CURDIR)/docs/screenshots HOOKRELAY_TEST_DATABASE_URL=$$(scripts/pg-url.sh) \
		$(GO) test -count=1 -run 'TestWebBrowser|TestPortalBrowser|TestWebCarriers' ./web/

generate: ## regenerate the sqlc code from db/queries and the Go client from openapi/openapi.json
	$(SQLC) generate
	$(call GEN_CLIENT,client/client.gen.go)

check-generated: ## fail when the committed sqlc output or Go client differs from what their sources generate
	$(SQLC) diff
	out=$$(mktemp) && $(call GEN_CLIENT,$$out) && diff -u client/client.gen.go $$out && rm $$out

vet: ## go vet every module (the fault suite with its build tag)
	$(GO) vet ./...
	cd bench && $(GO) vet ./...
	cd e2e && $(GO) vet -tags faults ./...
	cd deploy && $(GO) vet ./...

fmt: ## gofmt every Go file
	gofmt -w $$(git ls-files '*.go' | grep -v '^tools/')

clean: ## remove bin/ and build/
	rm -rf bin build
