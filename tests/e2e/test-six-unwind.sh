#!/usr/bin/env bash
# perfrecctl unwind against perf's own unwinding, on the six real programs
# of issue 25 (tests/e2e/six-lib.sh): perfrecd records them system-wide
# with raw DWARF stacks (unwind=file), perfrecctl unwind rewrites the file
# into callchains, and perf script unwinds the raw file itself.  For each
# program (its process tree, as in test-six-programs.sh), at least 98% of
# its samples must carry perf's user frames, frame by frame: the same
# addresses, inline frames left out on both sides (perf script
# --no-inline; callchains hold no inline frames).  The unwound file passes
# perfrecctl verify and keeps every sample.
#
# Four things about perf as the reference, and why the comparison stays
# fair:
# - perf 6.1 gives a forked process its parent's maps and keeps them
#   across the exec; its unwinding of the new program then skips frames or
#   stops in libc (cc1 under gcc: 9 to 63 of ~900 samples the same; the
#   storm 160 to 290 of ~600), and its own system-wide recordings show the
#   same.  perf also reads a copy of the raw file whose FORK records name
#   pid 0 as the parent (six.py detach_forks: four bytes per FORK, nothing
#   else), so that each new process starts with no maps after its exec, as
#   in perf's per-process recordings.  A sample taken after its process's
#   exec is held to that reading; one before it (the parent's program,
#   before the exec) to perf's reading of the file as it is.  The share
#   against the file as it is is printed.
# - perf's libunwind stops early on some samples (after
#   __libc_start_call_main in node, in stripped dash for the storm, at
#   once in an execve).  Where perf's frames are all ours, in order from
#   the leaf, and ours go on, the sample counts as agreeing;
#   test-six-programs.sh checks that ours reach the program's entry.
# - perf's libunwind skips a frame now and then: in node, the caller of
#   pthread_rwlock_rdlock (CRYPTO_THREAD_read_lock+8, right after its call)
#   or ld.so's _dl_start between _dl_sysdep_start and _start.  A frame of
#   ours between two of perf's counts as agreeing if it is a return
#   address: a call instruction ends there in its file (six.py after_call).
# - A return address perf found in the stack or the heap is data taken for
#   one (libunwind on dash): such trailing frames are left out of perf's.
# The share of samples with exactly perf's frames is printed beside.
# The share over all samples of the host (other jobs, perfrecd itself) is
# not held to: test-dwarf-unwind.sh says why perf's reading of them differs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/six-lib.sh"
require_events; require_perf; six_require
six_setup

mkdir -p "$T/raw"
"$PERFRECD" -o "$T/raw" --socket= -e cpu-clock -F 499 -m 16M --call-graph dwarf --unwind file 2>"$T/log" &
DAEMON_PID=$!
wait_for 30 grep -qs "Recording" "$T/log" || { cat "$T/log"; fail "perfrecd did not start"; }
specs=()
for p in $SIX_PROGRAMS; do
	six_run "$p"
	specs+=("$p:$(cat "$T/six/$p.pid")")
done
kill -TERM $DAEMON_PID
wait $DAEMON_PID || { cat "$T/log"; fail "perfrecd exited non-zero"; }
DAEMON_PID=
raw=$(only_file "$T/raw") || exit 1
note "raw file: $(perf_samples "$raw") samples, $(stat -c %s "$raw") bytes"

"$PERFRECCTL" unwind "$raw" -o "$T/host.data" 2>"$T/unwind.err" || { cat "$T/unwind.err"; fail "perfrecctl unwind failed"; }
cat "$T/unwind.err"
"$PERFRECCTL" verify "$T/host.data" >/dev/null || fail "perfrecctl verify rejects the unwound file"
[ "$(perf_samples "$T/host.data")" = "$(perf_samples "$raw")" ] || fail "the unwound file lost samples"

python3 "$TOP/tests/e2e/six.py" agree "$raw" "$T/host.data" "${specs[@]}" || exit 1
exit 0
