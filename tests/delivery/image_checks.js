#!/usr/bin/env node
// Guards for the container images without a container engine, run by ctest on a Debian 12
// machine whose apt lists are current (scripts/install-deps.sh runs apt-get update):
//   node image_checks.js packages     <source root>               every package a Debian-based
//       Dockerfile installs, in any stage, exists in bookworm's main component under that name
//   node image_checks.js runtime-libs <source root> <build dir>   the runtime stage's packages
//       (resolved by apt as on a fresh bookworm-slim) provide every shared library `ldd` lists
//       for the binary the stage copies, as built in <build dir> on this machine
//   node image_checks.js build-deps   <source root> <build dir>   the build stage's packages
//       provide every system header the binary's objects included, the libraries it was linked
//       with, the compiler, cmake and ninja; and its COPY lines bring every project file its
//       configure reads (build.ninja's configure inputs)
// Each check first proves it can fail: on a temporary copy of a Dockerfile with a package
// renamed or removed it must report that package. Stages on other distributions (the CUDA
// image is Ubuntu-based) cannot be checked against this machine's lists: each is named in a
// note. Exit 0 pass, 1 problems (each printed), 77 skipped (not Debian 12, or a binary not
// built against Debian's packages).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { parseStages, usedStages, debianSuite } = require('./dockerfile_stages');
const sys = require('./debian_system');

const kSkip = 77;
const [check, root, buildDir] = process.argv.slice(2);
const problems = [];
const notes = [];

// Self-tests: what each check must report on a broken copy of a Dockerfile.
const kRenamed = { file: 'operator.Dockerfile', from: 'libcpprest2.10', to: 'libcpprest2.11' };
const kRuntimeDrop = { file: 'operator.Dockerfile', pkg: 'libyaml-cpp0.7' };
const kBuildDrop = { file: 'operator.Dockerfile', pkg: 'libyaml-cpp-dev' };
const kContextDrop = { file: 'operator.Dockerfile', line: 'COPY crds/ crds/', input: 'crds/ddpjob.yaml' };

// A Dockerfile that picks its Debian release with a global `ARG DEBIAN` (worker-cpu: trixie by
// default, bookworm for LibTorch 1.13) is read as built with DEBIAN=bookworm, the release whose
// lists this machine has; only the stages that build runs are checked.
const kCheckedArgs = { DEBIAN: 'bookworm' };

function loadDockerfile(file, text) {
  const declares = /^\s*ARG\s+DEBIAN\b/m.test(text.slice(0, text.search(/^\s*FROM\s/m) + 1));
  const stages = usedStages(parseStages(text, declares ? kCheckedArgs : {}));
  if (declares) notes.push(`${file}: read as built with --build-arg DEBIAN=${kCheckedArgs.DEBIAN} (this machine's lists); its other releases are built and run on the kit (bench/RESULTS.md)`);
  return { file, text, stages };
}

function dockerfiles() {
  const dir = path.join(root, 'dockerfiles');
  return fs.readdirSync(dir).filter((f) => f.endsWith('.Dockerfile')).sort()
    .map((f) => loadDockerfile('dockerfiles/' + f, fs.readFileSync(path.join(dir, f), 'utf8')));
}

// A broken copy of one Dockerfile (`edit` changes its text), written to a temporary file and
// read back from there, as the real ones are. Its own notes are not printed.
function brokenCopy(dfs, file, edit) {
  const df = dfs.find((d) => d.file === 'dockerfiles/' + file);
  if (!df) throw new Error(`self-test: dockerfiles/${file} is missing`);
  const text = edit(df.text);
  if (text === df.text) throw new Error(`self-test: the edit changed nothing in dockerfiles/${file}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ddp-dockerfile-'));
  const tmp = path.join(dir, file);
  fs.writeFileSync(tmp, text);
  const copy = loadDockerfile(`${df.file} (broken copy)`, fs.readFileSync(tmp, 'utf8'));
  fs.rmSync(dir, { recursive: true, force: true });
  return copy;
}

const withoutPackage = (pkg) => (text) => text.replace(new RegExp(`[ \\t]${pkg.replace(/[.+]/g, '\\$&')}(?=[ \\t\\\\\\n])`), '');

// Records the outcome of a self-test: `found` is the problem it had to report, if reported.
function selfTest(what, found, reported) {
  for (let i = notes.length - 1; i >= 0; --i) if (notes[i].includes('(broken copy)')) notes.splice(i, 1);
  if (found) notes.push(`self-test: ${what} is reported: ${found}`);
  else problems.push(`self-test: ${what} went unnoticed: ${reported.join('; ') || 'no problem reported'}`);
}

function isDebianStage(stage) {
  return debianSuite(stage.base) !== '';
}

// Notes the stages that cannot be checked here; fails a Debian stage of another release.
function debianStages(df) {
  const out = [];
  for (const s of df.stages) {
    const suite = debianSuite(s.base);
    if (!suite) {
      notes.push(`${df.file}:${s.line}: FROM ${s.from} is not Debian: its packages and libraries are not checked here (no package lists for it on this machine); lint and COPY sources are (delivery_node_dockerfiles)`);
    } else if (suite === 'trixie') {
      notes.push(`${df.file}:${s.line}: FROM ${s.from} is Debian 13: its packages and libraries are not checked against lists here (this machine's are bookworm's); make cuda-check installs the GPU image's build packages in a Debian 13 root and builds against them`);
    } else if (suite !== 'bookworm') {
      problems.push(`${df.file}:${s.line}: FROM ${s.from}: this check knows bookworm's lists only`);
    } else {
      out.push(s);
    }
  }
  return out;
}

// Problems of every apt package name of `dfs` (one apt-cache call for all).
function packageProblems(dfs) {
  const wanted = [];
  for (const df of dfs) {
    for (const s of df.stages.filter(isDebianStage)) {
      for (const p of s.problems) wanted.push({ df, problem: `${df.file}: ${p}` });
      for (const ins of s.installs) for (const pkg of ins.packages) wanted.push({ df, line: ins.line, pkg });
    }
  }
  const names = [...new Set(wanted.filter((w) => w.pkg).map((w) => w.pkg))];
  const r = sys.run('apt-cache', ['policy', ...names], { env: { ...process.env, LC_ALL: 'C' } });
  const policy = sys.parsePolicy(r.stdout);
  const out = [];
  for (const w of wanted) {
    if (w.problem) { out.push(w.problem); continue; }
    const p = policy.get(w.pkg);
    if (!p || p.candidate === '(none)' || !sys.inBookwormMain(p.suites)) {
      const where = p && p.suites.length ? ` (only in ${[...new Set(p.suites)].join(', ')})` : '';
      out.push(`${w.df.file}:${w.line}: package ${w.pkg} does not exist in bookworm/main${where}`);
    }
  }
  return { out, resolved: [...policy.values()].filter((p) => sys.inBookwormMain(p.suites)).length };
}

function checkPackages() {
  const dfs = dockerfiles();
  const debs = dfs.filter((df) => debianStages(df).length > 0);
  if (debs.length < 2) problems.push(`expected at least 2 Debian-based Dockerfiles (operator, worker-cpu), found ${debs.length}`);
  const broken = brokenCopy(dfs, kRenamed.file, (t) => t.replace(kRenamed.from, kRenamed.to));
  const real = packageProblems(debs);
  if (real.resolved === 0) {
    problems.push("apt knows none of the Dockerfiles' packages in bookworm/main: its lists are missing (HINT: apt-get update, as scripts/install-deps.sh does)");
  }
  problems.push(...real.out);
  const self = packageProblems([broken]).out;
  selfTest(`renaming ${kRenamed.from} to ${kRenamed.to} in a copy of ${kRenamed.file}`,
    self.find((p) => p.includes(`package ${kRenamed.to} does not exist`)), self);
  const count = debs.reduce((n, df) => n + df.stages.reduce((m, s) => m + s.packages.length, 0), 0);
  notes.push(`${count} package names in ${debs.length} Debian-based Dockerfiles checked against bookworm/main`);
}

// The final stage's `COPY --from=<stage> <path in its build tree>` as paths relative to the
// build tree: [{ stage (the build stage), rel, line }].
function copiedBinaries(df) {
  const final = df.stages[df.stages.length - 1];
  const out = [];
  for (const c of final.copies.filter((c) => c.from)) {
    const src = df.stages.find((s) => s.name === c.from || String(s.index) === c.from);
    if (!src) { problems.push(`${df.file}:${c.line}: COPY --from=${c.from}: no such stage`); continue; }
    const cmake = src.runs.map((r) => r.shell.match(/\bcmake\b[^&;|]*\s-B\s*(\S+)/)).find(Boolean);
    if (!cmake) { problems.push(`${df.file}:${c.line}: stage ${c.from} runs no \`cmake -B <dir>\``); continue; }
    const tree = path.posix.resolve(src.workdir, cmake[1]) + '/';
    for (const s of c.sources) {
      if (!s.startsWith(tree)) { problems.push(`${df.file}:${c.line}: COPY --from=${c.from} ${s} is not in its build tree ${tree}`); continue; }
      out.push({ stage: src, rel: s.slice(tree.length), line: c.line });
    }
  }
  if (out.length === 0) problems.push(`${df.file}: the final stage copies no binary from a build stage`);
  return out;
}

// The binary in this build tree, or null (with a note or a problem) when it is not there.
function builtBinary(df, b) {
  const file = path.join(buildDir, b.rel);
  if (fs.existsSync(file)) return file;
  const option = b.rel.startsWith('operator/') ? 'DDP_BUILD_OPERATOR' : 'DDP_BUILD_WORKER';
  const cache = fs.existsSync(path.join(buildDir, 'CMakeCache.txt')) ? fs.readFileSync(path.join(buildDir, 'CMakeCache.txt'), 'utf8') : '';
  if (new RegExp(`^${option}:BOOL=OFF$`, 'm').test(cache)) {
    notes.push(`${df.file}: ${b.rel} not checked: this build has ${option}=OFF`);
  } else {
    problems.push(`${df.file}:${b.line}: ${file} does not exist (HINT: cmake --build ${buildDir} --target ${path.basename(b.rel)})`);
  }
  return null;
}

// For each owning package not in `installed`, one problem: "<what> lacks <pkg>: <detail>".
// `items` are [{ path, detail }]; unowned CUDA paths are noted, other unowned ones fail.
function coverage(df, what, items, installed) {
  const own = sys.owners(items.map((i) => i.path));
  const missing = new Map();
  let cuda = 0;
  for (const it of items) {
    const pkg = own.get(it.path);
    if (!pkg) {
      if (sys.isCuda(it.path)) ++cuda;
      else problems.push(`${df.file}: ${it.detail}: ${it.path} belongs to no Debian package, so the image cannot have it`);
      continue;
    }
    if (!installed.has(pkg) && !missing.has(pkg)) missing.set(pkg, it);
  }
  if (cuda) notes.push(`${df.file}: ${cuda} CUDA/NCCL file(s) of this machine's build left out: bookworm has none, and the image's build finds no CUDA (Gloo only)`);
  return [...missing].map(([pkg, it]) => `${df.file}: ${what} lacks ${pkg}, which provides ${it.path} (${it.detail})`);
}

function simulate(df, stage, what) {
  const sim = sys.simulateInstall(stage.packages);
  if (sim.error) problems.push(`${df.file}:${stage.line}: apt cannot install the ${what}'s packages on bookworm: ${sim.error}`);
  for (const a of sim.added) {
    if (!/^Debian/.test(a.origin)) problems.push(`${df.file}: ${a.name} would come from ${a.origin}, not from Debian's archive`);
  }
  return sim;
}

// Problems of the runtime stage of `df` against the binaries built here.
function runtimeProblems(df) {
  const final = df.stages[df.stages.length - 1];
  const out = [];
  for (const b of copiedBinaries(df)) {
    const bin = builtBinary(df, b);
    if (!bin) continue;
    const ldd = sys.run('ldd', [bin]);
    const libs = sys.parseLdd(ldd.stdout);
    if (ldd.status !== 0 || libs.length === 0) { problems.push(`ldd ${bin} failed: ${ldd.stderr}`); continue; }
    for (const l of libs.filter((l) => !l.path)) problems.push(`${bin}: ldd finds no ${l.soname}`);
    const found = libs.filter((l) => l.path);
    const own = sys.owners(found.map((l) => l.path));
    const foreignTorch = found.find((l) => /^lib(torch|c10)/.test(l.soname) && !own.has(l.path));
    if (foreignTorch) {
      notes.push(`${df.file}: ${b.rel} not checked: it links ${foreignTorch.path}, not Debian's LibTorch (build against libtorch-dev to check it)`);
      continue;
    }
    const sim = simulate(df, final, 'runtime stage');
    out.push(...coverage(df, `the runtime stage (FROM ${final.from}, line ${final.line})`,
      found.map((l) => ({ path: l.path, detail: `${b.rel} links ${l.soname}` })), sim.installed));
    notes.push(`${df.file}: ${found.length} libraries of ${b.rel} checked against ${sim.installed.size} packages of the runtime stage`);
  }
  return out;
}

function checkRuntimeLibs() {
  const dfs = dockerfiles().filter((df) => debianStages(df).length === df.stages.length);
  for (const df of dfs) problems.push(...runtimeProblems(df));
  const broken = brokenCopy(dockerfiles(), kRuntimeDrop.file, withoutPackage(kRuntimeDrop.pkg));
  const self = runtimeProblems(broken);
  selfTest(`a copy of ${kRuntimeDrop.file} whose runtime stage lacks ${kRuntimeDrop.pkg}`,
    self.find((p) => p.includes(`lacks ${kRuntimeDrop.pkg},`)), self);
}

// System files the build of `rel` used: headers (ninja's deps log), libraries on its link line,
// and the tools (CMakeCache.txt). [{ path, detail }]
function buildInputs(rel) {
  const ninja = (args) => sys.run('ninja', ['-C', buildDir, ...args]);
  const inputs = ninja(['-t', 'inputs', rel]);
  if (inputs.status !== 0) { problems.push(`ninja -t inputs ${rel}: ${inputs.stderr || inputs.stdout}`); return []; }
  const list = inputs.stdout.split('\n').filter(Boolean);
  const objects = list.filter((p) => p.endsWith('.o'));
  const mine = (p) => !path.isAbsolute(p) || p.startsWith(path.resolve(root) + '/') || p.startsWith(path.resolve(buildDir) + '/');
  const items = new Map();
  for (const p of list.filter((p) => /\.(so[.\d]*|a)$/.test(p) && !mine(p))) items.set(p, { path: p, detail: `${rel} is linked with it` });
  const deps = ninja(['-t', 'deps', ...objects]);
  for (const line of deps.stdout.split('\n')) {
    const p = line.trim();
    if (/^\s{4}\//.test(line) && !mine(p) && !items.has(p)) items.set(p, { path: p, detail: `${rel}'s objects include it` });
  }
  const cache = fs.readFileSync(path.join(buildDir, 'CMakeCache.txt'), 'utf8');
  for (const key of ['CMAKE_CXX_COMPILER', 'CMAKE_MAKE_PROGRAM', 'CMAKE_COMMAND']) {
    const m = cache.match(new RegExp(`^${key}:\\w+=(/.*)$`, 'm'));
    if (m) items.set(m[1], { path: m[1], detail: `the build runs it (${key})` });
  }
  if (objects.length === 0 || items.size < 10) problems.push(`${rel}: found ${objects.length} objects and ${items.size} system files; is ${buildDir} a Ninja build?`);
  return [...items.values()];
}

// The project's files CMake read while configuring this build tree (build.ninja's RERUN_CMAKE
// inputs), relative to the source root; the build tree's own files left out.
function configureInputs() {
  const text = fs.readFileSync(path.join(buildDir, 'build.ninja'), 'utf8').replace(/ \$\n\s*/g, ' ');
  const line = text.split('\n').find((l) => /^build build\.ninja: RERUN_CMAKE /.test(l)) || '';
  const src = path.resolve(root) + '/';
  const tree = path.resolve(buildDir) + '/';
  return line.split(/\s+/).filter((p) => p.startsWith(src) && !p.startsWith(tree)).map((p) => p.slice(src.length));
}

// Files the stage's configure reads that no COPY of the stage brings into the image: a file
// outside every copied path whose name a copied CMakeLists.txt mentions (the operator compiles
// the CRD in: without `COPY crds/` its configure fails).
function contextProblems(df, stage) {
  const sources = stage.copies.filter((c) => !c.from).flatMap((c) => c.sources).map((s) => s.replace(/^\.\//, ''));
  const covered = (rel) => sources.some((s) => (s.endsWith('/') ? rel.startsWith(s) : rel === s || rel.startsWith(s + '/')));
  const inputs = configureInputs();
  if (inputs.length === 0) return [`${buildDir}/build.ninja names no configure input under ${root}: is it a Ninja build of this tree?`];
  const lists = inputs.filter((r) => path.basename(r) === 'CMakeLists.txt' && covered(r))
    .map((r) => fs.readFileSync(path.join(root, r), 'utf8'));
  return inputs.filter((r) => path.basename(r) !== 'CMakeLists.txt' && !covered(r) &&
                              lists.some((t) => t.includes(path.basename(r))))
    .map((r) => `${df.file}: the build stage ${stage.name} (line ${stage.line}) configures with ${r} (a CMakeLists.txt it copies reads it) but no COPY brings it`);
}

function buildProblems(df) {
  const out = [];
  for (const b of copiedBinaries(df)) {
    if (!builtBinary(df, b)) continue;
    out.push(...contextProblems(df, b.stage));
    const items = buildInputs(b.rel);
    const sim = simulate(df, b.stage, 'build stage');
    out.push(...coverage(df, `the build stage ${b.stage.name} (FROM ${b.stage.from}, line ${b.stage.line})`, items, sim.installed));
    notes.push(`${df.file}: ${items.length} system files used to build ${b.rel} checked against ${sim.installed.size} packages of the build stage`);
  }
  return out;
}

function checkBuildDeps() {
  const dfs = dockerfiles().filter((df) => debianStages(df).length === df.stages.length);
  for (const df of dfs) problems.push(...buildProblems(df));
  const broken = brokenCopy(dockerfiles(), kBuildDrop.file, withoutPackage(kBuildDrop.pkg));
  const self = buildProblems(broken);
  selfTest(`a copy of ${kBuildDrop.file} whose build stage lacks ${kBuildDrop.pkg}`,
    self.find((p) => p.includes(`lacks ${kBuildDrop.pkg},`)), self);
  const noCrd = brokenCopy(dockerfiles(), kContextDrop.file, (t) => t.replace(kContextDrop.line + '\n', ''));
  const ctx = buildProblems(noCrd);
  selfTest(`a copy of ${kContextDrop.file} without \`${kContextDrop.line}\``,
    ctx.find((p) => p.includes(`configures with ${kContextDrop.input}`)), ctx);
}

function main() {
  const checks = { packages: checkPackages, 'runtime-libs': checkRuntimeLibs, 'build-deps': checkBuildDeps };
  if (!checks[check] || !root || (check !== 'packages' && !buildDir)) {
    console.error('usage: image_checks.js <packages|runtime-libs|build-deps> <source root> [<build dir>]');
    process.exit(2);
  }
  const release = fs.existsSync('/etc/os-release') ? fs.readFileSync('/etc/os-release', 'utf8') : '';
  if (!/^ID=debian$/m.test(release) || !/^VERSION_CODENAME=bookworm$/m.test(release)) {
    console.log(`${check}: skipped: this machine is not Debian 12, whose package lists the check reads`);
    process.exit(kSkip);
  }
  checks[check]();
  for (const n of new Set(notes)) console.log('note: ' + n);
  if (problems.length) {
    console.error(`${check}: ${problems.length} problem(s)\n` + problems.map((p) => '  ' + p).join('\n'));
    process.exit(1);
  }
  const skippedAll = check !== 'packages' && notes.some((n) => / not checked: /.test(n)) && !notes.some((n) => / checked against /.test(n));
  console.log(`${check}: ${skippedAll ? 'skipped' : 'ok'}`);
  process.exit(skippedAll ? kSkip : 0);
}

main();
