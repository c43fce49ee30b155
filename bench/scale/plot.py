#!/usr/bin/python3
"""The scale bench's curves, from the CSV scale_bench appends (N,P,metric,value):
  /usr/bin/python3 bench/scale/plot.py results.csv bench/scale/scale.png
Needs Debian's python3-matplotlib (the bench's only extra; nothing in the build uses it)."""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    rows = {}
    with open(path) as f:
        for n, p, metric, value in csv.reader(f):
            rows.setdefault((int(p), metric), []).append((int(n), value))
    return rows


def series(rows, p, metric, part=0):
    """(N, float) points of `metric` for P = p; `part` picks one of 'a/b/c' values."""
    out = []
    for n, value in sorted(rows.get((p, metric), [])):
        try:
            out.append((n, float(value.split("/")[part])))
        except ValueError:
            pass
    return out


def main():
    rows = read(sys.argv[1])
    ps = sorted({p for p, _ in rows})
    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    panels = [
        ("first formation", [("formed_s", 0, "s")]),
        ("store requests a second per pod, steady", [("store_requests_per_pod_s", 0, "requests/s")]),
        ("the rendezvous pod's CPU, steady (cores)", [("rendezvous_cpu_cores", 0, "cores")]),
        ("a pod killed / frozen: decided", [("kill_one decided_s", 0, "killed"),
                                            ("freeze_one decided_s", 0, "frozen"),
                                            ("kill_1pct decided_s", 0, "1% killed")]),
        ("every survivor knew (p99, from the loss)", [("kill_one known_s p50/p99/max", 1, "killed"),
                                                      ("freeze_one known_s p50/p99/max", 1, "frozen"),
                                                      ("kill_1pct known_s p50/p99/max", 1, "1% killed")]),
        ("every survivor knew (p99, after the decision)",
         [("kill_one known_after_decision_s p99/max", 0, "killed"),
          ("freeze_one known_after_decision_s p99/max", 0, "frozen"),
          ("kill_1pct known_after_decision_s p99/max", 0, "1% killed")]),
    ]
    for ax, (title, metrics) in zip(axes.flat, panels):
        for p in ps:
            for metric, part, label in metrics:
                pts = series(rows, p, metric, part)
                if pts:
                    ax.plot([n for n, _ in pts], [v for _, v in pts], marker="o",
                            label=f"{label}, {p} trainer(s)/pod")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("pods")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=90)


if __name__ == "__main__":
    main()
