# codellm — a sandboxed code executor that speaks OpenAI chat completions.
# Plain GNU make; see README.md for the two-command quick start.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/libexec
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
CATALOGDIR ?= $(PREFIX)/lib/systemd/catalog
DESTDIR ?=

CC ?= cc
PKGS := libsystemd libcjson libseccomp
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wcast-qual -Wwrite-strings -Wpointer-arith -Wvla \
	-Wundef -Wno-unused-parameter
HARDEN := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
CFLAGS ?= -O2 -g
ALL_CFLAGS = -std=gnu11 -D_GNU_SOURCE $(WARN) -Werror $(HARDEN) $(CFLAGS) \
	$(PKG_CFLAGS) -I.
ALL_LDFLAGS = -pie -Wl,-z,relro,-z,now $(LDFLAGS)

LIB_SRCS := $(sort $(wildcard json/*.c http/*.c sandbox/*.c))
LIB_OBJS := $(LIB_SRCS:.c=.o)
LIB := libcodellm.a
BIN := codellm-handler
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:.c=) tests/unit/test_sys-musl
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_REPLAY := $(FUZZ_SRCS:tests/fuzz/fuzz_%.c=tests/fuzz/replay_%)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/fuzz_%.c=tests/fuzz/libfuzzer_%)
HEADERS := $(wildcard json/*.h http/*.h sandbox/*.h handler/*.h tests/*.h tests/fuzz/*.h *.h)
BENCH_BINS := tests/bench/bare-handler tests/bench/bare-handler-musl tests/bench/sandbox-handler tests/bench/client
PHASE_BINS := build/phases/codellm-handler build/phases/bare-handler build/phases/sandbox-handler
TEST_HELPERS := tests/helpers/deny-syscalls $(BENCH_BINS) $(PHASE_BINS)

PORT ?= 8089
# Packages the build and `make run` need on Debian 12.
DEPS_BUILD := gcc make pkg-config libsystemd-dev libcjson-dev libseccomp-dev systemd musl-tools dpkg-dev
DEPS_RUN := python3 nodejs ruby php-cli perl bash iproute2
# Packages `make check` needs on top.
DEPS_CHECK := $(DEPS_BUILD) $(DEPS_RUN) python3 mandoc curl iproute2 procps psmisc clang systemd-container \
	chromium strace libpython3.11-testsuite bc sqlite3 wget xz-utils bzip2 $(DEPS_ENV)
# Packages `make image` and `make check-image` need on top: Debian's
# podman with runc (its crun 1.8 refuses hosts whose cgroups are in
# hybrid mode), slirp4netns (the test's port, without a bridge on the
# host), strace (the profile test follows the handler's calls).
DEPS_IMAGE := mmdebstrap podman runc slirp4netns strace
# The image's name; `make image` tags it $(IMAGE):VERSION and $(IMAGE):latest.
IMAGE ?= localhost/codellm
# Environments (README "Environments"): `make env NAME=... [PACKAGES=...]`
# builds one into $(ENVDIR)/NAME; `make envs` the shipped definitions
# (deploy/envs/*.packages) that are missing or older than their
# definition, the build scripts or the digest's code. make check needs
# all three (tiny for the environment tests, minimal for the escape
# battery, data for the compat programs); the image carries data and
# minimal.
ENVDIR ?= $(CURDIR)/build/envs
ENVS := $(patsubst deploy/envs/%.packages,%,$(wildcard deploy/envs/*.packages))
IMAGE_ENVS := data minimal
DEPS_ENV := mmdebstrap

.PHONY: all run check check-loaded sanitize fuzz bench bench-phases bench-units compat install uninstall clean deps \
	deps-check deps-image unit replay blackbox lint-man image check-image env envs

all: $(BIN) units/codellm-debug@.service

# The debug service is codellm@.service with --debug, its own
# Description= and header comment (units/codellm-debug.comment):
# generated, never a copy to keep in step by hand.
units/codellm-debug@.service: units/codellm@.service units/codellm-debug.comment
	{ cat units/codellm-debug.comment; \
	  awk 'h || !/^#/ { h = 1; print }' units/codellm@.service | \
	  sed -e 's/^Description=codellm request handler$$/Description=codellm step debugger request handler/' \
	      -e 's|^ExecStart=@BINDIR@/codellm-handler \\$$|ExecStart=@BINDIR@/codellm-handler --debug \\|'; \
	} > $@.tmp && grep -q -- '--debug' $@.tmp && mv $@.tmp $@

%.o: %.c $(HEADERS)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# the debug page is assembled into the binary (.incbin)
http/debug-page.o: http/debug-page.html

# codellm-init, the blocks' clean init: freestanding (no libc, raw system
# calls), static, a few KiB, embedded in the handler (.incbin). Built
# with its own flags: no sanitizer, stack protector or PIE can run where
# there is no libc to set them up (-static links a non-PIE executable with
# gcc and clang alike; clang refuses a redundant -no-pie under -Werror).
INIT_CFLAGS := -std=gnu11 -Os $(WARN) -Werror -ffreestanding -fno-stack-protector \
	-fno-pie -fno-asynchronous-unwind-tables -fcf-protection=none
INIT_LDFLAGS := -nostdlib -static -Wl,--build-id=none -s
sandbox/init/codellm-init: sandbox/init/codellm-init.c sandbox/sys6.h sandbox/endrec.h
	$(CC) $(INIT_CFLAGS) $(INIT_LDFLAGS) -o $@ $<
sandbox/initbin.o: sandbox/init/codellm-init

# The blocks' seccomp filters, compiled once at build time (libseccomp
# needs tens of milliseconds for them; a handler serves one request) and
# embedded (.incbin). Built with the handler's flags, run on the build host.
SECCOMP_BLOBS := sandbox/gen/filter-plain.bpf sandbox/gen/filter-netlink.bpf
sandbox/gen/seccomp-gen: sandbox/gen/seccomp-gen.c sandbox/seccomp.c $(HEADERS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ sandbox/gen/seccomp-gen.c sandbox/seccomp.c $(PKG_LIBS)
$(SECCOMP_BLOBS) &: sandbox/gen/seccomp-gen
	sandbox/gen/seccomp-gen $(SECCOMP_BLOBS)
sandbox/seccomp-blob.o: $(SECCOMP_BLOBS)

$(LIB): $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

HANDLER_OBJS := codellm-handler.o $(patsubst %.c,%.o,$(sort $(wildcard handler/*.c)))
# the handler loads neither libsystemd nor libseccomp: it speaks socket
# activation's and the journal's protocols itself (handler/journal.c,
# http/conn.c) and installs the filters compiled at build time
# (sandbox/seccomp-blob.c; sandbox/seccomp.o is never linked in)
HANDLER_LIBS = $(shell pkg-config --libs libcjson 2>/dev/null)

# The handler's libc. One process per connection starts the handler anew,
# and glibc's start-up asks the CPU about its caches with about 80 CPUID
# instructions, which a virtual machine traps to its hypervisor: 0.6 ms
# of every connection on the machines we measure on (README
# "Performance"). So the handler is linked statically, as a position-
# independent executable, with musl and Debian's own cJSON: the source of
# the libcjson-dev installed, patches and all (deploy/cjson-source, into
# build/cjson; fetched again when that package changes). The library
# (libcodellm.a), the tests and the bench's baselines stay with glibc.
# HANDLER_LIBC=glibc links the handler as before (glibc, libcjson.so):
# make sanitize does, as AddressSanitizer needs glibc.
HANDLER_LIBC ?= musl
MUSL_CC ?= musl-gcc
TRIPLET := $(shell $(CC) -dumpmachine 2>/dev/null)
MUSL_LIBDIR ?= /usr/lib/$(subst -gnu,-musl,$(TRIPLET))
HANDLER_SRCS := codellm-handler.c $(sort $(wildcard handler/*.c)) $(filter-out sandbox/seccomp.c,$(LIB_SRCS))
MUSL_OBJS := $(HANDLER_SRCS:%.c=build/musl/%.o)
# musl's headers first, then the kernel's (linux/, asm/), which musl
# leaves to the system, and cJSON's as <cjson/cJSON.h>: build/musl/include
# links them
MUSL_CFLAGS = -std=gnu11 -D_GNU_SOURCE $(WARN) -Werror -fstack-protector-strong -fPIE $(CFLAGS) \
	-I. -Ibuild/cjson/src -idirafter build/musl/include
# static PIE: musl's rcrt1.o relocates the executable itself; no
# interpreter, no shared library
MUSL_LINK = $(MUSL_CC) -nostdlib -static-pie -Wl,-static -Wl,--no-dynamic-linker \
	-Wl,-z,relro,-z,now $(LDFLAGS)
MUSL_START = $(MUSL_LIBDIR)/rcrt1.o $(MUSL_LIBDIR)/crti.o $(shell $(CC) -print-file-name=crtbeginS.o)
MUSL_END = $(MUSL_LIBDIR)/libc.a $(shell $(CC) -print-libgcc-file-name) \
	$(shell $(CC) -print-file-name=crtendS.o) $(MUSL_LIBDIR)/crtn.o
# $(call musl_prog,SOURCES AND OBJECTS): compiles and links $@ with musl
musl_prog = $(MUSL_LINK) $(MUSL_CFLAGS) -o $@ $(MUSL_START) $(1) $(MUSL_END)

build/cjson/src/cJSON.c: deploy/cjson-source $(subst :,\:,$(wildcard /var/lib/dpkg/info/libcjson-dev*.list))
	deploy/cjson-source build/cjson
	touch $@
build/musl/include/.made:
	@mkdir -p $(@D)
	ln -sfn /usr/include/linux $(@D)/linux
	ln -sfn /usr/include/asm-generic $(@D)/asm-generic
	ln -sfn /usr/include/$(TRIPLET)/asm $(@D)/asm
	ln -sfn $(CURDIR)/build/cjson/src $(@D)/cjson
	touch $@
build/musl/cJSON.o: build/cjson/src/cJSON.c
	$(MUSL_CC) -std=c89 -O2 -g -fPIE -fstack-protector-strong -c -o $@ $<
build/musl/%.o: %.c $(HEADERS) build/cjson/src/cJSON.c build/musl/include/.made
	@mkdir -p $(@D)
	$(MUSL_CC) $(MUSL_CFLAGS) -c -o $@ $<
build/musl/http/debug-page.o: http/debug-page.html
build/musl/sandbox/initbin.o: sandbox/init/codellm-init
build/musl/sandbox/seccomp-blob.o: $(SECCOMP_BLOBS)

ifeq ($(HANDLER_LIBC),musl)
$(BIN): $(MUSL_OBJS) build/musl/cJSON.o
	$(call musl_prog,$^)
else
$(BIN): $(HANDLER_OBJS) $(LIB)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $(HANDLER_OBJS) $(LIB) -Wl,--as-needed $(HANDLER_LIBS)
endif

# make bench-phases' handler and baselines: built with -DCODELLM_PHASES
# (sandbox/phase.h) into build/phases, from the sources in one go (the
# ordinary objects stay as they are)
build/phases/codellm-handler: $(HANDLER_SRCS) $(HEADERS) http/debug-page.html sandbox/init/codellm-init \
		$(SECCOMP_BLOBS) build/musl/cJSON.o build/musl/include/.made
	@mkdir -p $(@D)
ifeq ($(HANDLER_LIBC),musl)
	$(call musl_prog,-DCODELLM_PHASES $(HANDLER_SRCS) build/musl/cJSON.o)
else
	$(CC) $(ALL_CFLAGS) -DCODELLM_PHASES $(ALL_LDFLAGS) -o $@ $(HANDLER_SRCS) $(HANDLER_LIBS)
endif
build/phases/bare-handler: tests/bench/bare-handler.c sandbox/phase.c sandbox/phase.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DCODELLM_PHASES $(ALL_LDFLAGS) -o $@ tests/bench/bare-handler.c sandbox/phase.c -lcjson
build/phases/sandbox-handler: tests/bench/bare-handler.c tests/bench/min-sandbox.c tests/bench/min-sandbox.h \
		sandbox/phase.c sandbox/phase.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DCODELLM_PHASES $(ALL_LDFLAGS) -DMIN_SANDBOX -o $@ tests/bench/bare-handler.c \
		tests/bench/min-sandbox.c sandbox/phase.c -lcjson

tests/unit/test_journal: tests/unit/test_journal.c handler/journal.o $(HEADERS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< handler/journal.o

# sandbox/sys.c's libc-dependent wrappers once more, linked as the handler is
tests/unit/test_sys-musl: tests/unit/test_sys.c build/musl/sandbox/sys.o build/musl/include/.made
	$(call musl_prog,$< build/musl/sandbox/sys.o)

tests/unit/test_%: tests/unit/test_%.c $(LIB) $(HEADERS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIB) $(PKG_LIBS)

# make bench's baselines: a bare fork+exec handler (no sandbox; cJSON
# its only library, so nothing codellm loads is charged to it; with
# --constant it runs nothing: the client's and the start's own cost),
# the same handler with a minimal hand-written sandbox (namespaces,
# minimal root, Landlock, seccomp), and the C client that times them
tests/bench/bare-handler: tests/bench/bare-handler.c
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -lcjson

# the same bare handler linked as the handler is (musl, static PIE): what
# a bare handler costs without glibc's start-up (README "Performance")
tests/bench/bare-handler-musl: tests/bench/bare-handler.c build/musl/cJSON.o build/musl/include/.made
	$(call musl_prog,$< build/musl/cJSON.o)

tests/bench/sandbox-handler: tests/bench/bare-handler.c tests/bench/min-sandbox.c tests/bench/min-sandbox.h
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -DMIN_SANDBOX -o $@ tests/bench/bare-handler.c tests/bench/min-sandbox.c -lcjson

tests/bench/client: tests/bench/client.c
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -lcjson -lpthread

tests/helpers/%: tests/helpers/%.c $(HEADERS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(PKG_LIBS)

tests/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(LIB) $(HEADERS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< tests/fuzz/replay.c $(LIB) $(PKG_LIBS)

# Installs missing Debian packages (only the missing ones; needs root).
deps:
	@tests/install-deps $(DEPS_BUILD) $(DEPS_RUN)

deps-check:
	@tests/install-deps $(DEPS_CHECK)

deps-image:
	@tests/install-deps $(DEPS_IMAGE)

# Serve on 127.0.0.1:$(PORT) through systemd-socket-activate, one handler
# process per connection, exactly as systemd's Accept=yes does; with the
# environments data and minimal (built once, when missing or stale).
run: deps
	$(MAKE) all
	$(MAKE) $(IMAGE_ENVS:%=$(ENVDIR)/%/manifest.json)
	@CODELLM_ENVDIR=$(ENVDIR) tests/make-run $(PORT)

check: deps-check
	$(MAKE) all $(UNIT_BINS) $(TEST_HELPERS) $(FUZZ_REPLAY)
	$(MAKE) envs
	@CODELLM_TEST_ENVDIR=$(ENVDIR) tests/run-all

# One environment: NAME from PACKAGES, or from deploy/envs/NAME.packages.
env: deps
	@tests/install-deps $(DEPS_ENV)
	$(MAKE) all
	@[ -n "$(NAME)" ] || { echo 'make env: NAME=... is missing (e.g. make env NAME=data)' >&2; exit 2; }
	@CODELLM_ENVDIR=$(ENVDIR) deploy/envs/build $(NAME) $(PACKAGES)

# The shipped definitions, each built when missing or out of date.
envs: $(ENVS:%=$(ENVDIR)/%/manifest.json)
$(ENVDIR)/%/manifest.json: deploy/envs/%.packages deploy/envs/build deploy/envs/customize sandbox/env.c
	@tests/install-deps $(DEPS_ENV)
	$(MAKE) all
	@CODELLM_ENVDIR=$(ENVDIR) deploy/envs/build $*

# make check on a busy machine: the same suites while 2 x cores nice'd
# busy processes run beside them (tests/check-loaded; CODELLM_LOAD_JOBS
# and CODELLM_LOAD_NICE change both). Not part of make check.
check-loaded: deps-check
	$(MAKE) all $(UNIT_BINS) $(TEST_HELPERS) $(FUZZ_REPLAY)
	$(MAKE) envs
	@CODELLM_TEST_ENVDIR=$(ENVDIR) tests/check-loaded

# The container image: a Debian 12 root from Debian's packages only
# (mmdebstrap) with codellm installed by `make install`, imported with
# podman; its entrypoint is systemd-socket-activate in front of the
# handler. About 2 minutes; see deploy/image/build and "Container image"
# in README.md.
image: deps deps-image
	$(MAKE) all
	$(MAKE) $(IMAGE_ENVS:%=$(ENVDIR)/%/manifest.json)
	@CODELLM_IMAGE_NAME=$(IMAGE) CODELLM_IMAGE_ENVS="$(IMAGE_ENVS:%=$(ENVDIR)/%)" deploy/image/build

# The image under its pod's security settings (podman, runc), and the
# seccomp profile it needs: the suites whose names start with "image".
# `make check` runs them too when CODELLM_IMAGE names a built image.
check-image: image
	@CODELLM_IMAGE=$(IMAGE):latest CODELLM_TEST_ENVDIR=$(ENVDIR) tests/run-all image

# The whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
sanitize: deps-check
	$(MAKE) envs
	$(MAKE) clean
	# test tooling (the syscall-denying wrapper) is not under test: plain build
	$(MAKE) $(TEST_HELPERS)
	$(MAKE) CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		LDFLAGS="-fsanitize=address,undefined" HANDLER_LIBC=glibc all $(UNIT_BINS) $(FUZZ_REPLAY)
	@CODELLM_SANITIZE=1 CODELLM_TEST_ENVDIR=$(ENVDIR) ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 tests/run-all
	$(MAKE) clean

# The same programs outside the sandbox (as nobody) and inside codellm: CPython's
# own regression tests and everyday programs in the six languages. One that works
# outside only fails, unless tests/compat/refusals.txt refuses it by design. About
# 8 minutes; make check runs it too.
compat: deps-check
	$(MAKE) all
	/usr/bin/python3 tests/compat/run -j 2
	$(MAKE) $(ENVDIR)/data/manifest.json
	/usr/bin/python3 tests/compat/run -j 2 --only programs --environment data --environments $(ENVDIR)

# libFuzzer builds of each target (clang); run one with e.g.
#   tests/fuzz/libfuzzer_http tests/fuzz/corpus/http -max_total_time=60
fuzz: deps-check
	$(MAKE) clean
	# -Wno-missing-field-initializers: libseccomp's SCMP_A0_64() leaves a
	# field to its default, which clang's -Wextra reports (gcc's does not)
	$(MAKE) CC=clang CFLAGS="-O1 -g -fsanitize=fuzzer-no-link,address,undefined \
		-Wno-missing-field-initializers" $(LIB)
	for t in $(FUZZ_SRCS:tests/fuzz/fuzz_%.c=%); do \
		clang -std=gnu11 -D_GNU_SOURCE -O1 -g -fsanitize=fuzzer,address,undefined $(PKG_CFLAGS) -I. \
			-o tests/fuzz/libfuzzer_$$t tests/fuzz/fuzz_$$t.c $(LIB) $(PKG_LIBS) || exit 1; \
	done

# What codellm costs, as ratios against a bare fork+exec handler
# (tests/bench/bare-handler.c) measured in the same run.
bench: deps-check
	$(MAKE) all $(BENCH_BINS)
	$(MAKE) envs
	@CODELLM_TEST_ENVDIR=$(ENVDIR) /usr/bin/python3 tests/bench/bench.py

# Where a request's time goes, point by point (sandbox/phase.h).
bench-phases: deps-check
	$(MAKE) all $(BENCH_BINS) $(PHASE_BINS)
	/usr/bin/python3 tests/bench/phases.py

# Security per millisecond: candidate units under a real systemd (nspawn).
bench-units: deps-check
	$(MAKE) all
	/usr/bin/python3 tests/systemd/bench_units.py

lint-man:
	mandoc -Tlint -W warning man/*.[0-9]

# Binary, units (ExecStart pointing at $(BINDIR); the sockets, services
# and codellm.slice), man pages, the tmpfiles
# and sysusers entries and, when present, the journal message catalog.
# Nothing is run on the host: after a real install, run
#   systemd-sysusers codellm.conf; systemd-tmpfiles --create codellm.conf
#   journalctl --update-catalog; systemctl daemon-reload
install: $(BIN) units/codellm-debug@.service
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man7 \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(SYSUSERSDIR)
	install -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/$(BIN)
	for m in man/*.8; do [ ! -e "$$m" ] || install -m 0644 $$m $(DESTDIR)$(MANDIR)/man8/ || exit 1; done
	for m in man/*.7; do [ ! -e "$$m" ] || install -m 0644 $$m $(DESTDIR)$(MANDIR)/man7/ || exit 1; done
	for u in units/*.socket units/*.service units/*.slice; do [ ! -e "$$u" ] || { \
		sed 's|@BINDIR@|$(BINDIR)|g' $$u > $(DESTDIR)$(UNITDIR)/$$(basename $$u) && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$$(basename $$u); } || exit 1; done
	install -m 0644 units/codellm.tmpfiles $(DESTDIR)$(TMPFILESDIR)/codellm.conf
	install -m 0644 units/codellm.sysusers $(DESTDIR)$(SYSUSERSDIR)/codellm.conf
	if [ -e units/codellm.catalog ]; then \
		install -d $(DESTDIR)$(CATALOGDIR) && \
		install -m 0644 units/codellm.catalog $(DESTDIR)$(CATALOGDIR)/codellm.catalog; \
	fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/$(BIN)
	for m in man/*.8; do rm -f $(DESTDIR)$(MANDIR)/man8/$$(basename $$m); done
	for m in man/*.7; do rm -f $(DESTDIR)$(MANDIR)/man7/$$(basename $$m); done
	for u in units/*.socket units/*.service units/*.slice; do rm -f $(DESTDIR)$(UNITDIR)/$$(basename $$u); done
	rm -f $(DESTDIR)$(TMPFILESDIR)/codellm.conf $(DESTDIR)$(SYSUSERSDIR)/codellm.conf \
		$(DESTDIR)$(CATALOGDIR)/codellm.catalog

clean:
	rm -rf build/musl
	rm -f $(BIN) $(LIB) *.o json/*.o http/*.o sandbox/*.o $(UNIT_BINS) $(TEST_HELPERS) \
		units/codellm-debug@.service \
		sandbox/init/codellm-init sandbox/gen/seccomp-gen $(SECCOMP_BLOBS) \
		tests/fuzz/replay_* tests/fuzz/libfuzzer_* tests/fuzz/*.o
