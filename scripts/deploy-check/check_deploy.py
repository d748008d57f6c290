#!/usr/bin/env python3
"""Checks deployment files offline; scripts/check-deploy.sh is the entry point.

Each file is told apart by its content, not its name: a YAML or JSON document with
workerPoolSpecs is a Vertex AI CustomJobSpec, one with jobSpec a CustomJob REST body, one with
apiVersion and kind a Kubernetes object (a Kustomization is rendered with kubectl kustomize and
its output checked too, a kustomize Component rendered over each JobSet or StatefulSet file
checked beside it); a script that runs `gcloud ai custom-jobs create` is a gcloud command,
a Python script a Vertex AI SDK call; a document with scrape_configs a Prometheus configuration
(promtool check config, where promtool is installed). Kubernetes pods of the Reduction Server
must read the job secret from a mounted Secret (secret_check). What each check does is in its
module.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kubernetes_check  # noqa: E402
import report as report_mod  # noqa: E402
import secret_check  # noqa: E402
import vertex_check  # noqa: E402
import vertex_scripts_check  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIPPED_NAMES = {"README.md"}


def expand(paths):
    """Files to check: the given files, and every file under a given folder."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                files += [os.path.join(root, n) for n in sorted(names) if n not in SKIPPED_NAMES]
        else:
            files.append(path)
    return files


def no_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise ValueError("duplicate key(s) %s" % ", ".join(repeated))
    return dict(pairs)


def classify_document(doc):
    """What a parsed YAML/JSON document is, or None."""
    if not isinstance(doc, dict):
        return None
    if "workerPoolSpecs" in doc:
        return "vertex-spec"
    if "jobSpec" in doc:
        return "vertex-job"
    if "scrape_configs" in doc:
        return "prometheus"
    if "apiVersion" in doc and "kind" in doc:
        return {"Kustomization": "kustomization", "Component": "component"}.get(doc.get("kind"), "kubernetes")
    return None


def load_documents(path, text, rep):
    """The documents of a YAML or JSON file, or None after reporting why they cannot be read."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return "json", [json.loads(text, object_pairs_hook=no_duplicate_keys)]
        except ValueError as e:
            rep.fail(path, "JSON: %s" % e)
            return "json", None
    try:
        return "yaml", [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        rep.fail(path, "YAML: %s" % str(e).replace("\n", " "))
        return "yaml", None


def run_yamllint(paths, rep):
    if not paths:
        return
    config = os.path.join(REPO, ".yamllint")
    try:
        out = subprocess.run(["yamllint", "-c", config, "-f", "parsable", *paths],
                             capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        for p in paths:
            rep.fail(p, "yamllint is not installed (scripts/install-deps.sh installs it)")
        return
    problems = {}
    for line in out.stdout.splitlines():
        file, _, rest = line.partition(":")
        problems.setdefault(file, []).append(rest)
    for p in paths:
        for problem in problems.get(p, []):
            rep.fail(p, "yamllint: line %s" % problem)
        if p not in problems:
            rep.ok(p, "yamllint")
    if out.returncode != 0 and not problems:
        rep.fail(paths[0], "yamllint failed: %s" % out.stderr.strip())


def check_prometheus(path, rep):
    if shutil.which("promtool") is None:
        rep.skip(path, "promtool check config: skipped: promtool is not installed (Debian's prometheus package)")
        return
    out = subprocess.run(["promtool", "check", "config", "--syntax-only", path], capture_output=True, text=True,
                         timeout=60)
    if out.returncode == 0:
        rep.ok(path, "promtool check config")
    else:
        rep.fail(path, "promtool check config: %s" % " ".join((out.stderr or out.stdout).split()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", required=True, help="folder for the npm packages (node_modules)")
    parser.add_argument("paths", nargs="*", help="files or folders (default: deploy/)")
    args = parser.parse_args()

    rep = report_mod.Report()
    files = expand(args.paths or [os.path.join(REPO, "deploy")])
    if not files:
        print("check-deploy: no files to check", file=sys.stderr)
        return 2

    yaml_files, k8s_docs, kustomizations, components, vertex_docs = [], [], [], [], []
    gcloud_scripts, sdk_scripts, prometheus_configs = [], [], []
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            rep.fail(path, "cannot read: %s" % e)
            continue
        first_line = text.split("\n", 1)[0]
        if first_line.startswith("#!"):
            if "python" in first_line:
                sdk_scripts.append(path)
            elif "gcloud ai custom-jobs create" in text:
                gcloud_scripts.append(path)
            else:
                rep.fail(path, "a script that runs neither gcloud ai custom-jobs create nor Python")
            continue
        if path.endswith(".py"):
            sdk_scripts.append(path)
            continue
        form, docs = load_documents(path, text, rep)
        if docs is None:
            continue
        if form == "yaml":
            yaml_files.append(path)
        if not docs:
            rep.fail(path, "holds no document")
        for index, doc in enumerate(docs, 1):
            kind = classify_document(doc)
            label = "" if len(docs) == 1 else "document %d: " % index
            if kind is None:
                rep.fail(path, "%s is neither a Vertex AI CustomJobSpec/CustomJob (workerPoolSpecs/"
                         "jobSpec), a Kubernetes object (apiVersion and kind) nor a Prometheus "
                         "configuration (scrape_configs)" %
                         ("it" if len(docs) == 1 else "document %d" % index))
            elif kind == "kubernetes":
                k8s_docs.append(kubernetes_check.Document(path, index, doc))
            elif kind == "kustomization":
                kustomizations.append(path)
            elif kind == "component":
                components.append(path)
            elif kind == "prometheus":
                prometheus_configs.append(path)
            else:
                vertex_docs.append((path, label, kind, doc))

    run_yamllint(yaml_files, rep)
    for path in sorted(set(prometheus_configs)):
        check_prometheus(path, rep)
    with tempfile.TemporaryDirectory(prefix="check-deploy-") as tmp:
        sandbox = vertex_check.Sandbox(tmp)
        if components:
            k8s_docs += kubernetes_check.render_components(components, k8s_docs, rep)
        if kustomizations:
            k8s_docs += kubernetes_check.render_kustomizations(kustomizations, rep)
        if k8s_docs:
            kubernetes_check.type_check(k8s_docs, args.tools, rep)
            secret_check.check(k8s_docs, rep)
        if vertex_docs:
            vertex_check.check_specs(vertex_docs, sandbox, rep)
        for path in gcloud_scripts:
            vertex_scripts_check.check_gcloud_script(path, sandbox, rep)
        for path in sdk_scripts:
            vertex_scripts_check.check_sdk_script(path, tmp, sandbox, rep)
    return rep.finish(len(files))


if __name__ == "__main__":
    sys.exit(main())
