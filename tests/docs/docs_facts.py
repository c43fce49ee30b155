"""The facts docs_check.py checks beyond names (rules 6-11 of its docstring): figures against the
section of bench/RESULTS.md they cite, chart values and the chart's object names, positional
words of our commands, quoted log lines, YAML blocks of DDPJobs, the columns of `kubectl get
ddpj` and what example comments name. Standard library only; each function adds findings to a
docs_check.Findings and reads the code under the checker's code root.
"""
import decimal
import os
import re
import subprocess
import tempfile

from docs_markdown import LINK_RE, SPAN_RE, read, slug

# ---------------------------------------------------------------- rule 6: figures

# A figure of prose: a number with a unit, or a decimal. Ranges ("1.1-2.1 s") give both ends.
FIGURE_RE = re.compile(
    r"(?<![\w.#/:-])(\d+(?:,\d{3})*(?:\.\d+)?)(?:\s?[-–]\s?(\d+(?:,\d{3})*(?:\.\d+)?))?"
    r"(\s?(?:s|ms|us|µs|min|minutes?|seconds?|hours?|[KMG]i?B|MB/s|GB/s|bytes|%|x(?!\s?\d)|qps|"
    r"steps?/s|tok/s)(?![\w]))?")
NUM_RE = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?:e-?\d+)?")
RESULTS_LINK_RE = re.compile(r"RESULTS\.md#([\w-]+)")
MEASURED_WORDS_RE = re.compile(r"\b[Mm]easured\b|\ba real run\b")


def _dec(text):
    try:
        return decimal.Decimal(text.replace(",", ""))
    except decimal.InvalidOperation:
        return None


def results_sections(root):
    """anchor -> the text of that section of bench/RESULTS.md, its subsections included."""
    path = os.path.join(root, "bench", "RESULTS.md")
    if not os.path.exists(path):
        return {}
    lines, seen, heads, fence = read(path).split("\n"), {}, [], None
    for i, line in enumerate(lines):
        m = re.match(r"^\s*(```|~~~)", line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        h = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line) if fence is None else None
        if h:
            heads.append((i, len(h.group(1)), slug(h.group(2), seen)))
    out = {}
    for k, (i, level, anchor) in enumerate(heads):
        end = next((j for j, lv, _ in heads[k + 1:] if lv <= level), len(lines))
        out[anchor] = "\n".join(lines[i:end])
    return out


def _numbers(text):
    return {d for d in (_dec(m.group(0)) for m in NUM_RE.finditer(text)) if d is not None}


def _matches(value, numbers):
    """A quoted figure matches a section's number equal to it at the figure's precision, rounded
    or cut (0.33 quotes 0.335)."""
    places = -value.as_tuple().exponent if value.as_tuple().exponent < 0 else 0
    half = decimal.Decimal(5).scaleb(-places - 1)
    return any(abs(n - value) <= half for n in numbers)


# A figure right after these is no quotation: an estimate ("about 5.5 minutes"), a period or
# setting ("every 250 ms"), or a version; nor one right before "after" (a timeout: "30 s after").
NOT_QUOTED_AFTER_RE = re.compile(r"^\s*after\b")
NOT_QUOTED_RE = re.compile(r"(?:\babout|~|\bevery|\b(?:LibTorch|Kubernetes|PyTorch|CUDA|Debian|Python|"
                           r"Helm|kind|torch|Prometheus|version|v))\s*$")


def check_figures_against_results(checker, path, unit, section_anchors):
    """Every figure of a paragraph (and its table) that cites RESULTS.md sections, directly or
    through its doc section, is a number of one of those sections (at the figure's precision)."""
    sections = checker.results()
    text = "\n".join(t for _, t in unit)
    anchors = RESULTS_LINK_RE.findall(text)
    # A paragraph that cites no section itself answers to its heading's sections: every figure
    # when it says "measured", else its decimals with a unit (3.5 s, 0.53 s: measurements, where a
    # setting is a round number, 10 s).
    decimals_only = False
    if not anchors:
        anchors = section_anchors
        decimals_only = not MEASURED_WORDS_RE.search(text)
    anchors = [a for a in anchors if a in sections]
    if not anchors:
        return
    numbers = set()
    for a in anchors:
        numbers |= _numbers(sections[a])
    # Code spans and links blanked, lines kept: a span may run over two lines.
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    masked = SPAN_RE.sub(blank, LINK_RE.sub(blank, text)).split("\n")
    for k, ((line, _), one) in enumerate(zip(unit, masked)):
        before = masked[k - 1] + " " if k else ""
        for m in FIGURE_RE.finditer(one):
            decimal_figure = "." in (m.group(1) + (m.group(2) or ""))
            if not m.group(3) and not decimal_figure:
                continue  # a bare integer: a count, a step, a year, not a measured figure
            if decimals_only and not (decimal_figure and m.group(3)):
                continue
            if NOT_QUOTED_RE.search(before + one[:m.start()]) or NOT_QUOTED_AFTER_RE.match(one[m.end():]):
                continue
            for g in (m.group(1), m.group(2)):
                value = _dec(g) if g else None
                if value is None or _matches(value, numbers):
                    continue
                checker.f.add(checker.rel(path), line, "figures",
                              "%s is in none of the RESULTS.md sections this cites (%s)"
                              % (g, ", ".join(anchors)))


def section_results_anchors(path):
    """For each line, the RESULTS.md anchors linked anywhere under its heading."""
    by_line, current, anchors_of_section = {}, 0, {0: []}
    for i, line in enumerate(read(path).split("\n"), 1):
        if re.match(r"^#{1,6}\s", line):
            current = i
            anchors_of_section[current] = []
        anchors_of_section[current] += RESULTS_LINK_RE.findall(line)
        by_line[i] = current
    return lambda line: anchors_of_section[by_line.get(line, 0)]


# ---------------------------------------------------------------- rule 7: the chart


def chart_values(code_root):
    """Every dotted path of charts/ddp-operator/values.yaml ("networkPolicy.jobs")."""
    text = read(os.path.join(code_root, "charts", "ddp-operator", "values.yaml"))
    paths, stack = set(), []
    for line in text.split("\n"):
        m = re.match(r"^(\s*)([A-Za-z][\w-]*):(?:\s|$)", line)
        if not m:
            continue
        depth = len(m.group(1)) // 2
        stack = stack[:depth] + [m.group(2)]
        paths.add(".".join(stack))
    return paths


VALUE_RE = re.compile(r"^(?:\.Values\.)?([a-z][A-Za-z0-9]*(?:\.[a-z][A-Za-z0-9]*)+)(?:=\S*)?$")


def check_chart_value(checker, where, line, span):
    m = VALUE_RE.match(span)
    if not m:
        return
    values = checker.chart_values()
    path = m.group(1)
    if path.rsplit(".", 1)[-1] in ("md", "yaml", "yml", "json", "txt", "sh", "py", "cc", "h", "tpl"):
        return  # a file
    top = path.split(".")[0]
    if top not in {v.split(".")[0] for v in values}:
        return  # not a value (a file name, a field path of a spec)
    if path not in values and not any(v.startswith(path + ".") for v in values):
        near = sorted(v for v in values if v.split(".")[0] == top)
        checker.f.add(where, line, "chart", "`%s`: no such value in charts/ddp-operator/values.yaml "
                      "(%s has %s)" % (path, top, ", ".join(near)))


def chart_object_names(code_root, release="ddp"):
    """Names of the objects the chart creates for `release` (templates' metadata.name)."""
    fullname = release if "ddp-operator" in release else release + "-ddp-operator"
    tdir = os.path.join(code_root, "charts", "ddp-operator", "templates")
    names, suffixes = set(), {"fullname": set(), "release": set()}
    for fn in os.listdir(tdir) if os.path.isdir(tdir) else []:
        text = read(os.path.join(tdir, fn))
        for m in re.finditer(r'include "ddp-operator\.fullname" \. \}\}([\w-]*)', text):
            names.add(fullname + m.group(1))
            suffixes["fullname"].add(m.group(1))
        for m in re.finditer(r"\.Release\.Name \}\}([\w-]*)", text):  # noqa
            names.add(release + m.group(1))
            suffixes["release"].add(m.group(1))
    # <release>-ddp-operator<x> is <fullname><x> (the release's name without "ddp-operator").
    suffixes["release"] |= {"-ddp-operator" + x for x in suffixes["fullname"]}
    return names, suffixes


CHART_KINDS = {"deployment", "deploy", "svc", "service", "serviceaccount", "sa", "clusterrole",
               "clusterrolebinding", "role", "rolebinding", "servicemonitor", "podmonitor",
               "deployments", "services"}
OBJECT_RE = re.compile(r"(?<![\w/.-])([a-z]+)/([a-z0-9][a-z0-9.-]*)(?![\w/<])")
PLACEHOLDER_NAME_RE = re.compile(r"<(release|fullname)>(-[\w-]+)")


def check_object_names(checker, where, line, text):
    """kubectl's kind/name of the chart's objects, and <release>-/<fullname>- names."""
    names, suffixes = checker.chart_objects()
    if re.search(r"\b(kubectl|helm)\b", text):
        for m in OBJECT_RE.finditer(text):
            kind, name = m.group(1), m.group(2)
            if kind in CHART_KINDS and name not in names:
                checker.f.add(where, line, "objects", "`%s/%s`: the chart names no such object "
                              "(for release ddp: %s)" % (kind, name, ", ".join(sorted(names))))
    for m in PLACEHOLDER_NAME_RE.finditer(text):
        base, suffix = m.group(1), m.group(2)
        if suffix not in suffixes[base]:
            other = "fullname" if base == "release" else "release"
            hint = " (the chart names it <%s>%s)" % (other, suffix) if suffix in suffixes[other] else ""
            checker.f.add(where, line, "objects", "<%s>%s: the chart creates no such name%s"
                          % (base, suffix, hint))


# ---------------------------------------------------------------- rule 8: positional words


def check_positionals(checker, where, line, cmd, sub):
    """A hyphenated word (`kill-trainer`) given to a subcommand must be in its --help."""
    if os.path.basename(cmd[0]) != "ddp-operator" or not sub:
        return
    text = checker.bins.help.get(("ddp-operator", sub), "")
    for a in cmd[2:]:
        if re.match(r"^[a-z]+(?:-[a-z]+)+$", a) and a not in text:
            checker.f.add(where, line, "commands", "`%s`: %s is not a word of `ddp-operator %s "
                          "--help`" % (" ".join(cmd), a, sub))


# ---------------------------------------------------------------- rule 9: quoted log lines

# Lines the binaries log or print, as the docs quote them: a decision line ("ml/mingpt: round
# 2 -> 3 (...)"), a worker's ("rank 0: ...", "generation G: ..."), a command's prefix.
LOG_LINE_RE = re.compile(r"^(?:(?:rank \d+|generation [\dG]+|ddp-worker(?: \w+)?|ddp-operator \w+|"
                         r"rendezvous|supervisor|store|authority|[a-z0-9-]+/[a-z0-9-]+|"
                         r"incident \d+): \S)")
# What varies in a line: numbers, <placeholders>, "...", quoted values, names of objects
# ("ml/mingpt", "mingpt-worker-1"), paths, single capitals standing for a number (G, N).
VARIABLE_RE = re.compile(r"<[^>]*>|(?<!\w)/\S+|\.\.\.|…|\"[^\"]*\"|'[^']*'|"
                         r"\b[a-z0-9-]+/[a-z0-9-]+\b|\b(?!ddp-(?:operator|worker)\b)[a-z0-9]+(?:-[a-z0-9]+)+\b|"
                         r"[A-Za-z0-9_.:-]*\d[A-Za-z0-9_.:-]*|\b[A-Z]\b|\b[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+\b|"
                         r"[\[\]{}=]")
WORDS_RE = re.compile(r"[A-Za-z]{2,}")


def code_words(code_root):
    """first word -> [(stream, position)]: the words of the string literals of each C++ file, in
    order, each word with whether it starts and ends its literal. (A line is often built over
    several statements: the message in one, the key and the message in the log's.)"""
    index = {}
    for d in ("operator", "worker", "common"):
        for dirpath, _, files in os.walk(os.path.join(code_root, d)):
            for fn in files:
                if not fn.endswith((".cc", ".h")):
                    continue
                stream = []
                for lit in re.findall(r'"((?:[^"\\\n]|\\.)*)"', read(os.path.join(dirpath, fn))):
                    words = WORDS_RE.findall(lit.replace("\\n", " "))
                    for k, w in enumerate(words):
                        stream.append((w, k == 0, k == len(words) - 1))
                for i, (w, _, _) in enumerate(stream):
                    index.setdefault(w, []).append((stream, i))
    return index


def _run_in_code(index, run, var_before, var_after):
    for stream, i in index.get(run[0], ()):
        n = len(run)
        if [w for w, _, _ in stream[i:i + n]] != run:
            continue
        if (not var_before or stream[i][1]) and (not var_after or stream[i + n - 1][2]):
            return True
    return False


def check_log_line(checker, where, line, text):
    """A quoted log line: each constant piece (the words between numbers, names and
    placeholders) is written by the code as it stands: consecutive words of a statement's string
    literals, starting a literal where a variable precedes it and ending one where one follows."""
    text = " ".join(text.split())
    if not LOG_LINE_RE.match(text):
        return
    parts = VARIABLE_RE.split(text)
    index = checker.code_words()
    for k, part in enumerate(parts):
        run = WORDS_RE.findall(part)
        if not run:
            continue
        if not _run_in_code(index, run, k > 0, k < len(parts) - 1):
            checker.f.add(where, line, "logs", "quoted line `%s`: the code writes no \"%s\" there"
                          % (text[:80], " ".join(run)))
            return


# ---------------------------------------------------------------- rule 10: YAML of DDPJobs


def check_yaml_block(checker, where, first_line, lines):
    """A YAML block of a DDPJob (or its spec) has no field the CRD does not declare."""
    text = "\n".join(lines)
    if re.search(r"^kind:\s*DDPJob\b", text, re.M):
        doc = text
    elif re.match(r"^spec:\s*$", lines[0] if lines else ""):
        doc = "apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\nmetadata: {name: x}\n" + text
    else:
        return
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(doc)
    try:
        p = subprocess.run([checker.bins.operator, "validate", "-f", f.name], timeout=60,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    finally:
        os.unlink(f.name)
    for out in p.stdout.splitlines():
        m = re.search(r'unknown field "([^"]+)"(.*)$', out)
        if not m:
            continue
        key = m.group(1).rsplit(".", 1)[-1].split("[")[0]
        at = next((first_line + i for i, l in enumerate(lines) if re.match(r"^\s*-?\s*%s:" % re.escape(key), l)),
                  first_line)
        checker.f.add(where, at, "yaml", "unknown field %s%s" % (m.group(1), m.group(2)))


# ---------------------------------------------------------------- rule 11: columns, comments


def default_columns(code_root):
    """`kubectl get ddpj`'s columns in order: NAME, the CRD's priority-0 columns, AGE last."""
    text = read(os.path.join(code_root, "crds", "ddpjob.yaml"))
    m = re.search(r"additionalPrinterColumns:(.*?)\n\s*schema:", text, re.S)
    cols = []
    for item in re.split(r"\n\s*- name: ", "\n" + (m.group(1) if m else ""))[1:]:
        name = item.split("\n", 1)[0].strip()
        if not re.search(r"^\s*priority:\s*[1-9]", item, re.M):
            cols.append(name.upper())
    return ["NAME"] + cols


def check_column_list(checker, where, line, text):
    """`kubectl get ddpj   # NAME PHASE ...`: the header as kubectl prints it."""
    m = re.search(r"kubectl get ddpj[^#\n]*#\s*(NAME\b[A-Z ]*)$", text)
    if not m:
        return
    want = " ".join(checker.columns())
    got = " ".join(m.group(1).split())
    if got != want:
        checker.f.add(where, line, "names", "`kubectl get ddpj` prints the columns %s, not %s"
                      % (want, got))
