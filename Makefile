# rwc — see README.md. Every target works on a fresh machine: what is missing
# (Go modules, PostgreSQL's server binaries) is fetched or installed first.
GO      ?= go
BIN     := bin/rwc
PKGS    := ./...
# Go's test cache is keyed on files, not on the PostgreSQL a test starts.
# run/ took 10–11 minutes on the two-core machine of 2026-12-08, alone or
# beside every other package (TestKillWalk's 424 cuts, each a database
# copied, rwc cut and two applies, are about 240 s of it); that passes
# go test's default 10-minute limit, so the limit is set above what a
# loaded machine needs and still stops a hung test.
TESTFLAGS ?= -count=1 -timeout 25m
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Lints the CI recipe's workflows (and, where shellcheck is installed, their
# run: scripts; shellcheck is not required).
ACTIONLINT  := github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
WORKFLOWS   := $(wildcard docs/ci/*.yml .github/workflows/*.yml)

.PHONY: all build test demo bench lint fuzz postgres clean actionlint static release-check

all: build

build:
	$(GO) build -o $(BIN) ./cmd/rwc

postgres:
	@scripts/ensure-postgres.sh

test: postgres
	$(GO) vet $(PKGS)
	$(GO) mod tidy -diff
	$(GO) run $(STATICCHECK) $(PKGS)
	$(GO) run $(ACTIONLINT) $(WORKFLOWS)
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) test $(TESTFLAGS) $(PKGS)
	@sharedir=$$(pg_config --sharedir 2>/dev/null || echo /usr/share/postgresql/15); \
	  if [ -f "$$sharedir/extension/citus.control" ]; then echo "Citus tests: ran (citus extension found)"; \
	  else echo "Citus tests: SKIPPED, every TestCitus* (this server has no citus extension; docs/citus.md says how to run them)"; fi

demo: build postgres
	@scripts/demo.sh

# Figures go in docs/benchmarks.md, with this command. BASELINE=an earlier
# rwc binary also compares the two, round by round in the same run.
bench: build postgres
	$(GO) run ./bench -rwc $(BIN) $(if $(BASELINE),-baseline $(BASELINE))
	$(GO) run ./bench -rwc $(BIN) -history 1000000,8000000,32000000
	$(GO) run ./bench -rwc $(BIN) -capture 1000000,4000000,16000000 -rounds 11
	$(GO) run ./bench -rwc $(BIN) -citus 1000000,4000000,16000000 -rounds 7
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# The randomised equivalence of incremental refresh with a full recompute,
# at length: 5,000 sequences (seeds RWC_EQUIV_SEED.., default 1..5000).
# The kill walk at every statement of every scenario (make test cuts a
# spread of them).
.PHONY: soak
soak: postgres
	RWC_EQUIV_SEQUENCES=5000 $(GO) test -count=1 -timeout 4h -run '^TestIncrementalEquivalence$$' -v ./run/
	RWC_KILLWALK=all $(GO) test -count=1 -timeout 1h -run '^TestKillWalk$$' -v ./run/

lint: build
	$(GO) vet $(PKGS)
	$(BIN) lint pipelines

actionlint:
	$(GO) run $(ACTIONLINT) $(WORKFLOWS)

# The release's linux build (.goreleaser.yaml), with musl-gcc for zig's
# musl: a static binary. TestCIRecipeSteps runs the recipe with it when
# RWC_CI_RWC=bin/rwc-static.
RELEASE_LDFLAGS := -s -w -linkmode external -extldflags -static
static:
	CC=musl-gcc CGO_ENABLED=1 $(GO) build -trimpath -tags netgo,osusergo,timetzdata \
	  -ldflags "$(RELEASE_LDFLAGS)" -o bin/rwc-static ./cmd/rwc

# Needs a git remote (goreleaser lists its tags), as in a clone.
GORELEASER := github.com/goreleaser/goreleaser/v2@v2.17.0
release-check:
	$(GO) run $(GORELEASER) check

# Short fuzzing sessions of the spec loader (from bytes, and from disk with
# links, pipes and encodings), the query analysis, the predicate compiler and
# rwc import.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzLoad -fuzztime 30s ./spec/
	$(GO) test -run '^$$' -fuzz FuzzDirFS -fuzztime 30s ./spec/
	$(GO) test -run '^$$' -fuzz FuzzAnalyze -fuzztime 30s ./compile/query/
	$(GO) test -run '^$$' -fuzz FuzzCompileTranslate -fuzztime 30s ./spec/predicate/
	$(GO) test -run '^$$' -fuzz FuzzImport -fuzztime 30s ./compile/databricks/

clean:
	rm -rf bin
