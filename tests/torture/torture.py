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
PERFRECD = os.path.join(TOP, "daemon", "perfrecd")
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
    write_conf(conf, "[record]\nflush-interval=100ms\n[output]\nrotate-size=1M\n"
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
