# calltrace — build, demo, test, bench.
#   make          build build/calltrace
#   make deps     install missing Debian packages (apt-get)
#   make demo     deps + build + trace the bundled example
#   make test     deps + build + unit and end-to-end tests (root)
#   make bench    per-call cost against the raw probe floor
#   make man      build/man/*.1, generated from each command's --help (help2man)
#   make install  binary, man pages, bash completion, docs under $(DESTDIR)$(PREFIX)
#   make uninstall  removes what make install put there
#   make deb      build/calltrace_VERSION_amd64.deb (debhelper, from debian/)

CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
BUILD    := build
CFLAGS   ?= -O2 -g
CFLAGS   += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
            -Wshadow -Wformat=2 -Werror=implicit-function-declaration \
            -Isrc -I$(BUILD)
LDLIBS   := -lbpf -lelf -ldw -lZydis -liberty -lz -lpthread -lm

# Debian packages this project builds, tests and benches with.
DEPS_PKGS := build-essential clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev \
             libdw-dev libzydis-dev golang-go gccgo-12 pkg-config python3 \
             python3-yaml time chromium nodejs \
             libiberty-dev g++ rustc \
             wabt wasi-libc libclang-rt-14-dev-wasm32 lld lld-14 libclang-rt-14-dev \
             libc6-dbg jq sqlite3 xz-utils openssl curl

SRCS := $(filter-out %.bpf.c,$(wildcard src/*.c src/*/*.c))
OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(SRCS)) $(BUILD)/obj/wasm/assets.o
LIB_OBJS := $(filter-out $(BUILD)/obj/main.o,$(OBJS))
BPF_SRC := src/probes/calltrace.bpf.c
UNIT_SRCS := $(wildcard tests/unit/*.c)

# Installing and packaging: man pages, completion, make deb.
DEPS_PKGS += help2man groff-base man-db
PREFIX   ?= /usr/local
BINDIR   := $(PREFIX)/bin
MAN1DIR  := $(PREFIX)/share/man/man1
DOCDIR   := $(PREFIX)/share/doc/calltrace
DOCS     := README.md $(wildcard docs/*.md)
BASHCOMPDIR := $(PREFIX)/share/bash-completion/completions
DEPS_PKGS += bash-completion debhelper dpkg-dev

.PHONY: all deps demo test unit unit-san bench clean fixtures man install uninstall deb fuzz

# The record-file fuzzer (tests/fuzz): the readers built with ASan+UBSan; a
# short seeded run is part of `make test`, `make fuzz` runs libFuzzer.
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
SAN_OBJS := $(patsubst src/%.c,$(BUILD)/san/%.o,$(filter-out src/main.c,$(SRCS)))
FUZZ_RUNS ?= 20000
FUZZ_CC ?= clang-14

all: $(BUILD)/calltrace

$(BUILD)/vmlinux.h:
	@mkdir -p $(BUILD)
	@echo "  GEN     $@"
	@$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/calltrace.bpf.o: $(BPF_SRC) src/probes/event.h $(BUILD)/vmlinux.h
	@echo "  BPF     $<"
	@$(CLANG) -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -D__BPF__ \
		-I$(BUILD) -Isrc/probes -c $(BPF_SRC) -o $@

$(BUILD)/calltrace.skel.h: $(BUILD)/calltrace.bpf.o
	@$(BPFTOOL) gen skeleton $< name calltrace_bpf > $@.tmp && mv $@.tmp $@

# Each object lists the headers it includes in a .d file next to it (-MMD;
# -MP: a deleted or moved header is no error), so a change rebuilds what
# includes it and nothing else.  An object without its .d (built before
# this rule) is built again.  The skeleton is generated: an order-only
# prerequisite the first time, a tracked header after that.
DEPFLAGS := -MMD -MP
%.d: ;
.PRECIOUS: %.d

$(BUILD)/obj/%.o: src/%.c $(BUILD)/obj/%.d | $(BUILD)/calltrace.skel.h
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

# The wasm backend's recorder (a wasm32 module built from C) and runner are
# built into calltrace (src/wasm/assets.S).
$(BUILD)/wasm/recorder.wasm: src/wasm/recorder/recorder.c src/wasm/wire.h src/probes/event.h
	@mkdir -p $(dir $@)
	@echo "  WASM    $@"
	@$(CLANG) --target=wasm32 -O2 -nostdlib -ffreestanding -Isrc -Wall -Wextra -Wno-unused-parameter \
		-Wl,--no-entry -Wl,-z,stack-size=65536 -o $@ $<

$(BUILD)/obj/wasm/assets.o: src/wasm/assets.S src/wasm/runner.cjs $(BUILD)/wasm/recorder.wasm
	@mkdir -p $(dir $@)
	@$(CC) -c -DRECORDER_WASM='"$(BUILD)/wasm/recorder.wasm"' $< -o $@

$(BUILD)/calltrace: $(OBJS)
	@echo "  LINK    $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/unit_tests: $(UNIT_SRCS) $(wildcard tests/unit/*.h src/*/*.h) $(LIB_OBJS)
	@echo "  LINK    $@"
	@$(CC) $(CFLAGS) -Itests/unit $(UNIT_SRCS) $(LIB_OBJS) -o $@ $(LDLIBS)

# The man pages: help2man on each command's --help, plus man/*.h2m.
$(BUILD)/man/.stamp: $(BUILD)/calltrace man/mkman.sh $(wildcard man/*.h2m)
	@echo "  MAN     $(BUILD)/man"
	@rm -rf $(BUILD)/man && sh man/mkman.sh $(BUILD)/calltrace $(BUILD)/man && touch $@

man: $(BUILD)/man/.stamp

install: all man
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MAN1DIR) $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(DOCDIR)/docs
	install -m 0755 $(BUILD)/calltrace $(DESTDIR)$(BINDIR)/calltrace
	install -m 0644 $(BUILD)/man/*.1 $(DESTDIR)$(MAN1DIR)/
	install -m 0644 completion/calltrace.bash $(DESTDIR)$(BASHCOMPDIR)/calltrace
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 $(filter docs/%,$(DOCS)) $(DESTDIR)$(DOCDIR)/docs/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/calltrace $(DESTDIR)$(MAN1DIR)/calltrace.1 $(DESTDIR)$(MAN1DIR)/calltrace-*.1
	rm -f $(DESTDIR)$(BASHCOMPDIR)/calltrace
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/,$(DOCS))
	rmdir $(DESTDIR)$(DOCDIR)/docs $(DESTDIR)$(DOCDIR) 2>/dev/null || true

# The Debian package, built by dpkg-buildpackage from a copy of the tree in
# build/deb (it writes its products next to the tree and cleans the tree with
# make clean); the .deb files are moved to build/.
deb:
	@v=$$(sed -n 's/^#define CT_VERSION "\(.*\)"/\1/p' src/cmds/cmds.h); d=$$(dpkg-parsechangelog -S Version); \
	if [ "$$v" != "$$d" ]; then \
		echo "calltrace: debian/changelog is at $$d but calltrace is $$v: add a debian/changelog entry for $$v (dch -v $$v)"; exit 1; \
	fi
	@rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/calltrace
	@if git rev-parse --git-dir >/dev/null 2>&1; then git ls-files -z -co --exclude-standard; \
	else find . -path ./build -prune -o -type f -print0; fi | \
		tar -c --null --ignore-failed-read -T - -f - | tar -x -C $(BUILD)/deb/calltrace
	cd $(BUILD)/deb/calltrace && dpkg-buildpackage -us -uc -b -jauto
	@rm -f $(BUILD)/calltrace_*.deb $(BUILD)/calltrace-dbgsym_*.deb $(BUILD)/calltrace_*.buildinfo $(BUILD)/calltrace_*.changes
	@mv $(BUILD)/deb/*.deb $(BUILD)/deb/*.buildinfo $(BUILD)/deb/*.changes $(BUILD)/ && rm -rf $(BUILD)/deb
	@ls $(BUILD)/calltrace_*.deb

deps:
	@missing=""; for p in $(DEPS_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "calltrace: make deps needs root to install:$$missing (run: sudo make deps)"; exit 1; fi; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

demo: deps all
	@sh examples/demo.sh

test: deps all $(BUILD)/unit_tests $(BUILD)/unit_tests_san $(BUILD)/fuzz_records
	@python3 tests/run.py

$(BUILD)/san/%.o: src/%.c $(BUILD)/san/%.d | $(BUILD)/calltrace.skel.h
	@mkdir -p $(dir $@)
	@echo "  CC/SAN  $<"
	@$(CC) $(CFLAGS) $(SAN_FLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/fuzz_records: tests/fuzz/fuzz_records.c $(SAN_OBJS) $(BUILD)/obj/wasm/assets.o
	@echo "  LINK    $@"
	@$(CC) $(CFLAGS) $(SAN_FLAGS) $^ -o $@ $(LDLIBS)

# libFuzzer, coverage-guided, from the seeds the test run leaves in
# build/fuzz-seeds (run `make test` first) and the files that once crashed a
# reader (tests/fuzz/regress, replayed by `make test`): FUZZ_RUNS crafted files.
$(BUILD)/fuzz/%.o: src/%.c $(BUILD)/fuzz/%.d | $(BUILD)/calltrace.skel.h
	@mkdir -p $(dir $@)
	@$(FUZZ_CC) $(CFLAGS) $(DEPFLAGS) -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -c $< -o $@

$(BUILD)/fuzz_records_libfuzzer: tests/fuzz/fuzz_records.c $(patsubst $(BUILD)/san/%,$(BUILD)/fuzz/%,$(SAN_OBJS)) \
				 $(BUILD)/obj/wasm/assets.o
	@echo "  LINK    $@"
	@$(FUZZ_CC) $(CFLAGS) -O1 -g -DCT_LIBFUZZER -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $^ -o $@ $(LDLIBS)

fuzz: deps $(BUILD)/fuzz_records_libfuzzer
	@test -n "$$(ls $(BUILD)/fuzz-seeds 2>/dev/null)" || { echo "no seeds in $(BUILD)/fuzz-seeds: run make test first"; exit 1; }
	@mkdir -p $(BUILD)/fuzz-corpus
	@cp -n $(BUILD)/fuzz-seeds/* tests/fuzz/regress/* $(BUILD)/fuzz-corpus/
	$(BUILD)/fuzz_records_libfuzzer -runs=$(FUZZ_RUNS) -timeout=20 -rss_limit_mb=4096 -max_len=1048576 \
		-print_final_stats=1 $(BUILD)/fuzz-corpus

unit: $(BUILD)/unit_tests
	$(BUILD)/unit_tests

# The unit tests on the sanitizer build (ASan+UBSan, the fuzzer's objects):
# a use of freed memory fails there at once (leaks are not looked for: the
# tests keep what they build; the fuzzer looks at the readers').
$(BUILD)/unit_tests_san: $(UNIT_SRCS) $(wildcard tests/unit/*.h src/*/*.h) $(SAN_OBJS) $(BUILD)/obj/wasm/assets.o
	@echo "  LINK    $@"
	@$(CC) $(CFLAGS) $(SAN_FLAGS) -Itests/unit $(UNIT_SRCS) $(SAN_OBJS) $(BUILD)/obj/wasm/assets.o -o $@ $(LDLIBS)

unit-san: $(BUILD)/unit_tests_san
	ASAN_OPTIONS=detect_leaks=0 $(BUILD)/unit_tests_san

bench: deps all
	@python3 bench/bench.py

clean:
	rm -rf $(BUILD)

-include $(OBJS:.o=.d) $(SAN_OBJS:.o=.d) $(patsubst $(BUILD)/san/%.o,$(BUILD)/fuzz/%.d,$(SAN_OBJS))
