# operator-manager: every target a newcomer needs. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

BIN            ?= $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
# Go test flags; CI and the README use the defaults.
TEST_FLAGS     ?= -count=1 -timeout 60m
# The longest test packages, named first: `go test` starts packages in the order they are
# named, two at a time on two cores (-p is GOMAXPROCS), so the crash walk (about two thirds
# of a CI run) starts as soon as it is built, not after every package named before it.
# Each is tested once; ./... adds the rest.
TEST_LONGEST   := ./test/reliability/ ./test/e2e/ ./test/fleet/
CATALOG        ?= $(CURDIR)/samples/catalog
# The image `make image` builds and `make deploy` runs.
IMG            ?= operator-manager:dev
# kubectl of `make deploy`/`undeploy`: the one on PATH, else the local control plane's.
KUBECTL        ?= $(or $(shell command -v kubectl),$(shell go run ./cmd/operator-manager dev build)/kubectl)

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-14s %s\n",$$1,$$2}'

.PHONY: build
build: ## Build bin/operator-manager, and bin/kubectl-operator_manager, its name as a kubectl plugin.
	go build -o $(BIN)/operator-manager ./cmd/operator-manager
	ln -sf operator-manager $(BIN)/kubectl-operator_manager

.PHONY: install
install: ## Install operator-manager and its kubectl plugin name (kubectl operator-manager) into GOBIN.
	go install ./cmd/operator-manager
	ln -sf operator-manager "$$(go env GOBIN | grep . || echo "$$(go env GOPATH)/bin")/kubectl-operator_manager"

$(CONTROLLER_GEN): tools/codegen/go.mod tools/codegen/go.sum
	go build -C tools/codegen -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code and CRDs with controller-gen.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true rbac:roleName=operator-manager paths=./api/... paths=./internal/controller/... paths=./internal/manager/... \
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
	go -C tools/helm mod tidy -diff

.PHONY: controlplane
controlplane: ## Build (or find cached) etcd, kube-apiserver, controller-manager, scheduler and kwok.
	go run ./cmd/operator-manager dev build

# How long each fuzz target runs: FUZZTIME in `make fuzz`, TEST_FUZZTIME in `make test`.
FUZZTIME       ?= 10s
TEST_FUZZTIME  ?= 5s

.PHONY: test
test: controlplane ## Run every test: unit, integration (real apiserver), end-to-end (full local cluster), then each fuzz target for TEST_FUZZTIME (5s).
	go test $(TEST_FLAGS) $(TEST_LONGEST) ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME)

.PHONY: fuzz
fuzz: ## Run each fuzz target (every `func FuzzX` under internal/) for FUZZTIME (default 10s), one `go test -fuzz` per target.
	@n=0; \
	for file in $$(grep -rl --include='*_test.go' '^func Fuzz' internal | sort); do \
		pkg=./$$(dirname "$$file"); \
		for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$file"); do \
			echo "go test -run '^\$$' -fuzz '^$$target\$$' -fuzztime $(FUZZTIME) $$pkg"; \
			tools/fuzz-one.sh "$$target" "$(FUZZTIME)" "$$pkg" || exit 1; \
			n=$$((n + 1)); \
		done; \
	done; \
	if [ "$$n" -eq 0 ]; then echo "no fuzz targets found under internal/"; exit 1; fi; \
	echo "$$n fuzz targets ran for $(FUZZTIME) each"

.PHONY: run
run: build ## Start the local cluster and the manager with the sample catalog (stop with `make down`).
	$(BIN)/operator-manager dev up --catalog $(CATALOG)

.PHONY: down
down: build ## Stop what `make run` started.
	$(BIN)/operator-manager dev down

.PHONY: image
image: ## Build the image without a container engine: bin/operator-manager-image.tar, tagged IMG (default operator-manager:dev).
	go run ./tools/image --tag $(IMG) --output $(BIN)/operator-manager-image.tar

.PHONY: deploy
deploy: ## Deploy config/default to the current kubeconfig's cluster, running image IMG (`make deploy IMG=...`).
	@mkdir -p $(CURDIR)/bin
	@overlay=$$(mktemp -d $(CURDIR)/bin/.deploy-XXXXXX); trap 'rm -rf "$$overlay"' EXIT; \
	img='$(IMG)'; \
	case "$$img" in \
	*@*) repo=$${img%@*}; ref="digest: $${img#*@}" ;; \
	*) last=$${img##*/}; \
	   case "$$last" in *:*) repo=$${img%:*}; ref="newTag: $${img##*:}" ;; *) repo=$$img; ref="newTag: latest" ;; esac ;; \
	esac; \
	printf 'resources:\n- ../../config/default\nimages:\n- name: operator-manager\n  newName: %s\n  %s\n' "$$repo" "$$ref" >"$$overlay/kustomization.yaml"; \
	echo "deploying config/default with image $$img"; \
	$(KUBECTL) apply --server-side --force-conflicts -k "$$overlay"

.PHONY: undeploy
undeploy: ## Remove what `make deploy` created, except the CRDs and custom resources (kubectl delete -k config/crd removes those).
	$(KUBECTL) delete --ignore-not-found -k config/manager
	$(KUBECTL) delete --ignore-not-found -k config/rbac
	$(KUBECTL) delete --ignore-not-found -k config/admission

.PHONY: compat compat-walk
compat: controlplane ## Install every package's default-channel head of the shared community catalog; report per package (test/compat).
	OPM_COMPAT_PACKAGES=all OPM_COMPAT_REPORT=$(CURDIR)/compat-report.json go test -count=1 -timeout 80m -v -run TestCompatibility ./test/compat

compat-walk: controlplane ## Walk every package's default channel from its oldest version to its head, one version at a time.
	OPM_COMPAT_PACKAGES=all OPM_COMPAT_MODE=walk OPM_COMPAT_REPORT=$(CURDIR)/compat-walk-report.json go test -count=1 -timeout 170m -v -run TestCompatibility ./test/compat

.PHONY: crash-walk
crash-walk: controlplane ## Walk every crash point of every scenario (make test walks a sample of the second-change scenarios).
	OPM_CRASH_FULL=1 go test -count=1 -timeout 90m -v -run TestCrashPoints ./test/reliability

.PHONY: bench
bench: ## Run the benchmarks recorded in BENCHMARKS.md.
	go test -run '^$$' -bench . -benchmem ./...

# Sizes of the fleet benchmark (channel heads of the community catalog; "all" is every head
# that installs on its own), its idle window, how many floor-and-manager pairs run at each
# size (alternated; the row is the pair of median ratio), and how many times the sample
# operator is upgraded and rolled back by hand (the medians are its figures). `make test`
# runs 3 heads, 15s, one pair and two rounds.
FLEET_N        ?= 10,50,all
FLEET_IDLE     ?= 60s
FLEET_PAIRS    ?= 3
FLEET_ROUNDS   ?= 5

.PHONY: bench-cluster
bench-cluster: controlplane ## The fleet benchmark on fresh full local clusters: the manager against the raw-apply floor and Helm (FLEET_N, FLEET_IDLE, FLEET_PAIRS, FLEET_ROUNDS; report in fleet-report.json).
	OPM_FLEET_N=$(FLEET_N) OPM_FLEET_IDLE=$(FLEET_IDLE) OPM_FLEET_PAIRS=$(FLEET_PAIRS) OPM_FLEET_ROUNDS=$(FLEET_ROUNDS) OPM_FLEET_REPORT=$(CURDIR)/fleet-report.json \
		go test -count=1 -timeout 180m -v -run TestFleet ./test/fleet
