# ferry: build, install and test.
#
#   make            build ./ferry (release flags, -Wall -Wextra -Werror)
#   make check      unit tests under ASan+UBSan, then integration tests in a sandbox;
#                   ends with "N passed, N failed"
#   make run        a shell (or, without a terminal, a scripted demo) in a new
#                   network namespace connected through ferry
#   make bench      performance comparison (see test/bench/)
#   make install    PREFIX=/usr/local DESTDIR= : binary, pasta/passt links, man page

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror -Wformat=2 -Wshadow -Wno-missing-field-initializers
BASE    := -std=gnu11 -D_GNU_SOURCE -D_FORTIFY_SOURCE=2 -fno-strict-aliasing $(WARN)
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
BASE    += -DFERRY_VERSION='"$(VERSION)"'

SRCS    := $(sort $(wildcard *.c))
HDRS    := $(wildcard *.h)
LIBSRCS := $(filter-out ferry.c,$(SRCS))

# Test build: sanitizers plus test-only features (fault injection).
SANFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
            -fno-sanitize-recover=undefined -DFERRY_TEST
UNIT_SRCS := $(sort $(wildcard test/unit/*.c))

.PHONY: all clean check unit integration install run bench tools

all: ferry

ferry: $(SRCS) $(HDRS) Makefile
	$(CC) $(BASE) $(CFLAGS) -o $@ $(SRCS) $(LDFLAGS)

build/ferry-test: $(SRCS) $(HDRS) Makefile
	@mkdir -p build
	$(CC) $(BASE) $(SANFLAGS) -o $@ $(SRCS)

build/unit: $(LIBSRCS) $(UNIT_SRCS) $(HDRS) test/unit/unit.h Makefile
	@mkdir -p build
	$(CC) $(BASE) $(SANFLAGS) -I. -o $@ $(LIBSRCS) $(UNIT_SRCS)

tools: build/wclamp

build/wclamp: test/wclamp.c
	@mkdir -p build
	$(CC) -O2 -Wall -Wextra -Werror -o $@ $<

unit: build/unit
	./build/unit

check: ferry build/ferry-test build/unit
	@bash test/run.sh

run: ferry
	@bash test/demo.sh

bench: ferry
	@bash test/bench/run.sh

install: ferry
	install -Dm755 ferry $(DESTDIR)$(BINDIR)/ferry
	ln -sf ferry $(DESTDIR)$(BINDIR)/pasta.ferry
	ln -sf ferry $(DESTDIR)$(BINDIR)/passt.ferry
	install -Dm644 doc/ferry.1 $(DESTDIR)$(MANDIR)/man1/ferry.1

clean:
	rm -rf ferry build
