#!/usr/bin/env bash
# Every configuration key through a reload (issue 24): for each row of
# config_keys[] (perfrecd --config-keys: section, key, how a reload
# applies it), a daemon started with one value is sent SIGHUP with
# another, and the test sees the new value take effect where it shows
# (status, the files' attrs as perf reads them, file names and places,
# manifests, the metrics file, the socket's answers, the daemon's timer
# and rings in /proc, the build-id cache, retention, off-CPU samples), or,
# for a key set up once at start, the reload refused naming the key while
# the old configuration goes on.  What the daemon did (reopened the
# events, applied in place, refused) must be what the table says, and a
# key the table lists that no part here checks fails the test: a new key
# comes with its check.
#
# Four starts: events (reopen keys), output and the running daemon (now
# and next-file keys), keys set up at start (refused), off-CPU.  Before
# the fix (c31e2b5) offcpu-min=/offcpu-cgroup= were accepted and ignored,
# offcpu=no left off-CPU recording on, and socket=, user=, upload-url=
# and the like were taken and ignored.
#
# PERFRECD_UNDER_TEST=PATH runs another build's perfrecd (an older commit)
# against this tree's table; PARTS="events output restart offcpu" (any of
# them) runs some parts only (then the coverage check is skipped).
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v setpriv >/dev/null || skip "setpriv is not installed"
BLOCKER=$TOP/tests/e2e/blocker
[ -x "$BLOCKER" ] || fail "tests/e2e/blocker is not built (make tests/e2e/blocker)"
[ -x "$WORKLOAD" ] || fail "tests/e2e/workload is not built"

D=${PERFRECD_UNDER_TEST:-$PERFRECD_DEFAULT}
cd "$T"   # a relative path in a configuration (an older build's) lands here
PARTS=${PARTS:-events output restart offcpu}
S=$T/sock
conf=$T/conf
chmod 755 "$T"   # nobody reaches the socket (control-public-methods=)
BG=
trap 'kill $BG 2>/dev/null; for c in "$T"/cg-*; do [ -e "$c" ] && rmdir "$(cat "$c")" 2>/dev/null; done; cleanup' EXIT

declare -A KIND SECTION COVERED
"$PERFRECD_DEFAULT" --config-keys >"$T/keys" || fail "perfrecd --config-keys failed"
while read -r sec key kind; do
	key=${key%\*}
	SECTION[$key]=$sec
	KIND[$key]=$kind
done <"$T/keys"
[ ${#KIND[@]} -gt 40 ] || { cat "$T/keys"; fail "perfrecd --config-keys lists too few keys"; }

ctl() { timeout 60 "$PERFRECCTL" --socket "$S" "$@"; }
jq_status() { ctl --json status | jq -r "$1"; }
count() { grep -c -- "$1" "$T/err" 2>/dev/null || true; }
dump_fail() { cat "$T/err"; fail "$@"; }

# write_conf KEY=VALUE...: an INI file of them, each in its section; a
# later KEY= replaces an earlier one.
write_conf() {
	local sec kv k
	local -A val=()
	local order=()
	for kv in "$@"; do
		k=${kv%%=*}
		[ -n "${SECTION[${k%%.*}.]:-${SECTION[$k]:-}}" ] || fail "write_conf: no key $k"
		[ -n "${val[$k]+set}" ] || order+=("$k")
		val[$k]=${kv#*=}
	done
	: >"$conf"
	for sec in record output service upload; do
		echo "[$sec]" >>"$conf"
		for k in "${order[@]}"; do
			[ "${SECTION[${k%%.*}.]:-${SECTION[$k]:-}}" = "$sec" ] && echo "$k=${val[$k]}" >>"$conf"
		done
	done
}

start() { # KEY=VALUE...
	write_conf "$@"
	"$D" -c "$conf" 2>"$T/err" &
	DAEMON_PID=$!
	wait_for 30 grep -q "Recording" "$T/err" || dump_fail "perfrecd did not start"
	wait_for 30 ctl ping >/dev/null 2>&1 || dump_fail "the control socket does not answer"
}

stop() {
	kill -INT "$DAEMON_PID"
	wait "$DAEMON_PID"
	local rc=$?
	DAEMON_PID=
	[ $rc = 0 ] || dump_fail "perfrecd exited $rc"
}

# reload EXPECT KEY=VALUE...: the new file, SIGHUP, and the answer, which
# must be EXPECT: reopened (events reopened), applied (in place) or refused.
reload() {
	local want=$1 got ok re ref; shift
	write_conf "$@"
	ok=$(count "Configuration reloaded"); re=$(count "events reopened"); ref=$(count "Reload refused")
	kill -HUP "$DAEMON_PID"
	answered() { [ "$(count "Configuration reloaded")" -gt "$ok" ] || [ "$(count "Reload refused")" -gt "$ref" ]; }
	wait_for 60 answered || dump_fail "no answer to the reload ($*)"
	if [ "$(count "Reload refused")" -gt "$ref" ]; then got=refused
	elif [ "$(count "events reopened")" -gt "$re" ]; then got=reopened
	else got=applied; fi
	[ "$got" = "$want" ] || dump_fail "the reload was $got, not $want: $*"
}

# covered KEY KIND: KEY's change was seen to take effect as KIND says.
covered() {
	[ -n "${KIND[$1]:-}" ] || fail "this test checks $1=, which perfrecd --config-keys does not list"
	[ "${KIND[$1]}" = "$2" ] || fail "$1=: the table says a reload applies it '${KIND[$1]}', the daemon did '$2'"
	COVERED[$1]=1
}

nfiles() { ls "$1"/*.data 2>/dev/null | wc -l; }
last_file() { ls "$1"/*.data | tail -1; }
published() { [ "$(jq_status .files_published)" -ge "$1" ]; }
# rotate: publish the file in progress, wait until it is.
rotate() {
	local n; n=$(jq_status .files_published)
	ctl rotate >/dev/null || dump_fail "rotate failed"
	wait_for 30 published $((n + 1)) || dump_fail "rotate did not publish"
}
header() { perf report -i "$1" --header-only 2>/dev/null; }
has_header() { header "$1" | grep -q -- "$2"; }

# 1. Keys that live in the events: reopened, and the next file has them.
part_events() {
	local out=$T/ev f n
	start events=cpu-clock frequency=99 callchain=yes clockid=monotonic cpus=all mmap-size=512K \
		context-switch=no rotate-interval=0 "directory=$out" buildid-cache=no compress=0 "socket=$S"
	reload reopened events=task-clock period=1000003 callchain=dwarf stack-size=4096 unwind=file clockid=boottime \
		cpus=0 mmap-size=1M context-switch=yes history=1min history-max=1M rotate-interval=0 \
		"directory=$out" buildid-cache=no compress=0 "socket=$S"
	[ "$(jq_status '.cpus | length')" = 1 ] || { ctl status; fail "cpus=0 after the reload: not one CPU"; }
	covered cpus reopen
	ring_of_1m() {
		local range
		for range in $(awk '/anon_inode:\[perf_event\]/ { print $1 }' /proc/$DAEMON_PID/maps); do
			[ $((0x${range#*-} - 0x${range%-*})) = $((1048576 + 4096)) ] && return 0
		done
		return 1
	}
	ring_of_1m || { grep perf_event /proc/$DAEMON_PID/maps; fail "no ring of 1M (+ its page) after mmap-size=1M"; }
	covered mmap-size reopen
	# The history fills: 1M of it at most, though far more was recorded (DWARF stacks of 4K).
	n=$(jq_status .bytes)
	grew() { [ "$(jq_status .bytes)" -gt $((n + 8 * 1048576)) ]; }
	wait_for 60 grew || { ctl status; fail "less than 8M recorded within 60 s"; }
	ctl snapshot "$T/hist.data" >/dev/null 2>"$T/snap.err" || { cat "$T/snap.err"; dump_fail "no snapshot with history=1min"; }
	note "a snapshot under history-max=1M after $(( ($(jq_status .bytes) - n) >> 20 ))M more recorded: $(stat -c %s "$T/hist.data") bytes"
	[ "$(stat -c %s "$T/hist.data")" -lt $((3 * 1048576)) ] \
		|| fail "a snapshot of $(stat -c %s "$T/hist.data") bytes under history-max=1M"
	# A snapshot without a history is of the file in progress: 8M and more.
	covered history reopen
	covered history-max reopen
	rotate
	f=$(last_file "$out")
	has_header "$f" 'name = task-clock' || fail "$f: not task-clock after events=task-clock"
	has_header "$f" 'name = cpu-clock' && fail "$f: still cpu-clock after events=task-clock"
	covered events reopen
	has_header "$f" 'sample_period, sample_freq } = 1000003' || { header "$f" | grep sample_; fail "$f: period=1000003 not in effect"; }
	covered period reopen
	has_header "$f" 'sample_type = .*STACK_USER' || fail "$f: callchain=dwarf did not copy user stacks"
	covered callchain reopen
	has_header "$f" 'sample_stack_user = 4096' || fail "$f: stack-size=4096 not in effect"
	covered stack-size reopen
	has_header "$f" 'clockid = 7' || fail "$f: clockid=boottime (7) not in effect"
	covered clockid reopen
	has_header "$f" 'context_switch = 1' || fail "$f: context-switch=yes not in effect"
	covered context-switch reopen

	reload reopened events=task-clock frequency=199 callchain=dwarf unwind=host rotate-interval=0 \
		"directory=$out" buildid-cache=no compress=0 "socket=$S"
	ctl status | grep -q 'event task-clock at 199 Hz' || { ctl status; fail "frequency=199 not in effect"; }
	covered frequency reopen
	[ "$(jq_status '.unwind | type')" = object ] || { ctl --json status; fail "unwind=host: no unwinding in status"; }
	rotate
	f=$(last_file "$out")
	has_header "$f" 'sample_type = .*STACK_USER' && fail "$f: unwind=host, yet raw user stacks in the file"
	covered unwind reopen
	reload reopened events=task-clock frequency=199 mode=flight history=1min \
		"directory=$out" buildid-cache=no compress=0 "socket=$S"
	[ "$(jq_status .mode)" = flight ] || fail "mode=flight not in effect"
	n=$(nfiles "$out")
	kill -USR2 "$DAEMON_PID"
	wait_for 30 eval 'ls "$out"/*-snapshot.data >/dev/null 2>&1' || dump_fail "SIGUSR2 in flight mode wrote no snapshot"
	covered mode reopen
	stop
}

# 2. The output and the running daemon: at once, or from the next file.
part_output() {
	local o1=$T/o1 o2=$T/o2 f hz n m
	# No space limits but those set here: a fuller disk removes no file.
	local base=(frequency=99 callchain=no rotate-interval=0 "socket=$S" max-bytes=0 min-free=0)
	start "${base[@]}" "directory=$o1" prefix=a compress=0 buildid-cache=no label.team=a flush-interval=1s \
		checkpoint-interval=1h max-frequency=500
	as_nobody() { timeout 60 setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
	as_nobody "$PERFRECCTL" --socket "$S" status >/dev/null || dump_fail "nobody cannot call Status by default"
	ctl set-freq 1000 >/dev/null 2>&1 && fail "set-freq 1000 above max-frequency=500 was taken"
	[ "$(od -A n -t u8 -j 48 -N 8 "$(jq_status .current_file)" | tr -d ' ')" = 0 ] \
		|| fail "the header was refreshed under checkpoint-interval=1h"
	reload applied "${base[@]}" "directory=$o2" prefix=b compress=3 "buildid-cache=$T/cache" \
		buildid-cache-size=100M label.team=b flush-interval=2s checkpoint-interval=100ms max-frequency=2000 \
		control-public-methods=Ping "metrics-textfile=$T/m.prom" "on-rotate=/usr/bin/touch $T/hooked" \
		max-overhead=50%
	# at once
	f=$(jq_status .current_file)
	refreshed() { [ "$(od -A n -t u8 -j 48 -N 8 "$f" | tr -d ' ')" -gt 0 ]; }
	wait_for 30 refreshed || fail "checkpoint-interval=100ms: the header of $f is not refreshed"
	covered checkpoint-interval now
	timer2s() { grep -qx 'it_interval: (2, 0)' /proc/$DAEMON_PID/fdinfo/* 2>/dev/null; }
	timer2s || { grep -h it_interval /proc/$DAEMON_PID/fdinfo/*; fail "flush-interval=2s: no timer of 2 s"; }
	covered flush-interval now
	ctl set-freq 1000 >/dev/null || dump_fail "set-freq 1000 under max-frequency=2000 refused"
	covered max-frequency now
	[ "$(jq_status '.governor | type')" = object ] || { ctl --json status; fail "max-overhead=50%: no governor"; }
	covered max-overhead now
	as_nobody "$PERFRECCTL" --socket "$S" status >/dev/null 2>&1 && fail "nobody may still call Status"
	grep -q "Refused Status to uid $(id -u nobody)" "$T/err" || dump_fail "the refusal of Status is not logged"
	covered control-public-methods now
	wait_for 30 grep -q '^perfrecd_samples_total' "$T/m.prom" || fail "metrics-textfile=: $T/m.prom not written"
	covered metrics-textfile now
	# The file in progress is published where it began, under the new labels and hook.
	rotate
	f=$(last_file "$o1")
	wait_for 30 test -e "$f.json" || fail "no manifest beside $f"
	jq -e '.labels.team == "b"' "$f.json" >/dev/null || { cat "$f.json"; fail "label.team=b not in the manifest"; }
	covered label. now
	wait_for 30 test -e "$T/hooked" || fail "on-rotate= did not run"
	covered on-rotate now
	# from the next file
	rotate
	[ "$(nfiles "$o2")" = 1 ] || { ls -la "$o1" "$o2"; fail "directory=$o2: the next file is not there"; }
	covered directory next-file
	f=$(last_file "$o2")
	case $(basename "$f") in b-*) ;; *) fail "prefix=b: $f";; esac
	covered prefix next-file
	has_header "$f" 'compressed : Zstd, level = 3' || { header "$f" | grep -i compress; fail "compress=3 not in effect in $f"; }
	covered compress next-file
	wait_for 30 eval 'ls "$T"/cache/.build-id/*/* >/dev/null 2>&1' || dump_fail "buildid-cache=$T/cache: nothing cached"
	covered buildid-cache next-file

	# Retention at once: max-age, max-files, max-bytes at the next publication.
	local ret=("${base[@]}" "directory=$o2" prefix=b compress=3 "buildid-cache=$T/cache" buildid-cache-size=100M
		   label.team=b flush-interval=2s checkpoint-interval=100ms max-frequency=2000 control-public-methods=Ping
		   "metrics-textfile=$T/m.prom" "on-rotate=/usr/bin/touch $T/hooked" max-overhead=50%)
	rotate; rotate
	f=$(ls "$o2"/*.data | head -1)
	touch -d '2 hours ago' "$f"
	reload applied "${ret[@]}" max-age=1h
	rotate
	[ -e "$f" ] && fail "max-age=1h: $f of 2 hours ago is kept"
	[ "$(nfiles "$o2")" -ge 3 ] || fail "max-age=1h removed more than the old file"
	covered max-age now
	reload applied "${ret[@]}" max-files=2
	rotate
	[ "$(nfiles "$o2")" = 2 ] || { ls "$o2"; fail "max-files=2: $(nfiles "$o2") files"; }
	covered max-files now
	reload applied "${ret[@]}" max-bytes=1K
	rotate
	[ "$(nfiles "$o2")" = 1 ] || { ls "$o2"; fail "max-bytes=1K: $(nfiles "$o2") files"; }
	covered max-bytes now
	# The cache's cap: the next binary taken in (one of a build id of this
	# run's own, running a while) evicts down to it.
	cached_bytes() { find "$T/cache/.build-id" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
	[ "$(cached_bytes)" -gt 1048576 ] || note "the cache holds $(cached_bytes) bytes only: buildid-cache-size=1M shows little"
	printf '#include <unistd.h>\nint main(void) { sleep(3); return 0; }\n' >"$T/uniq.c"
	cc -o "$T/uniq" "$T/uniq.c" -Wl,--build-id=0x$(od -A n -t x1 -N 20 /dev/urandom | tr -d ' \n') \
		|| fail "cannot build a binary of a new build id"
	reload applied "${ret[@]}" buildid-cache-size=1M
	"$T/uniq"
	cache_small() { [ "$(cached_bytes)" -le 1048576 ]; }
	wait_for 30 cache_small || fail "buildid-cache-size=1M: the cache holds $(cached_bytes) bytes"
	covered buildid-cache-size now
	# Rotation at once: by time, then by size.
	n=$(jq_status .files_published)
	reload applied "${ret[@]}" rotate-interval=1s
	wait_for 30 published $((n + 2)) || fail "rotate-interval=1s: no files by themselves"
	covered rotate-interval now
	reload applied "${ret[@]}" compress=0 rotate-interval=0 rotate-size=64K
	n=$(jq_status .files_published)
	wait_for 60 published $((n + 2)) || fail "rotate-size=64K: no files by themselves"
	covered rotate-size now
	reload applied "${ret[@]}" min-free=99%
	wait_for 30 grep -q "below min-free" "$T/err" || dump_fail "min-free=99%: not applied"
	covered min-free now
	# duration= counts from the start, which is longer ago than 1 s: it ends the run.
	reload applied "${ret[@]}" duration=1s
	gone() { [ ! -d /proc/$DAEMON_PID ] || grep -q '^State:.*Z' /proc/$DAEMON_PID/status; }
	wait_for 30 gone || dump_fail "duration=1s: perfrecd goes on"
	wait "$DAEMON_PID" || dump_fail "perfrecd stopped by duration= exited $?"
	DAEMON_PID=
	covered duration now
}

# 3. Keys set up once at start: a reload changing one is refused, naming
# it, and the daemon goes on as it was.
part_restart() {
	local base=(frequency=99 callchain=no rotate-interval=0 "directory=$T/rs" buildid-cache=no) kv k
	start "${base[@]}" "socket=$S"
	for kv in drain-priority=1 user=nobody group=nogroup "socket=$T/other.sock" control-group=root \
		metrics-listen=127.0.0.1:19155 upload-url=http://127.0.0.1:9/b upload-region=eu-west-1 \
		"upload-credentials=$T/creds" "upload-key={host}/{file}" python=no; do
		k=${kv%%=*}
		if [ "$k" = socket ]; then reload refused "${base[@]}" "$kv"
		else reload refused "${base[@]}" "socket=$S" "$kv"; fi
		grep -q "Reload refused: \[${SECTION[$k]}\] $k= takes effect only at start" "$T/err" \
			|| dump_fail "the refusal does not name $k="
		ctl ping >/dev/null || dump_fail "the socket does not answer after $kv was refused"
		covered "$k" restart
	done
	[ -e "$T/other.sock" ] && fail "socket=: a socket was made by a refused reload"
	reload applied "${base[@]}" "socket=$S"
	stop
}

# 4. Off-CPU.  offcpu=no by a reload reopens the events without it; then
# the filter, set in the loaded program: the blocker sits in a cgroup of
# its own, the daemon starts counting only blocks of an hour in an empty
# cgroup, and a reload to offcpu-min=0 in the blocker's cgroup counts its
# blocks (both must apply for one to be counted).
part_offcpu() {
	local out=$T/oc cg2 blk f k
	local base=(frequency=99 callchain=yes rotate-interval=0 "directory=$out" buildid-cache=no compress=0 "socket=$S")
	cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$cg2" ] || { note "no cgroup2 mount: off-CPU keys not checked"; return 1; }
	mkdir "$cg2/perfrec-blk-$$" "$cg2/perfrec-empty-$$" || fail "cannot make cgroups under $cg2"
	echo "$cg2/perfrec-blk-$$" >"$T/cg-blk"; echo "$cg2/perfrec-empty-$$" >"$T/cg-empty"
	"$BLOCKER" 100000 20 >/dev/null 2>&1 &
	blk=$!; BG="$BG $blk"
	echo $blk >"$cg2/perfrec-blk-$$/cgroup.procs"

	start "${base[@]}" offcpu=yes
	grep -q 'off-CPU profiling is on' "$T/err" || dump_fail "off-CPU profiling did not load at start"
	rotate
	has_header "$(last_file "$out")" 'name = offcpu-time' || fail "offcpu=yes: no offcpu-time declared"
	reload reopened "${base[@]}" offcpu=no
	rotate
	f=$(last_file "$out")
	has_header "$f" 'name = offcpu-time' && dump_fail "offcpu=no by a reload: $f still declares offcpu-time"
	covered offcpu reopen
	stop

	rm -rf "$out"
	start "${base[@]}" offcpu=yes offcpu-min=1h "offcpu-cgroup=$cg2/perfrec-empty-$$"
	grep -q 'off-CPU profiling is on' "$T/err" || dump_fail "off-CPU profiling did not load at start"
	reload applied "${base[@]}" offcpu=yes offcpu-min=0 "offcpu-cgroup=$cg2/perfrec-blk-$$"
	rotate
	blocks() { awk '/voluntary_ctxt_switches/ && !/non/ {print $2}' /proc/$blk/task/*/status | sort -n | tail -1; }
	k=$(blocks)
	wait_for 30 eval '[ "$(blocks)" -gt $((k + 20)) ]' || fail "the blocker does not block"
	rotate
	f=$(last_file "$out")
	k=$(perf script -i "$f" -F event --pid "$blk" 2>/dev/null | grep -c offcpu-time)
	note "after offcpu-min=0 and the blocker's cgroup: $k offcpu-time samples of the blocker"
	[ "$k" -gt 0 ] || dump_fail "offcpu-min=/offcpu-cgroup= changed by a reload are not in effect (no samples of the blocker)"
	covered offcpu-min offcpu-filter
	covered offcpu-cgroup offcpu-filter
	stop
	kill $blk; wait $blk 2>/dev/null
	rmdir "$cg2/perfrec-blk-$$" "$cg2/perfrec-empty-$$" 2>/dev/null
	return 0
}

"$WORKLOAD" 600 >/dev/null &
BG="$BG $!"
offcpu_skipped=
for p in $PARTS; do
	note "part $p (at ${SECONDS}s)"
	case $p in
	events) part_events ;;
	output) part_output ;;
	restart) part_restart ;;
	offcpu)
		if (require_offcpu) >"$T/offcpu.skip"; then part_offcpu || offcpu_skipped=1
		else offcpu_skipped=1; note "off-CPU keys not checked: $(cat "$T/offcpu.skip")"; fi ;;
	*) fail "no part $p" ;;
	esac
done
[ "$PARTS" = "events output restart offcpu" ] || { note "some parts only: coverage not checked"; exit 0; }
missing=
for k in "${!KIND[@]}"; do
	[ -n "${COVERED[$k]:-}" ] && continue
	[ -n "$offcpu_skipped" ] && [[ $k == offcpu* ]] && continue
	missing="$missing $k="
done
[ -z "$missing" ] || fail "keys whose reload no part of this test checks:$missing"
[ -z "$offcpu_skipped" ] || skip "every key but offcpu*= checked; off-CPU profiling is not usable here"
exit 0
