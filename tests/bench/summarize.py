#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Summarizes tests/bench/run.sh's per-run CSV: for each (compress, rate) the
# medians of perf's and perfrecd's runs, and the perfrecd/perf ratio of every
# metric taken pair by pair (run N of perfrecd against run N of perf, then the
# median of those ratios), since one run's timing alone is noise.  Prints the
# table and writes it as CSV.
import csv
import statistics
import sys

runs = list(csv.DictReader(open(sys.argv[1])))
metrics = ["cpu_us_per_msample", "peak_rss_kib", "bytes_per_sample", "samples", "lost", "lost_samples"]
out = []
keys = sorted({(r["compress"], int(r["rate"])) for r in runs})
for z, rate in keys:
    by = {t: {int(r["run"]): r for r in runs if r["tool"] == t and r["compress"] == z and int(r["rate"]) == rate}
          for t in ("perf", "perfrecd")}
    row = {"compress": z, "rate": rate,
           "effective_max_rate": min(int(r["effective_max_rate"]) for t in by for r in by[t].values())}
    for m in metrics:
        for t in by:
            vals = [float(r[m]) for r in by[t].values()]
            row[f"{t}_{m}"] = statistics.median(vals) if vals else 0
        ratios = [float(by["perfrecd"][n][m]) / float(by["perf"][n][m])
                  for n in by["perf"] if n in by["perfrecd"] and float(by["perf"][n][m]) > 0]
        row[f"ratio_{m}"] = statistics.median(ratios) if ratios else float("nan")
    out.append(row)

hdr = ("z", "Hz", "maxrate", "samples perf/ours", "CPU us/Msample perf / ours (ratio)",
       "RSS KiB perf / ours", "B/sample perf / ours", "LOST perf/ours", "LOST_S perf/ours")
fmt = "{:>1} {:>6} {:>7}  {:>17}  {:>34}  {:>19}  {:>17}  {:>14}  {:>14}"
print(fmt.format(*hdr))
for r in out:
    print(fmt.format(r["compress"], r["rate"], r["effective_max_rate"],
                     "%d/%d" % (r["perf_samples"], r["perfrecd_samples"]),
                     "%.0f / %.0f (%.2f)" % (r["perf_cpu_us_per_msample"], r["perfrecd_cpu_us_per_msample"],
                                             r["ratio_cpu_us_per_msample"]),
                     "%d / %d" % (r["perf_peak_rss_kib"], r["perfrecd_peak_rss_kib"]),
                     "%.0f / %.0f" % (r["perf_bytes_per_sample"], r["perfrecd_bytes_per_sample"]),
                     "%d/%d" % (r["perf_lost"], r["perfrecd_lost"]),
                     "%d/%d" % (r["perf_lost_samples"], r["perfrecd_lost_samples"])))
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(out[0].keys()) if out else ["rate"])
    w.writeheader()
    w.writerows(out)
