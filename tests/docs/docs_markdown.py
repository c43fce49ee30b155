"""Reading Markdown as GitHub renders it, for docs_check.py: fenced blocks, paragraphs and
tables, inline code spans, links, and the anchors GitHub gives headings. Standard library only.
"""
import re

SPAN_RE = re.compile(r"(?<!`)`([^`]+?)`(?!`)", re.S)
LINK_RE = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def slug(heading, seen):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    s = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
    n = seen.get(s, 0)
    seen[s] = n + 1
    return s if n == 0 else "%s-%d" % (s, n)


def anchors_of(path):
    seen, out, fence = {}, set(), None
    for line in read(path).split("\n"):
        m = re.match(r"^\s*(```|~~~)", line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        if fence is None:
            h = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if h:
                out.add(slug(h.group(1), seen))
    return out


def blocks(path):
    """Yields ('code', [(line, text)]) for fenced blocks and ('text', [(line, text)]) for
    paragraphs and tables, in order."""
    lines = read(path).split("\n")
    cur, fence, kind = [], None, "text"
    for i, line in enumerate(lines, 1):
        m = re.match(r"^\s*(```|~~~)", line)
        if fence is None and m:
            if cur:
                yield kind, cur
            cur, fence, kind = [], m.group(1), "code"
            continue
        if fence is not None and m and m.group(1) == fence:
            yield "code", cur
            cur, fence, kind = [], None, "text"
            continue
        if fence is None and not line.strip():
            if cur:
                yield "text", cur
            cur = []
            continue
        cur.append((i, line))
    if cur:
        yield kind, cur


def spans(block):
    """Inline code spans of a text block: (line, text)."""
    joined = "\n".join(t for _, t in block)
    first = block[0][0]
    for m in SPAN_RE.finditer(joined):
        yield first + joined.count("\n", 0, m.start()), " ".join(m.group(1).split())
