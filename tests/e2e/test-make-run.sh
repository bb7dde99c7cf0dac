#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `make run` records with the shipped config on a control socket of its own
# in the tree (build/run/io.perfrec), so it neither takes over nor removes
# the system's /run/perfrecd/io.perfrec; Ctrl-C finishes its file, and the
# hint it prints names a file perf reads.  (RUN_DIR keeps this test's files
# out of the tree's perf-data/.)
. "$(dirname "$0")/lib.sh"
require_events; require_perf
cd "$TOP" || exit 1

sys=/run/perfrecd/io.perfrec
before=$(stat -c %i "$sys" 2>/dev/null || echo none)
sock=$TOP/build/run/io.perfrec
setsid make -s run RUN_DIR="$T/out" >"$T/run.out" 2>&1 &
mk=$!
trap 'kill -INT -- -$mk 2>/dev/null; cleanup' EXIT
up() { kill -0 $mk 2>/dev/null || { cat "$T/run.out"; fail "make run ended"; }; "$PERFRECCTL" --socket "$sock" ping >/dev/null 2>&1; }
wait_for 120 up || { cat "$T/run.out"; fail "make run's perfrecd does not answer on $sock"; }
after=$(stat -c %i "$sys" 2>/dev/null || echo none)
[ "$before" = "$after" ] || fail "make run touched the system's socket $sys ($before -> $after)"
dir=$("$PERFRECCTL" --socket "$sock" --json status | python3 -c 'import json,sys; print(json.load(sys.stdin)["directory"])')
[ "$dir" = "$T/out" ] || fail "make run records into '$dir', not $T/out"
grep -qF -- "--socket $sock" "$T/run.out" || { cat "$T/run.out"; fail "make run does not say which socket to use"; }

kill -INT -- -$mk
wait $mk; rc=$?
trap cleanup EXIT
[ "$rc" = 0 ] || { cat "$T/run.out"; fail "make run exited $rc after Ctrl-C"; }
f=$(sed -n 's/^  perf report -i \([^ ]*\) .*/\1/p' "$T/run.out")
[ -n "$f" ] && [ -f "$f" ] || { cat "$T/run.out"; fail "make run's hint names no file"; }
n=$(perf_samples "$f")
note "$f: ${n:-0} samples"
[ -n "$n" ] || fail "perf cannot read the file make run's hint names"
[ ! -e "$sock" ] || fail "make run left its socket $sock behind"
[ "$before" = "$(stat -c %i "$sys" 2>/dev/null || echo none)" ] || fail "make run removed or replaced $sys"
exit 0
