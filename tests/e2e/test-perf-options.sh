#!/usr/bin/env bash
# perf record's spellings (issue 18): what a perf user types means what it
# means in perf, or is refused with exit status 2 and one line saying why;
# never taken for something else.  The options that are accepted are
# checked for their effect, through --check-config and by recording.
. "$(dirname "$0")/lib.sh"
require_events

refused() { # name, expected exit status, pattern, args...
	local name=$1 want=$2 pat=$3 rc; shift 3
	(cd "$T" && "$PERFRECD" --socket '' --duration 1 "$@") >"$T/stdout" 2>"$T/stderr"; rc=$?
	[ "$rc" = "$want" ] || { cat "$T/stderr"; fail "$name: exit status $rc, expected $want"; }
	[ "$(wc -l <"$T/stderr")" = 1 ] || { cat "$T/stderr"; fail "$name: expected one line of error"; }
	grep -qE -- "$pat" "$T/stderr" || { cat "$T/stderr"; fail "$name: error does not say '$pat'"; }
	note "$name: $(cat "$T/stderr")"
}
shows() { # name, key=value expected in --check-config, args...
	local name=$1 kv=$2; shift 2
	"$PERFRECD" --check-config "$@" >"$T/cc" 2>"$T/cc.err" || { cat "$T/cc.err"; fail "$name: refused"; }
	grep -qx -- "$kv" "$T/cc" || { grep -- "^${kv%%=*}=" "$T/cc"; fail "$name: --check-config does not show $kv"; }
}

# perf's -c N is a sample period; ours names the configuration file.
refused "-c 1000" 2 "perf's -c N is -P N here" -c 1000
printf '[record]\nfrequency=77\n' >"$T/4000"
(cd "$T" && "$PERFRECD" --check-config -c 4000) >"$T/cc" || fail "-c with a file named 4000 refused"
grep -qx frequency=77 "$T/cc" || fail "-c 4000: the file named 4000 was not read"

# Option typos: the nearest option, a missing value named.
refused "--freqq" 2 "Unknown option '--freqq'; did you mean '--freq'\?" --freqq=99
refused "--check-confg" 2 "did you mean '--check-config'\?" --check-confg
refused "--socket without value" 2 "Option '--socket' needs a value" --socket
refused "--bogus" 2 "Unknown option '--bogus' \(see --help\)" --bogus
refused "-x" 2 "Unknown option '-x'" -x

# perf's -o NAME.data names a file: refused, and no directory NAME.data/.
refused "-o perf.data" 2 "perf's -o names a file.*-o -" -o perf.data
refused "-o DIR/x.data" 2 "perf's -o names a file" -o "$T/x.data"
[ ! -e "$T/perf.data" ] && [ ! -e "$T/x.data" ] || fail "-o NAME.data created something"
mkdir "$T/dir.data"
shows "-o of an existing directory NAME.data" "directory=$T/dir.data" -o "$T/dir.data"

# -o creates the last component only, and says why it cannot write where
# no file can be (a pseudo or read-only file system).
refused "-o missing parents" 1 "its parent $T/missing/a does not exist" -o "$T/missing/a/b"
[ ! -e "$T/missing" ] || fail "-o $T/missing/a/b created $T/missing"
refused "-o /proc" 1 "/proc is not usable: it is on proc" -o /proc
refused "-o /proc/x" 1 "/proc is on proc" -o /proc/perfrec-e2e-$$
refused "-o /sys/x" 1 "/sys is on sysfs" -o /sys/perfrec-e2e-$$
mkdir "$T/ro"
if mount -t tmpfs -o ro,size=1M tmpfs "$T/ro" 2>/dev/null; then
	refused "-o read-only" 1 "$T/ro is not usable: it is on a read-only file system" -o "$T/ro"
	refused "-o read-only/sub" 1 "$T/ro is on a read-only file system" -o "$T/ro/sub"
	umount "$T/ro"
else
	note "cannot mount a read-only tmpfs here; read-only checks not run"
fi

# -C names a CPU that is not online.
last=$(tr ',' '\n' </sys/devices/system/cpu/online | tail -1); last=${last##*-}
off=$((last + 1))
refused "-C $off" 2 "CPU $off is not online \\(online CPUs: " -C "$off"
c7=/sys/devices/system/cpu/cpu7
if [ ! -d $c7 ] || [ "$(cat $c7/online 2>/dev/null)" = 0 ]; then
	refused "-C 7" 2 "-C/--cpus 7: CPU 7 is not online" -C 7
fi
shows "-C 0" "cpus=0" -C 0

# --call-graph: fp or dwarf[,SIZE], as perf spells them (after = or a
# space); lbr refused with the limitation named.
# -g is frame pointers, as in perf, whatever the configured default.
shows "-g" "callchain=yes" -g
shows "--call-graph fp" "callchain=yes" --no-call-graph --call-graph fp
shows "--call-graph=fp" "callchain=yes" --no-call-graph --call-graph=fp
shows "--call-graph alone" "callchain=yes" --no-call-graph --call-graph
shows "--call-graph fp -F 99" "frequency=99" --call-graph fp -F 99
shows "--call-graph dwarf" "callchain=dwarf" --call-graph dwarf
shows "--call-graph=dwarf,4096" "stack-size=4096" --call-graph=dwarf,4096
shows "--call-graph dwarf -g" "callchain=yes" --call-graph dwarf -g
refused "--call-graph lbr" 2 "--call-graph lbr: not supported" --call-graph lbr
refused "--call-graph xyz" 2 "--call-graph xyz: unknown mode" --call-graph=xyz

# -a is system-wide, which perfrecd always is.
shows "-a" "cpus=all" -a
shows "--all-cpus -C 0" "cpus=0" --all-cpus -C 0

# -m/--mmap-pages: pages (a power of two), or a size rounded up to one.
page=$(getconf PAGESIZE)
shows "-m 16" "mmap-size=$((16 * page / 1024))K" -m 16
shows "--mmap-pages 128" "mmap-size=$((128 * page / 1024))K" --mmap-pages 128
shows "-m 100K" "mmap-size=128K" -m 100K
refused "-m 3" 2 "-m/--mmap-pages 3: .*power of two" -m 3
refused "-m 16,8" 2 "AUX area" -m 16,8

# --switch-output and --switch-max-files: rotation and retention.
shows "--switch-output=100M" "rotate-size=104857600" --switch-output=100M
shows "--switch-output=30s" "rotate-interval=30s" --switch-output=30s
shows "--switch-output=5m" "rotate-interval=300s" --switch-output=5m
shows "--switch-output" "rotate-interval=0s" --switch-output
shows "--switch-output (signal only: no size)" "rotate-size=0" --rotate-size 5M --switch-output
shows "--switch-output=signal" "rotate-size=0" --switch-output=signal
refused "--switch-output=100" 2 "--switch-output=100: .*unit" --switch-output=100
refused "--switch-output=often" 2 "--switch-output=often" --switch-output=often
shows "--switch-max-files=5" "max-files=5" --switch-max-files=5
shows "--max-files 7" "max-files=7" --max-files 7
shows "--max-bytes 1G" "max-bytes=1073741824" --max-bytes 1G
shows "--max-age 1d" "max-age=86400s" --max-age 1d
shows "--rotate-size 10M" "rotate-size=10485760" --rotate-size 10M
shows "--rotate-interval 2min" "rotate-interval=120s" --rotate-interval 2min
refused "--rotate-interval 10ms" 2 "rotate-interval: '10ms' is below the minimum" --rotate-interval 10ms

# Any other command-line error is exit status 2 too.
"$PERFRECD" --frobnicate >/dev/null 2>&1; rc=$?
[ $rc = 2 ] || fail "an unknown option: exit status $rc, expected 2"

# They take effect: -a -m 16 --switch-output=1s --switch-max-files=2 records
# into files of a second each and keeps the newest two.
"$PERFRECD" -a -m 16 --switch-output=1s --switch-max-files=2 -o "$T/rot" --socket '' 2>"$T/rot.err" &
DAEMON_PID=$!
# -m 16: each CPU's ring is 16 data pages plus the control page.
rings() { grep -q 'perf_event' "/proc/$DAEMON_PID/maps"; }
wait_for 10 rings || fail "-m 16: no perf rings mapped"
sizes=$(grep perf_event "/proc/$DAEMON_PID/maps" | while read -r r _; do echo $((0x${r#*-} - 0x${r%-*})); done | sort -u)
[ "$sizes" = $((17 * page)) ] || fail "-m 16: rings of $sizes bytes, expected $((17 * page))"
rotated() { # the fourth file is published and only two are left
	local n
	ls "$T/rot"/*-000004.data >/dev/null 2>&1 || return 1
	n=$(ls "$T/rot"/*.data | wc -l)
	[ "$n" -le 2 ]
}
wait_for 30 rotated || { ls -la "$T/rot"; cat "$T/rot.err"; fail "--switch-output=1s --switch-max-files=2: no rotation, or more than two files kept"; }
kill -INT "$DAEMON_PID"; wait "$DAEMON_PID" || { cat "$T/rot.err"; fail "perfrecd exited non-zero"; }
DAEMON_PID=
for f in "$T/rot"/*.data; do
	"$PERFRECCTL" verify "$f" >/dev/null || fail "$f does not verify"
done
exit 0
