#!/usr/bin/env bash
# Damaged files: perfrecctl verify must be at least as strict as perf 6.1
# (perf script, the one perf command that fails on bad records) and hotspot's
# perfparser, and recover and decompress must never hand on what verify
# rejects.  A real recording is damaged the ways issue 17 found: data size 0,
# empty BUILD_ID / CPU_TOPOLOGY sections, records perf script stops at or
# crashes on; a .tmp killed before its first record; the obvious
# `perfrecctl recover X.data.tmp -o X.data`.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser

out=$T/out
"$PERFRECD" -o "$out" --socket '' -F 499 -d 2 2>"$T/daemon.err" &
DAEMON_PID=$!
wait "$DAEMON_PID"; rc=$?
DAEMON_PID=
[ $rc = 0 ] || { cat "$T/daemon.err"; fail "perfrecd exited $rc"; }
good=$(only_file "$out")
"$PERFRECCTL" verify "$good" >/dev/null || fail "the undamaged recording does not verify"
perf script -i "$good" -F tid,cpu,time,ip --ns -G >/dev/null 2>"$T/good.err" || { cat "$T/good.err"; fail "perf script fails on the undamaged recording"; }
samples=$(perf_samples "$good")

# Each damage in a file of its own under $T/bad/; the .tmp cases under $T/tmp/.
mkdir -p "$T/bad" "$T/tmp"
python3 - "$good" "$T" <<'PY' || fail "could not build the damaged files"
import struct, sys
src, T = sys.argv[1], sys.argv[2]
B = bytearray(open(src, 'rb').read())
doff, dsz = struct.unpack_from('<QQ', B, 40)
flags = struct.unpack_from('<4Q', B, 72)
feats = [f for f in range(256) if flags[f // 64] >> (f % 64) & 1]
table = doff + dsz
recs, p = [], doff
while p < table:
    t, _, sz = struct.unpack_from('<IHH', B, p)
    recs.append((p, t, sz))
    p += sz
sample = [r for r in recs if r[1] == 9][len([r for r in recs if r[1] == 9]) // 2]
round_ = [r for r in recs if r[1] == 68][1]

def out(name, b):
    open('%s/bad/%s.data' % (T, name), 'wb').write(b)

# data size 0: the records taken out, the feature sections moved up.
b = B[:doff] + B[table:]
struct.pack_into('<Q', b, 48, 0)
for i in range(len(feats)):
    o, s = struct.unpack_from('<QQ', b, doff + 16 * i)
    struct.pack_into('<Q', b, doff + 16 * i, o - dsz)
out('data-size-0', b)
for f, name in ((2, 'BUILD_ID'), (13, 'CPU_TOPOLOGY')):
    b = bytearray(B)
    struct.pack_into('<Q', b, table + 16 * feats.index(f) + 8, 0)
    out('empty-' + name, b)
# Records perf script stops at: a sample or a FINISHED_ROUND given another type.
for t, name in ((66, 'TRACING_DATA'), (69, 'ID_INDEX'), (70, 'AUXTRACE_INFO'), (71, 'AUXTRACE'),
                (74, 'CPU_MAP'), (76, 'STAT'), (77, 'STAT_ROUND'), (78, 'EVENT_UPDATE'), (83, 'COMPRESSED2')):
    b = bytearray(B)
    struct.pack_into('<I', b, sample[0], t)
    out('sample-as-' + name, b)
for t, name in ((69, 'ID_INDEX'), (73, 'THREAD_MAP'), (77, 'STAT_ROUND')):
    b = bytearray(B)
    struct.pack_into('<I', b, round_[0], t)
    out('round-as-' + name, b)
# A byte flipped in a sample's cpu (identifier, ip, tid, time, then cpu): perf script crashes.
b = bytearray(B)
struct.pack_into('<I', b, sample[0] + 8 + 32, 0xba0001)
out('sample-cpu-garbage', b)

# .tmp files as a kill leaves them: no features, data size as last checkpointed.
tmp = bytearray(B[:table])
struct.pack_into('<4Q', tmp, 72, 0, 0, 0, 0)
struct.pack_into('<Q', tmp, 48, dsz // 3)
open(T + '/tmp/whole.data.tmp', 'wb').write(tmp)
head = bytearray(tmp[:doff])
struct.pack_into('<Q', head, 48, 0)
open(T + '/tmp/attrs-only.data.tmp', 'wb').write(head)
open(T + '/tmp/cut-first.data.tmp', 'wb').write(head + B[doff:doff + recs[0][2] // 2])
PY

nbad=0
for f in "$T"/bad/*.data; do
	name=$(basename "$f" .data)
	nbad=$((nbad + 1))
	# (in a subshell: perf crashes on some, and bash would report it here)
	(timeout 120 perf script -i "$f" -F tid,cpu,time,ip --ns -G >/dev/null 2>"$T/perf.err") 2>/dev/null; prc=$?
	timeout 60 "$PERFPARSER" --input "$f" --output /dev/null >/dev/null 2>"$T/pp.err"; pprc=$?
	pp_refuses=no
	if [ $pprc != 0 ] || grep -q "announced in header but not present" "$T/pp.err"; then pp_refuses=yes; fi
	[ $prc != 0 ] || [ $pp_refuses = yes ] || note "$name: neither perf nor perfparser object (verify may still)"
	vout=$("$PERFRECCTL" verify "$f" 2>&1); vrc=$?
	note "$name: perf script exit $prc, perfparser refuses: $pp_refuses; verify: ${vout#"$f": }"
	[ $vrc = 1 ] || fail "$name: perfrecctl verify exited $vrc (perf script $prc, perfparser refuses: $pp_refuses)"

	rm -f "$T/dec.data"
	"$PERFRECCTL" decompress "$f" "$T/dec.data" 2>"$T/dec.err"; drc=$?
	[ $drc = 1 ] || { cat "$T/dec.err"; fail "$name: decompress exited $drc on a file verify rejects"; }
	[ -e "$T/dec.data" ] && fail "$name: decompress left an output file"

	# Recovery keeps the sound records before the damage, or gives nothing.
	rm -f "$T/rec.data"
	if "$PERFRECCTL" recover "$f" -o "$T/rec.data" >"$T/rec.out" 2>&1; then
		"$PERFRECCTL" verify "$T/rec.data" >/dev/null || fail "$name: recover wrote a file verify rejects"
		perf script -i "$T/rec.data" -F tid,cpu,time,ip --ns -G >/dev/null 2>"$T/perf.err" \
			|| { tail -3 "$T/perf.err"; fail "$name: perf script fails on the recovered file"; }
	else
		[ -e "$T/rec.data" ] && fail "$name: recover failed but left $T/rec.data"
	fi
done
[ $nbad = 16 ] || fail "expected 16 damaged files, found $nbad"

# Killed before its first record (header and attrs, maybe half a record):
# nothing to recover, and no file published.
for name in attrs-only cut-first; do
	tmp=$T/tmp/$name.data.tmp
	"$PERFRECCTL" recover "$tmp" >"$T/rec.out" 2>&1; rc=$?
	[ $rc = 1 ] || { cat "$T/rec.out"; fail "$name: recover exited $rc on a .tmp without records"; }
	grep -q "nothing to recover" "$T/rec.out" || { cat "$T/rec.out"; fail "$name: no clear message"; }
	ls "$T/tmp" | grep -v '\.data\.tmp$' && fail "$name: recover left a file behind"
done

# The obvious command: finish X.data.tmp as X.data.
tmp=$T/tmp/whole.data.tmp
"$PERFRECCTL" recover "$tmp" -o "${tmp%.tmp}" >"$T/rec.out" 2>&1 || { cat "$T/rec.out"; fail "recover X.data.tmp -o X.data refused"; }
"$PERFRECCTL" verify "${tmp%.tmp}" >/dev/null || fail "X.data from recover does not verify"
after=$(perf_samples "${tmp%.tmp}")
[ "$after" = "$samples" ] || fail "X.data holds ${after:-no} samples for perf, the recording $samples"
note "recover X.data.tmp -o X.data: $after of $samples samples"
exit 0
