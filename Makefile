# operator-manager: every target a newcomer needs. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

BIN            ?= $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
# Go test flags; CI and the README use the defaults.
TEST_FLAGS     ?= -count=1 -timeout 60m
CATALOG        ?= $(CURDIR)/samples/catalog

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-14s %s\n",$$1,$$2}'

.PHONY: build
build: ## Build bin/operator-manager.
	go build -o $(BIN)/operator-manager ./cmd/operator-manager

$(CONTROLLER_GEN): tools/codegen/go.mod tools/codegen/go.sum
	go build -C tools/codegen -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code and CRDs with controller-gen.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true rbac:roleName=operator-manager paths=./api/... paths=./internal/controller/... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

.PHONY: verify
verify: generate ## Fail when generated files are stale, code is not gofmt'd, or go vet complains.
	@if [ -n "$$(git status --porcelain -- api config)" ]; then \
		echo "generated files are stale; run 'make generate' and commit:"; git status --porcelain -- api config; git --no-pager diff --stat -- api config; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	go vet ./...
	go mod tidy -diff
	go -C tools/kube mod tidy -diff
	go -C tools/kwok mod tidy -diff
	go -C tools/codegen mod tidy -diff

.PHONY: controlplane
controlplane: ## Build (or find cached) etcd, kube-apiserver, controller-manager, scheduler and kwok.
	go run ./cmd/operator-manager dev build

.PHONY: test
test: controlplane ## Run every test: unit, integration (real apiserver) and end-to-end (full local cluster).
	go test $(TEST_FLAGS) ./...

.PHONY: run
run: build ## Start the local cluster and the manager with the sample catalog (stop with `make down`).
	$(BIN)/operator-manager dev up --catalog $(CATALOG)

.PHONY: down
down: build ## Stop what `make run` started.
	$(BIN)/operator-manager dev down

.PHONY: bench
bench: ## Run the benchmarks recorded in BENCHMARKS.md.
	go test -run '^$$' -bench . -benchmem ./...
