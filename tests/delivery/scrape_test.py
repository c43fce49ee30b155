#!/usr/bin/env python3
"""No series counted twice (docs-2026-12-06 N3): a real Prometheus scrapes an InPlace job's three
pods (two workers and the rendezvous pod, whose page ends with rank 0's whole page, as
worker/launch/rendezvous_pod.cc serves it) through the scrape configs users get:

  - examples/prometheus/prometheus.yaml as written, its kubernetes_sd_configs replaced by a
    file_sd file whose targets carry the __meta_kubernetes_* labels Kubernetes service discovery
    gives these pods, so every relabelling rule of the example runs;
  - the chart's PodMonitor (templates/podmonitor.yaml) as prometheus-operator turns it into a
    scrape config: its keep-by-port-name and namespace/pod rules, then the template's
    relabelings and metricRelabelings.

For each: the dashboard's "Ranks reporting" (count of ddp_worker_info) equals the ranks, a sum
over ranks equals the sum of the pages' values, and the rendezvous pod's own ddp_group_* series
are kept. Exit 77 (skip) without a prometheus binary.

  scrape_test.py SOURCE_DIR
"""
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import yaml

JOB, NS, RANKS = "j", "ml", 2
TOKENS = {0: 1000, 1: 2000}  # each rank's ddp_worker_tokens_total


def worker_page(rank):
    lab = f'job="{JOB}",rank="{rank}",local_rank="0",round="0"'
    return ("# HELP ddp_worker_info Static facts about this rank.\n"
            "# TYPE ddp_worker_info gauge\n"
            f"ddp_worker_info{{{lab},backend=\"gloo\"}} 1\n"
            "# HELP ddp_worker_tokens_total Tokens trained on.\n"
            "# TYPE ddp_worker_tokens_total counter\n"
            f"ddp_worker_tokens_total{{{lab}}} {TOKENS[rank]}\n")


def rendezvous_page():
    return ("# HELP ddp_group_world_size Ranks in the group's current generation.\n"
            "# TYPE ddp_group_world_size gauge\n"
            f'ddp_group_world_size{{job="{JOB}",round="0"}} {RANKS}\n' + worker_page(0))


def serve(page):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sd_targets(pods):
    """What kubernetes_sd_configs role: pod gives for each pod's container port."""
    groups = []
    for name, index, port in pods:
        labels = {"__meta_kubernetes_namespace": NS,
                  "__meta_kubernetes_pod_name": name,
                  "__meta_kubernetes_pod_label_ddp_dev_job_name": JOB,
                  "__meta_kubernetes_pod_container_port_name": "metrics"}
        if index is not None:
            labels["__meta_kubernetes_pod_label_ddp_dev_replica_index"] = str(index)
        groups.append({"targets": [f"127.0.0.1:{port}"], "labels": labels})
    return groups


def camel_to_snake(rule):
    out = {}
    for k, v in rule.items():
        out[re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), k)] = v
    return out


def podmonitor_endpoint(src):
    """The PodMonitor's first podMetricsEndpoint, its template directives taken out."""
    text = open(os.path.join(src, "charts/ddp-operator/templates/podmonitor.yaml")).read()
    lines = [l for l in text.splitlines() if not re.match(r"\s*\{\{-? ", l)]
    body = re.sub(r"\{\{[^}]*\}\}", "x", "\n".join(lines))
    return yaml.safe_load(body)["spec"]["podMetricsEndpoints"][0]


def podmonitor_scrape_config(ep, sd_file):
    # prometheus-operator's own rules for a PodMonitor endpoint with `port:`, then the user's.
    own = [{"source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": ep["port"],
            "action": "keep"},
           {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
           {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"}]
    return {"job_name": "podmonitor", "metrics_path": ep.get("path", "/metrics"),
            "file_sd_configs": [{"files": [sd_file], "refresh_interval": "1s"}],
            "relabel_configs": own + [camel_to_snake(r) for r in ep.get("relabelings", [])],
            "metric_relabel_configs": [camel_to_snake(r) for r in ep.get("metricRelabelings", [])]}


def query(prom, q):
    url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)["data"]["result"]


def main():
    src = sys.argv[1]
    prometheus = shutil.which("prometheus")
    if not prometheus:
        print("SKIP: no prometheus binary (scripts/install-deps.sh installs Debian's)")
        return 77
    servers = [serve(worker_page(0)), serve(worker_page(1)), serve(rendezvous_page())]
    pods = [(f"{JOB}-worker-0", 0, servers[0].server_address[1]),
            (f"{JOB}-worker-1", 1, servers[1].server_address[1]),
            (f"{JOB}-rendezvous", None, servers[2].server_address[1])]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sd_file = os.path.join(tmp, "pods.json")
        empty = os.path.join(tmp, "none.json")
        json.dump(sd_targets(pods), open(sd_file, "w"))
        json.dump([], open(empty, "w"))
        example = yaml.safe_load(open(os.path.join(src, "examples/prometheus/prometheus.yaml")))
        configs = []
        for sc in example["scrape_configs"]:
            sc.pop("kubernetes_sd_configs")
            files = [sd_file if sc["job_name"] == "ddp-workers" else empty]
            sc["file_sd_configs"] = [{"files": files, "refresh_interval": "1s"}]
            configs.append(sc)
        configs.append(podmonitor_scrape_config(podmonitor_endpoint(src), sd_file))
        config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                  "scrape_configs": configs}
        json.dump(config, open(os.path.join(tmp, "prometheus.yml"), "w"))
        port = free_port()
        prom = f"http://127.0.0.1:{port}"
        log = open(os.path.join(tmp, "prometheus.log"), "w")
        proc = subprocess.Popen([prometheus, "--config.file=" + os.path.join(tmp, "prometheus.yml"),
                                 "--storage.tsdb.path=" + os.path.join(tmp, "data"),
                                 "--web.listen-address=127.0.0.1:%d" % port],
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 60
            jobs = ("ddp-workers", "podmonitor")
            while True:
                try:
                    up = {j: query(prom, f'count(up{{job="{j}"}} == 1)') for j in jobs}
                    if all(r and float(r[0]["value"][1]) == 3 for r in up.values()):
                        break
                except OSError:
                    pass
                if time.time() > deadline or proc.poll() is not None:
                    log.flush()
                    print("FAIL: Prometheus did not scrape the three pods in 60 s:\n" +
                          open(os.path.join(tmp, "prometheus.log")).read()[-3000:])
                    return 1
                time.sleep(0.5)
            for j in jobs:
                ranks = query(prom, f'count by (ddp_job) (ddp_worker_info{{job="{j}"}})')
                got = [(r["metric"].get("ddp_job"), float(r["value"][1])) for r in ranks]
                if got != [(JOB, float(RANKS))]:
                    failures.append(f"{j}: ranks reporting {got}, want [({JOB!r}, {RANKS})]")
                tokens = query(prom, f'sum(ddp_worker_tokens_total{{job="{j}"}})')
                want = float(sum(TOKENS.values()))
                if not tokens or float(tokens[0]["value"][1]) != want:
                    failures.append(f"{j}: sum of tokens {tokens}, want {want}")
                group = query(prom, f'ddp_group_world_size{{job="{j}"}}')
                if [r["metric"].get("pod") for r in group] != [f"{JOB}-rendezvous"]:
                    failures.append(f"{j}: the rendezvous pod's own series: {group}")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            for s in servers:
                s.shutdown()
    for f in failures:
        print("FAIL:", f)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
