#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Summarizes tests/bench/run.sh's per-run CSV: for each (compress, rate) the
# medians of perf's and perfrecd's runs, and the perfrecd/perf ratio of every
# metric taken pair by pair (run N of perfrecd against run N of perf, the two
# run back to back, then the median of those ratios), since one run's timing
# alone is noise.  Prints the table and writes it as CSV.
#
# cpu_s_per_msample is the recorder's own CPU seconds (user+sys) per million
# samples recorded; lost_records counts LOST/LOST_SAMPLES records,
# samples_lost the samples they say were dropped.
import csv
import math
import statistics
import sys

runs = list(csv.DictReader(open(sys.argv[1])))
metrics = ["cpu_s", "cpu_s_per_msample", "peak_rss_kib", "bytes_per_sample", "samples",
           "lost_records", "samples_lost"]
out = []
keys = sorted({(r["compress"], int(r["rate"])) for r in runs})
for z, rate in keys:
    by = {t: {int(r["run"]): r for r in runs if r["tool"] == t and r["compress"] == z and int(r["rate"]) == rate}
          for t in ("perf", "perfrecd")}
    allr = [r for t in by for r in by[t].values()]
    row = {"compress": z, "rate": rate, "ncpu": allr[0].get("ncpu", ""), "runs": len(by["perfrecd"]),
           "effective_max_rate": min(int(r["effective_max_rate"]) for r in allr)}
    for m in metrics:
        for t in by:
            vals = [float(r[m]) for r in by[t].values()]
            row[f"{t}_{m}"] = statistics.median(vals) if vals else 0
        ratios = [float(by["perfrecd"][n][m]) / float(by["perf"][n][m])
                  for n in by["perf"] if n in by["perfrecd"] and float(by["perf"][n][m]) > 0]
        row[f"ratio_{m}"] = statistics.median(ratios) if ratios else float("nan")
        if m == "samples_lost":
            # Worst run too: one run that loses is a miss even if the median does not.
            for t in by:
                row[f"{t}_max_{m}"] = max((int(float(r[m])) for r in by[t].values()), default=0)
    out.append(row)


def ratio(v):
    return "-" if math.isnan(v) else "%.2f" % v


hdr = ("z", "Hz", "CPUs", "samples perf/ours", "CPU s/Msample perf / ours = ratio",
       "CPU s perf / ours", "RSS KiB perf / ours", "B/sample perf / ours", "lost (max) perf / ours")
fmt = "{:>1} {:>6} {:>4}  {:>17}  {:>33}  {:>17}  {:>19}  {:>20}  {:>22}"
print(fmt.format(*hdr))
for r in out:
    print(fmt.format(r["compress"], r["rate"], r["ncpu"],
                     "%d/%d" % (r["perf_samples"], r["perfrecd_samples"]),
                     "%.2f / %.2f = %s" % (r["perf_cpu_s_per_msample"], r["perfrecd_cpu_s_per_msample"],
                                           ratio(r["ratio_cpu_s_per_msample"])),
                     "%.3f / %.3f" % (r["perf_cpu_s"], r["perfrecd_cpu_s"]),
                     "%d / %d" % (r["perf_peak_rss_kib"], r["perfrecd_peak_rss_kib"]),
                     "%.0f / %.0f" % (r["perf_bytes_per_sample"], r["perfrecd_bytes_per_sample"]),
                     "%d (%d) / %d (%d)" % (r["perf_samples_lost"], r["perf_max_samples_lost"],
                                            r["perfrecd_samples_lost"], r["perfrecd_max_samples_lost"])))
# Runs written before the secs column existed were all of 3 s.
secs = sorted({r.get("secs") or "3" for r in runs})
print("medians of %s runs of %s s; ratio = median of perfrecd/perf taken run by run" %
      (out[0]["runs"] if out else 0, "/".join(secs)))
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(out[0].keys()) if out else ["rate"])
    w.writeheader()
    w.writerows(out)
