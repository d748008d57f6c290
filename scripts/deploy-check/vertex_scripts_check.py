"""The Vertex AI launch scripts: the gcloud command and the Python SDK call.

gcloud script: `bash -n`; every flag it gives `gcloud ai custom-jobs create` must be one that
command's --help lists; and the script is run for real in the sandbox (no network, no account,
a throwaway config), where gcloud parses its arguments and then stops for want of an account:
an unknown flag stops it earlier, with gcloud's own "unrecognized arguments" message.

Python SDK script: py_compile, and the keyword arguments of its aiplatform.init,
CustomJob(...) or CustomContainerTrainingJob(...) and .run(...) calls against those functions'
parameters in the SDK's source (vertex_sdk_signatures.json says which release). The SDK itself
cannot be installed here (no PyPI), so the script is then run in the sandbox against a stub of
google.cloud.aiplatform that records the CustomJob it would create: its worker_pool_specs are
read by gcloud's message classes as a --config file is (vertex_check), and every pool must
carry the same job secret (RS_SECRET), made afresh by each run. CustomContainerTrainingJob's
reduction_server_* arguments give the reducers no environment, so no secret: refused.
"""
import ast
import json
import os
import py_compile
import re
import shlex
import subprocess
import sys

import vertex_check

HERE = os.path.dirname(os.path.abspath(__file__))
COMMAND = ["gcloud", "ai", "custom-jobs", "create"]
# The config a gcloud script is run with when no custom-job.yaml lies beside it.
MINIMAL_SPEC = """workerPoolSpecs:
  - machineSpec:
      machineType: n1-standard-4
    replicaCount: 1
    containerSpec:
      imageUri: example.invalid/image
      env:
        - name: RS_LOG_FORMAT
          value: json
"""


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
    if not os.path.exists(config):  # the script may edit its config (create-job.sh adds the secret)
        config = os.path.join(os.path.dirname(sandbox.env["CLOUDSDK_CONFIG"]), "minimal-custom-job.yaml")
        with open(config, "w") as f:
            f.write(MINIMAL_SPEC)
    ran = sandbox.run(["bash", path, config])
    if ran.returncode == 1 and "active account" in ran.stderr:
        rep.ok(path, "gcloud parses its arguments, then stops for want of an account (as it must offline)")
    else:
        lines = [l for l in ran.stderr.splitlines() if l.startswith("ERROR")] or ran.stderr.splitlines()[-3:]
        rep.fail(path, "gcloud refused the command (exit %d): %s" % (ran.returncode, " ".join(lines)))


# google.cloud.aiplatform as far as the emitted script uses it: the CustomJob it would create,
# written to standard output as JSON instead of sent.
SDK_STUB = """
import json, sys
def init(**kwargs):
    pass
class CustomJob:
    def __init__(self, **kwargs):
        self.kwargs = kwargs
    def run(self, **kwargs):
        json.dump({"display_name": self.kwargs.get("display_name"),
                   "worker_pool_specs": self.kwargs.get("worker_pool_specs")}, sys.stdout)
    submit = run
class CustomContainerTrainingJob:
    def __init__(self, **kwargs):
        pass
    def run(self, **kwargs):
        pass
"""


def camel(value):
    """The SDK's snake_case proto-plus dict in the REST API's camelCase, as --config spells it."""
    if isinstance(value, list):
        return [camel(v) for v in value]
    if isinstance(value, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): camel(v) for k, v in value.items()}
    return value


def secret_errors(pools):
    """Every pool's container carries RS_SECRET once, the same value in all, long enough."""
    if not pools:
        return ["no worker pools"]
    values = []
    for i, pool in enumerate(pools):
        env = ((pool or {}).get("containerSpec") or {}).get("env") or []
        mine = [e.get("value", "") for e in env if e.get("name") == "RS_SECRET"]
        if len(mine) != 1:
            return ["workerPoolSpecs[%d] sets RS_SECRET %d times (want once: the job secret)" % (i, len(mine))]
        values.append(mine[0])
    if len(set(values)) != 1:
        return ["the pools' RS_SECRET differ: workers and reducers must share one job secret"]
    if len(values[0]) < 32:
        return ["RS_SECRET has %d characters: want a random one of at least 32 (secrets.token_hex(32))" % len(values[0])]
    return []


def run_sdk_script(path, tmp, sandbox):
    """The CustomJob the script would create ({display_name, worker_pool_specs}), or an error."""
    stub = os.path.join(tmp, "sdk-stub", "google", "cloud", "aiplatform")
    os.makedirs(stub, exist_ok=True)
    with open(os.path.join(stub, "__init__.py"), "w") as f:
        f.write(SDK_STUB)
    env = dict(sandbox.env, PYTHONPATH=os.path.join(tmp, "sdk-stub"), PYTHONDONTWRITEBYTECODE="1")
    argv = [sys.executable, path, "--project=rs-offline-check", "--staging-bucket=gs://rs-offline-check"]
    ran = subprocess.run(sandbox.prefix + argv, env=env, capture_output=True, text=True, timeout=60)
    if ran.returncode != 0:
        return None, "run against a stub SDK, it failed (exit %d): %s" % (ran.returncode, ran.stderr.strip()[-500:])
    try:
        return json.loads(ran.stdout), None
    except ValueError:
        return None, "run against a stub SDK, it created no CustomJob"


def check_sdk_run(path, tmp, sandbox, rep):
    """The script's CustomJob: its pools through gcloud's classes, its secret in every pool."""
    jobs = []
    for _ in range(2):
        job, error = run_sdk_script(path, tmp, sandbox)
        if error:
            rep.fail(path, error)
            return
        jobs.append(camel(job.get("worker_pool_specs") or []))
    errors = secret_errors(jobs[0])
    if not errors and secret_errors(jobs[1]) == [] and jobs[0] == jobs[1]:
        errors = ["two runs gave the same RS_SECRET: it must be made afresh for each job"]
    for error in errors:
        rep.fail(path, "its CustomJob: " + error)
    if not errors:
        rep.ok(path, "its CustomJob carries one fresh job secret (RS_SECRET) in all %d pools" % len(jobs[0]))
    vertex_check.check_specs([(path, "its CustomJob's worker_pool_specs: ", "vertex-spec",
                               {"workerPoolSpecs": jobs[0]})], sandbox, rep)


def check_sdk_script(path, tmp, sandbox, rep):
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
    classes = ("CustomJob", "CustomContainerTrainingJob")
    jobs = {}  # names bound to a job object -> its class
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                isinstance(node.value.func, ast.Attribute) and node.value.func.attr in classes:
            jobs.update((t.id, node.value.func.attr) for t in node.targets if isinstance(t, ast.Name))
    seen, bad = set(), False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        func = node.func
        if func.attr == "init" and isinstance(func.value, ast.Name) and func.value.id == "aiplatform":
            name = "aiplatform.init"
        elif func.attr in classes:
            name = "aiplatform." + func.attr
        elif func.attr == "run" and isinstance(func.value, ast.Name) and func.value.id in jobs:
            name = jobs[func.value.id] + ".run"
        else:
            continue
        seen.add(name)
        for keyword in node.keywords:
            if keyword.arg is not None and keyword.arg not in signatures[name]:
                bad = True
                rep.fail(path, "line %d: %s() has no parameter '%s' (%s)" % (keyword.lineno, name, keyword.arg, release))
    if "CustomJob.run" not in seen and "CustomContainerTrainingJob.run" not in seen:
        rep.fail(path, "no aiplatform.CustomJob(...).run(...) call found")
        return
    if not bad:
        rep.ok(path, "the keywords of %s are the SDK's (%s source; the SDK is not installed here)" %
               (", ".join(sorted(seen)), release))
    if "CustomJob.run" not in seen:
        rep.fail(path, "CustomContainerTrainingJob.run(reduction_server_...) gives the reducers' pool no "
                 "environment, so no job secret: submit an aiplatform.CustomJob with all three pools "
                 "(rs-sizer --emit vertex-python)")
        return
    why = sandbox.unavailable()
    if why:
        rep.skip(path, "its CustomJob, run against a stub SDK: skipped: %s" % why)
        return
    check_sdk_run(path, tmp, sandbox, rep)
