#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The reliability suite (`make torture`, tests/torture/README.md): the
adversarial trials of issue 17 repeated with figures.

  kill   kill -9 of perfrecd during recording and rotation storms, every
         published and recovered file checked by three readers, samples
         accounted for
  disk   full-disk cycles on a small tmpfs: what the disk refused must be
         counted, the partial file published, sequence numbers unbroken
  abuse  control-socket abuse by `nobody` while root's status must answer
         within 1 s, the sample rate holds and RSS stays bounded
  soak   a long recording with fast rotation: RSS flat after warm-up
  freeze snapshots into a file on a frozen ext4: status answers and the
         drain goes on (issue 28 item 3)
  unwind --unwind host under a churn of distinct binaries and hostile
         mappings: perfrecd lives, RSS and fds plateau
  reload reloads with offcpu=yes alternating a reopen of the events and a
         new offcpu-min=: every file keeps its off-CPU samples
  diskstart  starts (after kill -9) on a tmpfs filled to the brim: the
         daemon never exits, leftovers are kept, files come when space does
  lookback  concurrent cuts into the present and listings during rotation
         storms with max-files=3: every cut whole or refused naming what is
         missing, no live .tmp called a leftover

Each part prints one row (trials, failures, figures); the table goes to
stdout and into the Results section of tests/torture/README.md.  Needs
root.  Sizes come from the environment (see README.md), so a quick run is
TORTURE_KILLS=5 TORTURE_DISK_CYCLES=2 TORTURE_ABUSE_SEC=20 TORTURE_SOAK_MIN=2.
"""
import datetime
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Plain files: perfparser (hotspot 1.3) judges them and cannot decompress.
PERFRECD = os.path.join(TOP, "tests", "plain-perfrecd")
PERFRECCTL = os.path.join(TOP, "tools", "perfrecctl")
WORKLOAD = os.path.join(TOP, "tests", "e2e", "workload")
PERFPARSER = "/usr/lib/x86_64-linux-gnu/libexec/hotspot-perfparser"
README = os.path.join(TOP, "tests", "torture", "README.md")


def env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


HZ = env_int("TORTURE_HZ", 4999)
KILLS = env_int("TORTURE_KILLS", 50)
DISK_CYCLES = env_int("TORTURE_DISK_CYCLES", 5)
ABUSE_SEC = env_int("TORTURE_ABUSE_SEC", 60)
SOAK_MIN = env_int("TORTURE_SOAK_MIN", 30)
SOAK_SAMPLE_SEC = env_int("TORTURE_SOAK_SAMPLE_SEC", 30)
SEED = env_int("TORTURE_SEED", int(time.time()))
LOOKBACK_SEC = env_int("TORTURE_LOOKBACK_SEC", 60)
LOOKBACK_CLIENTS = env_int("TORTURE_LOOKBACK_CLIENTS", 6)
NOBODY = 65534

# perf exits 0 on damage inside the data section; its stderr tells (ORACLES.md).
PERF_LOST = re.compile(r"Warning:\s*Processed \d+ events and lost \d+ chunks!\s*Check IO/CPU overload!", re.S)
PERF_ALARM = re.compile(r"warn|error|fail|incompatible|corrupt|unknown|invalid|cannot|can.t", re.I)


def log(msg):
    print("# " + msg, flush=True)


def run(cmd, timeout=120, **kw):
    """Run @cmd; (returncode, stdout, stderr), a timeout as returncode -1."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, **kw)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return -1, "", "timed out after %ds" % timeout


def perf_stats(path):
    """perf's exact SAMPLE count of a file."""
    _, out, _ = run(["perf", "report", "-i", path, "--stats"])
    m = re.search(r"^\s*SAMPLE events:\s+(\d+)", out, re.M)
    return int(m.group(1)) if m else 0


def check_file(path):
    """Check @path with our verify, perf script and perfparser.
    Returns (problem or None, perf's sample count)."""
    rc, out, err = run([PERFRECCTL, "verify", path])
    if rc != 0:
        said = (out + err).strip().splitlines()
        return "verify: " + (said[-1] if said else "exit %d" % rc), 0
    rc, _, err = run_perf_script(path)
    if rc != 0:
        return "perf script exit %d: %s" % (rc, err.strip()[:200]), 0
    # LOST records (the kernel's, or perfrecd's for samples a full disk
    # refused) are reported, not damage: perf warns "lost N chunks".
    err = PERF_LOST.sub("", err)
    if PERF_ALARM.search(err):
        return "perf script stderr: %s" % err.strip()[:200], 0
    samples = perf_stats(path)
    rc, out, err = run(["timeout", "120", PERFPARSER, "--input", path, "--print-stats"], timeout=150)
    if rc != 0:
        return "perfparser exit %d" % rc, samples
    txt = out + err
    m = re.search(r"^samples:\s*(\d+)", txt, re.M)
    tv = re.search(r"samples time violations:\s*(\d+)", txt)
    mv = re.search(r"mmaps time violations:\s*(\d+)", txt)
    if not m or int(m.group(1)) == 0:
        return "perfparser: no samples", samples
    if not tv or not mv or int(tv.group(1)) or int(mv.group(1)):
        return "perfparser: time violations", samples
    return None, samples


def run_perf_script(path):
    try:
        p = subprocess.run(["perf", "script", "-i", path, "-F", "tid,cpu,time,ip", "--ns", "-G"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           errors="replace", timeout=300)
        return p.returncode, "", p.stderr
    except subprocess.TimeoutExpired:
        return -1, "", "timed out"


def manifest(path):
    try:
        with open(path + ".json") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def status(sock, timeout=5):
    """(seconds it took, status dict or None)."""
    t0 = time.monotonic()
    rc, out, _ = run([PERFRECCTL, "status", "--socket", sock, "--json"], timeout=timeout)
    dt = time.monotonic() - t0
    if rc != 0:
        return dt, None
    try:
        j = json.loads(out)
    except ValueError:
        return dt, None
    return dt, j.get("parameters", j)


def rss_kib(pid, field="VmRSS:"):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def prom_values(path):
    vals = {}
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                name, _, v = line.rstrip("\n").rpartition(" ")
                vals[name] = float(v)
    except OSError:
        pass
    return vals


def wait_for(cond, timeout, step=0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


def seq_of(name):
    m = re.search(r"-(\d{6})(?:-recovered)?\.data$", name)
    return int(m.group(1)) if m else None


def blocked_usr2(pid):
    """Whether process @pid blocks SIGUSR2 (its own code has run)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("SigBlk:"):
                    return bool(int(line.split()[1], 16) & (1 << (signal.SIGUSR2 - 1)))
    except OSError:
        pass
    return False


class Daemon:
    def __init__(self, args, logpath):
        self.logf = open(logpath, "ab")
        self.p = subprocess.Popen([PERFRECD] + args, stdout=self.logf, stderr=subprocess.STDOUT)
        self.pid = self.p.pid

    def alive(self):
        return self.p.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=120):
        if self.alive():
            self.p.send_signal(sig)
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        self.logf.close()
        return rc


def workload(seconds, threads=None):
    cmd = [WORKLOAD, str(seconds)] + ([str(threads)] if threads else [])
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_proc(p):
    if p and p.poll() is None:
        p.kill()
        p.wait()


def write_conf(path, text):
    with open(path, "w") as f:
        f.write(text)


# ---------------------------------------------------------------- kill -9

def part_kill(work):
    rng = random.Random(SEED)
    fig = dict(published=0, recovered=0, bad_published=0, bad_recovered=0, no_manifest_before=0,
               no_manifest_after=0, leftovers=0, lies=0, died_early=0, restart_failed=0,
               file_samples=0, status_samples=0, gap_max=0, lost=0, kills_in_first_second=0)
    failures = 0
    problems = []
    wl = workload(KILLS * 30 + 600)
    try:
        for i in range(KILLS):
            d = os.path.join(work, "kill-%03d" % i)
            os.makedirs(d)
            conf = os.path.join(d, "conf")
            write_conf(conf, "[output]\nrotate-interval=1s\n")
            sock = os.path.join(d, "sock")
            when = rng.choice([rng.uniform(0.0, 1.0), rng.uniform(0.3, 4.0)])
            storm_gap = rng.uniform(0.02, 0.3)
            fig["kills_in_first_second"] += when < 1.0
            dm = Daemon(["-c", conf, "-o", d, "--socket", sock, "-F", str(HZ), "-g"], os.path.join(d, "log"))
            last = {"samples": None}
            stop = threading.Event()

            def poll_status():
                while not stop.is_set():
                    _, st = status(sock, timeout=2)
                    if st and "samples" in st:
                        last["samples"] = st["samples"]
                    time.sleep(0.05)
            poller = threading.Thread(target=poll_status)
            poller.start()
            # The rotation storm, from the first moment perfrecd's own code
            # runs (its signals blocked, see blocked_usr2()): before that the
            # kernel's exec and the dynamic loader run, which no program can
            # guard (a signal there meets its default action whatever the
            # program does); daemon/main.c blocks them before main().
            wait_for(lambda: blocked_usr2(dm.pid) or not dm.alive(), 5, step=0.0005)
            t_end = time.monotonic() + when
            while time.monotonic() < t_end and dm.alive():
                try:
                    os.kill(dm.pid, signal.SIGUSR2)
                except ProcessLookupError:
                    break
                time.sleep(min(storm_gap, max(0.0, t_end - time.monotonic())))
            stop.set()
            poller.join()
            trial = []
            if not dm.alive():
                trial.append("died before the kill (exit %s)" % dm.p.returncode)
                fig["died_early"] += 1
            st_samples = last["samples"]
            dm.stop(signal.SIGKILL)
            before = set(os.listdir(d))
            published = sorted(f for f in before if f.endswith(".data"))
            for f in published:
                p = os.path.join(d, f)
                fig["published"] += 1
                prob, _ = check_file(p)
                if prob:
                    fig["bad_published"] += 1
                    trial.append("published %s: %s" % (f, prob))
                if manifest(p) is None:
                    fig["no_manifest_before"] += 1
            # restart: recovery of what the kill left
            rc, _, err = run([PERFRECD, "-c", conf, "-o", d, "--socket", sock + "2", "-F", str(HZ), "-g",
                              "--duration", "2"], timeout=120)
            if rc != 0:
                fig["restart_failed"] += 1
                trial.append("restart exited %d: %s" % (rc, err.strip()[-200:]))
            after = set(os.listdir(d))
            recovered = sorted(f for f in after - before if f.endswith("-recovered.data"))
            for f in recovered:
                p = os.path.join(d, f)
                fig["recovered"] += 1
                prob, _ = check_file(p)
                if prob:
                    fig["bad_recovered"] += 1
                    trial.append("recovered %s: %s" % (f, prob))
            for f in sorted(after):
                if f.endswith(".data") and f + ".json" not in after:
                    fig["no_manifest_after"] += 1
                    trial.append("%s has no manifest after the restart" % f)
                if f.endswith(".tmp"):
                    fig["leftovers"] += 1
                    trial.append("%s left after the restart" % f)
            # accounting over the killed run's files: published + recovered
            total = 0
            for f in [x for x in published if x in after] + recovered:
                p = os.path.join(d, f)
                n = perf_stats(p)
                total += n
                m = manifest(p)
                if m is not None:
                    fig["lost"] += int(m.get("lost") or 0)
                    if m.get("samples") != n:
                        fig["lies"] += 1
                        trial.append("%s: manifest says %s samples, perf counts %d" % (f, m.get("samples"), n))
            fig["file_samples"] += total
            if st_samples is not None:
                fig["status_samples"] += st_samples
                fig["gap_max"] = max(fig["gap_max"], st_samples - total)
            if trial:
                failures += 1
                problems.append("kill %d (at %.2fs): %s" % (i, when, "; ".join(trial[:4])))
            log("kill %d/%d at %.2fs: %d published, %d recovered%s" % (
                i + 1, KILLS, when, len(published), len(recovered), " FAIL" if trial else ""))
            if not os.environ.get("TORTURE_KEEP"):
                shutil.rmtree(d, ignore_errors=True)
    finally:
        stop_proc(wl)
    figures = ("%(published)d published (%(bad_published)d invalid, %(no_manifest_before)d without manifest "
               "before restart), %(recovered)d recovered (%(bad_recovered)d invalid); after restart "
               "%(no_manifest_after)d without manifest, %(leftovers)d temp files left; %(died_early)d died "
               "before the kill, %(restart_failed)d restarts failed; %(kills_in_first_second)d kills in the "
               "first second; samples: %(file_samples)d in files, %(lies)d manifests disagreeing with perf, "
               "%(lost)d counted lost, worst gap to the last status before a kill %(gap_max)d") % fig
    return dict(part="kill -9 during rotation storms", trials=KILLS, failures=failures,
                figures=figures, problems=problems)


# ---------------------------------------------------------------- full disk

def part_disk(work):
    mnt = os.path.join(work, "disk")
    kept = os.path.join(work, "disk-kept")
    os.makedirs(mnt)
    os.makedirs(kept)
    if run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt])[0] != 0:
        return dict(part="full disk", trials=0, failures=0, figures="SKIP: cannot mount a tmpfs",
                    problems=[])
    prom = os.path.join(work, "disk.prom")
    conf = os.path.join(work, "disk.conf")
    sock = os.path.join(work, "disk.sock")
    logpath = os.path.join(work, "disk.log")
    # Retention off (max-bytes=, min-free= default to shares of the disk
    # since issue 18): the part is about the disk filling up.
    write_conf(conf, "[record]\nflush-interval=100ms\n[output]\nrotate-size=1M\nmax-bytes=0\nmin-free=0\n"
                     "[service]\nmetrics-textfile=%s\n" % prom)
    problems = []
    failures = 0
    wl = workload(DISK_CYCLES * 120 + 120)
    dm = Daemon(["-c", conf, "-o", mnt, "--socket", sock, "-F", str(HZ), "-g"], logpath)
    status_lost = 0
    rc = None

    def enospc_lines():
        with open(logpath, errors="replace") as f:
            return sum(1 for line in f if "No space left" in line)

    def published_in_mnt():
        return sorted(f for f in os.listdir(mnt) if f.endswith(".data"))

    def move_out():
        for f in os.listdir(mnt):
            if f.endswith(".data") or f.endswith(".data.json"):
                shutil.move(os.path.join(mnt, f), os.path.join(kept, f))
    try:
        for c in range(DISK_CYCLES):
            trial = []
            st0 = os.statvfs(mnt)
            def full():
                v = os.statvfs(mnt)
                return v.f_bavail * v.f_frsize < 128 * 1024
            if not wait_for(lambda: full() or not dm.alive(), 120, 0.2):
                trial.append("the disk never filled")
            time.sleep(2)  # full for a while: data refused
            if not dm.alive():
                trial.append("perfrecd died on the full disk (exit %s)" % dm.p.returncode)
                problems.append("cycle %d: %s" % (c, "; ".join(trial)))
                failures += 1
                break
            move_out()
            if not wait_for(lambda: published_in_mnt() or not dm.alive(), 120, 0.2):
                trial.append("no file published after space returned")
            leftover = [f for f in os.listdir(mnt) if f.endswith(".tmp")]
            if len(leftover) > 1:
                trial.append("temp files stay after space returned: %s" % " ".join(leftover))
            _, st = status(sock)
            if st:
                status_lost = st.get("lost", 0)
            if trial:
                failures += 1
                problems.append("cycle %d: %s" % (c, "; ".join(trial)))
            log("disk cycle %d/%d: %d ENOSPC log lines so far, free before %d blocks%s" % (
                c + 1, DISK_CYCLES, enospc_lines(), st0.f_bavail, " FAIL" if trial else ""))
        _, st = status(sock)
        if st:
            status_lost = st.get("lost", 0)
        rc = dm.stop()
    finally:
        stop_proc(wl)
        if dm.alive():
            dm.stop(signal.SIGKILL)
    end = []
    if rc != 0:
        end.append("perfrecd exited %d" % rc)
    left = [f for f in os.listdir(mnt) if f.endswith(".tmp")]
    if left:
        end.append("temp files left at exit: %s" % " ".join(left))
    move_out()
    run(["umount", "-l", mnt])
    files = sorted(f for f in os.listdir(kept) if f.endswith(".data"))
    bad = lies = in_files = counted_lost = 0
    for f in files:
        p = os.path.join(kept, f)
        prob, n = check_file(p)
        if prob:
            bad += 1
            end.append("%s: %s" % (f, prob))
        m = manifest(p)
        if m is None:
            end.append("%s has no manifest" % f)
        else:
            counted_lost += int(m.get("lost") or 0)
            if m.get("samples") != n:
                lies += 1
                end.append("%s: manifest says %s samples, perf counts %d" % (f, m.get("samples"), n))
        in_files += n
    seqs = sorted(s for s in (seq_of(f) for f in files) if s is not None)
    jumps = sum(1 for a, b in zip(seqs, seqs[1:]) if b - a > 1)
    if jumps:
        end.append("sequence numbers jump %d times (%s)" % (jumps, ", ".join(
            "%d->%d" % (a, b) for a, b in zip(seqs, seqs[1:]) if b - a > 1)[:200]))
    pv = prom_values(prom)
    drained = int(pv.get("perfrecd_samples_total", 0))
    kernel_lost = int(pv.get("perfrecd_lost_total", 0))
    dropped_bytes = int(pv.get("perfrecd_dropped_bytes_total", 0))
    refused = drained - in_files
    # Every sample drained but not in a file must be counted lost in a
    # manifest, beyond what the kernel itself dropped (counted there too).
    if refused > 0 and counted_lost < refused:
        end.append("%d samples refused by the disk, only %d counted lost in manifests" % (refused, counted_lost))
    if refused > 0 and status_lost < refused and kernel_lost < refused:
        end.append("status/metrics count %d/%d lost for %d refused samples" % (status_lost, kernel_lost, refused))
    if refused > 0 and dropped_bytes == 0:
        end.append("%d samples refused but dropped_bytes_total is 0" % refused)
    if end:
        failures += 1
        problems.append("whole run: " + "; ".join(end[:6]))
    figures = ("%d files (%d invalid, %d manifests disagreeing with perf), %d sequence jumps; samples: "
               "%d drained, %d in files, %d refused by the disk, %d counted lost in manifests "
               "(status %d, metrics lost %d), %d bytes dropped") % (
        len(files), bad, lies, jumps, drained, in_files, refused, counted_lost, status_lost,
        kernel_lost, dropped_bytes)
    return dict(part="full-disk cycles (tmpfs 4 MiB)", trials=DISK_CYCLES, failures=failures,
                figures=figures, problems=problems)


# ---------------------------------------------------------------- control abuse

ABUSER = r'''
import json, os, resource, socket, sys, time
path, mode, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
end = time.monotonic() + seconds
held, n, refused = [], 0, 0
def conn():
    s = socket.socket(socket.AF_UNIX)
    s.setblocking(True)
    s.settimeout(2)
    s.connect(path)
    return s
if mode == "idle":           # hold as many idle connections as we may
    while time.monotonic() < end and len(held) < 4096:
        try:
            held.append(conn()); n += 1
        except OSError:
            time.sleep(0.05)
    while time.monotonic() < end:
        time.sleep(0.2)
elif mode == "partial":      # 60 KB of a message that never ends
    chunk = b'{"method":"io.perfrec.Status","parameters":{"x":"' + b"a" * 60000
    while time.monotonic() < end and len(held) < 4000:
        try:
            s = conn(); s.settimeout(0.5)
            try:
                s.sendall(chunk)
            except OSError:
                pass
            held.append(s); n += 1
        except OSError:
            time.sleep(0.05)
    while time.monotonic() < end:
        time.sleep(0.2)
elif mode == "refused":      # calls nobody may make, in a loop
    msg = json.dumps({"method": "io.perfrec.Rotate", "parameters": {}}).encode() + b"\0"
    s = None
    while time.monotonic() < end:
        try:
            if s is None:
                s = conn()
            s.sendall(msg)
            b = s.recv(4096)
            if not b:
                s.close(); s = None
            elif b"PermissionDenied" in b or b"error" in b:
                refused += 1
            n += 1
        except OSError:
            if s: s.close()
            s = None
            time.sleep(0.01)
print(json.dumps({"mode": mode, "n": n, "refused": refused}))
'''


def part_abuse(work):
    d = os.path.join(work, "abuse")
    os.makedirs(d)
    os.chmod(work, 0o755)
    os.chmod(d, 0o755)
    sock = os.path.join(d, "sock")
    out = os.path.join(d, "out")
    os.makedirs(out)
    logpath = os.path.join(d, "log")
    script = os.path.join(d, "abuser.py")
    write_conf(script, ABUSER)
    os.chmod(script, 0o644)
    problems = []
    wl = workload(ABUSE_SEC + 300)
    dm = Daemon(["-o", out, "--socket", sock, "-F", str(HZ), "-g"], logpath)
    fig = dict(probes=0, slow=0, failed=0, worst=0.0)
    alive, rc = False, None
    try:
        if not wait_for(lambda: status(sock)[1] is not None, 60, 0.2):
            return dict(part="control abuse by nobody", trials=0, failures=1, figures="no status",
                        problems=["perfrecd never answered status"])
        time.sleep(2)
        _, s0 = status(sock)
        t0 = time.monotonic()
        time.sleep(5)
        _, s1 = status(sock)
        t1 = time.monotonic()
        base_rate = (s1["samples"] - s0["samples"]) / (t1 - t0)
        base_rss = rss_kib(dm.pid)
        with open(logpath, "rb") as f:
            log_before = f.read().count(b"\n")
        abusers = [subprocess.Popen(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                                     "--clear-groups", sys.executable, script, sock, mode, str(ABUSE_SEC)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for mode in ("idle", "partial", "refused")]
        peak_rss = base_rss
        _, sa = status(sock)
        ta = tb = time.monotonic()
        last_ok = sa
        while any(a.poll() is None for a in abusers):
            dt, st = status(sock, timeout=5)
            fig["probes"] += 1
            fig["worst"] = max(fig["worst"], dt)
            if st is None:
                fig["failed"] += 1
            elif dt > 1.0:
                fig["slow"] += 1
            if st:
                last_ok = st
                tb = time.monotonic()
            r = rss_kib(dm.pid)
            if r:
                peak_rss = max(peak_rss, r)
            if not dm.alive():
                break
            time.sleep(0.5)
        abuse_rate = (last_ok["samples"] - sa["samples"]) / (tb - ta) if last_ok is not sa else 0.0
        results = []
        for a in abusers:
            o, e = a.communicate(timeout=60)
            try:
                results.append(json.loads(o.strip().splitlines()[-1]))
            except (ValueError, IndexError):
                results.append({"mode": "?", "error": e.strip()[-200:]})
        # memory given back once they are gone
        wait_for(lambda: (rss_kib(dm.pid) or 0) <= base_rss + 8192, 20, 0.5)
        after_rss = rss_kib(dm.pid) or 0
        with open(logpath, "rb") as f:
            log_lines = f.read().count(b"\n") - log_before
        alive = dm.alive()
        rc = dm.stop()
    finally:
        stop_proc(wl)
        if dm.alive():
            dm.stop(signal.SIGKILL)
    if not alive:
        problems.append("perfrecd died during the abuse")
    if rc != 0:
        problems.append("perfrecd exited %d" % rc)
    if fig["failed"] or fig["slow"]:
        problems.append("root's status failed %d and took over 1 s %d of %d times (worst %.2fs)" % (
            fig["failed"], fig["slow"], fig["probes"], fig["worst"]))
    if abuse_rate < 0.9 * base_rate:
        problems.append("sample rate %.0f/s under abuse, %.0f/s before" % (abuse_rate, base_rate))
    if peak_rss > base_rss + 32 * 1024:
        problems.append("RSS rose from %d to %d KiB" % (base_rss, peak_rss))
    if after_rss > base_rss + 8 * 1024:
        problems.append("RSS %d KiB after the abuse, %d before" % (after_rss, base_rss))
    if log_lines > 10 * ABUSE_SEC + 100:
        problems.append("%d log lines in %d s of abuse" % (log_lines, ABUSE_SEC))
    figures = ("%d status probes as root: %d failed, %d over 1 s, worst %.2f s; samples/s %.0f before, %.0f "
               "during; RSS %d KiB before, %d peak, %d after; %d log lines; nobody's clients: %s") % (
        fig["probes"], fig["failed"], fig["slow"], fig["worst"], base_rate, abuse_rate, base_rss,
        peak_rss, after_rss, log_lines, ", ".join("%s %s" % (r.get("mode"), r.get("n", r.get("error")))
                                                  for r in results))
    return dict(part="control abuse by nobody (%d s)" % ABUSE_SEC, trials=1, failures=1 if problems else 0,
                figures=figures, problems=problems)


# ---------------------------------------------------------------- soak

def part_soak(work):
    d = os.path.join(work, "soak")
    out = os.path.join(d, "out")
    os.makedirs(out)
    conf = os.path.join(d, "conf")
    prom = os.path.join(d, "soak.prom")
    write_conf(conf, "[output]\nrotate-interval=5s\nmax-files=5\n[service]\nmetrics-textfile=%s\n" % prom)
    total = SOAK_MIN * 60
    step = max(5, min(SOAK_SAMPLE_SEC, total // 8))
    wl = workload(total + 120, 1)
    # a host that starts processes all the time: ~50 a second
    churn = subprocess.Popen(["sh", "-c", "while :; do /bin/true; sleep 0.02; done"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dm = Daemon(["-c", conf, "-o", out, "--socket", os.path.join(d, "sock"), "-F", str(HZ), "-g"],
                os.path.join(d, "log"))
    samples, anon = [], []
    problems = []
    alive, rc = False, None
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < total and dm.alive():
            time.sleep(step)
            r, a = rss_kib(dm.pid), rss_kib(dm.pid, "RssAnon:")
            if r:
                samples.append((time.monotonic() - t0, r))
                anon.append(a or 0)
                log("soak %.0fs: RSS %d KiB (anonymous %d)" % (samples[-1][0], r, a or 0))
        alive = dm.alive()
        rc = dm.stop()
    finally:
        stop_proc(churn)
        stop_proc(wl)
        if dm.alive():
            dm.stop(signal.SIGKILL)
    if not alive:
        problems.append("perfrecd died during the soak")
    if rc != 0:
        problems.append("perfrecd exited %d" % rc)
    warm = max(1, len(samples) // 6)
    steady = [r for _, r in samples[warm:]]
    spread = (max(steady) - min(steady)) if steady else 0
    slope = 0.0
    if len(samples) - warm >= 2:
        xs = [t / 60 for t, _ in samples[warm:]]
        mx, my = sum(xs) / len(xs), sum(steady) / len(steady)
        den = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, steady)) / den if den else 0.0
    if not steady:
        problems.append("no RSS samples after warm-up")
    elif spread > 1024:
        problems.append("RSS moved %d KiB after warm-up (%d..%d)" % (spread, min(steady), max(steady)))
    bad = 0
    files = sorted(glob.glob(os.path.join(out, "*.data")))
    for p in files:
        prob, _ = check_file(p)
        if prob:
            bad += 1
            problems.append("%s: %s" % (os.path.basename(p), prob))
    pv = prom_values(prom)
    figures = ("%d min at %d Hz, rotate 5 s, max-files=5, ~50 processes/s: RSS %s KiB at start, %s at end; "
               "after warm-up (%d s) %s..%s KiB, spread %d KiB (anonymous %d), slope %+.1f KiB/min; %d files published, "
               "%d kept (%d invalid); tracked processes at exit %s") % (
        SOAK_MIN, HZ, samples[0][1] if samples else "?", samples[-1][1] if samples else "?",
        samples[warm - 1][0] if len(samples) >= warm else 0, min(steady) if steady else "?",
        max(steady) if steady else "?", spread,
        (max(anon[warm:]) - min(anon[warm:])) if anon[warm:] else 0, slope, int(pv.get("perfrecd_files_published_total", 0)),
        len(files), bad, int(pv.get("perfrecd_tracked_processes", -1)))
    return dict(part="soak (%d min)" % SOAK_MIN, trials=len(samples), failures=1 if problems else 0,
                figures=figures, problems=problems)



# ---------------------------------------------------------------- freeze

FREEZES = env_int("TORTURE_FREEZES", 6)


def freeze_trial(sock, mnt, i, rng, fig):
    """One snapshot into a file on @mnt, frozen for 2 to 16 s meanwhile;
    status probed every 0.5 s.  Returns a list of problems."""
    problems = []
    target = os.path.join(mnt, "snap-%d.data" % i)
    hold = rng.uniform(2, 16)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    rc, _, err = run(["fsfreeze", "-f", mnt])
    if rc != 0:
        os.close(fd)
        return ["fsfreeze -f: %s" % err.strip()]
    _, s0 = status(sock)
    snap = subprocess.Popen([PERFRECCTL, "--socket", sock, "snapshot", "-"], stdout=fd,
                            stderr=subprocess.PIPE, text=True)
    os.close(fd)
    t0 = time.monotonic()
    first, last = s0, s0
    try:
        while time.monotonic() - t0 < hold:
            dt, st = status(sock, timeout=5)
            fig["probes"] += 1
            fig["worst"] = max(fig["worst"], dt)
            if st is None:
                fig["failed"] += 1
            else:
                last = st
            time.sleep(0.5)
    finally:
        run(["fsfreeze", "-u", mnt])
    try:
        _, err = snap.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        snap.kill()
        _, err = snap.communicate()
        problems.append("trial %d: perfrecctl snapshot still ran 120 s after the thaw" % i)
    if first and last:
        fig["drained"] += last["samples"] - first["samples"]
        fig["lost"] += last["lost"] - first["lost"]
        if last["samples"] <= first["samples"]:
            problems.append("trial %d: no samples drained during a %.1f s freeze" % (i, hold))
    if snap.returncode == 0:
        fig["completed"] += 1
        prob, _ = check_file(target)
        if prob:
            problems.append("trial %d: the snapshot across a %.1f s freeze: %s" % (i, hold, prob))
    elif "took nothing for 10 s" in err:
        fig["given_up"] += 1
    else:
        problems.append("trial %d: snapshot exit %s without saying why: %s" % (i, snap.returncode, err.strip()[-200:]))
    return problems


def part_freeze(work):
    """Snapshots into a file on a frozen ext4 (issue 28 item 3): status must
    answer and samples be drained throughout."""
    rng = random.Random(SEED)
    d = os.path.join(work, "freeze")
    mnt = os.path.join(d, "mnt")
    out = os.path.join(d, "out")
    os.makedirs(mnt)
    os.makedirs(out)
    img = os.path.join(d, "img")
    with open(img, "wb") as f:
        f.truncate(256 << 20)
    for cmd in (["mkfs.ext4", "-q", "-F", img], ["mount", "-o", "loop", img, mnt]):
        rc, _, err = run(cmd)
        if rc != 0:
            return dict(part="snapshots into a frozen file system", trials=0, failures=1,
                        figures="cannot set up", problems=["%s: %s" % (" ".join(cmd), err.strip())])
    sock = os.path.join(d, "sock")
    conf = os.path.join(d, "conf")
    write_conf(conf, "[output]\nrotate-interval=2s\nmax-files=5\n")
    wl = workload(FREEZES * 40 + 300)
    dm = Daemon(["-c", conf, "-o", out, "--socket", sock, "-F", str(HZ), "-g"], os.path.join(d, "log"))
    fig = dict(probes=0, failed=0, worst=0.0, drained=0, lost=0, completed=0, given_up=0)
    problems = []
    rc = None
    try:
        if not wait_for(lambda: status(sock)[1] is not None, 60, 0.2):
            problems.append("perfrecd never answered status")
        else:
            time.sleep(3)   # a history of a few seconds to snapshot
            for i in range(FREEZES):
                problems += freeze_trial(sock, mnt, i, rng, fig)
                if not dm.alive():
                    problems.append("perfrecd died in trial %d" % i)
                    break
        rc = dm.stop()
    finally:
        run(["fsfreeze", "-u", mnt])
        stop_proc(wl)
        if dm.alive():
            dm.stop(signal.SIGKILL)
        run(["umount", mnt])
    if rc not in (0, None):
        problems.append("perfrecd exited %d" % rc)
    if fig["failed"]:
        problems.append("status failed %d of %d times while frozen (worst %.2f s)" % (
            fig["failed"], fig["probes"], fig["worst"]))
    figures = ("%d freezes of 2-16 s at %d Hz, rotate 2 s: %d status probes, %d failed, worst %.2f s; "
               "%d snapshots completed (valid), %d given up after 10 s; %d samples drained while frozen, "
               "%d counted lost") % (FREEZES, HZ, fig["probes"], fig["failed"], fig["worst"], fig["completed"],
                                     fig["given_up"], fig["drained"], fig["lost"])
    return dict(part="snapshots into a frozen file system", trials=FREEZES,
                failures=1 if problems else 0, figures=figures, problems=problems)

# ---------------------------------------------------------------- unwind=host under a binary churn

UNWIND_MIN = env_int("TORTURE_UNWIND_MIN", 6)
UNWIND_HZ = env_int("TORTURE_UNWIND_HZ", 499)

# Spins in nested calls (DWARF samples with stacks to unwind); with files
# as arguments, maps each executable at two fixed low addresses in turn,
# spinning between (the second map grows a session already built), and
# truncates the one prefixed "cut:" while it is mapped.
UNWIND_PROG = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
__attribute__((used)) static const char tag[] = TAG;
static volatile unsigned long sink;
__attribute__((noinline)) static void leaf(void) { for (int i = 0; i < 20000; i++) sink += i; }
__attribute__((noinline)) static void mid(int d) { if (d) mid(d - 1); else leaf(); __asm__ volatile("" ::: "memory"); }
static void spin(double sec)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		mid(8);
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < sec);
}
int main(int argc, char **argv)
{
	unsigned long addr = 0x100000;
	for (int i = 1; i < argc; i++) {
		int cut = !strncmp(argv[i], "cut:", 4), fd = open(argv[i] + (cut ? 4 : 0), cut ? O_RDWR : O_RDONLY);
		off_t len = fd < 0 ? 0 : lseek(fd, 0, SEEK_END);
		for (int k = 0; k < 2 && len > 0; k++, addr += 0x1000000) {
			mmap((void *)addr, len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
			spin(0.05);
		}
		if (cut && ftruncate(fd, 0) == 0)
			spin(0.05);
		if (fd >= 0)
			close(fd);
	}
	spin(0.2);
	return 0;
}
"""


def patch_build_id(path):
    """Give the ELF at @path a random GNU build id: each copy is another file to the unwinder."""
    import struct
    with open(path, "r+b") as f:
        data = f.read()
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
        for i in range(shnum):
            sh = shoff + i * shentsize
            typ, = struct.unpack_from("<I", data, sh + 4)
            off, size = struct.unpack_from("<QQ", data, sh + 0x18)
            if typ != 7:  # SHT_NOTE
                continue
            p = off
            while p + 12 <= off + size:
                namesz, descsz, ntype = struct.unpack_from("<III", data, p)
                name_at = p + 12
                desc_at = name_at + ((namesz + 3) & ~3)
                if ntype == 3 and data[name_at:name_at + namesz] == b"GNU\0":
                    f.seek(desc_at)
                    f.write(os.urandom(descsz))
                    return True
                p = desc_at + ((descsz + 3) & ~3)
    return False


def fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None


def unwind_churn(d, stop, counts):
    """Until @stop: copies of /usr/bin programs with fresh build ids (half of
    them owned by nobody, so read through fds) run ~20 a second on a 4 MiB
    input; a freshly compiled program each second; a process mapping an
    aarch64 ELF, an ET_EXEC twice and a user's file it truncates, every 2 s."""
    bins = os.path.join(d, "bins")
    os.makedirs(bins)
    data = os.path.join(d, "input")
    with open(data, "wb") as f:
        f.write(os.urandom(4 << 20))
    progs = [p for p in ("sha256sum", "md5sum", "cksum", "sort", "gzip", "wc", "ls", "date", "cat")
             if os.access("/usr/bin/" + p, os.X_OK)]
    src = os.path.join(d, "spin.c")
    with open(src, "w") as f:
        f.write(UNWIND_PROG)
    aarch64, fixed = os.path.join(d, "aarch64"), os.path.join(d, "fixed")
    for path, off, val in ((aarch64, 18, b"\xb7\x00"), (fixed, 16, b"\x02\x00")):
        shutil.copy("/usr/bin/true", path)
        with open(path, "r+b") as f:
            f.seek(off)
            f.write(val)
    n, last_cc, last_hostile, live, spin = 0, 0.0, 0.0, [], None
    while not stop.is_set():
        n += 1
        now = time.monotonic()
        if now - last_cc >= 1:
            last_cc = now
            exe = os.path.join(bins, "cc%d" % n)
            if run(["cc", "-O1", "-o", exe, "-DTAG=\"%d\"" % n, src], timeout=60)[0] == 0:
                run([exe], timeout=30)
                counts["compiled"] += 1
                spin = exe
        elif now - last_hostile >= 2:
            last_hostile = now
            cut = os.path.join(bins, "cut%d" % n)
            shutil.copy("/usr/bin/true", cut)
            os.chown(cut, NOBODY, NOBODY)
            if spin:
                run([spin, fixed, aarch64, "cut:" + cut], timeout=30)
                counts["hostile"] += 1
            os.unlink(cut)
        else:
            prog = progs[n % len(progs)]
            exe = os.path.join(bins, "%s-%d" % (prog, n))
            shutil.copy("/usr/bin/" + prog, exe)
            patch_build_id(exe)
            if n % 2:
                os.chown(exe, NOBODY, NOBODY)
            args = [exe, data] if prog in ("sha256sum", "md5sum", "cksum", "wc") else \
                   [exe, "-c", data] if prog == "gzip" else [exe, "--version"]
            with open(os.devnull, "wb") as null:
                subprocess.run(args, stdout=null, stderr=null, timeout=30)
            counts["copies"] += 1
            live.append(exe)
        while len(live) > 100:
            os.unlink(live.pop(0))
        for old in glob.glob(os.path.join(bins, "cc*")):
            if old != spin:
                os.unlink(old)
        stop.wait(0.03)


def plateau(samples, warm):
    """(spread after warm-up, growth of the last third's max over the middle third's)."""
    steady = [v for _, v in samples[warm:]]
    if not steady:
        return None, None
    third = max(1, len(steady) // 2)
    return max(steady) - min(steady), max(steady[third:]) - max(steady[:third])


def part_unwind(work):
    d = os.path.join(work, "unwind")
    out = os.path.join(d, "out")
    os.makedirs(out)
    conf = os.path.join(d, "conf")
    prom = os.path.join(d, "unwind.prom")
    write_conf(conf, "[output]\nrotate-interval=10s\nmax-files=3\n[service]\nmetrics-textfile=%s\n" % prom)
    total = UNWIND_MIN * 60
    step = max(5, min(15, total // 12))
    dm = Daemon(["-c", conf, "-o", out, "--socket", os.path.join(d, "sock"), "-F", str(UNWIND_HZ),
                 "--call-graph", "dwarf", "--unwind", "host"], os.path.join(d, "log"))
    stop = threading.Event()
    counts = {"copies": 0, "compiled": 0, "hostile": 0}
    churn = threading.Thread(target=unwind_churn, args=(d, stop, counts))
    rss, fds, problems, uw = [], [], [], {}
    alive, rc = False, None
    try:
        churn.start()
        t0 = time.monotonic()
        while time.monotonic() - t0 < total and dm.alive():
            stop.wait(step)
            r, f = rss_kib(dm.pid), fd_count(dm.pid)
            if r and f:
                t = time.monotonic() - t0
                rss.append((t, r))
                fds.append((t, f))
                _, st = status(os.path.join(d, "sock"))
                uw = (st or {}).get("unwind", {}) or uw
                log("unwind %.0fs: RSS %d KiB (anonymous %s), %d fds; unwinder: %s spaces, %s sessions, %s files "
                    "(%s through fds); %s" % (t, r, rss_kib(dm.pid, "RssAnon:"), f, uw.get("spaces"),
                                              uw.get("live_sessions"), uw.get("elves"), uw.get("elf_fds"), counts))
        alive = dm.alive()
        stop.set()
        churn.join()
        rc = dm.stop()
    finally:
        stop.set()
        if dm.alive():
            dm.stop(signal.SIGKILL)
    if not alive:
        problems.append("perfrecd died under the churn (see %s)" % os.path.join(d, "log"))
    elif rc != 0:
        problems.append("perfrecd exited %d" % rc)
    warm = max(1, len(rss) // 3)
    rss_spread, rss_growth = plateau(rss, warm)
    fd_spread, fd_growth = plateau(fds, warm)
    if rss_spread is None:
        problems.append("no samples after warm-up")
    else:
        if rss_growth > 4096:
            problems.append("RSS still rising after warm-up: +%d KiB in the last half" % rss_growth)
        # The unwinder holds at most 64 files through fds (the rest are mapped).
        if max(f for _, f in fds) > fds[0][1] + 64 + 16:
            problems.append("%d fds open (%d at start)" % (max(f for _, f in fds), fds[0][1]))
    pv = prom_values(prom)
    unwound, smp = int(pv.get("perfrecd_unwind_unwound_total", 0)), int(pv.get("perfrecd_unwind_samples_total", 0))
    if not smp or not unwound:
        problems.append("no samples unwound on the host (%d of %d)" % (unwound, smp))
    files = sorted(glob.glob(os.path.join(out, "*.data")))
    bad = 0
    for p in files[-1:]:
        prob, _ = check_file(p)
        if prob:
            bad += 1
            problems.append("%s: %s" % (os.path.basename(p), prob))
    figures = ("%d min at %d Hz, --call-graph dwarf --unwind host; %d copies of /usr/bin programs with fresh build ids "
               "(half owned by nobody), %d freshly compiled, %d mapping an ET_EXEC twice, an aarch64 ELF and a file "
               "truncated under it; RSS %s KiB at start, %s..%s after warm-up (%d s), %+d KiB in the last half; fds %s at "
               "start, %s..%s after warm-up, %+d in the last half; %d of %d samples unwound; unwinder at the end: "
               "%s processes known (%s forgotten), %s sessions (%s built, %s dropped for the bounds), %s files cached "
               "(%s through fds), %s refused; last file %s") % (
        UNWIND_MIN, UNWIND_HZ, counts["copies"], counts["compiled"], counts["hostile"],
        rss[0][1] if rss else "?", min(v for _, v in rss[warm:]) if rss[warm:] else "?",
        max(v for _, v in rss[warm:]) if rss[warm:] else "?", rss[warm - 1][0] if len(rss) >= warm else 0,
        rss_growth or 0, fds[0][1] if fds else "?", min(v for _, v in fds[warm:]) if fds[warm:] else "?",
        max(v for _, v in fds[warm:]) if fds[warm:] else "?", fd_growth or 0, unwound, smp,
        uw.get("spaces", "?"), uw.get("spaces_evicted", "?"), uw.get("live_sessions", "?"), uw.get("sessions", "?"),
        uw.get("sessions_evicted", "?"), uw.get("elves", "?"), uw.get("elf_fds", "?"), uw.get("elf_refused", "?"),
        "valid" if files and not bad else ("invalid" if files else "missing"))
    if not files:
        problems.append("no file published")
    return dict(part="unwind=host under a binary churn (%d min)" % UNWIND_MIN, trials=len(rss),
                failures=1 if problems or not alive else 0, figures=figures, problems=problems)

# ---------------------------------------------------------------- reload with off-CPU (issue 28 item 2)

RELOADS = env_int("TORTURE_RELOADS", 20)
BLOCKER = os.path.join(TOP, "tests", "e2e", "blocker")


def offcpu_samples(path, pid):
    """perf's offcpu-time samples of process @pid in @path, and whether the file declares the event."""
    _, hdr, _ = run(["perf", "report", "-i", path, "--header-only"])
    _, out, _ = run(["perf", "script", "-i", path, "-F", "event", "--pid", str(pid)])
    return out.count("offcpu-time"), "name = offcpu-time" in hdr


def voluntary_switches(pid):
    n = 0
    for st in glob.glob("/proc/%d/task/*/status" % pid):
        try:
            with open(st) as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        n = max(n, int(line.split()[1]))
        except OSError:
            pass
    return n


def count_in(path, text):
    try:
        with open(path, errors="replace") as f:
            return f.read().count(text)
    except OSError:
        return 0


def part_reload(work):
    """Reloads alternating the events (a reopen) and offcpu-min= (set in place)
    with offcpu=yes: every file after a reload must still hold the blocker's
    off-CPU samples (before issue 28 the first reopen lost BPF for good)."""
    name = "reload with offcpu=yes (%d reloads)" % RELOADS
    if not os.access(BLOCKER, os.X_OK):
        return dict(part=name, trials=0, failures=0, figures="SKIP: tests/e2e/blocker is not built", problems=[])
    if not os.access("/sys/kernel/btf/vmlinux", os.R_OK):
        return dict(part=name, trials=0, failures=0, figures="SKIP: the kernel has no BTF", problems=[])
    d = os.path.join(work, "reload")
    out = os.path.join(d, "out")
    os.makedirs(out)
    conf, sock, logpath = os.path.join(d, "conf"), os.path.join(d, "sock"), os.path.join(d, "log")

    # Odd reloads change offcpu-min= only (set in place), even ones the events too (a reopen).
    def conf_for(i):
        events = "cpu-clock" if (i // 2) % 2 == 0 else "cpu-clock,task-clock"
        write_conf(conf, "[record]\nevents=%s\nfrequency=%d\noffcpu=yes\noffcpu-min=%s\n"
                         "[output]\ndirectory=%s\nrotate-interval=0\n" % (
                             events, HZ, "0" if i % 2 == 0 else "1ms", out))
    conf_for(0)
    blk = subprocess.Popen([BLOCKER, "1000000", "20"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wl = workload(RELOADS * 30 + 120)
    dm = Daemon(["-c", conf, "-o", out, "--socket", sock, "-g"], logpath)
    problems, fig = [], dict(files=0, bad=0, no_offcpu=0, samples=0, refused=0, reopened=0, in_place=0, min_sample=None)
    failures = 0
    try:
        if not wait_for(lambda: count_in(logpath, "Recording ") or not dm.alive(), 60):
            problems.append("perfrecd did not start")
        if count_in(logpath, "off-CPU profiling is on") == 0:
            stop_proc(blk)
            dm.stop()
            return dict(part=name, trials=0, failures=0, figures="SKIP: BPF not usable here (%s)" % (
                open(logpath, errors="replace").read().strip().splitlines()[-1:] or ["?"])[0], problems=[])
        for i in range(1, RELOADS + 1):
            trial = []
            conf_for(i)
            n0 = count_in(logpath, "Configuration reloaded")
            r0 = count_in(logpath, "Reload refused")
            dm.p.send_signal(signal.SIGHUP)
            if not wait_for(lambda: count_in(logpath, "Configuration reloaded") > n0 or
                            count_in(logpath, "Reload refused") > r0 or not dm.alive(), 60):
                trial.append("no answer to the reload")
            if count_in(logpath, "Reload refused") > r0:
                fig["refused"] += 1
                trial.append("reload refused")
            v0 = voluntary_switches(blk.pid)
            wait_for(lambda: voluntary_switches(blk.pid) > v0 + 10, 30)
            nfiles = len(glob.glob(os.path.join(out, "*.data")))
            rc, _, err = run([PERFRECCTL, "--socket", sock, "rotate"], timeout=60)
            if rc != 0:
                trial.append("rotate failed: %s" % err.strip()[-100:])
            if not wait_for(lambda: len(glob.glob(os.path.join(out, "*.data"))) > nfiles, 60):
                trial.append("no file published")
            files = sorted(glob.glob(os.path.join(out, "*.data")))
            if files and not trial:
                f = files[-1]
                fig["files"] += 1
                prob, _ = check_file(f)
                if prob:
                    fig["bad"] += 1
                    trial.append("%s: %s" % (os.path.basename(f), prob))
                k, declared = offcpu_samples(f, blk.pid)
                fig["samples"] += k
                fig["min_sample"] = k if fig["min_sample"] is None else min(fig["min_sample"], k)
                if k == 0 or not declared:
                    fig["no_offcpu"] += 1
                    trial.append("%s: %d offcpu-time samples of the blocker%s" % (
                        os.path.basename(f), k, "" if declared else ", offcpu-time not declared"))
            if not dm.alive():
                trial.append("perfrecd died (exit %s)" % dm.p.returncode)
            if trial:
                failures += 1
                problems.append("reload %d: %s" % (i, "; ".join(trial[:4])))
            log("reload %d/%d%s" % (i, RELOADS, " FAIL" if trial else ""))
            if not dm.alive():
                break
        fig["reopened"] = count_in(logpath, "events reopened")
        fig["in_place"] = count_in(logpath, "off-CPU profiling now counts")
        if count_in(logpath, "off-CPU profiling is off"):
            failures += 1
            problems.append("perfrecd turned off-CPU profiling off")
        rc = dm.stop()
        if rc != 0:
            failures += 1
            problems.append("perfrecd exited %d" % rc)
    finally:
        stop_proc(blk)
        stop_proc(wl)
        if dm.alive():
            dm.stop(signal.SIGKILL)
    figures = ("%(reopened)d reloads reopened the events, %(in_place)d set offcpu-min= in the kept program; "
               "%(refused)d refused; %(files)d files after reloads (%(bad)d invalid), %(no_offcpu)d without "
               "the blocker's offcpu-time samples; %(samples)d such samples, at least %(min_sample)s a file") % fig
    return dict(part=name, trials=RELOADS, failures=failures, figures=figures, problems=problems)


# ---------------------------------------------------------------- start on a full disk (issue 28 item 4)

DISKSTARTS = env_int("TORTURE_DISKSTARTS", 10)


def fill(mnt):
    """Take every block of @mnt."""
    for i, bs in enumerate((65536, 4096, 512)):
        try:
            with open(os.path.join(mnt, "filler%d" % i), "wb") as f:
                while True:
                    f.write(b"\0" * bs)
                    f.flush()
        except OSError:
            pass


def part_diskstart(work):
    """Each cycle: a run killed with -9 leaves its .tmp, the disk is filled to
    the brim, perfrecd is started there, killed with -9 and started again
    (twice on the full disk), then space returns: the daemon must never
    exit, answer status while the disk is full, keep the leftovers, and
    publish valid files with the full disk's samples counted lost."""
    mnt = os.path.join(work, "diskstart")
    os.makedirs(mnt)
    name = "start on a full disk (tmpfs 2 MiB, %d cycles)" % DISKSTARTS
    if run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", mnt])[0] != 0:
        return dict(part=name, trials=0, failures=0, figures="SKIP: cannot mount a tmpfs", problems=[])
    conf = os.path.join(work, "diskstart.conf")
    write_conf(conf, "[record]\nflush-interval=100ms\n[output]\nmax-bytes=0\nmin-free=0\n")
    fig = dict(starts=0, exited=0, no_status=0, leftovers_lost=0, files=0, bad=0, recovered=0, dropped=0,
               no_loss=0, tmp_left=0)
    problems, failures = [], 0
    wl = workload(DISKSTARTS * 60 + 120)
    try:
        for c in range(DISKSTARTS):
            trial = []
            d = os.path.join(work, "diskstart-%03d" % c)
            os.makedirs(d)
            sock = os.path.join(d, "sock")
            dm = Daemon(["-c", conf, "-o", mnt, "--socket=", "-F", str(HZ), "-g"], os.path.join(d, "log0"))
            if not wait_for(lambda: any(os.path.getsize(p) > 4096 for p in glob.glob(os.path.join(mnt, "*.tmp"))) or
                            not dm.alive(), 60):
                trial.append("the first run wrote no .tmp")
            dm.stop(signal.SIGKILL)
            left = set(glob.glob(os.path.join(mnt, "*.data.tmp")))
            fill(mnt)
            for k in range(2):
                logpath = os.path.join(d, "log%d" % (k + 1))
                dm = Daemon(["-v", "-c", conf, "-o", mnt, "--socket", sock, "-F", str(HZ), "-g"], logpath)
                fig["starts"] += 1
                wait_for(lambda: count_in(logpath, "No space left") or not dm.alive(), 60)
                if not wait_for(lambda: status(sock)[1] is not None or not dm.alive(), 30) or not dm.alive():
                    fig["no_status"] += 1
                    trial.append("start %d on the full disk: %s" % (
                        k + 1, "exited %s" % dm.p.returncode if not dm.alive() else "status does not answer"))
                if not dm.alive():
                    fig["exited"] += 1
                    dm.stop()
                    break
                if k == 0:
                    dm.stop(signal.SIGKILL)
            lost = [p for p in left if not os.path.exists(p)]
            if lost:
                fig["leftovers_lost"] += len(lost)
                trial.append("the killed run's .tmp is gone on the full disk: %s" % " ".join(map(os.path.basename, lost)))
            # Space returns, for good: a 2 MiB disk would fill again in a second.
            for f in glob.glob(os.path.join(mnt, "filler*")):
                os.unlink(f)
            run(["mount", "-o", "remount,size=64m", mnt])
            if dm.alive():
                if not wait_for(lambda: count_in(logpath, "Recording again into") or not dm.alive(), 60):
                    trial.append("no file opened once space returned")
                wait_for(lambda: not any(os.path.exists(p) for p in left) or not dm.alive(), 60)
                run([PERFRECCTL, "--socket", sock, "rotate"], timeout=60)
                rc = dm.stop()
                if rc != 0:
                    fig["exited"] += 1
                    trial.append("perfrecd exited %d" % rc)
            tmps = glob.glob(os.path.join(mnt, "*.tmp"))
            if tmps:
                fig["tmp_left"] += len(tmps)
                trial.append(".tmp left once space returned: %s" % " ".join(map(os.path.basename, tmps)))
            dropped = 0
            for f in sorted(glob.glob(os.path.join(mnt, "*.data"))):
                fig["files"] += 1
                fig["recovered"] += f.endswith("-recovered.data")
                prob, _ = check_file(f)
                if prob:
                    fig["bad"] += 1
                    trial.append("%s: %s" % (os.path.basename(f), prob))
                m = manifest(f)
                if m is None:
                    trial.append("%s has no manifest" % os.path.basename(f))
                else:
                    dropped += int(m.get("dropped") or 0)
            fig["dropped"] += dropped
            if dropped == 0:
                fig["no_loss"] += 1
                trial.append("no manifest counts the samples of the full disk lost")
            for f in os.listdir(mnt):
                # the files, and the build-id cache kept beside them by default
                p = os.path.join(mnt, f)
                shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
            run(["mount", "-o", "remount,size=2m", mnt])
            if trial:
                failures += 1
                problems.append("cycle %d: %s" % (c, "; ".join(trial[:4])))
            log("diskstart cycle %d/%d%s" % (c + 1, DISKSTARTS, " FAIL" if trial else ""))
            if not os.environ.get("TORTURE_KEEP"):
                shutil.rmtree(d, ignore_errors=True)
    finally:
        stop_proc(wl)
        run(["umount", "-l", mnt])
    figures = ("%(starts)d starts on a full disk: %(exited)d exits, %(no_status)d without status; "
               "%(leftovers_lost)d killed runs' .tmp lost, %(tmp_left)d .tmp left after space returned; "
               "%(files)d files (%(recovered)d recovered, %(bad)d invalid); %(dropped)d samples counted "
               "dropped in manifests, %(no_loss)d cycles without") % fig
    return dict(part=name, trials=DISKSTARTS, failures=failures, figures=figures, problems=problems)

# ---------------------------------------------------------------- looking back

def cut_hole(path, err, leading=True):
    """The longest stretch of a cut's window without a sample (ns), or a
    problem string; without @leading, from its first sample on."""
    m = re.search(r"^perfrecctl cut: window (\S+) \.\. (\S+) ", err, re.M)
    if not m:
        return "no window line on stderr"
    rc, out, _ = run([PERFRECCTL, "dump", path])
    cd = re.search(r"wall clock (\d+) ns.*, clock (\d+) ns", out)
    if rc != 0 or not cd:
        return "no clock data"
    wall, clk = int(cd.group(1)), int(cd.group(2))

    def ns(s):
        d = datetime.datetime.strptime(s[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
        return int(d.timestamp()) * 10**9 + int(s[20:23]) * 10**6
    lo, hi = ns(m.group(1)), ns(m.group(2))
    rc, out, _ = run(["perf", "script", "-i", path, "-F", "time", "--ns"], timeout=300)
    ts = sorted(wall + int(a) * 10**9 + int(b) - clk
                for a, b in (x.strip().rstrip(":").split(".") for x in out.splitlines() if x.strip()))
    if rc != 0 or not ts:
        return "perf script found no samples"
    edges = ([lo] if leading else []) + ts + [hi]
    return max(edges[i + 1] - edges[i] for i in range(len(edges) - 1))


LEFTOVER = re.compile(r"earlier boot|writer is gone|^unreadable", re.M)


def lookback_client(d, sock, out, until, k, res, lock):
    """Cuts and listings in turn until @until; each result into @res."""
    rnd = random.Random(SEED + k)
    i = 0
    while time.monotonic() < until:
        i += 1
        # Paced (about 7 requests a second a client), so each cut can be checked after.
        time.sleep(rnd.uniform(0, 0.3))
        what = rnd.choice(["cut", "cut", "ls", "ls-json"])
        if what == "cut":
            o = os.path.join(d, "cut-%d-%d.data" % (k, i))
            back = rnd.choice(["-1s", "-2s", "-3s", "-1500ms"])
            rc, _, err = run([PERFRECCTL, "--socket", sock, "cut", "--from", back, "--to", "now", "-o", o, out],
                             timeout=120)
            with lock:
                res.append(("cut", o, rc, err))
        else:
            cmd = [PERFRECCTL, "ls"] + (["--json"] if what == "ls-json" else []) + [out]
            rc, text, err = run(cmd, timeout=60)
            with lock:
                res.append((what, None, rc, text + err))


def check_lookback(res):
    """(counts, worst hole, problems) of the clients' results."""
    n = dict(cut=0, whole=0, refused=0, ls=0, lead=0)
    worst, problems = 0, []
    for what, o, rc, text in res:
        if what != "cut":
            n["ls"] += 1
            if rc != 0:
                problems.append("ls exited %d: %s" % (rc, text.strip()[-200:]))
            elif LEFTOVER.search(text):
                line = [x for x in text.splitlines() if LEFTOVER.search(x)][0]
                problems.append("ls called a file of the live daemon a leftover: %s" % line[:300])
            elif what == "ls-json":
                files = json.loads(text)["files"]
                if any(f["in_progress"] and not f["being_written"] for f in files):
                    problems.append("ls --json: a .tmp not being written while the daemon writes")
            continue
        n["cut"] += 1
        if rc != 0:
            if "nothing written" not in text:
                problems.append("%s exited %d without saying what is missing: %s" % (
                    os.path.basename(o), rc, text.strip()[-200:]))
            elif glob.glob(o + "*"):
                problems.append("%s failed and left an output" % os.path.basename(o))
            n["refused"] += 1
            continue
        # The one gap a whole cut may name: before the oldest file kept
        # (retention removed it before the cut listed the directory).
        gaps = re.findall(r"gap in the window: .*", text)
        lead = bool(gaps) and all("before the oldest file kept" in g for g in gaps)
        if re.search(r"skipped|earlier boot|checkpointed", text) or (gaps and not lead):
            problems.append("%s exited 0 with a hole: %s" % (os.path.basename(o), text.strip()[-300:]))
            continue
        n["lead"] += lead
        hole = cut_hole(o, text, leading=not lead)
        if isinstance(hole, str):
            problems.append("%s: %s" % (os.path.basename(o), hole))
            continue
        worst = max(worst, hole)
        # A rotation's seam (1 s), with the 50 ms by which clock pairs differ.
        if hole >= 105 * 10**7:
            problems.append("%s exited 0 with %.3f s of its window without a sample" % (os.path.basename(o), hole / 1e9))
            continue
        n["whole"] += 1
    return n, worst, problems


def part_lookback(work):
    """Concurrent cuts reaching into the present and listings while perfrecd
    rotates every second (and on SIGUSR2 in between) with max-files=3."""
    d = os.path.join(work, "lookback")
    out = os.path.join(d, "out")
    os.makedirs(out)
    conf = os.path.join(d, "conf")
    sock = os.path.join(d, "sock")
    write_conf(conf, "[output]\nrotate-interval=1s\nmax-files=3\n")
    wl = workload(LOOKBACK_SEC + 120, 1)
    dm = Daemon(["-c", conf, "-o", out, "--socket", sock, "-F", str(min(HZ, 999))], os.path.join(d, "log"))
    res, lock, problems = [], threading.Lock(), []
    rnd = random.Random(SEED)
    storms = 0
    try:
        if not wait_for(lambda: len(glob.glob(os.path.join(out, "*.data"))) >= 3 or not dm.alive(), 60):
            problems.append("perfrecd published no 3 files within 60 s")
        until = time.monotonic() + LOOKBACK_SEC
        clients = [threading.Thread(target=lookback_client, args=(d, sock, out, until, k, res, lock))
                   for k in range(LOOKBACK_CLIENTS)]
        for t in clients:
            t.start()
        while time.monotonic() < until and dm.alive():
            time.sleep(rnd.uniform(0.1, 0.6))
            os.kill(dm.pid, signal.SIGUSR2)
            storms += 1
        for t in clients:
            t.join()
        alive = dm.alive()
        rc = dm.stop()
    finally:
        stop_proc(wl)
        if dm.alive():
            dm.stop(signal.SIGKILL)
    if not alive:
        problems.append("perfrecd died under the cuts")
    elif rc != 0:
        problems.append("perfrecd exited %d" % rc)
    n, worst, more = check_lookback(res)
    problems += more
    # Every tenth whole cut through perf and perfparser too.
    checked = 0
    for what, o, rc, _ in res[::10]:
        if what == "cut" and rc == 0 and os.path.exists(o):
            prob, _ = check_file(o)
            checked += 1
            if prob:
                problems.append("%s: %s" % (os.path.basename(o), prob))
    if n["cut"] and n["whole"] < n["cut"] // 2:
        problems.append("only %d of %d cuts whole" % (n["whole"], n["cut"]))
    figures = ("%d s, %d clients, rotate 1 s + %d SIGUSR2, max-files=3: %d cuts (%d whole, %d of them starting "
               "after a gap before the oldest file kept; %d refused naming the part missing; %d with a hole), "
               "worst stretch without a sample in a whole cut %.3f s; %d valid by perf and perfparser; "
               "%d listings, %d calling a live file a leftover") % (
        LOOKBACK_SEC, LOOKBACK_CLIENTS, storms, n["cut"], n["whole"], n["lead"], n["refused"],
        sum(1 for p in problems if "with a hole" in p or "without a sample" in p), worst / 1e9, checked,
        n["ls"], sum(1 for p in problems if "leftover" in p or "not being written" in p))
    return dict(part="cut and ls during rotation storms", trials=n["cut"] + n["ls"],
                failures=len(problems), figures=figures, problems=problems)


# ---------------------------------------------------------------- table

PARTS = {"kill": part_kill, "disk": part_disk, "abuse": part_abuse, "soak": part_soak}
PARTS["freeze"] = part_freeze
PARTS["unwind"] = part_unwind
PARTS.update({"reload": part_reload, "diskstart": part_diskstart})
PARTS["lookback"] = part_lookback


def table(rows):
    lines = ["| part | trials | failures | figures |", "| --- | ---: | ---: | --- |"]
    for r in rows:
        lines.append("| %s | %d | %d | %s |" % (r["part"], r["trials"], r["failures"], r["figures"]))
    return "\n".join(lines)


def update_readme(text):
    with open(README) as f:
        doc = f.read()
    marker = "## Results"
    head = doc.split(marker)[0].rstrip() + "\n\n"
    with open(README + ".tmp", "w") as f:
        f.write(head + marker + "\n\n" + text + "\n")
    os.replace(README + ".tmp", README)


def main():
    if os.geteuid() != 0:
        print("SKIP: the torture suite needs root (system-wide recording, tmpfs, setpriv)")
        return 77
    for tool in (PERFRECD, PERFRECCTL, WORKLOAD):
        if not os.access(tool, os.X_OK):
            print("%s is missing: run make all tests/e2e/workload first" % tool)
            return 2
    names = sys.argv[1:] or os.environ.get("TORTURE_PARTS", ",".join(PARTS)).split(",")
    for n in names:
        if n not in PARTS:
            print("unknown part %r (parts: %s)" % (n, ", ".join(PARTS)))
            return 2
    work = tempfile.mkdtemp(prefix="perfrec-torture.")
    log("work directory %s, seed %d" % (work, SEED))
    rows = []
    started = time.monotonic()
    try:
        for n in names:
            log("part %s" % n)
            rows.append(PARTS[n](work))
            r = rows[-1]
            log("%s: %d trials, %d failures" % (r["part"], r["trials"], r["failures"]))
    finally:
        if not os.environ.get("TORTURE_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
    rev = run(["git", "-C", TOP, "describe", "--always", "--dirty"])[1].strip()
    settings = ("TORTURE_KILLS=%d TORTURE_DISK_CYCLES=%d TORTURE_ABUSE_SEC=%d TORTURE_SOAK_MIN=%d "
                "TORTURE_HZ=%d TORTURE_SEED=%d") % (KILLS, DISK_CYCLES, ABUSE_SEC, SOAK_MIN, HZ, SEED)
    settings += " TORTURE_UNWIND_MIN=%d TORTURE_UNWIND_HZ=%d" % (UNWIND_MIN, UNWIND_HZ)
    text = ("Run of %s UTC on %s (%d CPUs), commit %s, %.0f min, parts %s:\n`%s`\n\n%s\n" % (
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), os.uname().release, os.cpu_count(), rev,
        (time.monotonic() - started) / 60, ",".join(names), settings, table(rows)))
    problems = [p for r in rows for p in r["problems"]]
    if problems:
        text += "\nFailures:\n\n" + "\n".join("- " + p for p in problems[:40]) + "\n"
    print()
    print(text)
    update_readme(text)
    failed = sum(r["failures"] for r in rows)
    print("torture: %d passed, %d failed" % (len(rows) - sum(1 for r in rows if r["failures"]),
                                            sum(1 for r in rows if r["failures"])))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
