# govkit: small Unix-style binaries that govern AI agents.
# `make` (or `make help`) lists the targets. Every target is a thin layer
# over the go command; nothing here needs more than Go, git, make and a POSIX
# shell.

GO        ?= go
BIN       ?= bin
PKG       := github.com/govkit/govkit
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X $(PKG)/pkg/build.Version=$(VERSION)
TESTFLAGS ?=
FUZZTIME  ?= 30s
# make install: PREFIX as in autotools, DESTDIR for staging a package.
PREFIX    ?= /usr/local
DESTDIR   ?=
BINARIES  := $(notdir $(wildcard cmd/*))

.DEFAULT_GOAL := help
.PHONY: help build test demo bench bench-cedar fuzz lint docs install clean

help: ## Show this menu
	@echo "govkit make targets:"
	@grep -hE '^[a-z][a-z_-]*:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-7s %s\n", $$1, $$2}'
	@echo "Variables: VERSION=$(VERSION) FUZZTIME=$(FUZZTIME) TESTFLAGS=$(TESTFLAGS)"

build: ## Build every cmd/* binary into ./bin, stamped with VERSION (git describe)
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

test: ## Run all tests: unit, end-to-end scripts (testdata/script), doc checks
	$(GO) test $(TESTFLAGS) ./...

demo: build ## Build, then a scripted tour of classify, govexplain, auditd, approvals, gate, gate session, gate hook and gate mcp, gate serve, and governance: secbot, auditor, govbot (scripts/demo*.sh)
	CLASSIFY=$(BIN)/classify scripts/demo.sh
	GOVEXPLAIN=$(BIN)/govexplain scripts/demo-govexplain.sh
	AUDITD=$(BIN)/auditd CLASSIFY=$(BIN)/classify VERIFY_CHAIN=$(BIN)/verify-chain scripts/demo-auditd.sh
	AUDITD=$(BIN)/auditd APPROVALS=$(BIN)/approvals VERIFY_CHAIN=$(BIN)/verify-chain scripts/demo-approvals.sh
	GATE=$(BIN)/gate AUDITD=$(BIN)/auditd APPROVALS=$(BIN)/approvals scripts/demo-gate.sh
	GATE=$(BIN)/gate scripts/demo-session.sh
	GATE=$(BIN)/gate scripts/demo-hook.sh
	GATE=$(BIN)/gate scripts/demo-serve.sh
	AUDITD=$(BIN)/auditd APPROVALS=$(BIN)/approvals SECBOT=$(BIN)/secbot AUDITOR=$(BIN)/auditor GOVBOT=$(BIN)/govbot scripts/demo-governance.sh

bench: build ## Go benchmarks of ./pkg/..., then whole-process latency (scripts/bench.sh)
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...
	CLASSIFY=$(BIN)/classify scripts/bench.sh

bench-cedar: ## Explain vs cedar-go's Authorize on ten equivalent policies, 6 rounds (bench/cedar: its own module; go fetches cedar-go from the module proxy)
	cd bench/cedar && $(GO) test -run '^$$' -bench . -benchmem -count 6 .
	cd bench/cedar && $(GO) test -run '^TestRatio$$' -ratio 6 -v .

fuzz: ## Run every Fuzz target in ./pkg/... for FUZZTIME each (default 30s)
	@set -e; for pkg in $$($(GO) list ./pkg/...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$target ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

lint: ## go vet; fail listing any file gofmt would change, or the change go mod tidy would make
	$(GO) vet ./...
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run 'go mod tidy' and commit the result"; exit 1; }

docs: ## Regenerate man pages (docs/man), docs/config.md and README's reason-code table
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null | grep . || date +%s) \
		$(GO) run ./internal/gendocs -out docs/man -config docs/config.md
	$(GO) test . -run '^TestREADMEReasonCodes$$' -update

# The completions are the binaries' own (cobra's completion command), made
# with GOVKIT_CONFIG=/dev/null so that no config file on this machine can
# change or break them.
install: build ## Install binaries, man pages and bash/zsh/fish completions under $(DESTDIR)$(PREFIX) (default /usr/local)
	install -d "$(DESTDIR)$(PREFIX)/bin" "$(DESTDIR)$(PREFIX)/share/man/man1" \
		"$(DESTDIR)$(PREFIX)/share/bash-completion/completions" \
		"$(DESTDIR)$(PREFIX)/share/zsh/site-functions" \
		"$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d"
	@set -e; export GOVKIT_CONFIG=/dev/null; for b in $(BINARIES); do \
		install -m 0755 "$(BIN)/$$b" "$(DESTDIR)$(PREFIX)/bin/$$b"; \
		"$(BIN)/$$b" completion bash > "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/$$b"; \
		"$(BIN)/$$b" completion zsh > "$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_$$b"; \
		"$(BIN)/$$b" completion fish > "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/$$b.fish"; \
	done
	install -m 0644 docs/man/*.1 "$(DESTDIR)$(PREFIX)/share/man/man1/"

clean: ## Remove built binaries and test artifacts
	rm -rf $(BIN) coverage.out coverage.html cpu.prof mem.prof *.test
