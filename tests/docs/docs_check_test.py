#!/usr/bin/env python3
"""Tests of docs_check.py itself: a doc that names a flag, subcommand, metric, env var, reason,
column, make target, example or RESULTS.md section that does not exist is caught, at its line;
the same doc with the real names passes. Each case writes a small tree (README.md, docs/,
examples/, the Makefile, bench/RESULTS.md) and checks it with the real binaries against the real
code, so a rename in the code without its doc reads exactly like these cases.

Usage: docs_check_test.py SOURCE_DIR OPERATOR_BIN [WORKER_BIN]
"""
import io
import os
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

SOURCE_DIR, OPERATOR = sys.argv[1], sys.argv[2]
WORKER = sys.argv[3] if len(sys.argv) > 3 else None
del sys.argv[1:]
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_check  # noqa: E402

RESULTS = "# Benchmark results\n\n## Worker: a measured thing (CPU)\n\n| a | b |\n|---|---|\n| 1 | 12 s |\n"
with open(os.path.join(SOURCE_DIR, "examples", "cpu-mlp.yaml"), encoding="utf-8") as _f:
    GOOD_EXAMPLE = _f.read()


class Tree:
    """A scratch root: README.md and docs/ as given, the real Makefile, a small RESULTS.md."""

    def __init__(self, readme="# x\n", docs=None, examples=None, code_root=None):
        self.dir = tempfile.mkdtemp(prefix="docs_check_test.")
        os.makedirs(os.path.join(self.dir, "docs"))
        os.makedirs(os.path.join(self.dir, "examples"))
        os.makedirs(os.path.join(self.dir, "bench"))
        shutil.copy(os.path.join(SOURCE_DIR, "Makefile"), self.dir)
        self.write("README.md", readme)
        self.write("bench/RESULTS.md", RESULTS)
        for name, text in (docs or {}).items():
            self.write("docs/" + name, text)
        for name, text in (examples or {}).items():
            self.write("examples/" + name, text)
        self.code_root = code_root or SOURCE_DIR

    def write(self, rel, text):
        with open(os.path.join(self.dir, rel), "w", encoding="utf-8") as f:
            f.write(text)

    def check(self, *files):
        out, err = io.StringIO(), io.StringIO()
        args = ["--root", self.dir, "--code-root", self.code_root, "--operator", OPERATOR]
        if WORKER:
            args += ["--worker", WORKER]
        args += [os.path.join(self.dir, f) for f in files]
        with redirect_stdout(out), redirect_stderr(err):
            code = docs_check.main(args)
        return code, out.getvalue().splitlines()

    def close(self):
        shutil.rmtree(self.dir)


class DocsCheckTest(unittest.TestCase):
    def run_doc(self, text, *, name="x.md", examples=None, code_root=None):
        t = Tree(docs={name: text}, examples=examples, code_root=code_root)
        try:
            files = ["docs/" + name] + ["examples/" + e for e in (examples or {})]
            return t.check(*files)
        finally:
            t.close()

    def assertFinding(self, findings, where, *words):
        hits = [f for f in findings if f.startswith(where) and all(w in f for w in words)]
        self.assertTrue(hits, "no finding at %s naming %s in:\n%s" % (where, words, "\n".join(findings)))

    def test_real_names_pass(self):
        doc = ("# Title\n\nRun it:\n\n```sh\nddp-operator render -f job.yaml --round 1 -o yaml\n"
               "ddp-operator local -f job.yaml --scale-at 300=3\nmake demo && make test\n"
               "make CMAKE_FLAGS=-DX=1 unit\n```\n\n"
               "The counter `ddp_worker_steps_total` and `ddp_operator_jobs{phase=\"Running\"}`; the "
               "env `DDP_CHECKPOINT_DIR` and `MASTER_ADDR`; the reason `MaxRestartsExceeded`; "
               "`kubectl get ddpj` shows `RESTARTS` and `STEP`.\n\n"
               "Measured on a laptop: 12 s ([bench/RESULTS.md](../bench/RESULTS.md#worker-a-measured-thing-cpu)).\n\n"
               "See [the top](#title).\n")
        code, findings = self.run_doc(doc)
        self.assertEqual(findings, [])
        self.assertEqual(code, 0)

    def test_a_flag_the_binary_lacks(self):
        code, findings = self.run_doc("x\n\n```sh\n# a comment\nddp-operator render -f job.yaml --bogus-flag\n```\n")
        self.assertEqual(code, 1)
        self.assertFinding(findings, "docs/x.md:5:", "--bogus-flag", "ddp-operator render --help")

    def test_a_flag_in_a_code_span_and_an_example_comment(self):
        code, findings = self.run_doc(
            "Run `ddp-operator local -f job.yaml --scale-at 3=1 --no-such-flag` here.\n",
            examples={"ok.yaml": "#   ddp-operator validate --strict -f x.yaml\n" + GOOD_EXAMPLE})
        self.assertFinding(findings, "docs/x.md:1:", "--no-such-flag", "local --help")
        self.assertFinding(findings, "examples/ok.yaml:1:", "--strict", "validate --help")

    def test_a_subcommand_that_does_not_exist(self):
        _, findings = self.run_doc("x\n\n```\nddp-operator lint -f job.yaml\n```\n")
        self.assertFinding(findings, "docs/x.md:4:", "lint", "no such subcommand")

    @unittest.skipIf(WORKER is None, "ddp-worker not built: its flags cannot be checked")
    def test_a_worker_flag_in_prose(self):
        _, findings = self.run_doc("Set `--batch-size 8` and `--batch-sizes 8`.\n")
        self.assertFinding(findings, "docs/x.md:1:", "--batch-sizes")
        self.assertFalse([f for f in findings if "--batch-size " in f or "`--batch-size 8`" in f], findings)

    def test_a_renamed_metric_env_var_and_reason(self):
        _, findings = self.run_doc("a\n\n`ddp_worker_steps_totl`\n\n`DDP_NO_SUCH_VAR=1` and `NoSuchReason`\n")
        self.assertFinding(findings, "docs/x.md:3:", "metric ddp_worker_steps_totl")
        self.assertFinding(findings, "docs/x.md:5:", "DDP_NO_SUCH_VAR")
        self.assertFinding(findings, "docs/x.md:5:", "NoSuchReason")

    def test_a_column_that_does_not_exist(self):
        _, findings = self.run_doc("- `kubectl get ddpj` shows `RESTARTS`.\n- `DISRUPTIONS` growing.\n")
        self.assertFinding(findings, "docs/x.md:2:", "DISRUPTIONS", "not a column")

    def test_a_make_target_and_variable_that_do_not_exist(self):
        _, findings = self.run_doc("`make demos` or `make NO_SUCH_VAR=1 test`\n")
        self.assertFinding(findings, "docs/x.md:1:", "no target demos")
        self.assertFinding(findings, "docs/x.md:1:", "NO_SUCH_VAR is not a variable")

    def test_a_measured_figure_needs_its_results_section(self):
        _, findings = self.run_doc("Para one.\n\nMeasured on a laptop: the heal took 0.53 s\n(bench/RESULTS.md).\n")
        self.assertFinding(findings, "docs/x.md:3:", "[figures]")
        _, findings = self.run_doc("It takes 4 s.\n\nMeasured here:\n\n| case | stall |\n|---|---|\n| a | 13 s |\n")
        self.assertFinding(findings, "docs/x.md:3:", "[figures]")
        _, findings = self.run_doc("The rate measured over two minutes of reads, every 10 s.\n")
        self.assertEqual(findings, [])

    def test_a_figure_the_cited_section_does_not_hold(self):
        link = "([bench/RESULTS.md](../bench/RESULTS.md#worker-a-measured-thing-cpu))"
        _, findings = self.run_doc("x\n\nMeasured on a laptop: 13 s %s.\n" % link)
        self.assertFinding(findings, "docs/x.md:3:", "[figures] 13 is in none")
        # The same section's figure, rounded to the quote's precision, passes; so does an
        # estimate ("about").
        _, findings = self.run_doc("x\n\nMeasured: 12.0 s, about 14 s in all %s.\n" % link)
        self.assertEqual(findings, [])

    def test_a_link_to_a_section_that_does_not_exist(self):
        _, findings = self.run_doc("x\n\nMeasured: 3 s ([RESULTS](../bench/RESULTS.md#no-such-section)).\n")
        self.assertFinding(findings, "docs/x.md:3:", "no heading with that anchor")
        _, findings = self.run_doc("[gone](gone.md) and [here](#nowhere)\n")
        self.assertFinding(findings, "docs/x.md:1:", "gone.md: no such file")
        self.assertFinding(findings, "docs/x.md:1:", "#nowhere")

    def test_an_example_that_is_gone_or_invalid(self):
        bad = GOOD_EXAMPLE.replace("replicas: 3", "replicas: -3")
        _, findings = self.run_doc("```sh\nddp-operator validate -f examples/gone.yaml\n"
                                   "ddp-operator render -f examples/bad.yaml\n```\n",
                                   examples={"bad.yaml": bad})
        self.assertFinding(findings, "docs/x.md:2:", "examples/gone.yaml: no such file")
        self.assertFinding(findings, "docs/x.md:3:", "render -f examples/bad.yaml` exits 1")
        self.assertFinding(findings, "examples/bad.yaml:1:", "validate` exits 1", "replicas")

    def test_a_path_that_does_not_exist(self):
        _, findings = self.run_doc("```sh\nkubectl apply -f examples/renamed.yaml\n```\n\n"
                                   "See `scripts/gen_crd_pod_template.py` and `docs/nowhere.md`.\n")
        self.assertFinding(findings, "docs/x.md:2:", "examples/renamed.yaml")
        self.assertFinding(findings, "docs/x.md:5:", "docs/nowhere.md")
        self.assertFalse([f for f in findings if "gen_crd_pod_template" in f], findings)

    def test_a_flag_the_parser_takes_and_the_help_omits(self):
        # A copy of the code whose validate parser accepts one more flag than its --help says.
        code_root = tempfile.mkdtemp(prefix="docs_check_code.")
        try:
            for d in ("operator", "crds"):
                shutil.copytree(os.path.join(SOURCE_DIR, d), os.path.join(code_root, d))
            for f in ("Makefile", "CMakeLists.txt"):
                shutil.copy(os.path.join(SOURCE_DIR, f), code_root)
            path = os.path.join(code_root, "operator", "cmd_validate.cc")
            with open(path, encoding="utf-8") as f:
                text = f.read().replace('arg == "--filename"', 'arg == "--filename" || arg == "--secret"')
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            t = Tree(code_root=code_root)
            try:
                _, findings = t.check()  # no file list: every rule, the help rule included
            finally:
                t.close()
            line = 1 + text[:text.index('"--secret"')].count("\n")
            self.assertFinding(findings, "operator/cmd_validate.cc:%d:" % line, "--secret", "synopsis")
        finally:
            shutil.rmtree(code_root)


if __name__ == "__main__":
    unittest.main(verbosity=2)
