#!/usr/bin/env node
// Table tests of the pure parts of the image checks: the Dockerfile reader and the parsers of
// apt-cache, apt-get -s, ldd and dpkg-query output. Inputs are small literal samples in the
// tools' formats; the expected values are read off them by hand.
'use strict';
const assert = require('assert');
const { instructions, aptInstalls, parseStages, usedStages, debianSuite } = require('./dockerfile_stages');
const sys = require('./debian_system');

const tests = [];
const test = (name, fn) => tests.push([name, fn]);

test('instructions join continuations and drop comment lines inside them', () => {
  const got = instructions('FROM a AS b\n# c\nRUN x \\\n# inside\n  && y\n\nCOPY s d\n');
  assert.deepStrictEqual(got.map((i) => [i.line, i.keyword, i.args]), [
    [1, 'FROM', 'a AS b'], [3, 'RUN', 'x && y'], [7, 'COPY', 's d']]);
});

test('apt-get install words up to the next shell operator', () => {
  const rows = [
    ['apt-get update && apt-get install -y --no-install-recommends a b=1.2 c:amd64 && rm -rf x', ['a', 'b', 'c'], 0],
    ['DEBIAN_FRONTEND=noninteractive apt-get -q install -y a; apt install b | tee', ['a', 'b'], 0],
    ['apt-get install -y $PKGS a', ['a'], 1],
    ['apt-get update', [], 0],
    ['pip3 install torch', [], 0],
  ];
  for (const [shell, pkgs, problems] of rows) {
    const r = aptInstalls(shell);
    assert.deepStrictEqual(r.packages, pkgs, shell);
    assert.strictEqual(r.problems.length, problems, shell);
  }
});

test('stages: ARG defaults in FROM, names, inherited packages, workdir, COPY --from', () => {
  const text = [
    'ARG V=1.2', 'FROM img:${V} AS build', 'RUN apt-get install -y a', 'WORKDIR /src',
    'FROM build AS more', 'RUN apt-get install -y b', 'WORKDIR sub',
    'FROM debian:bookworm-slim', 'COPY --from=more /src/sub/build/x /usr/bin/x', 'COPY y z/',
  ].join('\n');
  const s = parseStages(text);
  assert.strictEqual(s.length, 3);
  assert.deepStrictEqual([s[0].name, s[0].from, s[0].base], ['build', 'img:1.2', 'img:1.2']);
  assert.deepStrictEqual([s[1].base, s[1].packages, s[1].workdir], ['img:1.2', ['a', 'b'], '/src/sub']);
  assert.deepStrictEqual(s[1].installs.map((i) => i.packages), [['b']]);
  assert.deepStrictEqual(s[2].copies, [
    { line: 9, from: 'more', sources: ['/src/sub/build/x'], dest: '/usr/bin/x' },
    { line: 10, from: '', sources: ['y'], dest: 'z/' }]);
});

test('stages: a build argument picks the release, a release switch its packages', () => {
  const text = [
    'ARG DEBIAN=trixie', 'FROM debian:${DEBIAN} AS build', 'RUN apt-get install -y g++',
    'FROM debian:${DEBIAN}-slim',
    'RUN . /etc/os-release && apt-get update \\',
    ' && case "$VERSION_CODENAME" in \\',
    '      bookworm) apt-get install -y old1 old2 ;; \\',
    '      trixie|forky) apt-get install -y --no-install-recommends new1 ;; \\',
    '      *) echo no >&2; exit 1 ;; \\',
    '    esac && rm -rf /var/lib/apt/lists/*',
    'COPY --from=build /src/build/x /usr/bin/x',
  ].join('\n');
  const byDefault = parseStages(text);
  assert.deepStrictEqual([byDefault[0].from, byDefault[1].from, byDefault[1].packages],
    ['debian:trixie', 'debian:trixie-slim', ['new1']]);
  assert.deepStrictEqual(byDefault[1].problems, []);
  const old = parseStages(text, { DEBIAN: 'bookworm', UNDECLARED: 'x' });
  assert.deepStrictEqual([old[0].from, old[1].base, old[1].packages],
    ['debian:bookworm', 'debian:bookworm-slim', ['old1', 'old2']]);
  assert.deepStrictEqual(parseStages(text, { DEBIAN: 'bullseye' })[1].packages, []);
  assert.deepStrictEqual(parseStages(text, { DEBIAN: 'forky' })[1].packages, ['new1']);
});

test('stages: only the stages a build of the last one runs are used', () => {
  const text = [
    'FROM debian:bookworm AS build', 'RUN apt-get install -y g++',
    'FROM debian:bookworm AS unused', 'RUN apt-get install -y nothing',
    'FROM build AS more', 'FROM debian:bookworm-slim', 'COPY --from=more /src/build/x /usr/bin/x',
  ].join('\n');
  const names = (stages) => stages.map((s) => s.name || s.from);
  assert.deepStrictEqual(names(usedStages(parseStages(text))), ['build', 'more', 'debian:bookworm-slim']);
});

test('Debian suites of image references', () => {
  const rows = [['debian:bookworm', 'bookworm'], ['debian:bookworm-slim', 'bookworm'],
    ['debian:12', 'bookworm'], ['debian:12.5-slim', 'bookworm'], ['docker.io/library/debian:bookworm-20250520-slim', 'bookworm'],
    ['debian:bullseye', 'bullseye'], ['ubuntu:22.04', ''], ['nvidia/cuda:12.6.3-cudnn-runtime-ubuntu22.04', '']];
  for (const [image, suite] of rows) assert.strictEqual(debianSuite(image), suite, image);
});

test('apt-cache policy: candidates and the suites each package comes from', () => {
  const text = [
    'libyaml-cpp0.7:', '  Installed: 0.7.0+dfsg-8+b1', '  Candidate: 0.7.0+dfsg-8+b1', '  Version table:',
    ' *** 0.7.0+dfsg-8+b1 500', '        500 http://archive.example/debian bookworm/main amd64 Packages',
    '        100 /var/lib/dpkg/status',
    'nodejs:', '  Installed: 20.1-1nodesource1', '  Candidate: 20.1-1nodesource1', '  Version table:',
    ' *** 20.1-1nodesource1 600', '        600 https://repo.example nodistro/main amd64 Packages',
    'ghost:', '  Installed: (none)', '  Candidate: (none)', '  Version table:', ''].join('\n');
  const p = sys.parsePolicy(text);
  assert.deepStrictEqual([...p.keys()], ['libyaml-cpp0.7', 'nodejs', 'ghost']);
  assert.deepStrictEqual(p.get('libyaml-cpp0.7'), { candidate: '0.7.0+dfsg-8+b1', suites: ['bookworm/main'] });
  assert.strictEqual(sys.inBookwormMain(p.get('libyaml-cpp0.7').suites), true);
  assert.strictEqual(sys.inBookwormMain(p.get('nodejs').suites), false);
  assert.strictEqual(sys.inBookwormMain(['bookworm-security/main']), true);
  assert.strictEqual(sys.inBookwormMain(['cloud-sdk-bookworm/main', 'bookworm/contrib']), false);
  assert.strictEqual(p.get('ghost').candidate, '(none)');
});

test('apt-get -s: the packages it would install and their origins', () => {
  const text = [
    'NOTE: This is only a simulation!', 'Inst libssl3 (3.0.16-1~deb12u1 Debian-Security:12/stable-security [amd64])',
    'Inst libnode108 (18.20.4+dfsg-1~deb12u1 Debian:12.11/stable, Debian-Security:12/stable-security [amd64]) []',
    'Conf libssl3 (3.0.16-1~deb12u1 Debian-Security:12/stable-security [amd64])'].join('\n');
  assert.deepStrictEqual(sys.parseSimulation(text), [
    { name: 'libssl3', origin: 'Debian-Security:12/stable-security' },
    { name: 'libnode108', origin: 'Debian:12.11/stable, Debian-Security:12/stable-security' }]);
});

test('ldd: resolved, missing and loader lines; the vDSO is left out', () => {
  const text = [
    '\tlinux-vdso.so.1 (0x00007ffc8a5e2000)',
    '\tlibyaml-cpp.so.0.7 => /lib/x86_64-linux-gnu/libyaml-cpp.so.0.7 (0x00007f0c1c000000)',
    '\tlibgone.so.1 => not found',
    '\t/lib64/ld-linux-x86-64.so.2 (0x00007f0c1c400000)'].join('\n');
  assert.deepStrictEqual(sys.parseLdd(text), [
    { soname: 'libyaml-cpp.so.0.7', path: '/lib/x86_64-linux-gnu/libyaml-cpp.so.0.7' },
    { soname: 'libgone.so.1', path: '' },
    { soname: 'ld-linux-x86-64.so.2', path: '/lib64/ld-linux-x86-64.so.2' }]);
});

test('dpkg-query -S: the first owner, arch qualifier dropped, diversions skipped', () => {
  const text = [
    'libc6:amd64: /lib/x86_64-linux-gnu/libc.so.6',
    'libtorch-dev, python3-torch: /usr/include/torch/x.h',
    'diversion by dash from: /bin/sh', 'libstdc++-12-dev:amd64: /usr/include/c++/12/vector'].join('\n');
  assert.deepStrictEqual([...sys.parseDpkgSearch(text)], [
    ['/lib/x86_64-linux-gnu/libc.so.6', 'libc6'], ['/usr/include/torch/x.h', 'libtorch-dev'],
    ['/usr/include/c++/12/vector', 'libstdc++-12-dev']]);
});

test('merged /usr and CUDA paths', () => {
  assert.strictEqual(sys.usrToggled('/lib/x86_64-linux-gnu/libc.so.6'), '/usr/lib/x86_64-linux-gnu/libc.so.6');
  assert.strictEqual(sys.usrToggled('/usr/bin/cmake'), '/bin/cmake');
  assert.strictEqual(sys.usrToggled('/usr/include/x.h'), '/usr/include/x.h');
  assert.strictEqual(sys.isCuda('/usr/local/cuda/include/nccl.h'), true);
  assert.strictEqual(sys.isCuda('/opt/nvidia/lib/libnccl.so.2'), true);
  assert.strictEqual(sys.isCuda('/usr/lib/x86_64-linux-gnu/libtorch.so.1.13'), false);
});

let failed = 0;
for (const [name, fn] of tests) {
  try {
    fn();
  } catch (e) {
    ++failed;
    console.error(`FAIL ${name}\n  ${e.message.split('\n').join('\n  ')}`);
  }
}
console.log(`${tests.length - failed}/${tests.length} passed`);
process.exit(failed ? 1 : 0);
