# cordon: make help lists the targets.
GO      ?= go
TAGS    ?= seccomp
BIN     ?= bin/cordon
TOOLS   ?= $(CURDIR)/bin/tools
MODULE  := github.com/cordon-run/cordon
PREFIX  ?= /usr/local
# The VCS revision for `cordon version`, for builds Go does not stamp itself.
REV     := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
LDFLAGS := -s -w -X $(MODULE).revision=$(REV)
# bin/cordon is linked statically (glibc and libseccomp in, as runc ships):
# `cordon exec` is a process a harness starts for every command, and the
# dynamic loader (two libraries, their relocations) was about a fifth of
# its start. netgo and osusergo keep Go off glibc's NSS, which a static
# glibc can only reach through shared libraries. STATIC=0 links dynamically.
STATIC  ?= 1
ifeq ($(STATIC),1)
BUILD_TAGS := $(TAGS) netgo osusergo
LDFLAGS    += -linkmode external -extldflags -static
else
BUILD_TAGS := $(TAGS)
endif
export CGO_ENABLED = 1

.PHONY: help build install test test-short unit integration rootless vm lint cross bench fuzz deps clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

deps: ## install what the build and the tests need on a bare machine (libseccomp-dev, bubblewrap, runc, podman, containerd, qemu, busybox-static)
	@bash hack/deps.sh

build: deps ## build bin/cordon (with seccomp, static; STATIC=0 for a dynamic binary)
	$(GO) build -tags '$(BUILD_TAGS)' -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/cordon

install: build ## install bin/cordon to $(PREFIX)/bin (default /usr/local), its cordon-oci link (the OCI runtime) and the shell completions
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/cordon
	ln -sf cordon $(DESTDIR)$(PREFIX)/bin/cordon-oci
	$(BIN) completion bash | install -D -m 0644 /dev/stdin $(DESTDIR)$(PREFIX)/share/bash-completion/completions/cordon
	$(BIN) completion zsh | install -D -m 0644 /dev/stdin $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_cordon
	$(BIN) completion fish | install -D -m 0644 /dev/stdin $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/cordon.fish

test: deps lint cross unit integration rootless vm ## run every test: lint, cross builds, unit, integration as root and rootless, the cgroup v2 VM

test-short: ## the quick loop (under a minute once built): go test -short ./..., which skips what starts sandboxes, test hosts or waits out timeouts
	$(GO) test -tags '$(TAGS)' -short ./...

unit: deps ## unit and integration tests of every package (as the current user)
	$(GO) test -tags '$(TAGS)' -count=1 -timeout 40m ./...

integration: deps build ## end-to-end tests of the cordon binary and the escape suite, as the current user
	CORDON_BIN=$(CURDIR)/$(BIN) bash hack/escape-suite.sh

rootless: deps build ## the runner's integration tests and the escape suite again as an unprivileged user (setpriv)
	bash hack/test-rootless.sh

vm: deps build ## the cgroup v2 lane: boot a VM (qemu, no KVM needed) and run cordon's run, limit, timeout and leftover cases as root and as a delegated user
	bash hack/vm/run.sh $(BIN)

lint: ## gofmt, goimports grouping, go vet and staticcheck (linux and darwin), the C with -Wall -Wextra -Werror, and the size rules of docs/style.md
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@bash hack/lint-tools.sh $(TOOLS)
	@out=$$($(TOOLS)/goimports -local $(MODULE) -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then \
		echo "imports need grouping (standard library, others, then $(MODULE)); fix: $(TOOLS)/goimports -local $(MODULE) -w FILE"; echo "$$out"; exit 1; fi
	$(GO) vet -tags '$(TAGS)' ./...
	GOOS=darwin CGO_ENABLED=0 $(GO) vet ./...
	$(TOOLS)/staticcheck -tags '$(TAGS)' ./...
	GOOS=darwin CGO_ENABLED=0 $(TOOLS)/staticcheck ./...
	@for f in $$(git ls-files '*.c'); do $(CC) -fsyntax-only -Wall -Wextra -Werror -I"$$(dirname $$f)" "$$f" || exit 1; done
	bash hack/check-size.sh .

cross: ## build for linux and darwin (amd64 and arm64)
	GOOS=linux GOARCH=amd64 $(GO) build -tags '$(TAGS)' -o /dev/null ./...
	GOOS=darwin GOARCH=amd64 CGO_ENABLED=0 $(GO) build -o /dev/null ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null ./...

FUZZTIME ?= 60s
fuzz: ## run each fuzz target for FUZZTIME (60s) each
	$(GO) test ./spec/ -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME)
	$(GO) test ./mounts/ -run '^$$' -fuzz FuzzResolve -fuzztime $(FUZZTIME)
	$(GO) test -tags '$(TAGS)' ./runner/linux/internal/pid1/ -run '^$$' -fuzz FuzzDecodeStatus -fuzztime $(FUZZTIME)
	$(GO) test ./cmd/cordon/internal/sessiond/ -run '^$$' -fuzz FuzzDecodeRequest -fuzztime $(FUZZTIME)
	$(GO) test ./cmd/cordon/internal/sessiond/ -run '^$$' -fuzz FuzzReadResponse -fuzztime $(FUZZTIME)
	$(GO) test ./internal/netguard/ -run '^$$' -fuzz FuzzRequestHead -fuzztime $(FUZZTIME)
	$(GO) test ./internal/netguard/ -run '^$$' -fuzz FuzzDNSAnswer -fuzztime $(FUZZTIME)
	$(GO) test ./internal/netguard/ -run '^$$' -fuzz FuzzServerName -fuzztime $(FUZZTIME) -fuzzminimizetime 10s

bench: deps build ## compare cordon with bwrap and runc side by side (hack/bench)
	bash hack/bench

clean: ## remove build output
	rm -rf bin
