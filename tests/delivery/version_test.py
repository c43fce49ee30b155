#!/usr/bin/env python3
"""The release is written once, in CMakeLists.txt's project(VERSION); everything else that names
it is checked against it here:

  - `ddp-operator --version` and `ddp-worker --version` print "<binary> <version>" and exit 0
    (the binaries are the ones this build made; a worker path of "-" skips the worker, for
    -DDDP_BUILD_WORKER=OFF builds);
  - every dockerfiles/*.Dockerfile's final stage declares ARG DDP_VERSION=<version> and labels the
    image org.opencontainers.image.version="${DDP_VERSION}";
  - scripts/build-images.sh passes --build-arg DDP_VERSION=<version> and tags <version> by
    default (run against a fake docker that records its arguments);
  - the chart's appVersion.

  version_test.py SOURCE_DIR OPERATOR_BIN WORKER_BIN|-
"""
import os
import re
import subprocess
import sys
import tempfile

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)


def project_version(src):
    text = open(os.path.join(src, "CMakeLists.txt")).read()
    m = re.search(r"^project\(ddp VERSION (\d+\.\d+\.\d+) ", text, re.M)
    if not m:
        sys.exit("CMakeLists.txt: no project(ddp VERSION x.y.z ...)")
    return m.group(1)


def check_binary(path, name, version):
    r = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"{name} --version exited {r.returncode}: {r.stderr}")
    check(r.stdout == f"{name} {version}\n",
          f"{name} --version printed {r.stdout!r}, want {name + ' ' + version!r}")


def final_stage(text):
    """The instructions after the last FROM, continuation lines joined, comments dropped."""
    lines, cur = [], ""
    for raw in text.splitlines():
        if raw.lstrip().startswith("#"):
            continue
        cur += raw.rstrip("\\").strip() + " "
        if not raw.rstrip().endswith("\\"):
            if cur.strip():
                lines.append(cur.strip())
            cur = ""
    last = max(i for i, l in enumerate(lines) if l.upper().startswith("FROM "))
    return lines[last + 1:]


def check_dockerfiles(src, version):
    folder = os.path.join(src, "dockerfiles")
    files = sorted(f for f in os.listdir(folder) if f.endswith(".Dockerfile"))
    check(len(files) >= 3, f"dockerfiles/: {files}")
    for f in files:
        stage = final_stage(open(os.path.join(folder, f)).read())
        check(f"ARG DDP_VERSION={version}" in stage,
              f"dockerfiles/{f}: the final stage lacks ARG DDP_VERSION={version}")
        labels = " ".join(l for l in stage if l.upper().startswith("LABEL "))
        check('org.opencontainers.image.version="${DDP_VERSION}"' in labels,
              f"dockerfiles/{f}: no LABEL org.opencontainers.image.version=\"${{DDP_VERSION}}\"")


def check_build_script(src, version):
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "calls")
        fake = os.path.join(tmp, "docker")
        with open(fake, "w") as f:
            f.write(f'#!/bin/sh\necho "$*" >> "{log}"\nexit 0\n')
        os.chmod(fake, 0o755)
        env = dict(os.environ, PATH=tmp + os.pathsep + os.environ.get("PATH", ""),
                   BUILDER="docker", IMAGES="operator")
        env.pop("TAG", None)
        r = subprocess.run(["bash", os.path.join(src, "scripts/build-images.sh")], env=env,
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"build-images.sh with a fake docker exited {r.returncode}: "
                                 f"{r.stderr}")
        calls = open(log).read().splitlines() if os.path.exists(log) else []
        builds = [c for c in calls if c.startswith("build ")]
        check(len(builds) == 1, f"build-images.sh: docker calls {calls}")
        for b in builds:
            check(f"--build-arg DDP_VERSION={version}" in b, f"build-images.sh: {b}")
            check(f"-t ddp-operator:{version}" in b, f"build-images.sh: default tag in {b}")


def check_chart(src, version):
    text = open(os.path.join(src, "charts/ddp-operator/Chart.yaml")).read()
    m = re.search(r'^appVersion:\s*"?([^"\s]+)"?', text, re.M)
    check(m is not None and m.group(1) == version,
          f"Chart.yaml appVersion {m.group(1) if m else None}, CMakeLists.txt {version}")


def main():
    src, operator_bin, worker_bin = sys.argv[1:4]
    version = project_version(src)
    check_binary(operator_bin, "ddp-operator", version)
    if worker_bin != "-":
        check_binary(worker_bin, "ddp-worker", version)
    check_dockerfiles(src, version)
    check_build_script(src, version)
    check_chart(src, version)
    for f in failures:
        print("FAIL:", f)
    print(f"version {version}: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
