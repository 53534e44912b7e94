# ferry: build, install and test.
#
#   make            build ./ferry (release flags, -Wall -Wextra -Werror)
#   make check      unit tests under ASan+UBSan, then integration tests in a sandbox;
#                   ends with "N passed, N failed"
#   make run        a shell (or, without a terminal, a scripted demo) in a new
#                   network namespace connected through ferry
#   make bench      performance comparison (see test/bench/)
#   make install    PREFIX=/usr/local DESTDIR= : the binary (stripped), pasta/passt
#                   links, man page, systemd unit, bash completion, LICENSE
#   make install-debug  the same with the binary's debug information kept
#   make install-podman  also 'pasta', 'passt', 'slirp4netns' and 'pesto' links in
#                   LIBEXECDIR and a containers.conf drop-in putting LIBEXECDIR
#                   first among podman's helper directories (podman's own
#                   kept) and naming the slirp4netns link (podman 4.3)
#   make install-links   also 'pasta', 'passt', 'pesto' and 'passt-repair'
#                   links in BINDIR (libvirt and qemu find passt on PATH,
#                   rootlesskit pesto, KubeVirt passt-repair)
#   make uninstall  removes what any of them put there (same PREFIX/DESTDIR)
#   make fuzz       libFuzzer targets (clang) into build/fuzz/: fuzz_frame,
#                   fuzz_stream, fuzz_conf, fuzz_fwd, fuzz_json, fuzz_netlink, fuzz_scan, fuzz_vu,
#                   fuzz_vu_sock, fuzz_tcp, fuzz_mig; run one with
#                   test/fuzz/run.sh TARGET [SECONDS] (see test/fuzz/README.md)
#   make seccomp-list  the system calls each mode's seccomp filter allows,
#                   counted (from the seccomp(MODES): annotations, seccomp.c)
#   make lint       cppcheck + clang-tidy (.clang-tidy); non-zero exit on any
#                   finding (a few minutes: not part of make check)
#   make valgrind   unit tests built without sanitizers, under valgrind memcheck,
#                   then a subset of the integration tests with ferry under
#                   memcheck (test/run.sh, FERRY_VALGRIND=1); not part of make
#                   check; ends with "N passed, N failed"

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
DOCDIR  ?= $(PREFIX)/share/doc/ferry
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
SYSTEMDDIR  ?= $(PREFIX)/lib/systemd/system
STRIP   ?= strip
LIBEXECDIR  ?= $(PREFIX)/libexec/ferry
CONTAINERSCONFDIR ?= /etc/containers/containers.conf.d
# podman's default helper_binaries_dir on Linux (containers/common): the
# drop-in must list them again, a TOML array replaces the default whole
PODMAN_HELPER_DIRS := "$$BINDIR/../libexec/podman", "/usr/local/libexec/podman", \
	"/usr/local/lib/podman", "/usr/libexec/podman", "/usr/lib/podman"
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror -Wformat=2 -Wshadow -Wno-missing-field-initializers
BASE    := -std=gnu11 -D_GNU_SOURCE -D_FORTIFY_SOURCE=2 -fno-strict-aliasing $(WARN)
# The version: the release number in the VERSION file, and in a clone
# git's commit after it (0.13-g1a2b3c4, -dirty with local changes); a
# tarball from git archive has no .git and prints the number alone.
RELEASE := $(shell cat VERSION 2>/dev/null || echo 0)
GITREV  := $(shell test -e .git && git describe --always --dirty 2>/dev/null)
VERSION := $(RELEASE)$(if $(GITREV),-g$(GITREV))
BASE    += -DFERRY_VERSION='"$(VERSION)"' -Ibuild

SRCS    := $(sort $(wildcard *.c))
HDRS    := $(wildcard *.h) build/seccomp_tab.h
LIBSRCS := $(filter-out ferry.c,$(SRCS))

# Test build: sanitizers plus test-only features (fault injection).
SANFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
            -fno-sanitize-recover=undefined -DFERRY_TEST
UNIT_SRCS := $(sort $(wildcard test/unit/*.c))
UNIT_SRCS += test/fuzz/fuzz_lib.c test/fuzz/tcp_prog.c

.PHONY: all clean check unit integration install install-debug install-podman install-links uninstall run bench tools fuzz lint valgrind seccomp-list

all: ferry

ferry: $(SRCS) $(HDRS) Makefile
	$(CC) $(BASE) $(CFLAGS) -o $@ $(SRCS) $(LDFLAGS)

# The seccomp allow-list, generated from the sources' annotations (never
# committed); rewritten only when it changes, so objects that include it
# are not rebuilt for every edit.
build/seccomp_tab.h: $(SRCS) test/seccomp_gen.sh
	@mkdir -p build
	@bash test/seccomp_gen.sh header $(SRCS) > $@.tmp
	@if cmp -s $@.tmp $@; then rm $@.tmp; else mv $@.tmp $@; fi

seccomp-list: build/seccomp_tab.h
	@bash test/seccomp_gen.sh list $(SRCS)

# Release objects, one per source, for the allow-list check
# (test/seccomp_check.sh reads the libc functions each one imports).
SC_OBJS := $(patsubst %.c,build/sc-obj/%.o,$(SRCS))
build/sc-obj/%.o: %.c $(HDRS) Makefile
	@mkdir -p build/sc-obj
	$(CC) $(BASE) $(CFLAGS) -c -o $@ $<

build/ferry-test: $(SRCS) $(HDRS) Makefile
	@mkdir -p build
	$(CC) $(BASE) $(SANFLAGS) -o $@ $(SRCS)

build/unit: $(LIBSRCS) $(UNIT_SRCS) $(HDRS) test/unit/unit.h test/unit/tcp_harness.h test/fuzz/fuzz.h Makefile
	@mkdir -p build
	$(CC) $(BASE) $(SANFLAGS) -I. -o $@ $(LIBSRCS) $(UNIT_SRCS)

tools: build/wclamp

build/wclamp: test/wclamp.c
	@mkdir -p build
	$(CC) -O2 -Wall -Wextra -Werror -o $@ $<

unit: build/unit
	./build/unit

check: ferry build/ferry-test build/unit $(SC_OBJS)
	@bash test/run.sh

run: ferry
	@bash test/demo.sh

bench: ferry
	@bash test/bench/run.sh

INSTALLED := $(BINDIR)/ferry $(BINDIR)/pasta.ferry $(BINDIR)/passt.ferry \
	     $(MANDIR)/man1/ferry.1 $(BASHCOMPDIR)/ferry $(SYSTEMDDIR)/ferry.service \
	     $(DOCDIR)/LICENSE $(DOCDIR)/NEWS.md

install: install-debug
	$(STRIP) $(DESTDIR)$(BINDIR)/ferry

install-debug: ferry
	install -Dm755 ferry $(DESTDIR)$(BINDIR)/ferry
	ln -sf ferry $(DESTDIR)$(BINDIR)/pasta.ferry
	ln -sf ferry $(DESTDIR)$(BINDIR)/passt.ferry
	install -Dm644 doc/ferry.1 $(DESTDIR)$(MANDIR)/man1/ferry.1
	install -Dm644 contrib/ferry.bash $(DESTDIR)$(BASHCOMPDIR)/ferry
	for l in pasta passt pasta.ferry passt.ferry; do \
		ln -sf ferry $(DESTDIR)$(BASHCOMPDIR)/$$l; done
	@mkdir -p $(DESTDIR)$(SYSTEMDDIR)
	sed 's|@BINDIR@|$(BINDIR)|g' contrib/ferry.service > $(DESTDIR)$(SYSTEMDDIR)/ferry.service
	install -Dm644 LICENSE $(DESTDIR)$(DOCDIR)/LICENSE
	install -Dm644 NEWS.md $(DESTDIR)$(DOCDIR)/NEWS.md

install-podman: install
	@mkdir -p $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(CONTAINERSCONFDIR)
	ln -sf $(BINDIR)/ferry $(DESTDIR)$(LIBEXECDIR)/pasta
	ln -sf $(BINDIR)/ferry $(DESTDIR)$(LIBEXECDIR)/passt
	ln -sf $(BINDIR)/ferry $(DESTDIR)$(LIBEXECDIR)/slirp4netns
	ln -sf $(BINDIR)/ferry $(DESTDIR)$(LIBEXECDIR)/pesto
	printf '%s\n' '# ferry as podman'"'"'s pasta and slirp4netns: installed by ferry'"'"'s make install-podman' \
		'[engine]' \
		'helper_binaries_dir = ["$(LIBEXECDIR)", $(PODMAN_HELPER_DIRS)]' \
		'network_cmd_path = "$(LIBEXECDIR)/slirp4netns"' \
		> $(DESTDIR)$(CONTAINERSCONFDIR)/50-ferry.conf

install-links: install
	ln -sf ferry $(DESTDIR)$(BINDIR)/pasta
	ln -sf ferry $(DESTDIR)$(BINDIR)/passt
	ln -sf ferry $(DESTDIR)$(BINDIR)/pesto
	ln -sf ferry $(DESTDIR)$(BINDIR)/passt-repair

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	rm -f $(DESTDIR)$(LIBEXECDIR)/pasta $(DESTDIR)$(LIBEXECDIR)/passt \
	      $(DESTDIR)$(LIBEXECDIR)/slirp4netns \
	      $(DESTDIR)$(LIBEXECDIR)/pesto \
	      $(DESTDIR)$(CONTAINERSCONFDIR)/50-ferry.conf
	-rmdir $(DESTDIR)$(LIBEXECDIR) 2>/dev/null
	for l in pasta passt pesto passt-repair; do [ "$$(readlink $(DESTDIR)$(BINDIR)/$$l)" != ferry ] || \
		rm -f $(DESTDIR)$(BINDIR)/$$l; done
	rm -f $(addprefix $(DESTDIR)$(BASHCOMPDIR)/,pasta passt pasta.ferry passt.ferry)
	-rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null

clean:
	rm -rf ferry build

# Fuzzing: libFuzzer + ASan + UBSan, clang only. Library objects are built
# once per source; each target links what it needs.
FUZZ_CC    ?= clang
FUZZFLAGS  := -O1 -g -fsanitize=fuzzer-no-link,address,undefined \
              -fno-sanitize-recover=undefined -fno-omit-frame-pointer -DFERRY_TEST -I.
FUZZ_LINK  := -fsanitize=fuzzer,address,undefined
FUZZ_OBJS  := $(patsubst %.c,build/fuzz/obj/%.o,$(LIBSRCS))
FUZZ_TARGETS := $(addprefix build/fuzz/,fuzz_frame fuzz_stream fuzz_conf fuzz_fwd fuzz_json fuzz_netlink fuzz_scan fuzz_vu fuzz_vu_sock fuzz_tcp fuzz_mig)

fuzz: $(FUZZ_TARGETS)

build/fuzz/obj/%.o: %.c $(HDRS) test/unit/unit.h test/unit/tcp_harness.h test/fuzz/fuzz.h Makefile
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(filter-out -Werror,$(BASE)) $(FUZZFLAGS) -c -o $@ $<

build/fuzz/fuzz_frame: build/fuzz/obj/test/fuzz/fuzz_frame.o build/fuzz/obj/test/fuzz/fuzz_lib.o \
		build/fuzz/obj/test/unit/harness.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_LINK) -o $@ $^

build/fuzz/fuzz_vu: build/fuzz/obj/test/fuzz/fuzz_vu.o build/fuzz/obj/test/fuzz/fuzz_lib.o \
		build/fuzz/obj/test/unit/harness.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_LINK) -o $@ $^

build/fuzz/fuzz_stream: build/fuzz/obj/test/fuzz/fuzz_stream.o build/fuzz/obj/test/fuzz/fuzz_lib.o \
		build/fuzz/obj/test/unit/harness.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_LINK) -o $@ $^

build/fuzz/fuzz_vu_sock: build/fuzz/obj/test/fuzz/fuzz_vu_sock.o build/fuzz/obj/test/fuzz/fuzz_lib.o \
		build/fuzz/obj/test/unit/harness.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_LINK) -o $@ $^

build/fuzz/fuzz_tcp: build/fuzz/obj/test/fuzz/fuzz_tcp.o build/fuzz/obj/test/fuzz/tcp_prog.o \
		build/fuzz/obj/test/fuzz/fuzz_lib.o build/fuzz/obj/test/unit/harness.o \
		build/fuzz/obj/test/unit/tcp_harness.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_LINK) -o $@ $^

build/fuzz/fuzz_mig: build/fuzz/obj/test/fuzz/fuzz_mig.o \
		build/fuzz/obj/test/unit/harness.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_LINK) -o $@ $^

build/fuzz/fuzz_conf: build/fuzz/obj/test/fuzz/fuzz_conf.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_LINK) -o $@ $^

build/fuzz/fuzz_fwd: build/fuzz/obj/test/fuzz/fuzz_fwd.o build/fuzz/obj/fwd.o
	$(FUZZ_CC) $(FUZZ_LINK) -o $@ $^

build/fuzz/fuzz_json: build/fuzz/obj/test/fuzz/fuzz_json.o build/fuzz/obj/json.o
	$(FUZZ_CC) $(FUZZ_LINK) -o $@ $^

build/fuzz/fuzz_netlink: build/fuzz/obj/test/fuzz/fuzz_netlink.o build/fuzz/obj/util.o build/fuzz/obj/log.o
	$(FUZZ_CC) $(FUZZ_LINK) -o $@ $^

lint: build/seccomp_tab.h
	@bash test/lint.sh

# Unit tests without sanitizers (valgrind and ASan do not mix).
build/unit-plain: $(LIBSRCS) $(UNIT_SRCS) $(HDRS) test/unit/unit.h test/fuzz/fuzz.h Makefile
	@mkdir -p build
	$(CC) $(BASE) -O1 -g -DFERRY_TEST -I. -o $@ $(LIBSRCS) $(UNIT_SRCS)

# ferry for valgrind: no sanitizers, the test-only features of ferry-test.
build/ferry-plain: $(SRCS) $(HDRS) Makefile
	@mkdir -p build
	$(CC) $(BASE) -O1 -g -DFERRY_TEST -o $@ $(SRCS)

valgrind: build/unit-plain build/ferry-plain
	@FERRY_VALGRIND=1 bash test/run.sh

build/fuzz/fuzz_scan: build/fuzz/obj/test/fuzz/fuzz_scan.o build/fuzz/obj/fwd_scan.o
	$(FUZZ_CC) $(FUZZ_LINK) -o $@ $^
