// Reads a Dockerfile into its build stages: the base image, the packages each stage installs with
// apt-get, its COPY instructions and its working directory. Pure (text in, objects out); it
// knows the shell forms our Dockerfiles use and says so when it meets one it cannot read, so a
// check built on it never passes by not understanding a file.
'use strict';
const path = require('path');

// Logical instructions: comment lines dropped (also inside a continuation, as Docker does),
// continuation lines joined. Returns [{ line, keyword, args }], line 1-based.
function instructions(text) {
  const out = [];
  let current = null;
  text.split('\n').forEach((raw, i) => {
    if (/^\s*#/.test(raw) || (!current && !raw.trim())) return;
    const continued = /\\\s*$/.test(raw);
    const body = raw.replace(/\\\s*$/, '');
    if (current) current.text += ' ' + body.trim();
    else current = { line: i + 1, text: body.trim() };
    if (!continued) {
      const m = current.text.match(/^(\w+)\s*(.*)$/);
      if (m) out.push({ line: current.line, keyword: m[1].toUpperCase(), args: m[2] });
      current = null;
    }
  });
  return out;
}

// A release switch, `case "$VERSION_CODENAME" in bookworm) ... ;; trixie) ... ;; *) ... esac`
// (after `. /etc/os-release`): the shell text with the switch replaced by the arm for `suite`
// (the one whose pattern names it, else `*`), or by nothing when no arm runs there.
function pickReleaseArm(shell, suite) {
  const m = shell.match(/\bcase\s+"?\$\{?VERSION_CODENAME\}?"?\s+in\b([\s\S]*?)\besac\b/);
  if (!m) return shell;
  const arms = [];
  for (const a of m[1].split(';;')) {
    const arm = a.match(/^\s*\(?\s*([\w*|.-]+)\s*\)([\s\S]*)$/);
    if (arm) arms.push({ patterns: arm[1].split('|'), body: arm[2] });
  }
  const chosen = arms.find((a) => a.patterns.includes(suite)) || arms.find((a) => a.patterns.includes('*'));
  return shell.slice(0, m.index) + (chosen ? chosen.body : '') + shell.slice(m.index + m[0].length);
}

// `apt-get install` / `apt install` package names in one shell command line: the words after
// `install` up to the next shell operator, options dropped, `=version` and `:arch` removed. A
// release switch (pickReleaseArm) counts only its arm for `suite`. Returns { packages, problems }.
function aptInstalls(shell, suite = '') {
  const packages = [];
  const problems = [];
  shell = pickReleaseArm(shell, suite);
  const re = /\bapt(?:-get)?\s+(?:-\S+\s+)*install\b([^;&|()]*)/g;
  for (const m of shell.matchAll(re)) {
    for (const word of m[1].trim().split(/\s+/).filter(Boolean)) {
      if (word.startsWith('-')) continue;
      if (/[$"'`*?[\]{}]/.test(word)) {
        problems.push(`cannot read the package name ${word} (variables and globs are not supported)`);
        continue;
      }
      packages.push(word.replace(/[=:].*$/, ''));
    }
  }
  return { packages, problems };
}

// `FROM image [AS name]` with ARG defaults declared before the first FROM substituted; `args`
// overrides those defaults as `--build-arg` does (only for ARGs the file declares). Returns [{ index, name, from, base, line, packages, installs, copies, workdir, runs,
//            problems }]; `base` is the image at the root of a chain of stages (FROM build).
function parseStages(text, args = {}) {
  const globalArgs = {};
  const stages = [];
  const subst = (s, vars) => s.replace(/\$\{(\w+)\}|\$(\w+)/g, (all, a, b) => (vars[a || b] !== undefined ? vars[a || b] : all));
  for (const ins of instructions(text)) {
    if (ins.keyword === 'ARG' && stages.length === 0) {
      const m = ins.args.match(/^(\w+)(?:=(\S*))?/);
      if (m) globalArgs[m[1]] = m[1] in args ? args[m[1]] : m[2] === undefined ? '' : m[2].replace(/^"(.*)"$/, '$1');
      continue;
    }
    if (ins.keyword === 'FROM') {
      const words = ins.args.split(/\s+/).filter((w) => !w.startsWith('--'));
      const from = subst(words[0] || '', globalArgs);
      const name = words.length >= 3 && /^as$/i.test(words[1]) ? words[2] : '';
      const parent = stages.find((s) => s.name && s.name === from);
      stages.push({
        index: stages.length, name, from, line: ins.line,
        base: parent ? parent.base : from,
        packages: parent ? [...parent.packages] : [],
        installs: [],  // [{ line, packages }] of this stage's own RUN lines
        copies: [], runs: [], problems: [],
        workdir: parent ? parent.workdir : '/',
      });
      continue;
    }
    const stage = stages[stages.length - 1];
    if (!stage) continue;
    if (ins.keyword === 'RUN') {
      stage.runs.push({ line: ins.line, shell: ins.args });
      const { packages, problems } = aptInstalls(ins.args, debianSuite(stage.base));
      if (packages.length) stage.installs.push({ line: ins.line, packages });
      stage.packages.push(...packages);
      for (const p of problems) stage.problems.push(`line ${ins.line}: ${p}`);
    } else if (ins.keyword === 'WORKDIR') {
      stage.workdir = path.posix.resolve(stage.workdir, ins.args.trim());
    } else if (ins.keyword === 'COPY' || ins.keyword === 'ADD') {
      const words = ins.args.trim().split(/\s+/);
      const fromFlag = words.find((w) => w.startsWith('--from='));
      const rest = words.filter((w) => !w.startsWith('--'));
      stage.copies.push({
        line: ins.line,
        from: fromFlag ? fromFlag.slice('--from='.length) : '',
        sources: rest.slice(0, -1),
        dest: rest[rest.length - 1],
      });
    }
  }
  return stages;
}

// The stages a build of the last stage runs: the last one and, transitively, the stages it
// starts FROM or copies from (BuildKit skips the others). Stage objects, in file order.
function usedStages(stages) {
  const byRef = (ref) => stages.find((s) => (s.name && s.name === ref) || String(s.index) === ref);
  const used = new Set();
  const visit = (s) => {
    if (!s || used.has(s)) return;
    used.add(s);
    visit(byRef(s.from));
    for (const c of s.copies) if (c.from) visit(byRef(c.from));
  };
  visit(stages[stages.length - 1]);
  return stages.filter((s) => used.has(s));
}

// The Debian release of an image reference, or '' when it is not a Debian image:
// debian:bookworm-slim -> bookworm, debian:12 -> bookworm.
function debianSuite(image) {
  const m = image.match(/^(?:docker\.io\/)?(?:library\/)?debian:([\w.-]+)$/);
  if (!m) return '';
  const tag = m[1].replace(/-slim$/, '').replace(/-\d{8}(-slim)?$/, '');
  const byNumber = { 11: 'bullseye', 12: 'bookworm', 13: 'trixie' };
  const major = tag.match(/^(\d+)/);
  return major ? byNumber[major[1]] || tag : tag;
}

module.exports = { instructions, aptInstalls, pickReleaseArm, parseStages, usedStages, debianSuite };
