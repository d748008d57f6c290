# The plugin installer image: the portable NCCL plugin and a shell to copy it, for the DaemonSet
# of deploy/k8s/plugin-installer/ that puts it on every GPU node, as GKE and other GPU node
# pools install NCCL plugins. Tiny on purpose: busybox and one .so.
#   scripts/build-portable-plugin.sh    # build/portable/out/libnccl-net-reduction-server.so
#   podman build --format docker -f docker/plugin-installer.Dockerfile \
#     -t us-docker.pkg.dev/my-project/reduction-server/nccl-plugin-installer:0.1.0 .
# scripts/installer-test.sh builds it here from a local busybox image (BASE) and runs the
# DaemonSet's own commands against a host folder.
ARG BASE=busybox:1.36
FROM ${BASE}
COPY build/portable/out/libnccl-net-reduction-server.so /plugin/
USER 0:0
LABEL org.opencontainers.image.title="nccl-plugin-installer" \
      org.opencontainers.image.description="Copies the Reduction Server's NCCL plugin onto a node"
