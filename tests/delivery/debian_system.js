// What the image checks ask this Debian machine: apt's package lists (does a package exist in
// bookworm, what would apt install on a fresh image), dpkg's file ownership and ldd. Parsers are
// pure and exported for the table tests; the rest run the real tools.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');

const kSuites = new Set(['bookworm', 'bookworm-updates', 'bookworm-security']);

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 512 << 20, ...opts });
  if (r.error) return { status: -1, stdout: '', stderr: `${cmd}: ${r.error.message}` };
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// `apt-cache policy a b ...` -> Map name -> { candidate, suites: [ 'bookworm/main', ... ] }.
// A name apt does not know is absent from the map.
function parsePolicy(text) {
  const out = new Map();
  let cur = null;
  for (const line of text.split('\n')) {
    const head = line.match(/^(\S+):$/);
    if (head) {
      cur = { candidate: '', suites: [] };
      out.set(head[1].replace(/:\w+$/, ''), cur);
      continue;
    }
    if (!cur) continue;
    const cand = line.match(/^\s+Candidate:\s+(\S+)/);
    if (cand) cur.candidate = cand[1];
    const origin = line.match(/^\s+\d+\s+\S+\s+(\S+\/\S+)\s+\S+\s+Packages$/);
    if (origin) cur.suites.push(origin[1]);
  }
  return out;
}

// True when one of `suites` is bookworm's main component (release, updates or security).
function inBookwormMain(suites) {
  return suites.some((s) => {
    const [suite, component] = s.split('/');
    return kSuites.has(suite) && component === 'main';
  });
}

// `apt-get -s install` -> [{ name, origin }] of its Inst lines.
function parseSimulation(text) {
  const out = [];
  for (const m of text.matchAll(/^Inst (\S+) \((\S+) ([^[]*?) \[\w+\]\)/gm)) {
    out.push({ name: m[1], origin: m[3] });
  }
  return out;
}

// `ldd binary` -> [{ soname, path }] (path '' when "not found"); the vDSO has no file and is left out.
function parseLdd(text) {
  const out = [];
  for (const line of text.split('\n')) {
    let m = line.match(/^\s*(\S+) => (.*?)(?: \(0x[0-9a-f]+\))?$/);
    if (m) {
      out.push({ soname: m[1], path: m[2] === 'not found' ? '' : m[2] });
      continue;
    }
    m = line.match(/^\s*(\/\S+) \(0x[0-9a-f]+\)$/);
    if (m) out.push({ soname: path.basename(m[1]), path: m[1] });
  }
  return out;
}

// `dpkg-query -S path ...` -> Map path -> package (the first owner; arch qualifier dropped).
function parseDpkgSearch(text) {
  const out = new Map();
  for (const line of text.split('\n')) {
    const at = line.indexOf(': /');
    if (at <= 0 || line.startsWith('diversion by')) continue;
    out.set(line.slice(at + 2), line.slice(0, at).split(', ')[0].replace(/:\w+$/, ''));
  }
  return out;
}

// The same file under merged-/usr: /lib/x -> /usr/lib/x and back.
function usrToggled(p) {
  const m = p.match(/^\/(usr\/)?(lib|lib64|bin|sbin)(\/.*)$/);
  if (!m) return p;
  return (m[1] ? '/' : '/usr/') + m[2] + m[3];
}

// Map path -> owning package, trying each path as given, resolved through symlinks (Debian's
// alternatives: libblas.so.3 -> openblas-pthread/libblas.so.3) and across merged-/usr. A path
// no package owns is absent.
function owners(paths) {
  const candidates = new Map();
  for (const p of paths) {
    let real = p;
    try { real = fs.realpathSync(p); } catch (e) { /* kept as given */ }
    candidates.set(p, [...new Set([p, real, usrToggled(p), usrToggled(real)])]);
  }
  const all = [...new Set([...candidates.values()].flat())];
  const found = new Map();
  for (let i = 0; i < all.length; i += 2000) {
    const r = run('dpkg-query', ['-S', ...all.slice(i, i + 2000)]);
    for (const [k, v] of parseDpkgSearch(r.stdout)) found.set(k, v);
  }
  const out = new Map();
  for (const [p, cs] of candidates) {
    const hit = cs.find((c) => found.has(c));
    if (hit) out.set(p, found.get(hit));
  }
  return out;
}

// Paths of CUDA and NCCL, which this machine may have and a bookworm image never does (no
// package provides them); the CPU image's build finds no CUDA and leaves them out.
function isCuda(p) {
  return /\/cuda[^/]*\//.test(p) || /^lib(nccl|cuda|cudart|cublas|nvrtc|nvToolsExt)\b/.test(path.basename(p));
}

// Packages of the machine's dpkg status, as stanzas by name (installed ones only).
function installedStanzas() {
  const out = new Map();
  for (const stanza of fs.readFileSync('/var/lib/dpkg/status', 'utf8').split(/\n\n+/)) {
    const name = (stanza.match(/^Package: (\S+)/m) || [])[1];
    if (name && /^Status: install ok installed$/m.test(stanza)) out.set(name, stanza);
  }
  return out;
}

// What a fresh debian:bookworm(-slim) image holds: debootstrap's minbase, i.e. the Essential
// and Priority: required packages and apt, closed over their dependencies. Read from this
// machine's dpkg status, which holds at least minbase. Returns the stanzas, for a status file.
function minbaseStanzas() {
  const all = installedStanzas();
  const field = (s, f) => ((s.match(new RegExp(`^${f}: (.*(?:\\n .*)*)`, 'm')) || [])[1] || '');
  const todo = ['apt'];
  for (const [name, s] of all) {
    if (field(s, 'Essential') === 'yes' || field(s, 'Priority') === 'required') todo.push(name);
  }
  const keep = new Map();
  while (todo.length) {
    const name = todo.pop();
    if (keep.has(name) || !all.has(name)) continue;
    const s = all.get(name);
    keep.set(name, s);
    for (const dep of `${field(s, 'Depends')},${field(s, 'Pre-Depends')}`.split(/[,|]/)) {
      const n = dep.trim().split(/[\s:(]/)[0];
      if (n) todo.push(n);
    }
  }
  return keep;
}

let simDir = null;

// What `apt-get install --no-install-recommends pkgs` adds to a fresh bookworm image: apt's own
// resolver, run in simulation against a dpkg status holding minbase only. Returns
// { installed: Set (minbase included), added: [{name, origin}], error }.
function simulateInstall(pkgs) {
  const base = minbaseStanzas();
  if (!simDir) {
    simDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ddp-image-'));
    fs.writeFileSync(path.join(simDir, 'status'), [...base.values()].join('\n\n') + '\n');
    process.on('exit', () => fs.rmSync(simDir, { recursive: true, force: true }));
  }
  // apt's caches for this status live beside it, so later calls of the process reuse them.
  const r = run('apt-get', ['-s', '-q', '-o', `Dir::State::status=${simDir}/status`,
    '-o', `Dir::Cache::srcpkgcache=${simDir}/srcpkgcache.bin`,
    '-o', `Dir::Cache::pkgcache=${simDir}/pkgcache.bin`,
    '-o', 'Debug::NoLocking=1', 'install', '--no-install-recommends', ...pkgs],
  { env: { ...process.env, LC_ALL: 'C' } });
  if (r.status !== 0) return { installed: new Set(base.keys()), added: [], error: (r.stderr || r.stdout).trim() };
  const added = parseSimulation(r.stdout);
  return { installed: new Set([...base.keys(), ...added.map((a) => a.name)]), added, error: '' };
}

module.exports = {
  run, parsePolicy, inBookwormMain, parseSimulation, parseLdd, parseDpkgSearch, usrToggled,
  owners, isCuda, minbaseStanzas, simulateInstall,
};
