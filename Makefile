# agentd — build, run, test. `make run` and `make test` are the README's two commands.

GO      ?= go
PREFIX  ?= $(HOME)/.local
BIN     ?= bin
STATICCHECK ?= v0.8.2

# DESTDIR stages an install (for a package): files go under it, while the
# paths written into them (the unit's ExecStart) are the final ones.
DESTDIR ?=
BINDIR  := $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
# Completions go where each shell's packaging looks for them under PREFIX
# (bash-completion, zsh's site-functions, fish's vendor directory).
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
# User units go where systemd looks for them: ~/.config/systemd/user for the
# default per-user PREFIX, $(PREFIX)/lib/systemd/user for any other (such as
# /usr/local, for every user). UNITDIR=... overrides either.
ifeq ($(PREFIX),$(HOME)/.local)
UNITDIR ?= $(HOME)/.config/systemd/user
else
UNITDIR ?= $(PREFIX)/lib/systemd/user
endif

.PHONY: all build run test bench clean install uninstall man view-assets

all: build

# The clients are built without cgo: a static binary starts in about half
# the time of one that loads libc, and agentctl runs once per shell command.
# -trimpath keeps the build's paths (and so its fingerprint, which `agentctl
# version` compares with the daemon's) the same whoever builds it.
build:
	$(GO) build -trimpath -o $(BIN)/ ./cmd/agentd
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/ ./cmd/agentctl ./cmd/agentctl-mcp

# The man pages: agentctl's (agentctl.1, agentctl-spawn.1, ...), made from
# the same command tree as its --help (the generator is only in this
# build); agentd.1 from agentd --help and agentd-config.5 from
# config.example.toml (man/mkman), so none can drift from the program.
man: build
	rm -rf $(BIN)/man
	$(GO) run -tags mangen ./cmd/agentctl __man $(BIN)/man
	sh man/mkman $(BIN)/agentd config.example.toml $(BIN)/man

# The view's xterm.js, copied from the release package-lock.json pins into
# pkg/view/static (committed; needs npm and its registry).
view-assets:
	$(GO) generate ./pkg/view

# Run the daemon in the foreground with default settings.
run: build
	$(BIN)/agentd

# The whole test suite: formatting, vet, and every test with the race
# detector. The screen and session tests need Xvfb, xterm, xdotool, tmux and
# friends: .ci/run installs them on Debian.
test: export AGENTD_TESTHOME_CHECK = fail
test:
	@fmt="$$(gofmt -l cmd pkg internal test third_party)"; if [ -n "$$fmt" ]; then echo "gofmt needed:"; echo "$$fmt"; exit 1; fi
	$(GO) vet ./...
	# staticcheck, pinned (the module proxy serves it; go run caches the build).
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK) ./...
	# Every test binary runs in a private home (internal/testhome) and fails
	# if anything appears in the real HOME or temp directory.
	$(GO) test -race -count=1 -timeout 15m ./...
	# Tests that measure the heap skip under -race; run them plainly.
	$(GO) test -count=1 -timeout 5m -run 'TestChannelIdleMemory|TestChannelSlowListener|TestPipelinedLogsStayInTheBudget|TestChannelQueuesStayInTheBudget' ./pkg/daemon
	$(GO) test -count=1 -timeout 5m -run 'TestPipelinedAnswersStayInTheBudget' ./internal/rpc
	# The ask oracle runs sixteen interactive programs; without -race.
	$(GO) test -count=1 -timeout 5m -run 'TestAskOracle' ./pkg/session

# Benchmarks with the baselines they are judged against; see BENCHMARKS.md.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 5 ./pkg/... ./test/...

clean:
	rm -rf $(BIN)

# Install the binaries under $(PREFIX), the man pages (man finds them
# beside the bin directory on $PATH) and the user units, pointing at them.
install: build man
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 0755 $(BIN)/agentd $(BIN)/agentctl $(BIN)/agentctl-mcp $(DESTDIR)$(BINDIR)/
	install -m 0644 $(BIN)/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(BIN)/man/*.5 $(DESTDIR)$(MANDIR)/man5/
	$(BIN)/agentctl completion bash > $(DESTDIR)$(BASHCOMPDIR)/agentctl
	$(BIN)/agentctl completion zsh > $(DESTDIR)$(ZSHCOMPDIR)/_agentctl
	$(BIN)/agentctl completion fish > $(DESTDIR)$(FISHCOMPDIR)/agentctl.fish
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/agentd.service > $(DESTDIR)$(UNITDIR)/agentd.service
	install -m 0644 systemd/agentd.socket $(DESTDIR)$(UNITDIR)/agentd.socket
	@echo "installed; start at login with: systemctl --user daemon-reload && systemctl --user enable --now agentd.socket"

# Remove exactly what install put in place.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/agentd $(DESTDIR)$(BINDIR)/agentctl $(DESTDIR)$(BINDIR)/agentctl-mcp
	rm -f $(DESTDIR)$(UNITDIR)/agentd.service $(DESTDIR)$(UNITDIR)/agentd.socket
	rm -f $(DESTDIR)$(MANDIR)/man1/agentctl.1 $(DESTDIR)$(MANDIR)/man1/agentctl-*.1 $(DESTDIR)$(MANDIR)/man1/agentd.1 $(DESTDIR)$(MANDIR)/man5/agentd-config.5
	rm -f $(DESTDIR)$(BASHCOMPDIR)/agentctl $(DESTDIR)$(ZSHCOMPDIR)/_agentctl $(DESTDIR)$(FISHCOMPDIR)/agentctl.fish
