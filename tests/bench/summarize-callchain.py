#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Summarizes tests/bench/callchain.sh's per-run CSV.  First a table of
# medians per rate and recorder (tool and mode), then issue 14's goals,
# each a ratio taken run by run (run N of one config against run N of the
# other, recorded within the same turn of the five configs) and its median:
#
#   host CPU          perfrecd --unwind host's CPU per sample against perf's
#                     whole cost of the same stacks: perf record --call-graph
#                     dwarf plus the perf report that unwinds its file (goal
#                     <= 0.5)
#   host bytes        bytes per sample against perf's raw DWARF file (goal
#                     <= 1/20)
#   lost at 1 kHz     samples lost by perf dwarf and perfrecd host (goal 0)
#   ctl unwind        perfrecctl unwind of perfrecd's raw file against
#                     perf report of the same file (CPU)
#   raw + ctl unwind  perfrecd dwarf's recording plus perfrecctl unwind,
#                     against perf's record plus report
#
# plus perfrecd/perf for -g and for raw DWARF alone.  Host rows that carry a
# note (host unwinding not available in this build) print the note instead.
# Usage: summarize-callchain.py RUNS.csv SUMMARY.csv
import csv
import math
import statistics
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
configs = [("perf", "fp"), ("perf", "dwarf"), ("perfrecd", "fp"), ("perfrecd", "dwarf"), ("perfrecd", "host")]
rates = sorted({int(r["rate"]) for r in rows})


def num(r, k):
    v = r.get(k, "")
    return float(v) if v not in ("", None) else None


def runs(tool, mode, rate):
    return {int(r["run"]): r for r in rows if r["tool"] == tool and r["mode"] == mode and int(r["rate"]) == rate}


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def per_sample(r, *keys):
    """Sum of the CPU columns @keys over the run's samples, in µs."""
    s = num(r, "samples")
    vals = [num(r, k) for k in keys]
    if not s or any(v is None for v in vals):
        return None
    return sum(vals) * 1e6 / s


def pairwise(a, b, fa, fb):
    """Median over the runs both have of fa(run of a) / fb(run of b)."""
    out = []
    for n in a:
        if n in b:
            x, y = fa(a[n]), fb(b[n])
            if x is not None and y:
                out.append(x / y)
    return med(out)


def fmt(v, f="%.2f"):
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f % v


NA = "host unwinding not available in this build"
hdr = ("Hz", "recorder", "samples", "CPU us/sample", "+report us/s", "+ctl unwind us/s", "B/sample",
       "lost (max)", "RSS KiB")
line = "{:>6}  {:<15} {:>8} {:>13} {:>13} {:>16} {:>9} {:>12} {:>8}"
print(line.format(*hdr))
for rate in rates:
    for tool, mode in configs:
        rr = runs(tool, mode, rate)
        if not rr:
            continue
        notes = {r["note"] for r in rr.values() if r.get("note")}
        name = "%s %s" % (tool, mode)
        if NA in notes:
            print("{:>6}  {:<15} {}".format(rate, name, NA))
            continue
        lost = [num(r, "samples_lost") for r in rr.values()]
        print(line.format(rate, name, fmt(med(num(r, "samples") for r in rr.values()), "%d"),
                          fmt(med(num(r, "cpu_us_per_sample") for r in rr.values())),
                          fmt(med(per_sample(r, "report_cpu_s") for r in rr.values())),
                          fmt(med(per_sample(r, "unwind_cpu_s") for r in rr.values())),
                          fmt(med(num(r, "bytes_per_sample") for r in rr.values()), "%.0f"),
                          "%s (%s)" % (fmt(med(lost), "%d"), fmt(max((v for v in lost if v is not None), default=None), "%d")),
                          fmt(med(num(r, "peak_rss_kib") for r in rr.values()), "%d"))
              + ("  (%s)" % "; ".join("run %s: %s" % (n, r["note"]) for n, r in sorted(rr.items()) if r.get("note"))
                 if notes else ""))
print("medians of %d runs; +report: perf report --stdio of the raw file, +ctl unwind: perfrecctl unwind of it"
      % max((int(r["run"]) for r in rows), default=0))
# A raw file that lost records may have lost the MMAP2/COMM of the
# workload too: its readers then stop unwinding at once, and their CPU per
# sample is not the cost of whole stacks.
lossy = sorted({(int(r["rate"]), r["tool"]) for r in rows
                if r["mode"] == "dwarf" and (num(r, "samples_lost") or num(r, "lost_records"))})
if lossy:
    print("lost records in raw DWARF files (%s): side-band records may be gone with them, and the readers' CPU "
          "per sample there is not that of whole stacks" % ", ".join("%s at %d Hz" % (t, r) for r, t in lossy))
for rate in rates:
    w = med(num(r, "with_callers_pct") for r in runs("perfrecd", "dwarf", rate).values())
    if w is not None:
        print("perfrecctl unwind found callers for %.1f%% of perfrecd's raw samples at %d Hz (median)" % (w, rate))

out = []


def goal(rate, name, value, target, cmp, what):
    met = None if value is None else (value <= target if cmp == "<=" else value == target)
    out.append({"rate": rate, "goal": name, "value": fmt(value, "%.4f"), "target": "%s %g" % (cmp, target),
                "met": {None: "-", True: "yes", False: "no"}[met], "what": what})


def info(rate, name, value, what):
    out.append({"rate": rate, "goal": name, "value": fmt(value, "%.4f"), "target": "", "met": "", "what": what})


for rate in rates:
    pf, pd = runs("perf", "fp", rate), runs("perf", "dwarf", rate)
    rf, rd, rh = runs("perfrecd", "fp", rate), runs("perfrecd", "dwarf", rate), runs("perfrecd", "host", rate)
    host_na = any(r.get("note") == NA for r in rh.values()) or not rh
    whole = lambda r: per_sample(r, "cpu_s", "report_cpu_s")
    if host_na:
        out.append({"rate": rate, "goal": "host_cpu_vs_perf_record_plus_report", "value": "", "target": "<= 0.5",
                    "met": "-", "what": NA})
        out.append({"rate": rate, "goal": "host_bytes_vs_perf_dwarf", "value": "", "target": "<= 0.05",
                    "met": "-", "what": NA})
    else:
        goal(rate, "host_cpu_vs_perf_record_plus_report",
             pairwise(rh, pd, lambda r: num(r, "cpu_us_per_sample"), whole), 0.5, "<=",
             "perfrecd --unwind host CPU/sample / (perf record --call-graph dwarf + perf report) CPU/sample")
        goal(rate, "host_bytes_vs_perf_dwarf",
             pairwise(rh, pd, lambda r: num(r, "bytes_per_sample"), lambda r: num(r, "bytes_per_sample")),
             0.05, "<=", "perfrecd --unwind host bytes/sample / perf raw DWARF bytes/sample")
    if rate == 1000:
        goal(rate, "perf_dwarf_lost_max", max((num(r, "samples_lost") or 0 for r in pd.values()), default=None),
             0, "==", "samples lost, worst run, perf --call-graph dwarf")
        if host_na:
            out.append({"rate": rate, "goal": "host_lost_max", "value": "", "target": "== 0", "met": "-", "what": NA})
        else:
            goal(rate, "host_lost_max", max((num(r, "samples_lost") or 0 for r in rh.values()), default=None),
                 0, "==", "samples lost, worst run, perfrecd --unwind host")
    # Not goals of the issue, but what can be had today and the parts' ratios.
    info(rate, "ctl_unwind_vs_perf_report_same_file",
         med([num(r, "unwind_cpu_s") / num(r, "report_cpu_s") for r in rd.values()
              if num(r, "unwind_cpu_s") is not None and num(r, "report_cpu_s")]),
         "perfrecctl unwind CPU / perf report CPU on the same perfrecd raw DWARF file")
    info(rate, "raw_plus_ctl_unwind_vs_perf_record_plus_report",
         pairwise(rd, pd, lambda r: per_sample(r, "cpu_s", "unwind_cpu_s"), whole),
         "(perfrecd dwarf + perfrecctl unwind) CPU/sample / (perf record dwarf + perf report) CPU/sample")
    info(rate, "unwound_bytes_vs_perf_dwarf",
         pairwise(rd, pd, lambda r: num(r, "unwound_bytes_per_sample"), lambda r: num(r, "bytes_per_sample")),
         "perfrecctl unwind output bytes/sample / perf raw DWARF bytes/sample")
    for mode, a, b in (("fp", rf, pf), ("dwarf", rd, pd)):
        for m in ("cpu_us_per_sample", "bytes_per_sample", "peak_rss_kib"):
            info(rate, "%s_%s_ratio" % (mode, m), pairwise(a, b, lambda r: num(r, m), lambda r: num(r, m)),
                 "perfrecd/perf, %s" % mode)

print()
print("{:>6}  {:<48} {:>8} {:>7} {:>4}".format("Hz", "ratio", "value", "goal", "met"))
for g in out:
    print("{:>6}  {:<48} {:>8} {:>7} {:>4}  {}".format(g["rate"], g["goal"], g["value"] or "-", g["target"],
                                                     g["met"], g["what"]))
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["rate", "goal", "value", "target", "met", "what"])
    w.writeheader()
    w.writerows(out)
