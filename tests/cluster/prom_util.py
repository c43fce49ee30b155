#!/usr/bin/env python3
"""Functions of tests/cluster/monitoring.sh (standard library only).

  prom_util.py targets KUBECTL_JSON_OPERATOR KUBECTL_JSON_PODS OUT
      file_sd targets for Prometheus from `kubectl get pods -o json` of the operator's pods and of
      every DDPJob's pods: each pod's container port named "metrics", with the labels the chart's
      ServiceMonitor and PodMonitor give (ddp_job, node_rank, namespace, pod). Debian's
      prometheus is built without Kubernetes service discovery; this is what it would find.
  prom_util.py panels DASHBOARD PROM_URL NAMESPACE JOB START END [ALLOWED_EMPTY_TITLE ...]
      every panel query of the dashboard, its variables set ($namespace, $job, $__rate_interval
      = 1m), as a range query over [START, END]; prints one line per query and exits 1 when one
      returned no sample at all (panels named in ALLOWED_EMPTY_TITLE may be empty: say why).
  prom_util.py value PROM_URL QUERY
      the first sample's value of an instant query, or nothing.
  prom_util.py up PROM_URL TARGETS_JSON
      every target of a file_sd file (the one `targets` wrote) has its series up == 1 now: prints
      "N of M targets up" and each that is not, exits 1 when one is not (or there is none).
  prom_util.py panel-value DASHBOARD PROM_URL NAMESPACE JOB TITLE
      the first query of the panel titled TITLE, its variables set as for `panels`, as an
      instant query: each series' value, one a line.
"""
import json
import os
import sys
import urllib.parse
import urllib.request


def targets(operator_json, pods_json, out):
    groups = []
    for path, job in ((operator_json, "ddp-operator"), (pods_json, "ddp-workers")):
        with open(path) as f:
            items = json.load(f).get("items", [])
        for pod in items:
            meta, spec, status = pod.get("metadata", {}), pod.get("spec", {}), pod.get("status", {})
            ip = status.get("podIP")
            if not ip or status.get("phase") != "Running":
                continue
            labels = meta.get("labels", {})
            for c in spec.get("containers", []):
                for p in c.get("ports", []):
                    if p.get("name") != "metrics":
                        continue
                    lab = {"job": job, "namespace": meta.get("namespace", ""), "pod": meta.get("name", "")}
                    if job == "ddp-workers":
                        lab["ddp_job"] = labels.get("ddp.dev/job-name", "")
                        if "ddp.dev/replica-index" in labels:
                            lab["node_rank"] = labels["ddp.dev/replica-index"]
                    groups.append({"targets": ["%s:%d" % (ip, p["containerPort"])], "labels": lab})
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(groups, f)
    os.replace(tmp, out)


def get(url, **params):
    with urllib.request.urlopen(url + "?" + urllib.parse.urlencode(params), timeout=30) as r:
        return json.load(r)


def expr_of(target, namespace, job):
    return (target.get("expr", "").replace("$__rate_interval", "1m")
            .replace("$namespace", namespace).replace("$job", job))


def panels(dashboard, prom, namespace, job, start, end, allowed):
    with open(dashboard) as f:
        d = json.load(f)
    empty = []
    for panel in d.get("panels", []):
        for t in panel.get("targets", []):
            expr = expr_of(t, namespace, job)
            if not expr:
                continue
            res = get(prom + "/api/v1/query_range", query=expr, start=start, end=end, step="5")
            n = sum(len(s.get("values", [])) for s in res.get("data", {}).get("result", []))
            title = panel.get("title", "?")
            ok = n > 0 or title in allowed
            print("%s %-40s %5d samples  %s" % ("ok   " if n > 0 else ("empty" if ok else "FAIL "), title[:40], n, expr))
            if not ok:
                empty.append(title)
    if empty:
        print("panels without data: " + ", ".join(sorted(set(empty))))
        return 1
    return 0


def value(prom, query):
    res = get(prom + "/api/v1/query", query=query).get("data", {}).get("result", [])
    if res:
        print(res[0]["value"][1])


def up(prom, targets_json):
    with open(targets_json) as f:
        want = [t for g in json.load(f) for t in g.get("targets", [])]
    res = get(prom + "/api/v1/query", query="up").get("data", {}).get("result", [])
    seen = {r["metric"].get("instance"): r["value"][1] for r in res}
    down = [t + " (up " + seen.get(t, "absent") + ")" for t in want if seen.get(t) != "1"]
    print("%d of %d targets up%s" % (len(want) - len(down), len(want),
                                      ": not " + ", ".join(down) if down else ""))
    return 1 if down or not want else 0


def panel_value(dashboard, prom, namespace, job, title):
    with open(dashboard) as f:
        d = json.load(f)
    for panel in d.get("panels", []):
        if panel.get("title") == title and panel.get("targets"):
            expr = expr_of(panel["targets"][0], namespace, job)
            for r in get(prom + "/api/v1/query", query=expr).get("data", {}).get("result", []):
                print(r["value"][1])
            return 0
    print("no panel titled %r" % title, file=sys.stderr)
    return 2


def main(argv):
    if argv[1] == "targets":
        targets(argv[2], argv[3], argv[4])
        return 0
    if argv[1] == "panels":
        return panels(argv[2], argv[3], argv[4], argv[5], argv[6], argv[7], set(argv[8:]))
    if argv[1] == "value":
        value(argv[2], argv[3])
        return 0
    if argv[1] == "up":
        return up(argv[2], argv[3])
    if argv[1] == "panel-value":
        return panel_value(argv[2], argv[3], argv[4], argv[5], argv[6])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
