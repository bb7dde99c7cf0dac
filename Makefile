# SPDX-License-Identifier: LGPL-2.1-or-later
# perfrecd: build, test, run and install.  `make run` and `make check` are the
# two commands a fresh Debian 12 machine needs (see README.md).

PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
SBINDIR    ?= $(PREFIX)/sbin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
SYSCONFDIR ?= /etc
MANDIR     ?= $(PREFIX)/share/man
UNITDIR    ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DESTDIR    ?=

CC      ?= cc
CFLAGS  ?= -O2 -g
LDFLAGS ?=
PKG_CONFIG ?= pkg-config

# The one version: --version of both programs (PERFREC_VERSION), the
# library's file name and .pc; the man pages' .TH lines carry it too, which
# tests/e2e/test-manpages.sh holds to this.
VERSION := 0.1.0
SOVERSION := 0

# Debian packages the build, the tests and the oracles need.
DEB_PKGS := make gcc clang pkg-config gdb libbpf-dev libzstd-dev libcap-dev \
	libsystemd-dev libcriterion-dev libjson-c-dev libinih-dev \
	libcurl4-openssl-dev libclang-rt-14-dev bpftool linux-perf hotspot \
	systemd util-linux procps psmisc python3 e2fsprogs \
	man-db groff-base libssl-dev \
	libdw-dev libelf-dev libdebuginfod-dev elfutils debuginfod zlib1g-dev \
	libprotobuf-c-dev protobuf-c-compiler golang-go chromium \
	libiberty-dev xz-utils sqlite3 nodejs

DEPS_PC := libzstd libcap libsystemd json-c inih libbpf libcurl libcrypto \
	libdw libelf libprotobuf-c zlib
DEPS_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(DEPS_PC) 2>/dev/null)
# libcurl is dlopen()ed by internal/s3.c when uploads or the bucket are used (its
# headers are needed, its ~25 libraries are not, at each start); --as-needed
# keeps perfrecctl and libperfrec from loading what they never call.
DEPS_LIBS   = -Wl,--as-needed $(shell $(PKG_CONFIG) --libs $(filter-out libcurl,$(DEPS_PC)) 2>/dev/null)
# libiberty (static, no .pc): the views demangle with perf's own demangler
# (views/demangle.c); what links no view pulls nothing out of it.
DEPS_LIBS  += -liberty

PR_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
	-Wshadow -Wstrict-prototypes -Wmissing-prototypes -fno-strict-aliasing \
	-D_GNU_SOURCE -Ilib/include -Iinternal -Ibuild
PR_LIB_CFLAGS := -fPIC -fvisibility=hidden -DPERFREC_BUILDING_LIB
# Every compiler run also writes the headers its output was built from into
# OUTPUT.d (-MMD), with an empty rule per header (-MP) so a deleted header is
# not an error; the .d files are included at the end.  Touching a header then
# rebuilds exactly what includes it, directly or not.
DEPFLAGS = -MMD -MP -MT $@ -MF $@.d

ifeq ($(V),1)
Q :=
else
Q := @
endif

# lib/ is libperfrec, the public library: each of its sources implements
# headers of lib/include/perfrec/, which `make install` installs.  internal/
# is the private code libperfrec, the daemon and perfrecctl share (its
# headers are not installed); libperfrec carries what it uses of it, with
# hidden visibility, and exports only lib/libperfrec.map's names.
LIB_SRCS := $(sort $(wildcard lib/*.c) $(wildcard internal/*.c))
LIB_OBJS := $(LIB_SRCS:.c=.o)
DAEMON_SRCS := $(sort $(wildcard daemon/*.c))
DAEMON_OBJS := $(DAEMON_SRCS:.c=.o)
# views/ is the logic of perfrecctl's views of recorded files (the profile
# walk, time windows, cut, pprof, flame graphs, unwinding a file, summaries,
# the bucket): an internal static library perfrecctl and the tests link.
# tools/ is perfrecctl's commands: argument parsing and printing.
VIEWS_SRCS := $(sort $(wildcard views/*.c))
VIEWS_OBJS := $(VIEWS_SRCS:.c=.o) build/pprof.pb-c.o
VIEWS_LIB := build/libperfrec-views.a
TOOLS_SRCS := $(sort $(wildcard tools/*.c))
TOOLS_OBJS := $(TOOLS_SRCS:.c=.o)
UNIT_TEST_SRCS := $(sort $(wildcard tests/unit/test-*.c))
UNIT_TESTS := $(UNIT_TEST_SRCS:.c=)
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz-*.c))

STATIC_LIB := lib/libperfrec.a
SHARED_LIB := lib/libperfrec.so.$(VERSION)
PC_FILE := lib/libperfrec.pc

.SECONDARY:

.PHONY: all deps check check-unit check-asan check-fuzz check-e2e run bench torture \
	install uninstall clean

all: $(STATIC_LIB) $(SHARED_LIB) $(PC_FILE) daemon/perfrecd tools/perfrecctl

# --- dependencies -----------------------------------------------------------
# Installs what is missing when root; otherwise prints the one apt-get line.
deps:
	$(Q)missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "Installing:$$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing >/dev/null 2>&1 || \
	  { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; } || exit 1; \
	else \
	  echo "Missing packages. Run as root:"; \
	  echo "  apt-get install -y$$missing"; exit 1; \
	fi

# --- library ----------------------------------------------------------------
lib/%.o: lib/%.c
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(PR_CFLAGS) $(PR_LIB_CFLAGS) $(DEPFLAGS) $(DEPS_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

internal/%.o: internal/%.c
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(PR_CFLAGS) $(PR_LIB_CFLAGS) $(DEPFLAGS) $(DEPS_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(STATIC_LIB): $(LIB_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(SHARED_LIB): $(LIB_OBJS) lib/libperfrec.map
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,libperfrec.so.$(SOVERSION) \
	  -Wl,--version-script=lib/libperfrec.map $(LDFLAGS) -o $@ $(LIB_OBJS) $(DEPS_LIBS)
	$(Q)ln -sf libperfrec.so.$(VERSION) lib/libperfrec.so.$(SOVERSION)
	$(Q)ln -sf libperfrec.so.$(VERSION) lib/libperfrec.so

$(PC_FILE): lib/libperfrec.pc.in Makefile build/version.h
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	  -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

# --- BPF programs (lib/bpf/*.bpf.c -> build/*.skel.h) -----------------------
# vmlinux.h comes from the build host's kernel BTF; without BTF the checked-in
# lib/bpf/vmlinux-min.h (CO-RE definitions of only what the programs use).
BPF_CLANG ?= clang
BPFTOOL ?= bpftool
build/vmlinux.h:
	@mkdir -p build
	$(Q)if [ -r /sys/kernel/btf/vmlinux ] && $(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp 2>/dev/null; \
	then mv $@.tmp $@; else rm -f $@.tmp; cp lib/bpf/vmlinux-min.h $@; fi

build/%.bpf.o: lib/bpf/%.bpf.c build/vmlinux.h
	@$(if $(Q),echo "  BPF     $@")
	$(Q)$(BPF_CLANG) -g -O2 -target bpf -D__TARGET_ARCH_x86 -Ibuild $(DEPFLAGS) -c -o $@ $<

build/%.skel.h: build/%.bpf.o
	@$(if $(Q),echo "  GENSKEL $@")
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

lib/offcpu.o build-asan/lib/offcpu.o build-fuzz/lib/offcpu.o: build/offcpu.skel.h
lib/offcpu.o build-asan/lib/offcpu.o build-fuzz/lib/offcpu.o: PR_CFLAGS += -Ibuild
internal/pywalk.o build-asan/internal/pywalk.o build-fuzz/internal/pywalk.o: build/pywalk.skel.h
internal/pywalk.o build-asan/internal/pywalk.o build-fuzz/internal/pywalk.o: PR_CFLAGS += -Ibuild

# --- programs (linked statically against libperfrec) ----------------------
daemon/%.o: daemon/%.c
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(PR_CFLAGS) $(DEPFLAGS) $(DEPS_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

tools/%.o: tools/%.c
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(PR_CFLAGS) -Iviews $(DEPFLAGS) $(DEPS_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

views/%.o: views/%.c
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(PR_CFLAGS) -Iviews $(DEPFLAGS) $(DEPS_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(VIEWS_LIB): $(VIEWS_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# PERFREC_VERSION (--version, the perf.data header's version string) comes
# from build/version.h, rewritten only when VERSION differs from what it holds:
# `make VERSION=x` rebuilds exactly the objects that include it.
build/version.h: FORCE
	@mkdir -p build
	$(Q)printf '/* Generated by the Makefile from VERSION. */\n#define PERFREC_VERSION "%s"\n' \
	  '$(VERSION)' > $@.tmp; cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

# The control socket serves daemon/io.perfrec.varlink as it is (.incbin).
daemon/varlink.o build-asan/daemon/varlink.o build-fuzz/daemon/varlink.o: daemon/io.perfrec.varlink
# pprof's profile.proto (written out in views/pprof.proto) to C with protoc-c;
# generated code gets the library's flags, not our warnings.  A pattern
# rule, so that make knows one protoc-c run makes both files (-j).
build/%.pb-c.c build/%.pb-c.h: views/%.proto
	@mkdir -p build
	@$(if $(Q),echo "  PROTOC  $@")
	$(Q)protoc-c --c_out=build --proto_path=views $<
build/pprof.pb-c.o: build/pprof.pb-c.c
	$(Q)$(CC) $(DEPS_CFLAGS) $(CPPFLAGS) $(CFLAGS) -fPIC -c -o $@ $<
views/pprof.o build-asan/views/pprof.o build-fuzz/views/pprof.o: build/pprof.pb-c.h
views/pprof.o build-asan/views/pprof.o build-fuzz/views/pprof.o: PR_CFLAGS += -Ibuild


daemon/perfrecd: $(DAEMON_OBJS) $(STATIC_LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(DAEMON_OBJS) $(STATIC_LIB) $(DEPS_LIBS) -lpthread

tools/perfrecctl: $(TOOLS_OBJS) $(VIEWS_LIB) $(STATIC_LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(TOOLS_OBJS) $(VIEWS_LIB) $(STATIC_LIB) $(DEPS_LIBS) -lpthread

# --- tests ------------------------------------------------------------------
# Unit tests link the library's objects directly so they can see internal
# (hidden) symbols, the daemon's modules (all but main.o) for their own
# tests, and the views library; a second build under ASan/UBSan lives in
# build-asan/.  No test #includes a .c file.
DAEMON_MOD_OBJS := $(filter-out daemon/main.o,$(DAEMON_OBJS))
tests/unit/test-%: tests/unit/test-%.c $(LIB_OBJS) $(DAEMON_MOD_OBJS) $(VIEWS_LIB)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(PR_CFLAGS) -Idaemon -Iviews -Itools $(DEPFLAGS) $(DEPS_CFLAGS) $(CPPFLAGS) $(CFLAGS) -o $@ $< \
	  $(filter tools/%.o,$^) $(LIB_OBJS) $(DAEMON_MOD_OBJS) $(VIEWS_LIB) $(DEPS_LIBS) -lcriterion -lpthread

# Tests of perfrecctl's commands link the command's object as well, with
# stand-ins for the helpers it calls (tests/unit/cut-standins.h).
tests/unit/test-cut tests/unit/test-cut-race: tools/cut-cmd.o tools/ls.o
tests/unit/test-cut-cgroup tests/unit/test-cut-unwind: tools/cut-cmd.o
build-asan/tests/test-cut build-asan/tests/test-cut-race: build-asan/tools/cut-cmd.o build-asan/tools/ls.o
build-asan/tests/test-cut-cgroup build-asan/tests/test-cut-unwind: build-asan/tools/cut-cmd.o

# test-unwtab builds tables of tests/e2e/nofp and unwinds a recording of it.
tests/unit/test-unwtab build-asan/tests/test-unwtab: tests/e2e/nofp
tests/unit/test-unwtab-cache build-asan/tests/test-unwtab-cache: tests/e2e/nofp

ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
ASAN_LIB_OBJS := $(addprefix build-asan/,$(LIB_SRCS:.c=.o)) \
	$(patsubst daemon/%.c,build-asan/daemon/%.o,$(filter-out daemon/main.c,$(DAEMON_SRCS)))
ASAN_VIEWS_OBJS := $(addprefix build-asan/,$(VIEWS_SRCS:.c=.o))
ASAN_VIEWS_LIB := build-asan/libperfrec-views.a
ASAN_UNIT_TESTS := $(patsubst tests/unit/%.c,build-asan/tests/%,$(UNIT_TEST_SRCS))

build-asan/lib/%.o: lib/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC-ASAN $@")
	$(Q)$(CC) $(PR_CFLAGS) $(PR_LIB_CFLAGS) $(DEPFLAGS) $(DEPS_CFLAGS) $(ASAN_FLAGS) -c -o $@ $<

build-asan/internal/%.o: internal/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC-ASAN $@")
	$(Q)$(CC) $(PR_CFLAGS) $(PR_LIB_CFLAGS) $(DEPFLAGS) $(DEPS_CFLAGS) $(ASAN_FLAGS) -c -o $@ $<

build-asan/daemon/%.o: daemon/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC-ASAN $@")
	$(Q)$(CC) $(PR_CFLAGS) $(DEPFLAGS) $(DEPS_CFLAGS) $(ASAN_FLAGS) -c -o $@ $<

build-asan/views/%.o: views/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC-ASAN $@")
	$(Q)$(CC) $(PR_CFLAGS) -Iviews $(DEPFLAGS) $(DEPS_CFLAGS) $(ASAN_FLAGS) -c -o $@ $<

build-asan/tools/%.o: tools/%.c | build/version.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC-ASAN $@")
	$(Q)$(CC) $(PR_CFLAGS) -Iviews $(DEPFLAGS) $(DEPS_CFLAGS) $(ASAN_FLAGS) -c -o $@ $<

$(ASAN_VIEWS_LIB): $(ASAN_VIEWS_OBJS) build/pprof.pb-c.o
	$(Q)rm -f $@ && $(AR) rcs $@ $^

build-asan/tests/test-%: tests/unit/test-%.c $(ASAN_LIB_OBJS) $(ASAN_VIEWS_LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC-ASAN $@")
	$(Q)$(CC) $(PR_CFLAGS) -Idaemon -Iviews -Itools $(DEPFLAGS) $(DEPS_CFLAGS) $(ASAN_FLAGS) -o $@ $< \
	  $(filter build-asan/tools/%.o,$^) $(ASAN_LIB_OBJS) $(ASAN_VIEWS_LIB) $(DEPS_LIBS) -lcriterion -lpthread

# Fuzzers: clang's libFuzzer with ASan/UBSan, each run for a short time.
FUZZ_CC := clang
FUZZ_FLAGS := -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_OBJ_FLAGS := -O1 -g -fsanitize=fuzzer-no-link,address,undefined
FUZZ_BINS := $(patsubst tests/fuzz/%.c,build-fuzz/%,$(FUZZ_SRCS))
FUZZ_LIB_OBJS := $(addprefix build-fuzz/,$(LIB_SRCS:.c=.o))
FUZZ_VIEWS_OBJS := $(addprefix build-fuzz/,$(VIEWS_SRCS:.c=.o))
FUZZ_VIEWS_LIB := build-fuzz/libperfrec-views.a
FUZZ_TIME ?= 20

build-fuzz/lib/%.o: lib/%.c
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(PR_CFLAGS) $(PR_LIB_CFLAGS) $(DEPFLAGS) $(DEPS_CFLAGS) $(FUZZ_OBJ_FLAGS) -c -o $@ $<

build-fuzz/internal/%.o: internal/%.c
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(PR_CFLAGS) $(PR_LIB_CFLAGS) $(DEPFLAGS) $(DEPS_CFLAGS) $(FUZZ_OBJ_FLAGS) -c -o $@ $<

build-fuzz/daemon/%.o: daemon/%.c | build/version.h
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(PR_CFLAGS) $(DEPFLAGS) $(DEPS_CFLAGS) $(FUZZ_OBJ_FLAGS) -c -o $@ $<

build-fuzz/views/%.o: views/%.c
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(PR_CFLAGS) -Iviews $(DEPFLAGS) $(DEPS_CFLAGS) $(FUZZ_OBJ_FLAGS) -c -o $@ $<

build-fuzz/tools/%.o: tools/%.c | build/version.h
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(PR_CFLAGS) -Iviews $(DEPFLAGS) $(DEPS_CFLAGS) $(FUZZ_OBJ_FLAGS) -c -o $@ $<

$(FUZZ_VIEWS_LIB): $(FUZZ_VIEWS_OBJS) build/pprof.pb-c.o
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# What each fuzz target links besides libperfrec: the daemon's, the views'
# and perfrecctl's objects it exercises, built for fuzzing.  A target is
# relinked when one of those changes, not when another does.
FUZZ_D := build-fuzz/daemon
build-fuzz/fuzz-config: $(FUZZ_D)/config.o $(FUZZ_D)/safename.o
build-fuzz/fuzz-control: $(FUZZ_D)/varlink.o
build-fuzz/fuzz-control-dispatch: $(addprefix $(FUZZ_D)/,log.o config.o safename.o varlink.o ctlsock.o filecopy.o control.o control-buffers.o control-transfer.o control-methods.o)
build-fuzz/fuzz-decompress: build-fuzz/tools/decompress.o build-fuzz/views/readback.o
build-fuzz/fuzz-folded build-fuzz/fuzz-pprof: $(FUZZ_VIEWS_LIB)
build-fuzz/fuzz-metrics: $(FUZZ_D)/log.o $(FUZZ_D)/metrics.o

build-fuzz/fuzz-%: tests/fuzz/fuzz-%.c $(FUZZ_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(PR_CFLAGS) -Idaemon -Iviews -Itools $(DEPFLAGS) $(DEPS_CFLAGS) $(FUZZ_FLAGS) -o $@ $< \
	  $(filter-out $(FUZZ_LIB_OBJS),$(filter %.o %.a,$^)) $(FUZZ_LIB_OBJS) $(DEPS_LIBS) -lpthread

# Every stage runs even when an earlier one failed, so one run shows all
# failures; the closing line totals them and the exit status reflects them.
check: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)rm -f build-check.results; st=0; \
	for s in check-unit check-asan check-fuzz check-e2e; do \
	  echo "== $$s"; n=$$(cat build-check.results 2>/dev/null | wc -l); \
	  if ! RESULTS_FILE=$(CURDIR)/build-check.results $(MAKE) --no-print-directory $$s; then \
	    st=1; [ "$$(cat build-check.results 2>/dev/null | wc -l)" != "$$n" ] || echo "0 1 0" >>build-check.results; \
	  fi; \
	done; \
	awk '{p+=$$1; f+=$$2; s+=$$3} END {printf "check: %d passed, %d failed, %d skipped\n", p, f, s}' build-check.results; \
	test -s build-check.results || st=1; exit $$st

check-unit: $(UNIT_TESTS)
	$(Q)tests/run-unit.sh $(UNIT_TESTS)

check-asan: $(ASAN_UNIT_TESTS)
	$(Q)ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 tests/run-unit.sh $(ASAN_UNIT_TESTS)

check-fuzz: $(FUZZ_BINS)
	$(Q)FUZZ_TIME=$(FUZZ_TIME) tests/fuzz/run.sh $(FUZZ_BINS)

# The e2e workload keeps frame pointers so callchains show caller -> hot.
tests/e2e/workload: tests/e2e/workload.c
	$(Q)$(CC) -O1 -g -fno-omit-frame-pointer -fno-inline -pthread $(DEPFLAGS) $(LDFLAGS) -o $@ $<

# Off-CPU e2e workload: blocks in wait_for_data(), frame pointers kept.
tests/e2e/blocker: tests/e2e/blocker.c
	$(Q)$(CC) -O1 -g -fno-omit-frame-pointer -pthread $(DEPFLAGS) $(LDFLAGS) -o $@ $<

# DWARF callchain e2e workload: no frame pointers, paths through libc.
tests/e2e/nofp: tests/e2e/nofp.c
	$(Q)$(CC) -O2 -g -fomit-frame-pointer -pthread $(DEPFLAGS) $(LDFLAGS) -o $@ $<

# Off-CPU whole-stack e2e workload: blocks in libc's read() three calls
# below main, no frame pointers.
tests/e2e/offdeep: tests/e2e/offdeep.c
	$(Q)$(CC) -O2 -g -fomit-frame-pointer -pthread $(DEPFLAGS) $(LDFLAGS) -o $@ $<

# BPF-symbol e2e workload: a hot socket filter loaded with libbpf.
tests/e2e/bpfhot: tests/e2e/bpfhot.c
	$(Q)$(CC) -O1 -g $(DEPFLAGS) $(LDFLAGS) -o $@ $< -lbpf

# Time-window e2e workload: three phases, each in its own function.
tests/e2e/phases: tests/e2e/phases.c
	$(Q)$(CC) -O1 -g -fno-omit-frame-pointer $(DEPFLAGS) $(LDFLAGS) -o $@ $<

check-e2e: all tests/e2e/workload tests/e2e/blocker tests/e2e/bpfhot tests/e2e/phases tests/e2e/nofp tests/e2e/offdeep
	$(Q)tests/e2e/run.sh

# The reliability suite (tests/torture/README.md): kill -9 trials, full-disk
# cycles, control abuse and a soak; minutes to an hour, so not in `check`.
torture: all tests/e2e/workload tests/e2e/blocker
	$(Q)tests/torture/run.sh

# Benchmark helpers (tests/bench/README.md), linked with the library objects.
BENCH_BINS := tests/bench/bench-drain tests/bench/bench-synth tests/bench/spawn-threads tests/bench/bench-unwtab tests/bench/bench-unwind tests/bench/bench-replay
bench: all tests/e2e/workload $(BENCH_BINS)
	$(Q)tests/bench/run.sh
tests/bench/bench-%: tests/bench/bench-%.c $(LIB_OBJS)
	$(Q)$(CC) $(PR_CFLAGS) $(DEPFLAGS) $(DEPS_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(DEPS_LIBS) -lpthread
tests/bench/spawn-threads: tests/bench/spawn-threads.c
	$(Q)$(CC) $(PR_CFLAGS) $(DEPFLAGS) $(CFLAGS) -pthread $(LDFLAGS) -o $@ $<

# --- run --------------------------------------------------------------------
# make run's control socket: its own, in the tree, so that it neither takes
# over nor removes an installed perfrecd's /run/perfrecd/io.perfrec
# (RUN_SOCKET=/run/perfrecd/io.perfrec asks for that one).
RUN_SOCKET ?= $(CURDIR)/build/run/io.perfrec
RUN_DIR ?= perf-data
run: deps
	$(Q)$(MAKE) --no-print-directory all
	@# One shell for recording and the hint: Ctrl-C reaches perfrecd (which
	@# finishes its file) while the shell's trap keeps it alive to print.
	$(Q)mkdir -p $(RUN_DIR) $(dir $(RUN_SOCKET)); \
	echo "Recording system-wide into $(RUN_DIR)/ with conf/perfrecd.conf; Ctrl-C to stop."; \
	echo "From another shell: tools/perfrecctl --socket $(RUN_SOCKET) status (or ls, cut, rotate)"; \
	trap : INT; daemon/perfrecd -c conf/perfrecd.conf -o $(RUN_DIR) --socket $(RUN_SOCKET); \
	f=$$(ls -1 $(RUN_DIR)/*.data 2>/dev/null | tail -1); \
	if [ -n "$$f" ]; then echo; echo "Look at the newest file with:"; \
	  echo "  perf report -i $$f --stdio --no-children --sort comm,dso,sym"; \
	  echo "  perf script -i $$f | head"; \
	  echo "  tools/perfrecctl dump $$f"; fi

# --- install ----------------------------------------------------------------
# Units are generated from unit/*.in with the install paths.  unit/.paths
# records the paths of the last generation and changes only when they do, so
# `make install PREFIX=/usr` after a plain `make` regenerates the units.
UNIT_IN := $(wildcard unit/*.in)
UNIT_GEN := $(UNIT_IN:.in=)
UNIT_FILES := $(sort $(UNIT_GEN) unit/perfrecd.socket)
UNIT_SED := -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@BINDIR@|$(BINDIR)|g' \
	-e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@PREFIX@|$(PREFIX)|g'
HEADERS := $(notdir $(wildcard lib/include/perfrec/*.h))
MAN_PAGES := tools/perfrecctl.1 conf/perfrecd.conf.5 daemon/perfrecd.8 lib/libperfrec.3

.PHONY: units FORCE
units: $(UNIT_GEN)

UNIT_PATHS := $(SBINDIR) $(BINDIR) $(SYSCONFDIR) $(PREFIX)
unit/.paths: FORCE
	$(Q)echo "$(UNIT_PATHS)" | cmp -s - $@ || echo "$(UNIT_PATHS)" > $@

unit/%: unit/%.in unit/.paths
	@$(if $(Q),echo "  GEN     $@")
	$(Q)sed $(UNIT_SED) $< > $@.tmp && mv $@.tmp $@

# The pkg-config file is written from its template here rather than copied
# from lib/, so it carries this invocation's PREFIX/LIBDIR even when `make
# all` ran with others.  An existing perfrecd.conf is kept: it may hold the
# administrator's edits.
install: all units
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) \
	  $(DESTDIR)$(INCLUDEDIR)/perfrec $(DESTDIR)$(PKGCONFIGDIR) \
	  $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR) \
	  $(DESTDIR)$(SYSCONFDIR)/perfrecd $(DESTDIR)$(MANDIR)/man1 \
	  $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 daemon/perfrecd $(DESTDIR)$(SBINDIR)/perfrecd
	install -m 0755 tools/perfrecctl $(DESTDIR)$(BINDIR)/perfrecctl
	install -m 0644 $(STATIC_LIB) $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(SHARED_LIB) $(DESTDIR)$(LIBDIR)/
	ln -sf libperfrec.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libperfrec.so.$(SOVERSION)
	ln -sf libperfrec.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libperfrec.so
	install -m 0644 $(addprefix lib/include/perfrec/,$(HEADERS)) $(DESTDIR)$(INCLUDEDIR)/perfrec/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	  -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	  lib/libperfrec.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/libperfrec.pc
	chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/libperfrec.pc
	install -m 0644 $(UNIT_FILES) $(DESTDIR)$(UNITDIR)/
	install -m 0644 unit/perfrecd.sysusers $(DESTDIR)$(SYSUSERSDIR)/perfrecd.conf
	install -m 0644 unit/perfrecd.tmpfiles $(DESTDIR)$(TMPFILESDIR)/perfrecd.conf
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/perfrecd/perfrecd.conf ]; then \
	  echo "Keeping existing $(DESTDIR)$(SYSCONFDIR)/perfrecd/perfrecd.conf"; \
	else \
	  echo "install -m 0644 conf/perfrecd.conf $(DESTDIR)$(SYSCONFDIR)/perfrecd/perfrecd.conf"; \
	  install -m 0644 conf/perfrecd.conf $(DESTDIR)$(SYSCONFDIR)/perfrecd/perfrecd.conf; \
	fi
	install -m 0644 tools/perfrecctl.1 $(DESTDIR)$(MANDIR)/man1/perfrecctl.1
	install -m 0644 conf/perfrecd.conf.5 $(DESTDIR)$(MANDIR)/man5/perfrecd.conf.5
	install -m 0644 daemon/perfrecd.8 $(DESTDIR)$(MANDIR)/man8/perfrecd.8
	install -m 0644 lib/libperfrec.3 $(DESTDIR)$(MANDIR)/man3/libperfrec.3

# Removes exactly what install wrote (directories only when left empty); the
# configuration only when it is still the shipped one.
uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/perfrecd $(DESTDIR)$(BINDIR)/perfrecctl
	rm -f $(DESTDIR)$(LIBDIR)/libperfrec.a $(DESTDIR)$(LIBDIR)/libperfrec.so.$(VERSION) \
	  $(DESTDIR)$(LIBDIR)/libperfrec.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libperfrec.so
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/perfrec/,$(HEADERS))
	-rmdir $(DESTDIR)$(INCLUDEDIR)/perfrec 2>/dev/null
	rm -f $(DESTDIR)$(PKGCONFIGDIR)/libperfrec.pc
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(notdir $(UNIT_FILES)))
	rm -f $(DESTDIR)$(SYSUSERSDIR)/perfrecd.conf $(DESTDIR)$(TMPFILESDIR)/perfrecd.conf
	@f=$(DESTDIR)$(SYSCONFDIR)/perfrecd/perfrecd.conf; \
	if [ -e "$$f" ] && ! cmp -s conf/perfrecd.conf "$$f"; then \
	  echo "Keeping modified $$f"; \
	else \
	  echo "rm -f $$f"; rm -f "$$f"; rmdir $(DESTDIR)$(SYSCONFDIR)/perfrecd 2>/dev/null || :; \
	fi
	rm -f $(DESTDIR)$(MANDIR)/man1/perfrecctl.1 $(DESTDIR)$(MANDIR)/man5/perfrecd.conf.5 \
	  $(DESTDIR)$(MANDIR)/man8/perfrecd.8 $(DESTDIR)$(MANDIR)/man3/libperfrec.3

# Everything a target of this Makefile writes (the globs also catch outputs
# of sources since removed); tests/e2e/test-build-deps.sh holds it to that.
clean:
	rm -f lib/*.o lib/*.a lib/*.so* $(PC_FILE) internal/*.o daemon/*.o daemon/perfrecd \
	  views/*.o tools/*.o tools/perfrecctl $(UNIT_TESTS) tests/e2e/workload tests/e2e/blocker \
	  tests/e2e/bpfhot tests/e2e/phases tests/e2e/nofp tests/e2e/offdeep $(BENCH_BINS) $(UNIT_GEN) unit/.paths unit/*.tmp build-check.results
	rm -f lib/*.d internal/*.d daemon/*.d views/*.d tools/*.d tests/unit/*.d tests/e2e/*.d tests/bench/*.d
	rm -rf build-asan build-fuzz build

# --- generated dependencies -------------------------------------------------
# Written by the compiler next to each output (DEPFLAGS); missing ones are
# fine: their output has not been built yet, so it will be.
DEP_FILES := $(addsuffix .d,$(LIB_OBJS) $(DAEMON_OBJS) $(VIEWS_OBJS) $(TOOLS_OBJS) $(UNIT_TESTS) \
	$(ASAN_LIB_OBJS) $(ASAN_VIEWS_OBJS) $(ASAN_UNIT_TESTS) $(FUZZ_LIB_OBJS) $(FUZZ_VIEWS_OBJS) $(FUZZ_BINS) $(BENCH_BINS) \
	$(wildcard build-asan/tools/*.o build-fuzz/daemon/*.o build-fuzz/tools/*.o) \
	tests/e2e/workload tests/e2e/blocker tests/e2e/bpfhot tests/e2e/phases tests/e2e/nofp tests/e2e/offdeep \
	$(patsubst lib/bpf/%.bpf.c,build/%.bpf.o,$(wildcard lib/bpf/*.bpf.c)))
-include $(DEP_FILES)

# A first build has no .d files yet: make the generated header before any C
# compile, without making every output depend on it.
$(LIB_OBJS) $(DAEMON_OBJS) $(VIEWS_OBJS) $(TOOLS_OBJS) $(UNIT_TESTS) $(ASAN_LIB_OBJS) $(ASAN_VIEWS_OBJS) \
	$(ASAN_UNIT_TESTS) $(FUZZ_LIB_OBJS) $(FUZZ_VIEWS_OBJS) $(FUZZ_BINS) $(BENCH_BINS): | build/version.h
