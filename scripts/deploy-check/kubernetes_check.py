"""Kubernetes manifests against the Kubernetes API types, offline.

kubectl cannot validate without a cluster, so each document becomes a typed TypeScript literal,
`const doc_1: apps_v1.StatefulSet = {...}`, typed by npm's kubernetes-types (the API's own
OpenAPI types) or, for JobSet, by jobset.d.ts beside this file, and `tsc --strict --noEmit`
compiles them: TypeScript's excess-property check on object literals fails a misspelled field,
and a wrong type, a value outside an enum or a missing required field fails too. Each compiler
error is mapped back to its file, document and field path. A kustomization is rendered with
`kubectl kustomize` (which refuses unknown fields and missing resources) and its output checked
the same way.
"""
import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# Custom resources whose types live beside this file: apiVersion -> (module, kinds).
LOCAL_TYPES = {"jobset.x-k8s.io/v1alpha2": ("./jobset", {"JobSet"})}


class Document:
    def __init__(self, path, index, doc, origin=None):
        self.path, self.index, self.doc = path, index, doc
        self.origin = origin or "document %d" % index
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        self.label = "%s %s" % (doc.get("kind"), meta.get("name", "(no name)"))


class ToolError(Exception):
    pass


def ensure_tools(tools):
    """Installs the pinned npm packages into `tools` once (npm ci on the lock file); returns tsc."""
    for program in ("node", "npm"):
        if shutil.which(program) is None:
            raise ToolError("%s is not installed (scripts/install-deps.sh installs Debian's nodejs and npm)" % program)
    os.makedirs(tools, exist_ok=True)
    lock = os.path.join(HERE, "package-lock.json")
    installed = os.path.join(tools, "package-lock.json")
    tsc = os.path.join(tools, "node_modules", "typescript", "bin", "tsc")
    with open(os.path.join(tools, ".install-lock"), "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # concurrent checks share one install
        with open(lock) as f:
            wanted = f.read()
        current = open(installed).read() if os.path.exists(installed) else None
        if current != wanted or not os.path.exists(tsc):
            shutil.copy(os.path.join(HERE, "package.json"), tools)
            shutil.copy(lock, tools)
            out = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                                 cwd=tools, capture_output=True, text=True, timeout=600)
            if out.returncode != 0:
                os.remove(installed)
                raise ToolError("npm ci of typescript and kubernetes-types into %s failed: %s" %
                                (tools, (out.stderr or out.stdout).strip()[-2000:]))
    return tsc


def package_version(tools, name):
    with open(os.path.join(tools, "node_modules", name, "package.json")) as f:
        return json.load(f)["version"]


def resolve_type(doc, tools):
    """(module, kind) typing `doc`, or raise ToolError saying why there is none."""
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise ToolError("apiVersion and kind must be strings")
    if api_version in LOCAL_TYPES:
        module, kinds = LOCAL_TYPES[api_version]
        if kind not in kinds:
            raise ToolError("kind %s is not a kind of %s (known: %s)" % (kind, api_version, ", ".join(sorted(kinds))))
        return module, kind
    group, _, version = api_version.rpartition("/")
    # kubernetes-types has one folder per API group, named by the group's first label.
    folder = "core" if group == "" else group.split(".")[0]
    declarations = os.path.join(tools, "node_modules", "kubernetes-types", folder, version + ".d.ts")
    if not os.path.exists(declarations):
        raise ToolError("apiVersion %s is not a Kubernetes API version that kubernetes-types %s knows" %
                        (api_version, package_version(tools, "kubernetes-types")))
    with open(declarations) as f:
        if not re.search(r"^export interface %s \{" % re.escape(kind), f.read(), re.M):
            raise ToolError("kind %s is not a kind of %s" % (kind, api_version))
    return "kubernetes-types/%s/%s" % (folder, version), kind


def property_name(key):
    """A key as a TypeScript property name: bare where it is an identifier, so that compiler
    messages read 'prot' rather than '"prot"'."""
    key = str(key)
    return key if re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", key) else json.dumps(key)


def literal_lines(value, path, depth, prefix, out):
    """Appends `value` as TypeScript literal lines to `out`, each with the field path it holds."""
    pad = "  " * depth
    if isinstance(value, dict) and value:
        out.append((pad + prefix + "{", path))
        for key, child in value.items():
            literal_lines(child, "%s.%s" % (path, key) if path else str(key), depth + 1, property_name(key) + ": ", out)
        out.append((pad + "}" + ("," if depth else ""), path))
    elif isinstance(value, list) and value:
        out.append((pad + prefix + "[", path))
        for i, child in enumerate(value):
            literal_lines(child, "%s[%d]" % (path, i), depth + 1, "", out)
        out.append((pad + "]" + ("," if depth else ""), path))
    else:
        if not isinstance(value, (dict, list, str, int, float, bool)) and value is not None:
            value = str(value)  # a YAML timestamp: Kubernetes reads it as a string
        out.append((pad + prefix + json.dumps(value) + ("," if depth else ""), path))


def type_check(documents, tools, rep):
    try:
        tsc = ensure_tools(tools)
    except (ToolError, OSError, subprocess.TimeoutExpired) as e:
        for path in sorted({d.path for d in documents}):
            rep.fail(path, "Kubernetes types: %s" % e)
        return
    imports, lines, spans = {}, [], []  # spans: (first line, last line, document)
    for number, document in enumerate(documents, 1):
        try:
            module, kind = resolve_type(document.doc, tools)
        except ToolError as e:
            rep.fail(document.path, "%s (%s): %s" % (document.origin, document.label, e))
            continue
        alias = imports.setdefault(module, "t%d" % len(imports))
        first = len(lines) + 1
        body = []
        literal_lines(document.doc, "", 0, "", body)
        body[0] = ("const doc_%d: %s.%s = %s" % (number, alias, kind, body[0][0]), "")
        body[-1] = (body[-1][0] + ";", "")
        lines += body
        spans.append((first, len(lines), document))
    header = ['import type * as %s from "%s";' % (alias, module) for module, alias in imports.items()]
    offset = len(header)
    work = tempfile.mkdtemp(prefix="typecheck-", dir=tools)  # under tools: node_modules resolves
    try:
        shutil.copy(os.path.join(HERE, "jobset.d.ts"), work)
        with open(os.path.join(work, "manifests.ts"), "w") as f:
            f.write("\n".join(header + [text for text, _ in lines]) + "\nexport {};\n")
        with open(os.path.join(work, "tsconfig.json"), "w") as f:
            json.dump({"compilerOptions": {"strict": True, "noEmit": True, "types": [], "lib": ["es2020"],
                                           "module": "commonjs", "moduleResolution": "node"},
                       "files": ["manifests.ts"]}, f)
        out = subprocess.run(["node", tsc, "-p", ".", "--pretty", "false"], cwd=work, capture_output=True,
                             text=True, timeout=600)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    errors = parse_tsc(out.stdout)
    if out.returncode != 0 and not errors:
        for path in sorted({d.path for d in documents}):
            rep.fail(path, "tsc failed: %s" % (out.stdout + out.stderr).strip()[-2000:])
        return
    version = package_version(tools, "kubernetes-types")
    failed = set()
    for line, message in errors:
        span = next((s for s in spans if s[0] <= line - offset <= s[1]), None)
        if span is None:
            rep.fail(documents[0].path, "tsc: %s" % message)
            continue
        document = span[2]
        field = lines[line - offset - 1][1] or "(the document)"
        rep.fail(document.path, "%s (%s): %s: %s" % (document.origin, document.label, field, message))
        failed.add(id(document))
    for _, _, document in spans:
        if id(document) not in failed:
            where = "the JobSet v1alpha2 types (jobset.d.ts)" if document.doc.get("kind") == "JobSet" else \
                "kubernetes-types %s" % version
            rep.ok(document.path, "%s (%s): matches %s" % (document.origin, document.label, where))


def parse_tsc(output):
    """[(line in manifests.ts, message)] from tsc's plain output; continuation lines joined."""
    errors = []
    for text in output.splitlines():
        m = re.match(r"^manifests\.ts\((\d+),\d+\): error (TS\d+: .*)$", text)
        if m:
            # An object literal's inferred type can run to pages: the field path says which one.
            message = re.sub(r"'\{[^']{60,}\}'", "'{...}'", m.group(2))
            errors.append((int(m.group(1)), message))
        elif errors and text.startswith(" "):
            errors[-1] = (errors[-1][0], errors[-1][1] + " " + text.strip())
    return errors


def kustomize(kubectl, folder):
    """(the objects `kubectl kustomize folder` renders, None) or (None, its error message)."""
    out = subprocess.run([kubectl, "kustomize", folder], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        # kubectl wraps kustomize's message in a log line: keep the message.
        m = re.search(r'err="(.*)"\s*$', out.stderr.strip())
        return None, m.group(1).replace('\\"', '"') if m else out.stderr.strip()
    return [d for d in yaml.safe_load_all(out.stdout) if d is not None], None


def render_kustomizations(paths, rep):
    """The objects each kustomization renders, as documents to type-check."""
    documents = []
    kubectl = shutil.which("kubectl")
    for path in paths:
        if os.path.basename(path) not in KUSTOMIZATION_NAMES:
            rep.fail(path, "a Kustomization must be named %s for kubectl kustomize to read it" %
                     " or ".join(KUSTOMIZATION_NAMES))
            continue
        if kubectl is None:
            rep.skip(path, "kubectl kustomize: skipped: kubectl is not installed")
            continue
        rendered, error = kustomize(kubectl, os.path.dirname(os.path.abspath(path)))
        if error is not None:
            rep.fail(path, "kubectl kustomize: %s" % error)
            continue
        rep.ok(path, "kubectl kustomize renders %d object(s)" % len(rendered))
        documents += [Document(path, i, d, "rendered object %d" % i) for i, d in enumerate(rendered, 1)]
    return documents


# Workloads a Component's patches are meant for (deploy/k8s/rdma/): the emitted JobSet and pool.
COMPONENT_TARGET_KINDS = ("JobSet", "StatefulSet")


def canonical(docs):
    return sorted(json.dumps(d, sort_keys=True) for d in docs)


def render_components(paths, documents, rep):
    """Each kustomize Component rendered over each checked file that holds a JobSet or a
    StatefulSet (a Component cannot be built alone, and a user applies it to the file rs-sizer
    emitted for them), as documents to type-check. A Component that changes none of them fails:
    a target that matches nothing is otherwise silent."""
    workloads = sorted({d.path for d in documents if d.doc.get("kind") in COMPONENT_TARGET_KINDS})
    rendered_all = []
    kubectl = shutil.which("kubectl")
    for path in paths:
        if os.path.basename(path) not in KUSTOMIZATION_NAMES:
            rep.fail(path, "a Component must be named %s for kustomize to read it" % " or ".join(KUSTOMIZATION_NAMES))
            continue
        if kubectl is None:
            rep.skip(path, "kubectl kustomize: skipped: kubectl is not installed")
            continue
        if not workloads:
            rep.skip(path, "a kustomize Component: rendered only over a JobSet or StatefulSet file checked "
                     "beside it (none here)")
            continue
        changed = 0
        for workload in workloads:
            with tempfile.TemporaryDirectory(prefix="component-") as work:
                shutil.copy(workload, os.path.join(work, "workload.yaml"))
                # kustomize takes no absolute path to a component.
                component = os.path.relpath(os.path.dirname(os.path.abspath(path)), work)
                with open(os.path.join(work, "kustomization.yaml"), "w") as f:
                    yaml.safe_dump({"resources": ["workload.yaml"], "components": [component]}, f)
                rendered, error = kustomize(kubectl, work)
            name = workload  # as given: two folders may hold files of the same name
            if error is not None:
                rep.fail(path, "kubectl kustomize over %s: %s" % (name, error))
                continue
            with open(workload) as f:
                original = [d for d in yaml.safe_load_all(f) if d is not None]
            if canonical(rendered) != canonical(original):
                changed += 1
            rendered_all += [Document(path, i, d, "over %s, rendered object %d" % (name, i))
                             for i, d in enumerate(rendered, 1)]
        if changed:
            rep.ok(path, "kubectl kustomize renders it over the %d workload file(s) here; it changes %d" %
                   (len(workloads), changed))
        else:
            rep.fail(path, "its patches change none of %s: a target that matches nothing" % ", ".join(workloads))
    return rendered_all
