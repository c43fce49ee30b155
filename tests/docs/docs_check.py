#!/usr/bin/env python3
"""Keeps README.md, docs/*.md and examples/ honest against the code and the built binaries.

Usage: docs_check.py --root SOURCE_DIR --operator BIN [--worker BIN] [--code-root DIR]
Prints one line per finding, `file:line: [rule] message`, and exits 1 when there is any.
--root holds README.md, docs/, examples/, bench/RESULTS.md and the Makefile; --code-root
(default: --root) holds the code the names are looked up in. Standard library only.

The conventions a doc follows (docs/README.md, "Conventions the docs test checks"):

1. commands. A command line of ours, in a fenced code block, an inline `code span` or an
   example's comment, starting with `ddp-operator`, `ddp-worker` or `make` (after any VAR=value
   prefix), is parsed: the subcommand must exist, and every flag must be listed by that
   subcommand's `--help` (the real binaries, run here). `ddp-operator validate|render -f PATH`
   with a PATH of this repository is run and must exit 0; `make` targets and VAR=value
   arguments must be the Makefile's. A span that is just a flag (`--scale-at`) must be a flag of
   one of our binaries, or of an external tool listed in EXTERNAL_FLAGS below.
2. help. Every flag a subcommand's parser compares against (operator/cmd_<name>.cc, or the
   source HELP_SOURCES names) is listed in the synopsis of its `--help` (the text before the
   first blank line).
3. examples. Every examples/*.yaml passes `ddp-operator validate`, and those holding a DDPJob
   pass `ddp-operator render`.
4. names. In backticks: a metric (`ddp_worker_...`, `ddp_operator_...`, `ddp_group_...`,
   `process_...`), an env var (`DDP_*`, `PET_*`, `MASTER_ADDR`, ...), a condition, reason or
   other CamelCase value (`MaxRestartsExceeded`, `InPlace`) must occur in the code (a quoted
   literal in C++, a word in charts/ and crds/; a DDP_* env var may also be a ddp-worker
   option's, from `ddp-worker --help`), unless it is an external name (EXTERNAL_NAMES). An
   upper-case `COLUMN` must be a printer column of crds/ddpjob.yaml.
5. figures. A paragraph (or table) that gives figures as measured (it says "measured", or cites
   bench/RESULTS.md) links the section of bench/RESULTS.md they come from:
   [bench/RESULTS.md](../bench/RESULTS.md#<heading-anchor>). Every link to RESULTS.md that has
   an anchor must name an existing heading (GitHub's anchors), and so must every relative link
   to a Markdown file of this repository.
Rules 6-11 live in docs_facts.py:
6. figures against RESULTS.md. Every figure (a number with a unit, or a decimal) of a paragraph
   or table that links a RESULTS.md section, or of any paragraph under a heading where one does,
   is a number of those sections, at the figure's precision (0.92 quotes 0.922).
7. the chart. A value in backticks or a comment of values.yaml whose first part is a top-level
   key of values.yaml (`networkPolicy.jobs`, `--set podMonitor.enabled=true`) is a path of it;
   `kubectl`/`helm` lines name the chart's objects as it renders them for release `ddp`
   (`deployment/ddp-ddp-operator`); `<release>-x` and `<fullname>-x` are names the chart makes.
8. positional words. A hyphenated word given to a `ddp-operator` subcommand (`kill-trainer`)
   is a word of its --help.
9. quoted log lines. A quoted line that starts as the binaries' lines do (`rank 0: ...`,
   `ml/mingpt: round ...`, `ddp-operator local: ...`) has each constant piece, between its
   numbers, names and placeholders, in one string literal of the code.
10. YAML. A yaml block holding a DDPJob (or starting at `spec:`) has no field its CRD does not
   declare (`ddp-operator validate`'s strict field check).
11. columns. `kubectl get ddpj  # NAME PHASE ...` lists the columns kubectl prints, in order;
   the upper-case words of an example comment on `kubectl get ddpj` are columns, and an env var
   an example comment names is in the code.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

sys.dont_write_bytecode = True  # nothing written into the source tree
from docs_markdown import LINK_RE, SPAN_RE, anchors_of, blocks, read, spans  # noqa: E402
import docs_facts as facts  # noqa: E402

# Flags of tools that are not ours (kubectl, helm, kind, torchrun, podman, ctest, cmake), which
# docs quote in prose. A flag of ours must never be added here.
EXTERNAL_FLAGS = {
    "--server-side", "--force-conflicts", "--validate", "--dry-run", "--force", "--for",
    "--context", "--replicas", "--type", "--set", "--reuse-values", "--create-namespace",
    "--namespace", "--name", "--redirects", "--tee", "--nproc_per_node", "--nproc-per-node",
    "--max_restarts", "--max-restarts", "--nnodes", "--node_rank", "--master_addr",
    "--master_port", "--rdzv_backend", "--rdzv-backend", "--standalone", "--network",
    "--output-on-failure", "--grace-period", "--check", "--schema", "--build-arg",
    "--allow-shlib-undefined",
}

# Names that are Kubernetes', Helm's, PyTorch's or a scheduler's, not this project's.
EXTERNAL_NAMES = {
    "ReadWriteMany", "ReadWriteOnce", "ReadOnlyMany", "PodTemplateSpec", "NetworkPolicy",
    "NoSchedule", "NoExecute", "IfNotPresent", "Always", "OOMKilled", "Evicted", "Preempted",
    "NotReady", "Inqueue", "PreScheduling", "Scheduling", "Recreate", "RollingUpdate",
    "DisruptionTarget", "Terminating", "Unknown", "ClusterRole", "ClusterIP", "PodGroup",
    "RuntimeDefault", "OnRootMismatch", "PodMonitor", "ServiceMonitor", "Workload",
    "DistributedDataParallel", "TCPStore", "LocalQueue", "ClusterQueue", "Memory",
    "NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_ROOT", "CUDA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS", "KUBECONFIG", "CUDA_VERSION", "TORCH_VERSION", "TORCH_INDEX",
    "HOME", "PATH",
}

# Where each subcommand's parser lives, and the patterns that name the flags it accepts.
IF_CHAIN = [re.compile(r'arg == "(--?[a-z][a-z0-9-]*)"')]   # the if-chains of cmd_*.cc
RUN_TABLE = [re.compile(r'^\s*\{"([a-z][a-z0-9-]+)",', re.M),  # the run flags' table
             re.compile(r'name == "([a-z][a-z0-9-]+)"')]       # and its boolean flags
# Parsers that are not in their subcommand's operator/cmd_<name>.cc; every cmd_*.cc is read with
# IF_CHAIN for the subcommand it registers (RegisterCommand({"name", ...})).
HELP_SOURCES = {
    ("ddp-operator", "run"): ("operator/controller/controller_flags.cc", RUN_TABLE),
}
REGISTER_RE = re.compile(r'RegisterCommand\(\s*\{\s*"([a-z][a-z-]*)"')

CODE_DIRS = ["operator", "worker", "common", "charts", "crds", "scripts", "dockerfiles"]
CODE_EXTS = (".cc", ".h", ".py", ".sh", ".yaml", ".yml", ".json", ".tpl", ".txt", ".Dockerfile")
FLAG_RE = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
METRIC_RE = re.compile(r"^((?:ddp_(?:operator|worker|group|job)|process)_[a-z0-9_]+)(?:\{[^}]*\})?(?:\s.*)?$")
ENV_RE = re.compile(r"^([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?:=.*)?$")
ENV_OURS = re.compile(r"^(DDP_|PET_|TORCHELASTIC_|MASTER_|LOCAL_|NODE_RANK$|RANK$|WORLD_SIZE$|NNODES$|NPROC_PER_NODE$)")
# A path of this repository named in a span or a command: it must exist.
PATH_RE = re.compile(r"(?<![\w./-])((?:examples|docs|scripts|charts|crds|dockerfiles|bench|tests|"
                     r"operator|worker|common|fuzz|third_party)/[\w./-]*[\w/])(?![\w.*<…-])")
CAMEL_RE = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)*$")
COLUMN_RE = re.compile(r"^[A-Z]{3,}(?: [A-Z]{3,})?$")
# A claim of measurement: "Measured ...", "measured on/in/with/at/by ...", "measured:", "a real
# run", or a citation of RESULTS.md ("the rate measured over two minutes" is no claim).
MEASURED_RE = re.compile(r"\bMeasured\b|\bmeasured(?:\s+(?:on|in|with|at|by|here)\b|:)|"
                         r"\ba real run\b|RESULTS\.md")
# A figure: a number with a unit, or a decimal ("2e-6", "0.125"); "rank 0" is none.
NUMBER_RE = re.compile(
    r"(?<![\w.#/-])(?:\d+(?:[.,]\d+)*(?:e-?\d+)?\s?(?:s|ms|us|µs|min|minutes?|seconds?|hours?|"
    r"[KMG]i?B|MB/s|GB/s|bytes|%|x|qps|steps?/s|tok/s)(?![\w])|\d+\.\d+|\d+e-\d+)")


WORD_RE = re.compile(r"\w+")
STRING_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_CODE_CACHE = {}  # code root -> Checker.code_names()
_HELP_CACHE = {}  # (binary, args) -> output


class Findings:
    def __init__(self):
        self.items = []

    def add(self, path, line, rule, msg):
        self.items.append("%s:%d: [%s] %s" % (path, line, rule, msg))


def run(args, timeout=60):
    if tuple(args) in _HELP_CACHE:
        return _HELP_CACHE[tuple(args)]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                       universal_newlines=True)
    if args[-1] == "--help":
        _HELP_CACHE[tuple(args)] = (p.returncode, p.stdout)
    return p.returncode, p.stdout


# ---------------------------------------------------------------- what the binaries say


class Binaries:
    def __init__(self, operator, worker):
        self.operator, self.worker = operator, worker
        self.help = {}  # (binary, sub or "") -> help text
        code, out = run([operator, "--help"])
        self.help[("ddp-operator", "")] = out
        self.subcommands = re.findall(r"^  ([a-z][a-z-]*)\s", out, re.M)
        for sub in self.subcommands:
            self.help[("ddp-operator", sub)] = run([operator, sub, "--help"])[1]
        if worker:
            self.help[("ddp-worker", "")] = run([worker, "--help"])[1]

    def flags(self, binary, sub=""):
        text = self.help.get((binary, sub))
        if text is None:
            return None
        return {f for f in FLAG_RE.findall(text)}

    def all_flags(self):
        out = set()
        for text in self.help.values():
            out |= set(FLAG_RE.findall(text))
        return out

    def worker_env(self):
        return set(re.findall(r"\b(DDP_[A-Z0-9_]+)\b", self.help.get(("ddp-worker", ""), "")))


# ---------------------------------------------------------------- rule 1: commands


class Checker:
    def __init__(self, root, code_root, bins, findings):
        self.root, self.code_root, self.bins, self.f = root, code_root, bins, findings
        self.make_targets, self.make_vars = self._makefile()
        self.ran = {}
        self.known_flags = bins.all_flags()
        self._cache = {}

    def cached(self, key, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def results(self):
        return self.cached("results", lambda: facts.results_sections(self.root))

    def chart_values(self):
        return self.cached("values", lambda: facts.chart_values(self.code_root))

    def chart_objects(self):
        return self.cached("objects", lambda: facts.chart_object_names(self.code_root))

    def code_words(self):
        return self.cached("code_words", lambda: facts.code_words(self.code_root))

    def columns(self):
        return self.cached("columns", lambda: facts.default_columns(self.code_root))

    def rel(self, path):
        return os.path.relpath(path, self.root)

    def _makefile(self):
        text = read(os.path.join(self.root, "Makefile"))
        targets = set()
        for m in re.finditer(r"^([A-Za-z][\w .-]*?)\s*:(?!=)", text, re.M):
            targets |= set(m.group(1).split())
        for m in re.finditer(r"^\.PHONY:(.*)$", text, re.M):
            targets |= set(m.group(1).split())
        variables = set(re.findall(r"^([A-Z_][A-Z0-9_]*)\s*[?:+]?=", text, re.M))
        return targets, variables

    def commands_in(self, text, comments):
        """Splits a shell line into the simple commands of ours it holds (token lists)."""
        lex = shlex.shlex(text, posix=True, punctuation_chars=";&|")
        lex.whitespace_split = True
        lex.commenters = "#" if comments else ""
        try:
            tokens = list(lex)
        except ValueError:
            return []
        out, cur = [], []
        for t in tokens + [";"]:
            if t and set(t) <= set(";&|"):
                if cur:
                    out.append(cur)
                cur = []
            else:
                cur.append(t)
        result = []
        for cmd in out:
            while cmd and re.match(r"^[A-Z_][A-Z0-9_]*=", cmd[0]):
                cmd = cmd[1:]
            if cmd and (os.path.basename(cmd[0]) in ("ddp-operator", "ddp-worker") or cmd[0] == "make"):
                result.append(cmd)
        return result

    def check_command(self, path, line, cmd):
        where = self.rel(path)
        name = os.path.basename(cmd[0])
        if name == "make":
            return self.check_make(where, line, cmd)
        args = cmd[1:]
        sub = ""
        if name == "ddp-operator" and args and not args[0].startswith("-"):
            sub = args.pop(0)
            if "<" in sub or sub.endswith(":"):
                return  # a placeholder, or a line of output ("ddp-operator local: job ...")
            if sub not in self.bins.subcommands and sub != "help":
                self.f.add(where, line, "commands",
                           "`ddp-operator %s`: no such subcommand (ddp-operator --help lists %s)"
                           % (sub, ", ".join(self.bins.subcommands)))
                return
        if name == "ddp-worker":
            if self.bins.flags("ddp-worker") is None:
                return  # worker not built
            if args and args[0] in ("launch", "rendezvous"):
                args.pop(0)
        facts.check_positionals(self, where, line, cmd, sub)
        known = self.bins.flags(name, "" if sub == "help" else sub)
        label = "%s%s --help" % (name, " " + sub if sub and sub != "help" else "")
        i = 0
        while i < len(args):
            a = args[i]
            if a.startswith("-") and a != "-" and "<" not in a:
                flag = a.split("=", 1)[0]
                if flag not in known and flag not in ("-h", "--help"):
                    self.f.add(where, line, "commands",
                               "`%s`: flag %s is not in `%s`" % (" ".join(cmd), flag, label))
                if flag in ("-f", "--filename") and "=" not in a and i + 1 < len(args):
                    self.check_manifest_arg(where, line, sub, args[i + 1])
            i += 1

    def check_manifest_arg(self, where, line, sub, value):
        top = value.split("/", 1)[0]
        if "/" not in value or "<" in value or not os.path.isdir(os.path.join(self.root, top)):
            return  # a placeholder (job.yaml) or stdin
        full = os.path.join(self.root, value)
        if not os.path.isfile(full):
            self.f.add(where, line, "commands", "%s: no such file in the repository" % value)
            return
        if sub in ("validate", "render"):
            code, out = self.run_operator(sub, full)
            if code != 0:
                self.f.add(where, line, "commands", "`ddp-operator %s -f %s` exits %d: %s"
                           % (sub, value, code, "; ".join(out.strip().splitlines()[-3:])))

    def run_operator(self, sub, path):
        key = (sub, path)
        if key not in self.ran:
            self.ran[key] = run([self.bins.operator, sub, "-f", path])
        return self.ran[key]

    def check_make(self, where, line, cmd):
        for a in cmd[1:]:
            if a.startswith("-"):
                continue
            if "=" in a:
                var = a.split("=", 1)[0]
                if var not in self.make_vars:
                    self.f.add(where, line, "commands", "`%s`: %s is not a variable of the Makefile"
                               % (" ".join(cmd), var))
            elif "<" not in a and a not in self.make_targets:
                self.f.add(where, line, "commands", "`%s`: no target %s in the Makefile"
                           % (" ".join(cmd), a))

    def check_loose_flag(self, where, line, span):
        if self.bins.worker is None:
            return  # without ddp-worker's --help a flag cannot be placed
        flag = span.split()[0].split("=", 1)[0]
        if not re.match(r"^--[a-z][\w-]*$", flag):
            return
        if flag in self.known_flags or flag in EXTERNAL_FLAGS:
            return
        self.f.add(where, line, "commands", "`%s`: %s is a flag of none of ddp-operator's or "
                   "ddp-worker's --help (an external tool's belongs in EXTERNAL_FLAGS)" % (span, flag))

    # ------------------------------------------------------------ rule 4: names

    def code_names(self):
        """(every word of the code, the words inside its string literals and YAML/JSON files)."""
        if self.code_root not in _CODE_CACHE:
            words, quoted = set(), set()
            paths = [os.path.join(self.code_root, f) for f in ("Makefile", "CMakeLists.txt")]
            for d in CODE_DIRS:
                for dirpath, _, files in os.walk(os.path.join(self.code_root, d)):
                    paths += [os.path.join(dirpath, fn) for fn in files
                              if fn.endswith(CODE_EXTS) or fn in ("Makefile", "CMakeLists.txt")]
            for path in paths:
                if not os.path.isfile(path):
                    continue
                text = read(path)
                words.update(WORD_RE.findall(text))
                if path.endswith((".yaml", ".yml", ".json", ".tpl")):
                    quoted.update(WORD_RE.findall(text))
                else:
                    for lit in STRING_RE.findall(text):
                        quoted.update(WORD_RE.findall(lit))
            _CODE_CACHE[self.code_root] = (words, quoted)
        return _CODE_CACHE[self.code_root]

    def in_code(self, name, quoted):
        words, literals = self.code_names()
        return name in (literals if quoted else words)

    def printer_columns(self):
        text = read(os.path.join(self.code_root, "crds", "ddpjob.yaml"))
        m = re.search(r"additionalPrinterColumns:(.*?)\n\s*(?:schema|name: v|subresources):", text, re.S)
        return {c.strip().upper() for c in re.findall(r"- name: ([^\n]+)", m.group(1) if m else "")}

    def check_name(self, where, line, span, columns, worker_env, about_columns):
        m = METRIC_RE.match(span)
        if m and "*" not in span:
            name = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
            if not (self.in_code(name, False) or self.in_code(m.group(1), False)):
                self.f.add(where, line, "names", "metric %s is not in the code" % m.group(1))
            return
        m = ENV_RE.match(span)
        if m:
            name = m.group(1)
            if ENV_OURS.match(name) and name not in EXTERNAL_NAMES and name not in worker_env \
                    and not self.in_code(name, False):
                self.f.add(where, line, "names", "env var %s is not in the code" % name)
            return
        if CAMEL_RE.match(span) and len(span) >= 4 and span not in EXTERNAL_NAMES:
            if not self.in_code(span, True):
                self.f.add(where, line, "names", "`%s` (a reason, condition or value) is not in "
                           "the code" % span)
            return
        if about_columns and COLUMN_RE.match(span) and span not in columns:
            self.f.add(where, line, "names", "`%s` is not a column of `kubectl get ddpj` "
                       "(crds/ddpjob.yaml: %s)" % (span, ", ".join(sorted(columns))))

    # ------------------------------------------------------------ rule 5: figures and links

    def check_paths(self, where, line, text):
        for m in PATH_RE.finditer(text):
            rel = m.group(1).rstrip("/")
            if not os.path.exists(os.path.join(self.root, rel)) and \
                    not os.path.exists(os.path.join(self.code_root, rel)):
                self.f.add(where, line, "paths", "%s: no such file or directory in the repository"
                           % rel)

    def check_links(self, path, block):
        text = "\n".join(t for _, t in block)
        # A link written inside a code span is an example, not a link.
        masked = SPAN_RE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
        for m in LINK_RE.finditer(masked):
            line = block[0][0] + masked.count("\n", 0, m.start())
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(full):
                self.f.add(self.rel(path), line, "links", "link %s: no such file" % target)
                continue
            if anchor and full.endswith(".md") and anchor not in anchors_of(full):
                self.f.add(self.rel(path), line, "links", "link %s: %s has no heading with "
                           "that anchor" % (target, self.rel(full)))

    def check_figures(self, path, block):
        text = "\n".join(t for _, t in block)
        no_links = LINK_RE.sub(lambda m: " RESULTS.md " if "RESULTS.md" in m.group(1) else " ", text)
        prose = SPAN_RE.sub(" ", no_links)  # figures in code spans are commands, not claims
        if not MEASURED_RE.search(no_links) or not NUMBER_RE.search(prose):
            return
        if re.search(r"RESULTS\.md#[\w-]+", text):
            return
        self.f.add(self.rel(path), block[0][0], "figures",
                   "figures given as measured without a link to their section of bench/RESULTS.md "
                   "([bench/RESULTS.md](<path>/bench/RESULTS.md#<heading>)): \"%s\""
                   % " ".join(prose.split())[:100])

    # ------------------------------------------------------------ the files

    def check_markdown(self, path):
        where = self.rel(path)
        columns, worker_env = self.printer_columns(), self.bins.worker_env()
        anchors_at = facts.section_results_anchors(path)
        # A table right after a paragraph is that paragraph's ("Measured on ...:" then the rows).
        unit = []
        for kind, block in blocks(path):
            is_table = kind == "text" and all(t.lstrip().startswith("|") for _, t in block)
            if unit and is_table and unit[-1][0] + 2 >= block[0][0]:
                unit += block
                continue
            if unit:
                self.check_figures(path, unit)
                facts.check_figures_against_results(self, path, unit, anchors_at(unit[0][0]))
            unit = list(block) if kind == "text" else []
        if unit:
            self.check_figures(path, unit)
            facts.check_figures_against_results(self, path, unit, anchors_at(unit[0][0]))
        file_lines = read(path).split("\n")
        for kind, block in blocks(path):
            if kind == "code":
                fence = file_lines[block[0][0] - 2] if block and block[0][0] >= 2 else ""
                if re.match(r"^\s*(```|~~~)\s*ya?ml\b", fence):
                    facts.check_yaml_block(self, where, block[0][0], [t for _, t in block])
                logical, start = "", None
                for line, text in block:
                    start = start or line
                    if text.rstrip().endswith("\\"):
                        logical += text.rstrip()[:-1] + " "
                        continue
                    for cmd in self.commands_in(logical + text, comments=True):
                        self.check_command(path, start, cmd)
                    self.check_paths(where, start, logical + text)
                    facts.check_object_names(self, where, start, logical + text)
                    facts.check_column_list(self, where, start, logical + text)
                    facts.check_log_line(self, where, start, logical + text)
                    for word in re.findall(r"--set(?:-string)?[ =](\S+)", logical + text):
                        facts.check_chart_value(self, where, start, word.split("=", 1)[0])
                    logical, start = "", None
                continue
            self.check_links(path, block)
            text = "\n".join(t for _, t in block)
            about_columns = "kubectl get ddpj" in text or re.search(r"\bcolumns?\b", text)
            for line, span in spans(block):
                for cmd in self.commands_in(span, comments=False):
                    self.check_command(path, line, cmd)
                if span.startswith("--"):
                    self.check_loose_flag(where, line, span)
                self.check_paths(where, line, span)
                self.check_name(where, line, span, columns, worker_env, about_columns)
                facts.check_chart_value(self, where, line, span)
                facts.check_object_names(self, where, line, span)
                facts.check_log_line(self, where, line, span)

    def check_example(self, path):
        where = self.rel(path)
        for i, line in enumerate(read(path).split("\n"), 1):
            m = re.match(r"^\s*#\s*(.*)$", line)
            if m:
                for cmd in self.commands_in(m.group(1), comments=True):
                    self.check_command(path, i, cmd)
                self.check_paths(where, i, m.group(1))
                self.check_example_comment(where, i, m.group(1))
        code, out = self.run_operator("validate", path)
        if code != 0:
            self.f.add(where, 1, "examples", "`ddp-operator validate` exits %d: %s"
                       % (code, "; ".join(out.strip().splitlines()[-5:])))
            return
        if re.search(r"^kind:\s*DDPJob\b", read(path), re.M):
            code, out = self.run_operator("render", path)
            if code != 0:
                self.f.add(where, 1, "examples", "`ddp-operator render` exits %d: %s"
                           % (code, "; ".join(out.strip().splitlines()[-5:])))

    def check_example_comment(self, where, line, text):
        """Rule 11 in an example's comment: env vars it names, columns of `kubectl get ddpj`."""
        worker_env = self.bins.worker_env()
        for word in re.findall(r"(?<![\w$])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?==|\b)", text):
            self.check_name(where, line, word, set(), worker_env, False)
        m = re.search(r"kubectl get ddpj[^#]*#(.*)$", text)
        if m:
            words = {w for c in self.columns() for w in c.split()}
            for w in re.findall(r"\b[A-Z]{3,}\b", m.group(1)):
                if w not in words:
                    self.f.add(where, line, "names", "`%s` is not a column of `kubectl get ddpj` "
                               "(%s)" % (w, " ".join(self.columns())))
        facts.check_object_names(self, where, line, text)

    def check_values_comments(self):
        """Rule 7 in the comments of the chart's values.yaml."""
        rel = os.path.join("charts", "ddp-operator", "values.yaml")
        path = os.path.join(self.code_root, rel)
        if not os.path.exists(path):
            return
        for i, line in enumerate(read(path).split("\n"), 1):
            m = re.match(r"^\s*#\s?(.*)$", line)
            if not m:
                continue
            for word in re.findall(r"(?<![\w.-])[a-z][A-Za-z0-9]*(?:\.[a-z][A-Za-z0-9]*)+(?![\w/-])",
                                   m.group(1)):
                facts.check_chart_value(self, rel, i, word)
            facts.check_object_names(self, rel, i, m.group(1))

    def check_help_sources(self):
        sources = dict(HELP_SOURCES)
        op_dir = os.path.join(self.code_root, "operator")
        for fn in sorted(os.listdir(op_dir)) if os.path.isdir(op_dir) else []:
            if fn.startswith("cmd_") and fn.endswith(".cc"):
                for sub in REGISTER_RE.findall(read(os.path.join(op_dir, fn))):
                    sources.setdefault(("ddp-operator", sub), ("operator/" + fn, IF_CHAIN))
        for (binary, sub), (src, patterns) in sorted(sources.items()):
            text = self.bins.help.get((binary, sub))
            full = os.path.join(self.code_root, src)
            if text is None or not os.path.exists(full):
                continue
            synopsis = text.split("\n\n", 1)[0]
            listed = set(FLAG_RE.findall(synopsis))
            code = read(full)
            accepted = {}  # flag -> the line of the parser that takes it
            for pat in patterns:
                for m in pat.finditer(code):
                    flag = m.group(1) if m.group(1).startswith("-") else "--" + m.group(1)
                    accepted.setdefault(flag, code.count("\n", 0, m.start()) + 1)
            for flag in sorted(set(accepted) - listed - {"-h", "--help"}):
                self.f.add(src, accepted[flag], "help", "`%s %s` accepts %s, but its --help "
                           "synopsis does not list it" % (binary, sub, flag))


def markdown_files(root):
    files = [os.path.join(root, "README.md"),
             os.path.join(root, "charts", "ddp-operator", "README.md")]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return [f for f in files if os.path.exists(f)]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--code-root")
    ap.add_argument("--operator", required=True)
    ap.add_argument("--worker")
    ap.add_argument("files", nargs="*", help="only these Markdown or example files")
    a = ap.parse_args(argv)
    root = os.path.abspath(a.root)
    code_root = os.path.abspath(a.code_root or a.root)
    findings = Findings()
    checker = Checker(root, code_root, Binaries(a.operator, a.worker), findings)
    md = markdown_files(root)
    ex_dir = os.path.join(root, "examples")
    examples = sorted(os.path.join(ex_dir, f) for f in os.listdir(ex_dir)
                      if f.endswith((".yaml", ".yml"))) if os.path.isdir(ex_dir) else []
    if a.files:
        wanted = {os.path.abspath(f) for f in a.files}
        md = [f for f in md if f in wanted]
        examples = [f for f in examples if f in wanted]
    else:
        checker.check_help_sources()
        checker.check_values_comments()
    for path in md:
        checker.check_markdown(path)
    for path in examples:
        checker.check_example(path)
    df_dir = os.path.join(root, "dockerfiles")
    for fn in sorted(os.listdir(df_dir)) if os.path.isdir(df_dir) and not a.files else []:
        for i, line in enumerate(read(os.path.join(df_dir, fn)).split("\n"), 1):
            if line.lstrip().startswith("#"):
                checker.check_paths("dockerfiles/" + fn, i, line)
    for item in findings.items:
        print(item)
    print("docs_check: %d Markdown files, %d examples, %d finding(s)"
          % (len(md), len(examples), len(findings.items)), file=sys.stderr)
    return 1 if findings.items else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
