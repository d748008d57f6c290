"""The job secret's wiring in Kubernetes manifests (deploy/README.md, "The job secret").

Every pod of the Reduction Server (labelled app.kubernetes.io/name: reduction-server: reducers
and workers) must read the secret from a file, RS_SECRET_FILE, on a read-only mount of a Secret
volume, and no container may carry the secret itself in RS_SECRET: a manifest is committed,
reviewed and reapplied, a credential must not be. In a JobSet, the reducers and the workers
mount the same Secret (one job, one secret).
"""

LABEL = "app.kubernetes.io/name"


def pod_templates(doc):
    """(where, pod template) of a workload: a JobSet's replicated jobs, a StatefulSet, Deployment,
    DaemonSet or Job's template, or a Pod itself."""
    kind, spec = doc.get("kind"), doc.get("spec") or {}
    if kind == "JobSet":
        for job in spec.get("replicatedJobs") or []:
            template = ((job.get("template") or {}).get("spec") or {}).get("template")
            if template:
                yield "replicatedJob %s" % job.get("name"), template
    elif kind in ("StatefulSet", "Deployment", "DaemonSet", "ReplicaSet", "Job") and spec.get("template"):
        yield "pod template", spec["template"]
    elif kind == "Pod":
        yield "pod", doc


def pod_errors(template):
    """What is wrong with one pod's secret wiring, and the Secret it mounts."""
    spec = template.get("spec") or {}
    volumes = {v.get("name"): v for v in spec.get("volumes") or []}
    errors, secrets = [], set()
    for container in spec.get("containers") or []:
        name = container.get("name")
        env = {e.get("name"): e for e in container.get("env") or []}
        if "RS_SECRET" in env and "value" in env["RS_SECRET"]:
            errors.append("container %s: RS_SECRET holds the secret itself: mount a Secret and set "
                          "RS_SECRET_FILE instead" % name)
            continue
        path = (env.get("RS_SECRET_FILE") or {}).get("value")
        if not path:
            errors.append("container %s: no RS_SECRET_FILE: its data connections would have no job secret" % name)
            continue
        mounts = [m for m in container.get("volumeMounts") or []
                  if path.startswith(str(m.get("mountPath", "")).rstrip("/") + "/")]
        secret = ((volumes.get(mounts[0].get("name")) or {}).get("secret") or {}) if mounts else {}
        if not secret.get("secretName"):
            errors.append("container %s: RS_SECRET_FILE %s is not on a mounted Secret volume" % (name, path))
        elif not mounts[0].get("readOnly"):
            errors.append("container %s: the Secret volume holding RS_SECRET_FILE is not mounted readOnly" % name)
        else:
            secrets.add(secret["secretName"])
    return errors, secrets


def check(documents, rep):
    """documents: kubernetes_check.Document objects; reports per pod template that is ours."""
    for document in documents:
        mounted = {}
        for where, template in pod_templates(document.doc):
            labels = (template.get("metadata") or {}).get("labels") or {}
            if labels.get(LABEL) != "reduction-server":
                continue
            errors, secrets = pod_errors(template)
            prefix = "%s (%s): %s" % (document.origin, document.label, where)
            for error in errors:
                rep.fail(document.path, "%s: %s" % (prefix, error))
            if not errors:
                mounted[where] = secrets
                rep.ok(document.path, "%s: reads its secret from Secret %s (RS_SECRET_FILE, read-only)"
                       % (prefix, ", ".join(sorted(secrets))))
        if len({frozenset(s) for s in mounted.values()}) > 1:
            rep.fail(document.path, "%s (%s): its pods mount different Secrets (%s): the reducers and "
                     "workers of one job share one secret" %
                     (document.origin, document.label,
                      "; ".join("%s: %s" % (w, ", ".join(sorted(s))) for w, s in sorted(mounted.items()))))
