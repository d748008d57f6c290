"""Vertex AI specs through gcloud's own message classes, offline and provably sending nothing.

`gcloud ai custom-jobs create --config` checks credentials before it reads the file, so the
spec is read the way gcloud reads it, in gcloud's own Python libraries:
googlecloudsdk.api_lib.util.messages.DictToMessageWithErrorCheck into aiplatform v1's
GoogleCloudAiplatformV1CustomJobSpec (a --config file) or GoogleCloudAiplatformV1CustomJob (the
REST body), which names a misspelled field with its path and refuses a wrong type or an unknown
enum value; then gcloud's own check of --config worker pools
(command_lib.ai.custom_jobs.validation.ValidateCreateArgs) and the layout rules of Vertex AI's
distributed-training page (pool 0 is the one primary replica; every pool names a machine type).
It runs in a network namespace of its own (unshare -n) with a throwaway CLOUDSDK_CONFIG.
gcloud is not a Debian package: where it is missing the check says so and is skipped.
"""
import json
import os
import shutil
import subprocess
import sys
import types

HERE = os.path.abspath(__file__)


class Sandbox:
    """Runs gcloud, and Python on gcloud's libraries, with no network and no account."""

    def __init__(self, tmp):
        config = os.path.join(tmp, "gcloud-config")
        os.makedirs(config, exist_ok=True)
        self.env = dict(os.environ, CLOUDSDK_CONFIG=config, CLOUDSDK_CORE_CHECK_GCE_METADATA="false",
                        CLOUDSDK_CORE_DISABLE_PROMPTS="1", CLOUDSDK_CORE_DISABLE_USAGE_REPORTING="true",
                        CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK="true",
                        CLOUDSDK_CORE_PROJECT="rs-offline-check")
        self.prefix = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-r", "-n"]
        self._why_not = self._sdk_root = None
        self._probed = False

    def unavailable(self):
        """Why gcloud checks cannot run here, or None."""
        if not self._probed:
            self._probed = True
            if shutil.which("gcloud") is None:
                self._why_not = ("gcloud is not installed (the Google Cloud CLI is not a Debian package; "
                                 "install it to run this check)")
            elif subprocess.run(self.prefix + ["true"], capture_output=True).returncode != 0:
                self._why_not = "cannot make a network namespace (%s) to run gcloud with no network" % " ".join(self.prefix)
            else:
                # The SDK root holds bin/gcloud; ask gcloud itself only where the layout differs.
                root = os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("gcloud"))))
                if not os.path.isdir(os.path.join(root, "lib", "googlecloudsdk")):
                    out = self.run(["gcloud", "info", "--format=value(installation.sdk_root)"])
                    root = out.stdout.strip()
                self._sdk_root = root
                if not os.path.isdir(os.path.join(root, "lib", "googlecloudsdk")):
                    self._why_not = "found no Google Cloud SDK libraries beside gcloud (gcloud info: %r)" % root
        return self._why_not

    def run(self, argv, **kwargs):
        return subprocess.run(self.prefix + argv, env=self.env, capture_output=True, text=True,
                              timeout=kwargs.pop("timeout", 120), **kwargs)

    def sdk_version(self):
        try:
            with open(os.path.join(self._sdk_root, "VERSION")) as f:
                return f.read().strip()
        except OSError:
            return "unknown"

    @property
    def sdk_root(self):
        return self._sdk_root


def check_specs(items, sandbox, rep):
    """items: [(path, label, 'vertex-spec' | 'vertex-job', document)]; label names the document
    in a file of several ("document 2: "), or is empty."""
    why = sandbox.unavailable()
    if why:
        for path, _, _, _ in items:
            rep.skip(path, "gcloud message classes: skipped: %s" % why)
        return
    payload = json.dumps([{"kind": kind, "doc": doc} for _, _, kind, doc in items])
    out = sandbox.run([sys.executable, HERE, "--sandboxed", sandbox.sdk_root], input=payload)
    try:
        results = json.loads(out.stdout)
    except ValueError:
        for path, _, _, _ in items:
            rep.fail(path, "gcloud message check failed: %s" % (out.stderr.strip()[-2000:] or out.stdout[-2000:]))
        return
    for (path, label, kind, _), errors in zip(items, results):
        message = "GoogleCloudAiplatformV1CustomJobSpec" if kind == "vertex-spec" else "GoogleCloudAiplatformV1CustomJob"
        for error in errors:
            rep.fail(path, label + error)
        if not errors:
            rep.ok(path, "%sreads as gcloud's %s, and passes gcloud's --config pool check (Google Cloud SDK %s, "
                   "no network)" % (label, message, sandbox.sdk_version()))


# ---- what runs inside the sandbox, on gcloud's libraries ----

def _field_errors(exception, message_name):
    """gcloud's decode error, one line per bad field, as paths without the message class prefix."""
    lines = [l.strip() for l in str(exception).splitlines()[1:] if l.strip()]
    paths = [l[len(message_name) + 1:] if l.startswith(message_name + ".") else l for l in lines]
    if not paths or any("??" in p for p in paths):
        return ["%s (gcloud: %s)" % (p, type(exception).__name__) for p in (paths or [str(exception)])]
    return ["%s: not a field of the API, or a value it does not accept (gcloud %s)" % (p, type(exception).__name__)
            for p in paths]


def _layout_errors(spec, prefix):
    """Vertex AI's distributed-training layout: pool 0 is the primary (replicaCount 1), and a
    pool that is not a placeholder {} names its machine type (MachineSpec: required in a
    WorkerPoolSpec)."""
    pools = list(spec.workerPoolSpecs or [])
    if not pools:
        return ["%sworkerPoolSpecs is empty: pool 0, the primary replica, is required" % prefix]
    errors = []
    if pools[0].replicaCount != 1:
        errors.append("%sworkerPoolSpecs[0].replicaCount is %s: pool 0 holds the one primary replica and must be 1"
                      % (prefix, pools[0].replicaCount))
    for i, pool in enumerate(pools):
        empty = all(getattr(pool, f.name) in (None, []) for f in pool.all_fields())
        if not empty and (pool.machineSpec is None or not pool.machineSpec.machineType):
            errors.append("%sworkerPoolSpecs[%d].machineSpec.machineType is missing (required in a worker pool)"
                          % (prefix, i))
    return errors


def sandboxed(sdk_root):
    sys.path[:0] = [os.path.join(sdk_root, "lib"), os.path.join(sdk_root, "lib", "third_party")]
    from googlecloudsdk.api_lib.util import messages as messages_util
    from googlecloudsdk.command_lib.ai.custom_jobs import validation
    from googlecloudsdk.generated_clients.apis.aiplatform.v1 import aiplatform_v1_messages as m

    results = []
    for item in json.load(sys.stdin):
        spec_form = item["kind"] == "vertex-spec"
        cls = m.GoogleCloudAiplatformV1CustomJobSpec if spec_form else m.GoogleCloudAiplatformV1CustomJob
        try:
            message = messages_util.DictToMessageWithErrorCheck(item["doc"], cls)
        except Exception as e:  # gcloud's DecodeError or ScalarTypeMismatchError
            results.append(_field_errors(e, cls.__name__))
            continue
        spec, prefix = (message, "") if spec_form else (message.jobSpec, "jobSpec.")
        if spec is None:
            results.append(["jobSpec is missing"])
            continue
        errors = _layout_errors(spec, prefix)
        try:
            validation.ValidateCreateArgs(types.SimpleNamespace(worker_pool_spec=None), spec, "v1")
        except Exception as e:  # gcloud's InvalidArgumentException
            errors.append("%sgcloud's --config check: %s" % (prefix, e))
        results.append(errors)
    json.dump(results, sys.stdout)


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--sandboxed":
    sandboxed(sys.argv[2])
