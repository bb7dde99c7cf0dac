#!/bin/bash
# The build's own bookkeeping, in a copy of the source tree so the build
# under test is left alone: touching a header rebuilds exactly the objects
# that include it, directly or through another header (normal, ASan and
# fuzz flavours, and a fuzz target through the daemon objects it links);
# `make VERSION=x` rebuilds what uses PERFREC_VERSION and the programs print
# x; a make with nothing changed compiles nothing; and `make clean` after
# building every kind of output leaves exactly the source files.
. "$(dirname "$0")/lib.sh"
command -v git >/dev/null || skip "git is not installed (the source list comes from git ls-files)"
git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1 || skip "$TOP is not a git checkout"
command -v clang >/dev/null || skip "clang is not installed (fuzz flavour)"

SRC=$T/src
mkdir -p "$SRC"
# Tracked and untracked-but-not-ignored files: the tree as it would be
# committed, without any build output of the tree under test.
git -C "$TOP" ls-files -z -co --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$TOP/$f" ] && printf '%s\0' "$f"; done >"$T/files"
(cd "$TOP" && xargs -0 cp -a --parents -t "$SRC" <"$T/files") || fail "copying the tree"
listing() { (cd "$SRC" && find . \( -type f -o -type l \) | LC_ALL=C sort); }
listing >"$T/sources"

# mk TARGETS...: make in the copy; prints the outputs it compiled or linked.
mk() {
	make -C "$SRC" --no-print-directory -j2 V=1 "$@" >"$T/make.log" 2>&1 ||
		{ tail -30 "$T/make.log"; fail "make $* failed in the copy"; }
	grep -o ' -o [^ ]*' "$T/make.log" | awk '{print $2}' | LC_ALL=C sort -u
}
# Only the objects (.o) among them.
objs() { grep '\.o$' || :; }

# includers FILE: every source and header that includes FILE (a path under
# $SRC), directly or through others, found from the #include lines alone.
# Header names are unique in the tree (but views/unwind.h and
# <perfrec/unwind.h>, not touched here); an included .c would be matched
# with its directory, though no source or test includes one now.
includers() {
	local queue=("$1") seen=" $1 " f pat g
	while [ ${#queue[@]} -gt 0 ]; do
		f=${queue[0]}; queue=("${queue[@]:1}")
		case $f in
		*.h) pat="^#[[:space:]]*include[[:space:]]*[<\"]([^\">]*/)?$(basename "$f")[\">]" ;;
		*) pat="^#[[:space:]]*include[[:space:]]*\"[^\"]*$(basename "$(dirname "$f")")/$(basename "$f")\"" ;;
		esac
		for g in $(cd "$SRC" && grep -rlE --include='*.c' --include='*.h' "$pat" lib internal daemon views tools tests); do
			case $seen in *" $g "*) continue ;; esac
			seen="$seen$g "; queue+=("$g"); echo "$g"
		done
	done
}
# expect_objs PREFIX FILES...: the objects PREFIX builds from those of
# FILES that are lib/, internal/, daemon/, views/ or tools/ sources.
expect_objs() {
	local p=$1 f; shift
	for f in "$@"; do
		case $f in lib/*.c | internal/*.c | daemon/*.c | views/*.c | tools/*.c) echo "$p${f%.c}.o" ;; esac
	done | LC_ALL=C sort -u
}
same() {
	local what=$1 want=$2 got=$3
	[ "$want" = "$got" ] && return 0
	echo "expected:"; echo "$want" | sed 's/^/  /'
	echo "rebuilt:"; echo "$got" | sed 's/^/  /'
	fail "$what"
}

UNIT=$(cd "$SRC" && ls tests/unit/test-*.c | sed 's/\.c$//')
mk all >/dev/null
got=$(mk all)
[ -z "$got" ] || fail "a second make all rebuilt: $(echo $got)"

# Headers of each kind: public (<perfrec/x.h>, included by other public
# headers too), internal (shared, not installed), daemon and tools.
for h in lib/include/perfrec/ring.h lib/include/perfrec/format.h internal/fsutil.h \
	daemon/log.h daemon/recorder.h tools/perfrecctl.h; do
	[ -e "$SRC/$h" ] || fail "$h is gone; pick another header for this test"
	want=$(expect_objs "" $(includers "$h"))
	[ -n "$want" ] || fail "nothing includes $h; pick another header"
	touch "$SRC/$h"
	got=$(mk all | objs)
	same "touching $h rebuilt other objects than its includers" "$want" "$got"
	note "$h: $(echo "$want" | wc -l) objects rebuilt"
done

# The other flavours, on a few objects each: some that include the header,
# some that do not (the wildcard rules rebuilt them all).  The fuzz build
# makes the daemon's objects its targets link, not all (none asked here).
h=lib/include/perfrec/ring.h
mk build-asan/lib/ring.o build-asan/lib/cpumap.o build-asan/daemon/recorder.o \
	build-asan/daemon/config.o build-fuzz/lib/ring.o build-fuzz/lib/cpumap.o >/dev/null
touch "$SRC/$h"
want=$( (expect_objs build-asan/ $(includers "$h"); expect_objs build-fuzz/ $(includers "$h") | grep -v '^build-fuzz/daemon/') |
	grep -E '/(ring|cpumap|recorder|config)\.o$' | LC_ALL=C sort)
got=$(mk build-asan/lib/ring.o build-asan/lib/cpumap.o build-asan/daemon/recorder.o \
	build-asan/daemon/config.o build-fuzz/lib/ring.o build-fuzz/lib/cpumap.o | objs)
same "ASan/fuzz objects: touching $h rebuilt other objects than its includers" "$want" "$got"

# A fuzz target is relinked when a daemon object it links changes, not when
# another does (fuzz-metrics links daemon/metrics.o, fuzz-config does not).
grep -q '^build-fuzz/fuzz-metrics:.*/metrics\.o' "$SRC/Makefile" &&
	! grep -q '^build-fuzz/fuzz-config:.*/metrics\.o' "$SRC/Makefile" ||
	fail "fuzz-metrics/fuzz-config no longer link what this test assumes"
mk build-fuzz/fuzz-metrics build-fuzz/fuzz-config >/dev/null
touch "$SRC/daemon/metrics.c"
got=$(mk build-fuzz/fuzz-metrics build-fuzz/fuzz-config)
same "touching daemon/metrics.c relinked the wrong fuzz targets" \
	"$(printf '%s\n' build-fuzz/daemon/metrics.o build-fuzz/fuzz-metrics)" "$got"

# VERSION: what includes the generated version header rebuilds, and both
# programs and the .pc say the new version; the next make is quiet again.
# (First catch up with the touches above.)
mk all >/dev/null
want=$(expect_objs "" $(cd "$SRC" && grep -rlE '^#[[:space:]]*include[[:space:]]*"version.h"' lib internal daemon views tools))
[ -n "$want" ] || fail "nothing includes version.h"
got=$(mk VERSION=9.8.7 all | objs)
same "make VERSION=9.8.7 rebuilt other objects than the users of PERFREC_VERSION" "$want" "$got"
v=$("$SRC/daemon/perfrecd" --version) && [ "$v" = "perfrecd 9.8.7" ] || fail "perfrecd --version says '$v'"
v=$("$SRC/tools/perfrecctl" --version) && [ "$v" = "perfrecctl 9.8.7" ] || fail "perfrecctl --version says '$v'"
grep -qx 'Version: 9.8.7' "$SRC/lib/libperfrec.pc" || fail "libperfrec.pc kept $(grep Version "$SRC/lib/libperfrec.pc")"
[ -z "$(mk VERSION=9.8.7 all)" ] || fail "a second make VERSION=9.8.7 rebuilt something"

# Every kind of output the Makefile makes (but the long-running check
# targets), then clean: only the sources may be left.
mk all units $UNIT tests/e2e/workload tests/e2e/blocker tests/e2e/bpfhot \
	tests/bench/bench-drain tests/bench/bench-synth tests/bench/spawn-threads >/dev/null
[ "$(listing | wc -l)" -gt "$(wc -l <"$T/sources")" ] || fail "the build wrote nothing?"
make -C "$SRC" --no-print-directory clean >/dev/null 2>&1 || fail "make clean failed"
left=$(listing | LC_ALL=C comm -13 "$T/sources" -)
[ -z "$left" ] || { echo "$left"; fail "make clean left the files above"; }
gone=$(listing | LC_ALL=C comm -23 "$T/sources" -)
[ -z "$gone" ] || { echo "$gone"; fail "make clean removed sources"; }
echo "OK"
