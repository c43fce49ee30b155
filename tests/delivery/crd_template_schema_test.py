#!/usr/bin/env python3
"""The CRD's embedded PodTemplateSpec schema (scripts/gen_crd_pod_template.py).

1. The committed CRDs equal the generator's output (regenerated here from third_party/).
2. The schema is structural as the API server requires it: every node typed (or
   int-or-string), no $ref / allOf / oneOf / description left, list-map keys required or
   defaulted; the CRD stays applicable (its JSON under the 256 KiB last-applied annotation a
   client-side `kubectl apply` writes, far under the 1.5 MiB object limit).
3. Templates are checked against it with a small validator written here, which applies the
   rules the API server applies to a CRD with strict field validation (kubectl's default):
   types, int32 ranges, required fields, unknown fields refused except where fields are
   preserved, int-or-string. The test API server does not validate CRD schemas, so this
   validator, not a real API server, is what the bad templates meet; the node check
   (delivery_checks.js examples, with ajv) validates the examples against the same schema.

Standard library only. Usage: crd_template_schema_test.py SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import unittest

SOURCE_DIR = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(SOURCE_DIR, "scripts"))
sys.dont_write_bytecode = True  # nothing written into the source tree
import gen_crd_pod_template as gen  # noqa: E402

INT32 = (-2**31, 2**31 - 1)


def validate(schema, value, path="spec.template"):
    """Errors as the API server words them: 'PATH: Invalid value: ...' or 'unknown field'."""
    errs = []
    if value is None:
        return errs  # null is absent for optional fields (required is checked by the parent)
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))):
            errs.append("%s: Invalid value: must be an integer or a string" % path)
        return errs
    t = schema["type"]
    ok = {"object": lambda v: isinstance(v, dict),
          "array": lambda v: isinstance(v, list),
          "string": lambda v: isinstance(v, str),
          "boolean": lambda v: isinstance(v, bool),
          "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
          "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)}[t]
    if not ok(value):
        errs.append("%s: Invalid value: %s: must be of type %s" % (path, json.dumps(value), t))
        return errs
    if t == "integer" and schema.get("format") == "int32" and not INT32[0] <= value <= INT32[1]:
        errs.append("%s: Invalid value: %d: out of int32 range" % (path, value))
    if t == "array":
        for i, item in enumerate(value):
            errs += validate(schema["items"], item, "%s[%d]" % (path, i))
    if t == "object":
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if value.get(key) is None:
                errs.append("%s.%s: Required value" % (path, key))
        for key, child in value.items():
            if key in props:
                errs += validate(props[key], child, "%s.%s" % (path, key))
            elif "additionalProperties" in schema:
                errs += validate(schema["additionalProperties"], child, "%s.%s" % (path, key))
            elif not schema.get("x-kubernetes-preserve-unknown-fields"):
                errs.append('%s: unknown field "%s"' % (path, key))
    return errs


def good_template():
    return {"metadata": {"labels": {"app": "mingpt"}, "annotations": {"team": "vision"},
                         "ownerNote": "kept: metadata preserves unknown fields"},
            "spec": {"containers": [{
                "name": "worker", "image": "ddp-worker:1", "command": ["ddp-worker"],
                "args": ["--steps=10"], "env": [{"name": "NCCL_DEBUG", "value": "WARN"}],
                "ports": [{"name": "metrics", "containerPort": 9400}],
                "resources": {"limits": {"nvidia.com/gpu": 8, "memory": "64Gi"}},
                "volumeMounts": [{"name": "ckpt", "mountPath": "/checkpoints"}],
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": "metrics"}}}],
                "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "c"}}],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                "terminationGracePeriodSeconds": 60}}


class CrdTemplateSchema(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.schema = gen.generate(os.path.join(SOURCE_DIR, gen.SOURCE))

    def test_committed_crds_equal_the_generated_schema(self):
        r = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "scripts",
                                                         "gen_crd_pod_template.py"),
                            "--check", "--root", SOURCE_DIR], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_schema_is_structural(self):
        forbidden = {"$ref", "allOf", "oneOf", "description", "enum",
                     "x-kubernetes-patch-merge-key", "x-kubernetes-patch-strategy"}
        nodes = []

        def walk(n, path):
            nodes.append(path)
            self.assertFalse(forbidden & set(n), path)
            self.assertTrue("type" in n or n.get("x-kubernetes-int-or-string"), path)
            if "anyOf" in n:  # only the int-or-string form is allowed without a type
                self.assertEqual(n["anyOf"], [{"type": "integer"}, {"type": "string"}], path)
            for k, c in n.get("properties", {}).items():
                walk(c, path + "." + k)
            if "items" in n:
                walk(n["items"], path + "[]")
                for key in n.get("x-kubernetes-list-map-keys", []):
                    item = n["items"]
                    self.assertTrue(key in item.get("required", []) or
                                    "default" in item["properties"][key], path + " key " + key)
            if "additionalProperties" in n:
                walk(n["additionalProperties"], path + "{}")
        walk(self.schema, "spec.template")
        self.assertGreater(len(nodes), 1000)  # the whole PodSpec, not a stub

    def test_crd_stays_applicable(self):
        with open(os.path.join(SOURCE_DIR, "crds", "ddpjob.yaml")) as f:
            text = f.read()
        # JSON is smaller than the YAML (no indentation); the YAML bound is the safe one.
        self.assertLess(len(text), 256 * 1024, "client-side apply's annotation limit")

    def test_good_template_is_accepted(self):
        self.assertEqual(validate(self.schema, good_template()), [])

    def test_bad_templates_are_refused_naming_the_field(self):
        c0 = "spec.template.spec.containers[0]"
        cases = [
            (lambda t: t["spec"]["containers"][0]["ports"][0].update(containerPort="9000"),
             c0 + '.ports[0].containerPort: Invalid value: "9000": must be of type integer'),
            (lambda t: t["spec"]["containers"][0]["ports"][0].update(name=7),
             c0 + ".ports[0].name: Invalid value: 7: must be of type string"),
            (lambda t: t["spec"]["containers"][0]["env"].append({"name": 5}),
             c0 + ".env[1].name: Invalid value: 5: must be of type string"),
            (lambda t: t["spec"]["containers"][0].update(prots=[]),
             c0 + ': unknown field "prots"'),
            (lambda t: t["spec"].update(containers=[{"image": "x"}]),
             c0 + ".name: Required value"),
            (lambda t: t["spec"]["containers"][0]["ports"][0].update(containerPort=2**40),
             c0 + ".ports[0].containerPort: Invalid value: 1099511627776: out of int32 range"),
            (lambda t: t["spec"]["containers"][0]["resources"]["limits"].update(cpu=[1]),
             c0 + ".resources.limits.cpu: Invalid value: must be an integer or a string"),
            (lambda t: t["metadata"]["labels"].update(tier=1),
             "spec.template.metadata.labels.tier: Invalid value: 1: must be of type string"),
            (lambda t: t["spec"]["volumes"][0].update(persistentVolumeClaim="c"),
             'spec.template.spec.volumes[0].persistentVolumeClaim: Invalid value: "c": must be of '
             "type object"),
            (lambda t: t["spec"].pop("containers"), "spec.template.spec.containers: Required value"),
        ]
        for edit, want in cases:
            t = good_template()
            edit(t)
            self.assertIn(want, validate(self.schema, t))


if __name__ == "__main__":
    unittest.main(verbosity=1)
