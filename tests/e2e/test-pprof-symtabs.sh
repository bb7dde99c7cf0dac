#!/usr/bin/env bash
# Where symbols come from (issue 16): a binary stripped of .symtab but
# carrying .gnu_debugdata (an xz'ed symbol table, as Fedora ships them)
# still has its local functions named by perfrecctl pprof; the same binary
# stripped bare has not (its .dynsym does not hold them), and a shared
# library's exported functions are named from .dynsym alone.  With DWARF,
# an inlined function is a frame of its own, with its source line.
. "$(dirname "$0")/lib.sh"
require_events
command -v go >/dev/null || skip "go (golang-go) is not installed: no pprof reader"
for t in cc objcopy strip nm xz; do command -v $t >/dev/null || skip "$t is not installed"; done
export HOME=$T GOCACHE=$T/gocache
cd "$T" || exit 1

# A library with an exported hot function, and a program calling it from a local one.
cat >lib.c <<'SRC'
volatile unsigned long lib_sink;
__attribute__((noinline)) void lib_hot(void)
{
	for (unsigned long i = 0; i < 2000000; i++)
		lib_sink += i * i;
}
SRC
cat >prog.c <<'SRC'
#include <time.h>
void lib_hot(void);
static volatile unsigned long sink;
static inline __attribute__((always_inline)) unsigned long mix(unsigned long i)
{
	return (i ^ (i >> 3)) * 2654435761u; /* MIX_LINE */
}
__attribute__((noinline)) static void local_hot(void)
{
	for (unsigned long i = 0; i < 2000000; i++)
		sink += mix(i);
}
int main(void)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		local_hot();
		lib_hot();
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 1500000000L);
	return 0;
}
SRC
cc -O1 -g -fPIC -shared -o libhot.so lib.c || fail "cannot build the library"
cc -O1 -g -o prog-mini prog.c -L. -lhot -Wl,-rpath,"$T" || fail "cannot build the program"
strip --strip-all libhot.so
# MiniDebugInfo: the function symbols .dynsym lacks, xz'ed into .gnu_debugdata.
nm -D prog-mini --format=posix --defined-only | awk '{ print $1 }' | sort >dynsyms
nm prog-mini --format=posix --defined-only | awk '$2 == "T" || $2 == "t" { print $1 }' | sort >funcsyms
comm -13 dynsyms funcsyms >keep
grep -qx local_hot keep || fail "local_hot is not among the symbols to keep"
objcopy --only-keep-debug prog-mini mini.debug
objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=keep mini.debug mini.stripped
xz -f mini.stripped
# Its own build id: binaries are found by build id, and one shared with
# prog-mini would lend it prog-mini's symbols.
cc -O1 -g -o prog-bare prog.c -L. -lhot -Wl,-rpath,"$T" -Wl,--build-id=0x0badc0de0badc0de0badc0de0badc0de0badc0de \
	|| fail "cannot build the bare program"
strip --strip-all prog-mini prog-bare
cc -O1 -g -o prog-dwarf prog.c -L. -lhot -Wl,-rpath,"$T" -Wl,--build-id=0xd0a4fd0a4fd0a4fd0a4fd0a4fd0a4fd0a4fd0a4f \
	|| fail "cannot build the program with DWARF"
mix_line=$(grep -n MIX_LINE prog.c | cut -d: -f1)
objcopy --add-section .gnu_debugdata=mini.stripped.xz prog-mini || fail "objcopy cannot add .gnu_debugdata"
readelf -S prog-mini | grep -q '\.symtab' && fail "prog-mini still has a .symtab"
readelf -S prog-mini | grep -q '\.gnu_debugdata' || fail "prog-mini has no .gnu_debugdata"

"$PERFRECD" -o "$T/out" --socket '' -e cpu-clock -F 499 -g --duration 5 2>"$T/err" &
DAEMON_PID=$!
started() { grep -q Recording "$T/err" 2>/dev/null; }
wait_for 30 started || { cat "$T/err"; fail "perfrecd did not start"; }
./prog-mini || fail "prog-mini failed"
./prog-bare || fail "prog-bare failed"
./prog-dwarf || fail "prog-dwarf failed"
wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out") || exit 1

top() { "$PERFRECCTL" pprof --no-debuginfod --comm "$1" -o "$T/$1.pb.gz" "$f" 2>/dev/null || fail "pprof --comm $1 failed"
	go tool pprof -top -noinlines "$T/$1.pb.gz" 2>/dev/null; }
top prog-mini >"$T/mini.top"
top prog-bare >"$T/bare.top"
grep -q ' local_hot$' "$T/mini.top" || { cat "$T/mini.top"; fail "local_hot is not named from .gnu_debugdata"; }
grep -q ' local_hot$' "$T/bare.top" && fail "local_hot is named in the bare binary: the test proves nothing"
for t in mini bare; do
	grep -q ' lib_hot$' "$T/$t.top" || { cat "$T/$t.top"; fail "lib_hot is not named from the library's .dynsym ($t)"; }
done
# DWARF: mix is inlined into local_hot; its own frame, at its own line.
top prog-dwarf >/dev/null
go tool pprof -traces "$T/prog-dwarf.pb.gz" 2>/dev/null >"$T/dwarf.traces"
awk '/ mix \(inline\)$/ { getline; if ($1 == "local_hot") f = 1 } END { exit !f }' "$T/dwarf.traces" \
	|| { grep -m3 -A3 mix "$T/dwarf.traces"; fail "no inlined mix frame under local_hot"; }
go tool pprof -top -lines "$T/prog-dwarf.pb.gz" 2>/dev/null | grep -q " mix .*prog\.c:$mix_line\b" \
	|| { go tool pprof -top -lines "$T/prog-dwarf.pb.gz" 2>/dev/null | head; fail "mix's samples are not at prog.c:$mix_line"; }
exit 0
