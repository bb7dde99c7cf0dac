#!/usr/bin/env bash
# Self-report metrics (issue 8): during a recording, /metrics on a loopback
# port is scraped with curl and checked by a strict Prometheus text-format
# parser (promparse.py, itself shown to reject broken input first); the
# sample counter grows between scrapes, CPU seconds and RSS are plausible,
# the info metric carries the configured label; other paths get 404, other
# methods 405, garbage 400 (or a close), a stalled client does not stop the
# others, and the daemon records on afterwards.  The textfile exists and
# parses, and the one written at exit agrees with perf: its samples_total
# equals perf's SAMPLE count summed over the published files, and its
# files_published_total the number of files.  With upload-url pointing at a
# closed port, the upload counters show the failures and the backlog.
. "$(dirname "$0")/lib.sh"
require_events
require_perf
command -v curl >/dev/null || skip "curl is not installed"
command -v python3 >/dev/null || skip "python3 is not installed"
PROMPARSE=$TOP/tests/e2e/promparse.py

# --- the checker itself must fail on broken expositions
bad() {
	if printf "$2" | python3 "$PROMPARSE" - >/dev/null 2>&1; then
		fail "promparse accepted $1"
	fi
}
bad "a second TYPE" '# TYPE a_total counter\na_total 1\n# TYPE a_total counter\n'
bad "a TYPE after samples" 'a 1\n# TYPE a gauge\n'
bad "a bad metric name" '1abc 1\n'
bad "an unquoted label" 'a{x=y} 1\n'
bad "a bad escape" 'a{x="\\q"} 1\n'
bad "a non-float value" 'a one\n'
bad "a duplicate series" 'a{x="1"} 1\na{x="1"} 2\n'
bad "a split family" 'a 1\nb 1\na{x="2"} 1\n'
bad "a counter without _total" '# TYPE a counter\na 1\n'
bad "a negative counter" '# TYPE a_total counter\na_total -3\n'
bad "a missing final newline" 'a 1'
printf '# HELP a_total x\n# TYPE a_total counter\na_total{l="q\\"\\\\\\n"} 1.5e3 1700000000000\n' |
	python3 "$PROMPARSE" - >/dev/null || fail "promparse rejected a valid exposition"

# --- a recording with both outputs
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$T/out" "$T/prom"
PROM=$T/prom/perfrecd.prom
cat >"$T/conf" <<EOF
[output]
directory=$T/out
label.team=sre
[service]
metrics-listen=127.0.0.1:$PORT
metrics-textfile=$PROM
EOF
"$WORKLOAD" 60 >/dev/null 2>&1 &
WPID=$!
trap 'kill $WPID 2>/dev/null; cleanup' EXIT
"$PERFRECD" -c "$T/conf" -F 499 --socket '' >"$T/log" 2>&1 &
DAEMON_PID=$!
URL=http://127.0.0.1:$PORT/metrics

scrape() { # scrape FILE: fetch /metrics, check it strictly
	curl -sS --max-time 20 -o "$1" -D "$1.hdr" "$URL" || return 1
	grep -qi '^Content-Type: text/plain; version=0.0.4' "$1.hdr" || { cat "$1.hdr"; fail "wrong Content-Type"; }
	python3 "$PROMPARSE" "$1" || { cat "$1"; fail "/metrics does not parse"; }
}
value() { python3 "$PROMPARSE" --value "$1" "$2" || fail "no single $1 in $2"; }

for _ in $(seq 120); do
	kill -0 $DAEMON_PID 2>/dev/null || { cat "$T/log"; fail "perfrecd exited"; }
	curl -s --max-time 5 -o /dev/null "$URL" && break
	sleep 0.5
done
scrape "$T/s1" || { cat "$T/log"; fail "cannot scrape $URL"; }
s1=$(value perfrecd_samples_total "$T/s1")
# bounded wait for the counter to move on
s2=$s1
for _ in $(seq 60); do
	sleep 0.5
	scrape "$T/s2" || fail "second scrape failed"
	s2=$(value perfrecd_samples_total "$T/s2")
	[ "$s2" -gt "$s1" ] && [ "$s1" -gt 0 ] && break
	s1=$s2
done
note "samples_total $s1 -> $s2"
[ "$s2" -gt "$s1" ] && [ "$s1" -gt 0 ] || fail "samples_total did not grow ($s1 -> $s2)"

cpu=$(value perfrecd_cpu_seconds_total "$T/s2")
rss=$(value perfrecd_resident_memory_bytes "$T/s2")
note "cpu_seconds $cpu, rss $rss"
python3 -c "import sys; sys.exit(not float('$cpu') > 0)" || fail "cpu_seconds_total is $cpu"
statm_rss=$(( $(awk '{print $2}' /proc/$DAEMON_PID/statm) * $(getconf PAGESIZE) ))
[ "$rss" -gt $((1 << 20)) ] && [ "$rss" -lt $((4 << 30)) ] || fail "RSS $rss is not plausible"
# the same process's RSS seen from outside, within a factor of 2 (it moves)
[ "$rss" -lt $((statm_rss * 2)) ] && [ "$statm_rss" -lt $((rss * 2)) ] || fail "RSS $rss vs /proc statm $statm_rss"
[ "$(value perfrecd_paused "$T/s2")" = 0 ] || fail "paused is not 0"
[ "$(value perfrecd_cpus "$T/s2")" = "$(nproc)" ] || fail "perfrecd_cpus is not $(nproc)"
grep -q '^perfrecd_sampling_frequency_hertz{event="cpu-clock"} 499$' "$T/s2" || fail "no 499 Hz cpu-clock gauge"
grep -q "^perfrecd_info{host=\"$(hostname)\",version=\"[^\"]*\",label_team=\"sre\"} 1$" "$T/s2" || { grep info "$T/s2"; fail "info metric lacks host or label_team"; }
grep -q '^perfrecd_upload' "$T/s2" && fail "upload metrics without upload-url"
# libcurl is opened only for uploads (daemon/upload.c): not loaded here.
# Its code is mapped executable; the host unwinder may map the file to
# read the CFI of a sampled process using it (this test's curl), which
# loads nothing.
grep -qE ' r-xp .*libcurl' /proc/$DAEMON_PID/maps && { grep libcurl /proc/$DAEMON_PID/maps; fail "libcurl is loaded without upload-url"; }

# --- other paths, methods and junk
code=$(curl -s --max-time 20 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/other")
[ "$code" = 404 ] || fail "GET /other answered $code, not 404"
code=$(curl -s --max-time 20 -o /dev/null -w '%{http_code}' -X POST --data x "$URL")
[ "$code" = 405 ] || fail "POST /metrics answered $code, not 405"
code=$(curl -s --max-time 20 -o /dev/null -w '%{http_code}' -I "$URL")
[ "$code" = 200 ] || fail "HEAD /metrics answered $code, not 200"
python3 - "$PORT" <<'PY' || fail "garbage requests were not answered with 400 or closed"
import socket, sys
port = int(sys.argv[1])
for junk in (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(range(256)),
             b"GARBAGE garbage garbage\r\n\r\n",
             b"GET /metrics HTTP/1.1\r\nX: " + b"y" * 10000):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    try:
        s.sendall(junk)
    except OSError:
        pass  # closed while we were still sending: that is an answer too
    data = b""
    try:
        while True:
            d = s.recv(4096)
            if not d:
                break
            data += d
    except ConnectionResetError:
        pass
    s.close()
    if data and not data.startswith(b"HTTP/1.0 400 "):
        print("answer to junk:", data[:80])
        sys.exit(1)
PY
# a client that connects and says nothing does not hold up the others
python3 -c "import socket, time; s = socket.create_connection(('127.0.0.1', $PORT)); time.sleep(6)" &
STALL=$!
sleep 0.5
scrape "$T/s3" || fail "scrape failed while a client stalls"
kill $STALL 2>/dev/null; wait $STALL 2>/dev/null

# the daemon still records afterwards
s3=$(value perfrecd_samples_total "$T/s3")
for _ in $(seq 60); do
	sleep 0.5
	scrape "$T/s4" || fail "scrape after the junk failed"
	s4=$(value perfrecd_samples_total "$T/s4")
	[ "$s4" -gt "$s3" ] && break
done
[ "$s4" -gt "$s3" ] || fail "samples_total stopped at $s3 after the junk"
kill -0 $DAEMON_PID || fail "perfrecd died"

# --- the textfile: there, and parsing
for _ in $(seq 60); do [ -s "$PROM" ] && break; sleep 0.5; done
[ -s "$PROM" ] || fail "no textfile $PROM"
python3 "$PROMPARSE" "$PROM" || fail "textfile does not parse"
t1=$(value perfrecd_samples_total "$PROM")
[ "$t1" -gt 0 ] || fail "textfile samples_total is 0"
# rewritten while recording (every 5 s): bounded wait for a newer count
for _ in $(seq 120); do
	sleep 0.5
	t2=$(python3 "$PROMPARSE" --value perfrecd_samples_total "$PROM") || fail "textfile did not parse on rewrite"
	[ "$t2" -gt "$t1" ] && break
done
[ "$t2" -gt "$t1" ] || fail "textfile not rewritten during the recording (stays at $t1)"

# a rotation, so the total spans more than one file
kill -USR2 $DAEMON_PID
for _ in $(seq 120); do [ "$(ls "$T/out"/*.data 2>/dev/null | wc -l)" -ge 1 ] && break; sleep 0.5; done
sleep 1
# remove it: only the write at exit can bring back the final count
rm -f "$PROM"
kill -INT $DAEMON_PID
wait $DAEMON_PID || { cat "$T/log"; fail "perfrecd exited with $?"; }
DAEMON_PID=
kill $WPID 2>/dev/null
[ -s "$PROM" ] || { cat "$T/log"; fail "no textfile written at exit"; }
python3 "$PROMPARSE" "$PROM" || fail "final textfile does not parse"
ls "$T/prom" | grep -v '^perfrecd.prom$' && fail "temporary files left beside the textfile"

final=$(value perfrecd_samples_total "$PROM")
files=$(value perfrecd_files_published_total "$PROM")
perf_total=0 nfiles=0
for f in "$T/out"/*.data; do
	n=$(perf_samples "$f")
	[ -n "$n" ] || fail "perf found no samples in $f"
	perf_total=$((perf_total + n)) nfiles=$((nfiles + 1))
done
note "textfile: $final samples in $files files; perf: $perf_total samples in $nfiles files"
[ "$nfiles" -ge 2 ] || fail "expected at least 2 files after SIGUSR2, found $nfiles"
[ "$files" = "$nfiles" ] || fail "files_published_total $files, but $nfiles files"
[ "$final" = "$perf_total" ] || fail "samples_total $final, but perf counts $perf_total"
grep -q 'Cannot write the metrics' "$T/log" && { cat "$T/log"; fail "textfile errors logged"; }

# --- upload metrics: uploads to a closed port fail, the backlog holds the file
PORT2=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
DEAD=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$T/out2"
printf '[output]\ndirectory=%s\n[upload]\nupload-url=http://127.0.0.1:%s/bucket\n[service]\nmetrics-listen=127.0.0.1:%s\n' \
	"$T/out2" "$DEAD" "$PORT2" >"$T/conf2"
AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test "$PERFRECD" -c "$T/conf2" -F 99 --socket '' >"$T/log2" 2>&1 &
DAEMON_PID=$!
URL=http://127.0.0.1:$PORT2/metrics
for _ in $(seq 120); do
	kill -0 $DAEMON_PID 2>/dev/null || { cat "$T/log2"; fail "perfrecd with upload-url exited"; }
	curl -s --max-time 5 -o /dev/null "$URL" && break
	sleep 0.5
done
kill -USR2 $DAEMON_PID
for _ in $(seq 120); do
	sleep 0.5
	scrape "$T/u" || { cat "$T/log2"; fail "scrape with upload on failed"; }
	[ "$(value perfrecd_upload_failures_total "$T/u")" -gt 0 ] && [ "$(value perfrecd_upload_backlog_files "$T/u")" -ge 1 ] && break
done
note "upload: $(grep '^perfrecd_upload' "$T/u" | tr '\n' ' ')"
[ "$(value perfrecd_upload_failures_total "$T/u")" -gt 0 ] || { cat "$T/log2"; fail "no upload failures counted against a closed port"; }
[ "$(value perfrecd_upload_backlog_files "$T/u")" -ge 1 ] || fail "the unsent file is not in the upload backlog"
[ "$(value perfrecd_upload_successes_total "$T/u")" = 0 ] || fail "successes counted against a closed port"
grep -qE ' r-xp .*libcurl' /proc/$DAEMON_PID/maps || fail "libcurl is not loaded with upload-url"
kill -INT $DAEMON_PID
wait $DAEMON_PID
DAEMON_PID=
exit 0
