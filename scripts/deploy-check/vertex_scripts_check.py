"""The Vertex AI launch scripts: the gcloud command and the Python SDK call.

gcloud script: `bash -n`; every flag it gives `gcloud ai custom-jobs create` must be one that
command's --help lists; and the script is run for real in the sandbox (no network, no account,
a throwaway config), where gcloud parses its arguments and then stops for want of an account:
an unknown flag stops it earlier, with gcloud's own "unrecognized arguments" message.

Python SDK script: py_compile, and the keyword arguments of its aiplatform.init,
CustomContainerTrainingJob(...) and .run(...) calls against those functions' parameters in the
SDK's source (vertex_sdk_signatures.json says which release). The SDK itself cannot be installed
here (no PyPI), so this is a check of names, not of a call.
"""
import ast
import json
import os
import py_compile
import re
import shlex
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
COMMAND = ["gcloud", "ai", "custom-jobs", "create"]


def command_flags(text):
    """The --flags of the `gcloud ai custom-jobs create` line, continuation lines joined."""
    joined = re.sub(r"\\\n", " ", text)
    for line in joined.splitlines():
        if " ".join(COMMAND) in line:
            try:
                tokens = shlex.split(line, comments=True)
            except ValueError:
                tokens = line.split()
            return [t.split("=", 1)[0] for t in tokens if t.startswith("--")]
    return []


def check_gcloud_script(path, sandbox, rep):
    syntax = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
    if syntax.returncode != 0:
        rep.fail(path, "bash -n: %s" % syntax.stderr.strip())
        return
    rep.ok(path, "bash -n")
    why = sandbox.unavailable()
    if why:
        rep.skip(path, "gcloud ai custom-jobs create flags: skipped: %s" % why)
        return
    with open(path) as f:
        used = command_flags(f.read())
    helped = sandbox.run(COMMAND + ["--help"])
    known = set(re.findall(r"--[a-z][a-z0-9-]*", re.sub(r"\x1b\[[0-9;]*m", "", helped.stdout)))
    if helped.returncode != 0 or not known:
        rep.fail(path, "gcloud ai custom-jobs create --help failed: %s" % helped.stderr.strip())
        return
    unknown = [flag for flag in used if flag not in known]
    for flag in unknown:
        rep.fail(path, "%s is not a flag of gcloud ai custom-jobs create (Google Cloud SDK %s --help)" %
                 (flag, sandbox.sdk_version()))
    if not used:
        rep.fail(path, "found no flags on its gcloud ai custom-jobs create line")
    elif not unknown:
        rep.ok(path, "gcloud ai custom-jobs create --help lists %s" % ", ".join(used))
    config = os.path.join(os.path.dirname(path), "custom-job.yaml")
    ran = sandbox.run(["bash", path, config if os.path.exists(config) else os.devnull])
    if ran.returncode == 1 and "active account" in ran.stderr:
        rep.ok(path, "gcloud parses its arguments, then stops for want of an account (as it must offline)")
    else:
        lines = [l for l in ran.stderr.splitlines() if l.startswith("ERROR")] or ran.stderr.splitlines()[-3:]
        rep.fail(path, "gcloud refused the command (exit %d): %s" % (ran.returncode, " ".join(lines)))


def check_sdk_script(path, tmp, rep):
    try:
        py_compile.compile(path, cfile=os.path.join(tmp, "sdk_script.pyc"), doraise=True)
    except py_compile.PyCompileError as e:
        error = e.exc_value
        where = "line %s: " % error.lineno if getattr(error, "lineno", None) else ""
        rep.fail(path, "py_compile: %s%s: %s" % (where, e.exc_type_name, getattr(error, "msg", error)))
        return
    rep.ok(path, "py_compile")
    with open(os.path.join(HERE, "vertex_sdk_signatures.json")) as f:
        signatures = json.load(f)
    release = signatures["source"].split(" (")[0]
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    jobs = set()  # names bound to a CustomContainerTrainingJob
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "CustomContainerTrainingJob":
            jobs.update(t.id for t in node.targets if isinstance(t, ast.Name))
    seen, bad = set(), False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        func = node.func
        if func.attr == "init" and isinstance(func.value, ast.Name) and func.value.id == "aiplatform":
            name = "aiplatform.init"
        elif func.attr == "CustomContainerTrainingJob":
            name = "aiplatform.CustomContainerTrainingJob"
        elif func.attr == "run" and isinstance(func.value, ast.Name) and func.value.id in jobs:
            name = "CustomContainerTrainingJob.run"
        else:
            continue
        seen.add(name)
        for keyword in node.keywords:
            if keyword.arg is not None and keyword.arg not in signatures[name]:
                bad = True
                rep.fail(path, "line %d: %s() has no parameter '%s' (%s)" % (keyword.lineno, name, keyword.arg, release))
    if "CustomContainerTrainingJob.run" not in seen:
        rep.fail(path, "no aiplatform.CustomContainerTrainingJob(...).run(...) call found")
    elif not bad:
        rep.ok(path, "the keywords of %s are the SDK's (%s source; the SDK is not installed here)" %
               (", ".join(sorted(seen)), release))
