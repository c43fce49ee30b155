#!/usr/bin/env python3
"""`make demo` builds what the demo runs and nothing else (docs-2026-12-06 U8: it built every
test, benchmark and fuzz target). Reads `make -n demo` (a dry run: nothing is installed, built or
run) and requires that every build command it issues names its targets, that they are exactly
the binaries the demo runs: ddp-operator (the command line) and ddp-worker (what
examples/local-demo.yaml's pods exec).

  make_demo_test.py SOURCE_DIR
"""
import re
import shlex
import subprocess
import sys
import tempfile


def main():
    src = sys.argv[1]
    with tempfile.TemporaryDirectory() as build:
        r = subprocess.run(["make", "-n", "-C", src, "demo", f"BUILD={build}"],
                           capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        print(f"make -n demo exited {r.returncode}:\n{r.stderr}")
        return 1
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    failures = []
    builds = [l for l in lines if re.match(r"\s*cmake\s+--build\b", l)]
    if not builds:
        failures.append("no `cmake --build` in make -n demo:\n" + r.stdout)
    built = set()
    for line in builds:
        words = shlex.split(line)
        if "--target" not in words:
            failures.append(f"builds every target: {line}")
            continue
        for w in words[words.index("--target") + 1:]:
            if w.startswith("-"):
                break
            built.add(w)
    demo_yaml = open(f"{src}/examples/local-demo.yaml").read()
    ran = [l for l in lines if re.search(r"/operator/ddp-operator\s+local\b", l)]
    wanted = {"ddp-operator"} | ({"ddp-worker"} if "exec ddp-worker" in demo_yaml else set())
    if not ran:
        failures.append("make -n demo runs no ddp-operator local:\n" + r.stdout)
    if builds and built != wanted:
        failures.append(f"targets built {sorted(built)}, the demo runs {sorted(wanted)}")
    for f in failures:
        print("FAIL:", f)
    print(f"make demo builds {sorted(built)}: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
