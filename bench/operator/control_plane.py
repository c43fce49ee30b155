"""A private Kubernetes control plane for the benchmark: etcd, kube-apiserver, kube-scheduler and
kube-controller-manager started from given binaries, on ports of their own, with certificates,
service-account keys and bearer tokens made here with openssl. No kubelet: hollow_nodes.py
stands in for it. Every process is started here and stopped here, by its pid.
"""
import json
import os
import signal
import ssl
import subprocess
import time
import urllib.request

# Ports apart from the cluster kit's (16443, 12379/12380, 20257, 20259, 10250).
PORTS = {"etcd": 22379, "etcd_peer": 22380, "api": 26443, "scheduler": 22259, "cm": 22257}
# One token per client, so the API server tells them apart (user name) in its logs.
CLIENTS = ["admin", "ddp-operator", "kube-scheduler", "kube-controller-manager", "hollow-nodes"]
# The node lifecycle controller and what it needs: the garbage collector (owner references),
# the namespace and service-account controllers (a namespace's default ServiceAccount, without
# which the API server admits no pod).
CONTROLLERS = "nodelifecycle,garbagecollector,namespace,serviceaccount,podgc"


def sh(*cmd, cwd=None):
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class ControlPlane:
    def __init__(self, bin_dir, work, etcd="etcd", grace="40s"):
        self.bin, self.work, self.etcd, self.grace = bin_dir, work, etcd, grace
        self.pki = os.path.join(work, "pki")
        self.logs = os.path.join(work, "logs")
        self.procs = {}  # name -> Popen, in start order
        self.server = "https://127.0.0.1:%d" % PORTS["api"]

    # --- certificates, keys, tokens, kubeconfigs ---
    def make_pki(self):
        os.makedirs(self.pki, exist_ok=True)
        os.makedirs(self.logs, exist_ok=True)
        p = self.pki
        sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
           "-days", "30", "-subj", "/CN=opscale-ca", cwd=p)
        sh("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "apiserver.key", "-out", "apiserver.csr",
           "-subj", "/CN=kube-apiserver", cwd=p)
        with open(os.path.join(p, "apiserver.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n")
        sh("openssl", "x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
           "-CAcreateserial", "-out", "apiserver.crt", "-days", "30", "-extfile", "apiserver.ext", cwd=p)
        sh("openssl", "genrsa", "-out", "sa.key", "2048", cwd=p)
        sh("openssl", "rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=p)
        with open(os.path.join(p, "tokens.csv"), "w") as f:
            for i, c in enumerate(CLIENTS):
                tok = os.urandom(16).hex()
                with open(os.path.join(p, c + ".token"), "w") as t:
                    t.write(tok + "\n")
                f.write('%s,%s,%d,"system:masters"\n' % (tok, c, 1000 + i))
                self.write_kubeconfig(c, tok)

    def token_file(self, client):
        return os.path.join(self.pki, client + ".token")

    def kubeconfig(self, client):
        return os.path.join(self.pki, client + ".kubeconfig")

    def write_kubeconfig(self, client, token):
        cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "opscale",
               "clusters": [{"name": "opscale", "cluster": {
                   "server": self.server, "certificate-authority": os.path.join(self.pki, "ca.crt")}}],
               "users": [{"name": client, "user": {"token": token}}],
               "contexts": [{"name": "opscale", "context": {"cluster": "opscale", "user": client,
                                                           "namespace": "default"}}]}
        with open(self.kubeconfig(client), "w") as f:
            json.dump(cfg, f, indent=1)  # JSON is YAML

    # --- processes ---
    def start(self, name, cmd):
        log = open(os.path.join(self.logs, name + ".log"), "w")
        self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        return self.procs[name]

    def stop_all(self):
        for name, p in reversed(list(self.procs.items())):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def wait(self, what, ok, secs):
        deadline = time.time() + secs
        while time.time() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited ({p.returncode}) while waiting for {what}: "
                                       f"see {self.logs}/{name}.log")
            try:
                if ok():
                    return
            except Exception:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{what}: not within {secs} s")

    def get(self, path, client="admin"):
        ctx = ssl.create_default_context(cafile=os.path.join(self.pki, "ca.crt"))
        tok = open(self.token_file(client)).read().strip()
        req = urllib.request.Request(self.server + path, headers={"Authorization": "Bearer " + tok})
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.read().decode()

    def up(self):
        self.make_pki()
        b, p, k = self.bin, self.pki, PORTS
        etcd_url = "http://127.0.0.1:%d" % k["etcd"]
        peer = "http://127.0.0.1:%d" % k["etcd_peer"]
        self.start("etcd", [self.etcd, "--name", "opscale", "--data-dir", os.path.join(self.work, "etcd"),
                            "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
                            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                            "--initial-cluster", "opscale=" + peer])
        self.wait("etcd healthy", lambda: urllib.request.urlopen(etcd_url + "/health", timeout=2), 60)
        self.start("kube-apiserver", [
            os.path.join(b, "kube-apiserver"), "--etcd-servers=" + etcd_url,
            "--bind-address=127.0.0.1", "--secure-port=%d" % k["api"], "--advertise-address=127.0.0.1",
            "--tls-cert-file=%s/apiserver.crt" % p, "--tls-private-key-file=%s/apiserver.key" % p,
            "--client-ca-file=%s/ca.crt" % p, "--token-auth-file=%s/tokens.csv" % p,
            "--service-account-key-file=%s/sa.pub" % p, "--service-account-signing-key-file=%s/sa.key" % p,
            "--service-account-issuer=https://kubernetes.default.svc", "--authorization-mode=RBAC",
            "--service-cluster-ip-range=10.96.0.0/24", "--endpoint-reconciler-type=none"])
        self.wait("kube-apiserver ready", lambda: self.get("/readyz") == "ok", 120)
        self.start("kube-scheduler", [
            os.path.join(b, "kube-scheduler"), "--kubeconfig=" + self.kubeconfig("kube-scheduler"),
            "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=%d" % k["scheduler"]])
        self.start("kube-controller-manager", [
            os.path.join(b, "kube-controller-manager"),
            "--kubeconfig=" + self.kubeconfig("kube-controller-manager"), "--leader-elect=false",
            "--controllers=" + CONTROLLERS, "--use-service-account-credentials=false",
            "--node-monitor-grace-period=" + self.grace,
            "--bind-address=127.0.0.1", "--secure-port=%d" % k["cm"]])
