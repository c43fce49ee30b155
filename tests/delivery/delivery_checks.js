#!/usr/bin/env node
// Delivery checks that need npm packages (js-yaml, ajv, dockerfile-utils). One check per
// subcommand, each a ctest entry:  node delivery_checks.js <check> <source root>
// Exit 0 when the check passes; otherwise every problem is printed and the exit code is 1.
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const os = require('os');
const yaml = require('js-yaml');
const Ajv = require('ajv');
const dockerfileUtils = require('dockerfile-utils');

const [check, root] = process.argv.slice(2);
const problems = [];
const fail = (msg) => problems.push(msg);
const read = (rel) => fs.readFileSync(path.join(root, rel), 'utf8');
const exists = (rel) => fs.existsSync(path.join(root, rel));
const listDir = (rel, re) =>
  exists(rel) ? fs.readdirSync(path.join(root, rel)).filter((f) => re.test(f)).sort() : [];

// Files under `rel` (relative paths), skipping build trees and dot entries.
function listTree(rel) {
  const out = [];
  if (!exists(rel)) return out;
  for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
    if (e.name.startsWith('.') || e.name === 'build' || e.name.startsWith('build-')) continue;
    const child = rel + '/' + e.name;
    if (e.isDirectory()) out.push(...listTree(child));
    else out.push(child);
  }
  return out;
}

// ---- Dockerfiles: lint clean, and every COPY source exists and is in the build context.
function dockerIgnoreAllows(rel) {
  // .dockerignore is "exclude everything, then let back in": evaluate its rules in order.
  let allowed = true;
  for (let line of read('.dockerignore').split('\n')) {
    line = line.trim();
    if (!line || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    const pat = (negate ? line.slice(1) : line).replace(/\/$/, '');
    const re = new RegExp('^' + pat.split('**/').map((p) => p.replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')).join('(?:.*/)?') + '(?:/.*)?$');
    if (re.test(rel)) allowed = negate;
  }
  return allowed;
}

function checkDockerfiles() {
  const files = listDir('dockerfiles', /\.Dockerfile$/);
  if (files.length < 2) fail('expected dockerfiles/operator.Dockerfile and worker.Dockerfile');
  // The linter must see errors at all: a Dockerfile without FROM is one.
  if (dockerfileUtils.validate('RUN true\n').length === 0) fail('dockerfile-utils reports nothing on a broken file');
  for (const f of files) {
    const text = read('dockerfiles/' + f);
    for (const d of dockerfileUtils.validate(text)) {
      // severity 1 = error, 2 = warning: both are reported, the project keeps zero of each.
      fail(`dockerfiles/${f}:${d.range.start.line + 1}: ${d.message} (severity ${d.severity})`);
    }
    const lines = text.replace(/\\\n/g, ' ').split('\n');
    let copies = 0;
    for (const line of lines) {
      const m = line.match(/^\s*(COPY|ADD)\s+(.*)$/i);
      if (!m) continue;
      const args = m[2].trim().split(/\s+/);
      if (args.some((a) => a.startsWith('--from'))) continue;  // from another stage
      const srcs = args.filter((a) => !a.startsWith('--')).slice(0, -1);
      for (const src of srcs) {
        ++copies;
        const rel = src.replace(/^\.\//, '').replace(/\/$/, '');
        if (!exists(rel)) fail(`dockerfiles/${f}: COPY ${src}: no such file in the repository`);
        else if (!dockerIgnoreAllows(rel)) fail(`dockerfiles/${f}: COPY ${src}: excluded by .dockerignore`);
      }
    }
    if (copies === 0) fail(`dockerfiles/${f}: copies no sources`);
    if (!/^USER\s+\d+/m.test(text)) fail(`dockerfiles/${f}: no numeric non-root USER`);
    if (/^USER\s+0\b/m.test(text)) fail(`dockerfiles/${f}: runs as root`);
    if (!/^ENTRYPOINT\s+\[/m.test(text)) fail(`dockerfiles/${f}: no exec-form ENTRYPOINT`);
  }
  // Build outputs never enter the context.
  for (const p of ['build/x', 'build-foo/ddp-operator', 'tests/delivery/node_modules/a', '.git/HEAD',
                   'operator/build/x.o', 'worker/build-rel/ddp-worker', 'common/CMakeFiles/a']) {
    if (dockerIgnoreAllows(p)) fail(`.dockerignore lets ${p} into the build context`);
  }
  // Every tracked source file under a copied folder reaches the build (a pattern like `build*/`
  // matches operator/plan/builders.cc once the matcher drops its trailing slash).
  for (const dir of ['common', 'operator', 'worker']) {
    for (const rel of listTree(dir)) {
      if (!dockerIgnoreAllows(rel)) fail(`.dockerignore drops ${rel} from the build context`);
    }
  }
}

// ---- values.yaml satisfies values.schema.json (and the schema rejects bad values).
function checkValues() {
  const dir = 'charts/ddp-operator/';
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
  const validate = ajv.compile(JSON.parse(read(dir + 'values.schema.json')));
  const values = yaml.load(read(dir + 'values.yaml'));
  if (!validate(values)) fail('values.yaml: ' + ajv.errorsText(validate.errors, { separator: '\n  ' }));
  const bad = [
    ['logLevel', 'loud'], ['replicaCount', 0], ['workers', 'four'], ['unknownKey', 1],
  ];
  for (const [key, v] of bad) {
    const copy = JSON.parse(JSON.stringify(values));
    copy[key] = v;
    if (validate(copy)) fail(`values.schema.json accepts ${key}: ${JSON.stringify(v)}`);
  }
  const priv = JSON.parse(JSON.stringify(values));
  priv.securityContext.allowPrivilegeEscalation = true;
  if (validate(priv)) fail('values.schema.json accepts securityContext.allowPrivilegeEscalation: true');
  // Every .Values path a template reads exists in values.yaml (no silently empty settings).
  for (const t of listDir(dir + 'templates', /\.(yaml|tpl|txt)$/)) {
    const text = read(dir + 'templates/' + t);
    for (const m of text.matchAll(/\.Values((?:\.[A-Za-z_]\w*)+)/g)) {
      let node = values;
      for (const seg of m[1].slice(1).split('.')) {
        if (node === null || typeof node !== 'object' || !(seg in node)) {
          fail(`templates/${t}: .Values${m[1]} is not in values.yaml`);
          break;
        }
        node = node[seg];
      }
    }
  }
  // The security settings the chart promises.
  const sc = values.securityContext, psc = values.podSecurityContext;
  if (sc.readOnlyRootFilesystem !== true) fail('securityContext.readOnlyRootFilesystem must be true');
  if (sc.allowPrivilegeEscalation !== false) fail('securityContext.allowPrivilegeEscalation must be false');
  if (JSON.stringify(sc.capabilities) !== JSON.stringify({ drop: ['ALL'] })) fail('capabilities must drop ALL');
  if (psc.runAsNonRoot !== true || !(psc.runAsUser > 0)) fail('podSecurityContext must run as non-root');
  if ((psc.seccompProfile || {}).type !== 'RuntimeDefault') fail('seccompProfile must be RuntimeDefault');
  const r = values.resources;
  if (!r.requests || !r.limits || !r.requests.cpu || !r.requests.memory || !r.limits.memory) {
    fail('resources need cpu/memory requests and a memory limit');
  }
}

// ---- Examples: every DDPJob satisfies the CRD's schema; worker flags exist in the worker.
function crdValidator() {
  const crd = yaml.load(read('crds/ddpjob.yaml'));
  const schema = JSON.parse(JSON.stringify(crd.spec.versions[0].schema.openAPIV3Schema));
  // OpenAPI v3 -> JSON Schema: drop Kubernetes extensions, keep the rest (ajv knows nullable).
  // Objects with properties refuse other fields (kubectl's strict field validation), unless
  // they preserve unknown fields (the template's metadata).
  const strip = (n) => {
    if (Array.isArray(n)) return n.forEach(strip);
    if (n === null || typeof n !== 'object') return;
    const preserve = n['x-kubernetes-preserve-unknown-fields'] === true;
    for (const k of Object.keys(n)) {
      if (k.startsWith('x-kubernetes-')) delete n[k];
      else if (k !== 'default' && k !== 'enum') strip(n[k]);
    }
    if (n.type === 'object' && n.properties && !preserve) n.additionalProperties = false;
  };
  strip(schema);
  schema.properties.metadata.additionalProperties = true;
  const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
  return { validate: ajv.compile(schema), ajv };
}

function workerFlags() {
  // The option table of worker/train/config.cc: Opt("train.steps", "steps", ...).
  const flags = new Set(['config']);
  for (const m of read('worker/train/config.cc').matchAll(/Opt\(\s*"[\w.]+",\s*"([\w-]+)"/g)) flags.add(m[1]);
  return flags;
}

function checkExamples() {
  const { validate, ajv } = crdValidator();
  const flags = workerFlags();
  if (flags.size < 10) fail('could not read the worker flags from worker/train/config.cc');
  const files = listDir('examples', /\.ya?ml$/);
  const claims = new Set(), pvcs = new Set();
  let jobs = 0;
  for (const f of files) {
    const docs = yaml.loadAll(read('examples/' + f)).filter((d) => d);
    for (const doc of docs) {
      if (doc.kind === 'PersistentVolumeClaim') { pvcs.add(doc.metadata.name); continue; }
      if (doc.kind !== 'DDPJob') { fail(`examples/${f}: unexpected kind ${doc.kind}`); continue; }
      ++jobs;
      if (!validate(doc)) fail(`examples/${f}: not valid for the CRD: ${ajv.errorsText(validate.errors)}`);
      const spec = doc.spec || {};
      const podSpec = (spec.template || {}).spec || {};
      for (const v of podSpec.volumes || []) {
        if (v.persistentVolumeClaim) claims.add([f, v.persistentVolumeClaim.claimName]);
      }
      const cs = podSpec.containers || [];
      const worker = cs.find((c) => c.name === 'worker') || cs[0];
      if (!worker) continue;
      const cmd = worker.command || [];
      if (cmd[0] !== 'ddp-worker') continue;  // not our trainer: nothing more to check
      const nproc = spec.nprocPerNode || 1;
      if ((nproc > 1) !== (cmd[1] === 'launch')) {
        fail(`examples/${f}: nprocPerNode ${nproc} needs command ${nproc > 1 ? '[ddp-worker, launch]' : '[ddp-worker]'}`);
      }
      for (const a of [...cmd.slice(1), ...(worker.args || [])]) {
        if (a === 'launch' || !a.startsWith('--')) continue;
        const name = a.slice(2).split('=')[0];
        if (!flags.has(name)) fail(`examples/${f}: ddp-worker has no flag --${name}`);
      }
      const port = (spec.metrics || {}).port || 9400;
      for (const p of worker.ports || []) {
        if (p.name === 'metrics' && p.containerPort !== port) {
          fail(`examples/${f}: container port "metrics" ${p.containerPort} != spec.metrics.port ${port}`);
        }
      }
      const ckpt = (spec.checkpoint || {}).path;
      if (ckpt && !(worker.volumeMounts || []).some((m) => m.mountPath === ckpt)) {
        fail(`examples/${f}: spec.checkpoint.path ${ckpt} has no volume mounted there`);
      }
    }
  }
  if (jobs < 3) fail(`expected at least 3 DDPJob examples, found ${jobs}`);
  for (const pvc of pvcs) {
    if (![...claims].some(([, c]) => c === pvc)) fail(`examples: PVC ${pvc} is used by no example`);
  }
  // The CRD validator itself must reject a broken job.
  const broken = { apiVersion: 'ddp.dev/v1alpha1', kind: 'DDPJob', metadata: { name: 'x' },
    spec: { replicas: 0, template: {}, failurePolicy: { restartPolicy: 'Sometimes' } } };
  if (validate(broken)) fail('the CRD schema accepts replicas 0 and restartPolicy Sometimes');
  // The embedded PodTemplateSpec schema refuses mistyped and unknown template fields.
  const withContainer = (c) => ({ apiVersion: 'ddp.dev/v1alpha1', kind: 'DDPJob',
    metadata: { name: 'x' }, spec: { template: { spec: { containers: [c] } } } });
  const good = { name: 'worker', image: 'w', ports: [{ containerPort: 9000 }], env: [{ name: 'A' }],
    resources: { limits: { cpu: 2, memory: '1Gi' } } };
  if (!validate(withContainer(good))) {
    fail(`the CRD schema refuses a good template: ${ajv.errorsText(validate.errors)}`);
  }
  const bad = [
    { ...good, ports: [{ containerPort: '9000' }] },
    { ...good, ports: [{ containerPort: 9000, name: 7 }] },
    { ...good, env: [{ name: 5 }] },
    { ...good, prots: [] },
    { ...good, resources: { limits: { cpu: [2] } } },
  ];
  for (const c of bad) {
    if (validate(withContainer(c))) fail(`the CRD schema accepts the container ${JSON.stringify(c)}`);
  }
}

// ---- RBAC: the chart grants exactly what the operator's client calls.
const kVerbOf = { Get: 'get', List: 'list', ListAll: 'list', Watch: 'watch', Create: 'create',
  Delete: 'delete', MergePatch: 'patch', Update: 'update', UpdateStatus: 'update',
  MergePatchStatus: 'patch', CreateAll: 'create', DeleteAll: 'delete' };

function resourceTable() {
  // operator/kube/resource.h: inline const Resource kPods{"", "v1", "pods", "Pod", true};
  const table = {};
  for (const m of read('operator/kube/resource.h').matchAll(
    /const Resource (k\w+)\{"([^"]*)",\s*"[^"]*",\s*"([^"]+)",\s*"([^"]+)"/g)) {
    table[m[1]] = { group: m[2], plural: m[3], kind: m[4] };
  }
  return table;
}

function operatorSources() {
  const files = [];
  for (const dir of ['operator/kube', 'operator/controller']) {
    for (const f of listDir(dir, /\.cc$/)) {
      // client*.cc implements the verbs for any resource; the callers decide which.
      if (dir === 'operator/kube' && /^client/.test(f)) continue;
      files.push(dir + '/' + f);
    }
  }
  return files;
}

function deriveRbacNeeds() {
  const table = resourceTable();
  const needs = new Set();  // "group|resource|verb"
  const add = (k, verb, sub) => {
    const r = table[k];
    if (!r) return fail(`unknown resource constant ${k}`);
    needs.add(`${r.group}|${r.plural}${sub ? '/' + sub : ''}|${verb}`);
  };
  // Kinds the planner builds objects of: a ResourceForKind(kind) call can only see these. A kind
  // may be written as a constant of the plan's headers (kPodGroupKind).
  const kindConstants = {};
  for (const f of listDir('operator/plan', /\.h$/)) {
    for (const m of read('operator/plan/' + f).matchAll(/constexpr char (k\w+Kind)\[\]\s*=\s*"(\w+)"/g)) {
      kindConstants[m[1]] = m[2];
    }
  }
  const plannedKinds = new Set();
  for (const f of listDir('operator/plan', /\.cc$/)) {
    const text = read('operator/plan/' + f);
    for (const m of text.matchAll(/"kind"\s*(?:,|\]\s*=)\s*"(\w+)"/g)) plannedKinds.add(m[1]);
    for (const m of text.matchAll(/"kind"\s*,\s*(k\w+Kind)\b/g)) {
      if (kindConstants[m[1]]) plannedKinds.add(kindConstants[m[1]]);
    }
  }
  // The gang scheduler's PodGroups: the controller holds the configured one as
  // pod_group_resource_ (ResourceForKind gets it as pod_groups); it may be either.
  const podGroups = Object.keys(table).filter((k) => table[k].kind === 'PodGroup');
  const isPodGroupVar = (arg) => /^\*?(pod_group_resource_|pod_groups)$/.test(arg);
  let informerVerbs = new Set();
  const informerResources = new Set();
  const verbRe = new RegExp(`(?:->|\\.)\\s*(${Object.keys(kVerbOf).join('|')})\\(\\s*([^,)]*)|\\bListAll\\(\\s*[^,]+,\\s*([^,)]*)`, 'g');
  for (const file of operatorSources()) {
    const text = read(file).replace(/\/\/.*$/gm, '');
    // Resources chosen at run time through ResourceForKind: those it returns, of planned kinds.
    const forKind = [];
    const fk = text.match(/ResourceForKind\([^)]*\)\s*\{([\s\S]*?)\n\}/);
    if (fk) {
      for (const m of fk[1].matchAll(/&(k\w+)/g)) {
        if (table[m[1]] && (plannedKinds.size === 0 || plannedKinds.has(table[m[1]].kind))) forKind.push(m[1]);
      }
      if (/return pod_groups;/.test(fk[1]) && plannedKinds.has('PodGroup')) forKind.push(...podGroups);
    }
    for (const m of text.matchAll(/InformerFor\(\s*(k\w+)/g)) informerResources.add(m[1]);
    if (/InformerFor\(\s*\*pod_group_resource_/.test(text)) podGroups.forEach((k) => informerResources.add(k));
    for (const m of text.matchAll(verbRe)) {
      const method = m[1] || 'ListAll';
      const arg = (m[2] !== undefined ? m[2] : m[3]).trim();
      if (!/client/.test(text.slice(Math.max(0, m.index - 12), m.index + 2)) && method !== 'ListAll') continue;
      const verb = kVerbOf[method];
      const sub = /Status$/.test(method) ? 'status' : '';
      const line = text.slice(0, m.index).split('\n').length;
      if (/All$/.test(method)) {
        // A batch: its resources are those of the calls the enclosing function builds,
        // `push_back({&kEvents, ...})` or `push_back({r, ...})` with r from ResourceForKind.
        const start = text.lastIndexOf('\n}\n', m.index);
        const end = text.indexOf('\n}\n', m.index);
        const body = text.slice(start < 0 ? 0 : start, end < 0 ? text.length : end);
        const elems = [...body.matchAll(/push_back\(\{\s*&?(\w+)\s*,/g)].map((e) => e[1]);
        if (elems.length === 0) fail(`${file}:${line}: cannot tell which resources ${method}(${arg}) uses; extend deriveRbacNeeds`);
        for (const e of elems) {
          if (/^k\w+$/.test(e)) add(e, verb, sub);
          else if (e === 'r' && forKind.length) forKind.forEach((k) => add(k, verb, sub));
          else fail(`${file}:${line}: cannot tell which resource ${e} in ${method} is; extend deriveRbacNeeds`);
        }
      } else if (/^k\w+$/.test(arg)) add(arg, verb, sub);
      else if (isPodGroupVar(arg)) podGroups.forEach((k) => add(k, verb, sub));
      else if (/^\*?r$/.test(arg) && forKind.length) forKind.forEach((k) => add(k, verb, sub));
      else if (/options_\.resource|resource_/.test(arg) && /informer/.test(file)) informerVerbs.add(verb);
      else fail(`${file}:${line}: cannot tell which resource ${method}(${arg}, ...) uses; extend deriveRbacNeeds`);
    }
  }
  for (const k of informerResources) for (const v of informerVerbs) add(k, v, '');
  return needs;
}

function rulesToSet(rules, where) {
  const set = new Set();
  for (const r of rules) {
    for (const key of ['apiGroups', 'resources', 'verbs']) {
      if ((r[key] || []).includes('*')) fail(`${where}: "*" in ${key}`);
    }
    for (const g of r.apiGroups) for (const res of r.resources) for (const v of r.verbs) set.add(`${g}|${res}|${v}`);
  }
  return set;
}

// The gang schedulers' API groups: granted only by their own rule file, only when enabled.
const kGangRules = { 'scheduling.volcano.sh': 'files/rbac-rules-volcano.yaml',
  'scheduling.x-k8s.io': 'files/rbac-rules-coscheduling.yaml' };

function checkRbac() {
  const dir = 'charts/ddp-operator/';
  const all = deriveRbacNeeds();
  if (all.size < 5) fail(`derived only ${all.size} permissions from the operator source`);
  const groupOf = (n) => n.split('|')[0];
  const needs = new Set([...all].filter((n) => !kGangRules[groupOf(n)]));
  for (const [group, file] of Object.entries(kGangRules)) {
    const want = new Set([...all].filter((n) => groupOf(n) === group));
    if (want.size === 0) fail(`the operator never calls ${group}: drop ${file}`);
    const got = rulesToSet(yaml.load(read(dir + file)), file);
    for (const n of want) if (!got.has(n)) fail(`${file} does not grant ${n} (the operator calls it)`);
    for (const g of got) if (!want.has(g)) fail(`${file} grants ${g}, which is not the operator's call on ${group}`);
  }
  const main = rulesToSet(yaml.load(read(dir + 'files/rbac-rules.yaml')), 'files/rbac-rules.yaml');
  const lease = rulesToSet(yaml.load(read(dir + 'files/leader-election-rules.yaml')), 'files/leader-election-rules.yaml');
  const nodes = rulesToSet(yaml.load(read(dir + 'files/node-rules.yaml')), 'files/node-rules.yaml');
  const granted = new Set([...main, ...lease, ...nodes]);
  for (const n of needs) if (!granted.has(n)) fail(`the chart does not grant ${n} (the operator calls it)`);
  for (const g of granted) if (!needs.has(g)) fail(`the chart grants ${g}, which the operator never calls`);
  for (const g of main) if (g.startsWith('coordination.k8s.io|')) fail(`leases belong in leader-election-rules.yaml: ${g}`);
  for (const g of lease) if (!g.startsWith('coordination.k8s.io|')) fail(`leader-election-rules.yaml grants ${g}`);
  // Cluster-scoped reads live in their own ClusterRole, whatever watchNamespace says.
  for (const g of main) if (g.startsWith('|nodes|')) fail(`nodes belong in node-rules.yaml: ${g}`);
  for (const g of nodes) if (!g.startsWith('|nodes|')) fail(`node-rules.yaml grants ${g}`);
  const rbac = read(dir + 'templates/rbac.yaml');
  const ruleFiles = ['files/rbac-rules.yaml', 'files/leader-election-rules.yaml', 'files/node-rules.yaml'];
  for (const f of ruleFiles) {
    if (!rbac.includes(`.Files.Get "${f}"`)) fail(`templates/rbac.yaml does not use ${f}`);
  }
  // The gang rules ride on gangScheduler.name: volcano's for "volcano", coscheduling's otherwise.
  if (!/with \.Values\.gangScheduler\.name/.test(rbac)) fail('templates/rbac.yaml does not key the PodGroup rules on gangScheduler.name');
  for (const f of Object.values(kGangRules)) {
    if (!rbac.includes(`"${f}"`)) fail(`templates/rbac.yaml does not use ${f}`);
  }
  if (process.env.DDP_DELIVERY_VERBOSE) console.log([...all].sort().join('\n'));
}

// ---- Dashboard: structure, metric names that exist in the code, PromQL that promtool accepts.
function metricNamesInCode() {
  const names = new Set();
  const walk = (rel) => {
    if (!exists(rel)) return;
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const p = rel + '/' + e.name;
      if (e.isDirectory()) walk(p);
      else if (/\.(cc|h)$/.test(e.name)) for (const m of read(p).matchAll(/"(ddp_(?:worker|operator)_\w+)"/g)) names.add(m[1]);
    }
  };
  ['common', 'operator', 'worker'].forEach(walk);
  return names;
}

function checkDashboard() {
  const dash = JSON.parse(read('charts/ddp-operator/dashboards/ddp.json'));
  const vars = Object.fromEntries(dash.templating.list.map((v) => [v.name, v]));
  if (!vars.datasource || vars.datasource.type !== 'datasource' || vars.datasource.query !== 'prometheus') {
    fail('dashboard: no Prometheus datasource variable');
  }
  if (!vars.job || vars.job.type !== 'query') fail('dashboard: no job variable');
  const code = metricNamesInCode();
  const exprs = [];
  const panels = dash.panels.filter((p) => p.type !== 'row');
  const ids = new Set();
  for (const p of panels) {
    if (ids.has(p.id)) fail(`dashboard: duplicate panel id ${p.id}`);
    ids.add(p.id);
    if (!p.targets || !p.targets.length) fail(`dashboard: panel "${p.title}" has no query`);
    for (const t of p.targets || []) {
      if (!t.datasource || t.datasource.uid !== '${datasource}') fail(`dashboard: "${p.title}" ignores $datasource`);
      exprs.push([p.title, t.expr]);
      for (const m of t.expr.matchAll(/\b(ddp_(?:worker|operator)_\w+)/g)) {
        const base = m[1].replace(/_(bucket|sum|count)$/, '');
        if (!code.has(m[1]) && !code.has(base)) fail(`dashboard: "${p.title}" uses ${m[1]}, which no code exports`);
      }
    }
  }
  const all = exprs.map(([, e]) => e).join('\n');
  for (const want of ['ddp_operator_jobs', 'ddp_operator_job_restarts_total', 'histogram_quantile',
    'ddp_operator_reconcile_duration_seconds_bucket', 'ddp_worker_tokens', 'ddp_worker_loss',
    'ddp_worker_step_seconds_bucket', 'ddp_worker_exposed_allreduce_seconds_total',
    'time() - max by (ddp_job) (ddp_worker_checkpoint_timestamp_seconds', 'ddp_worker_gpu_memory_bytes',
    'ddp_worker_round', 'ddp_worker_steps_per_second']) {
    if (!all.includes(want)) fail(`dashboard: no panel uses ${want}`);
  }
  for (const [title, e] of exprs) {
    // An info gauge is always 1: it can be counted, its value means nothing.
    if (/ddp_worker_info/.test(e) && !/^\s*count\b/.test(e)) fail(`dashboard: "${title}" plots the value of ddp_worker_info (always 1)`);
    // A fixed window over minutes reads far too low in a job's first minutes (rate divides by
    // the whole window): $__rate_interval, or a day's total in a stat.
    for (const m of e.matchAll(/\b(\w+)\([^()]*\[(\w+)\]\)/g)) {
      if (!m[2].startsWith('$') && !(m[1] === 'increase' && m[2] === '24h')) {
        fail(`dashboard: "${title}" uses ${m[1]}(...[${m[2]}]): use [$__rate_interval] (or increase over [24h] for a day's total)`);
      }
    }
  }
  // promtool parses every query as a recording rule (Grafana variables substituted).
  const rules = { groups: [{ name: 'dashboard', rules: exprs.map(([title, e], i) => ({
    record: `dashboard:q${i}`,
    expr: e.replace(/\$__rate_interval|\$__interval/g, '5m').replace(/\$__range/g, '1h')
      .replace(/\$\{?(job|namespace)\}?/g, '.*'),
  })) }] };
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ddp-dash-'));
  const file = path.join(tmp, 'rules.yaml');
  fs.writeFileSync(file, yaml.dump(rules));
  try {
    execFileSync('promtool', ['check', 'rules', file], { stdio: 'pipe' });
  } catch (e) {
    fail('dashboard: promtool rejects a query:\n' + (e.stdout || '') + (e.stderr || '') + (e.code === 'ENOENT' ? 'promtool not installed' : ''));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

const checks = { dockerfiles: checkDockerfiles, values: checkValues, examples: checkExamples,
  rbac: checkRbac, dashboard: checkDashboard };
if (!checks[check] || !root) {
  console.error(`usage: delivery_checks.js <${Object.keys(checks).join('|')}> <source root>`);
  process.exit(2);
}
checks[check]();
if (problems.length) {
  console.error(`${check}: ${problems.length} problem(s)\n` + problems.map((p) => '  ' + p).join('\n'));
  process.exit(1);
}
console.log(`${check}: ok`);
