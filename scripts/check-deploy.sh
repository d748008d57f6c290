#!/usr/bin/env bash
# Checks deployment files offline: every file under deploy/ (no arguments), or the files and
# folders given, wherever they are. Each is told apart by its content (a Vertex AI CustomJobSpec
# in YAML, a CustomJob REST body in JSON, Kubernetes manifests, a kustomization, the gcloud
# command, the Python SDK call), and checked:
#   - YAML: yamllint with .yamllint;
#   - Kubernetes: each document compiled as a typed TypeScript literal (npm kubernetes-types, and
#     scripts/deploy-check/jobset.d.ts for JobSet) with tsc --strict, so that a misspelled field,
#     a wrong type or a missing required field fails, naming the file, document and field; a
#     kustomization rendered with kubectl kustomize (skipped where kubectl is missing);
#   - Vertex AI: each spec read by gcloud's own aiplatform v1 message classes, and the gcloud
#     command's flags parsed by gcloud itself, in a network namespace of their own (unshare -n)
#     so that nothing is sent (skipped, saying why, where gcloud is missing);
#   - the Python SDK call: py_compile, and its keyword names against the SDK's signatures.
#   scripts/check-deploy.sh [FILE|FOLDER...]
# Needs python3 with PyYAML, yamllint, node and npm (scripts/install-deps.sh). The pinned npm
# packages (scripts/deploy-check/package-lock.json) are installed once into
# $RS_DEPLOY_CHECK_DIR (default build/deploy-check) and reused.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tools=${RS_DEPLOY_CHECK_DIR:-$repo/build/deploy-check}
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree or beside checked scripts
exec python3 "$repo/scripts/deploy-check/check_deploy.py" --tools "$tools" "$@"
