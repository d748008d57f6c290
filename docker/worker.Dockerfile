# The worker layer: a training image plus the Reduction Server's NCCL plugin, and the variables
# that make NCCL load it and offload all-reduce to the reducers.
#   scripts/build-portable-plugin.sh    # build/portable/out/libnccl-net-reduction-server.so
#   podman build --format docker -f docker/worker.Dockerfile \
#     --build-arg BASE=<your training image> -t my-trainer-rs .
# BASE may be any x86-64 image with glibc 2.31 or later: NGC PyTorch and TensorFlow, Vertex AI's
# prebuilt training containers, Ubuntu 20.04 and later, Debian 11 and later. The plugin needs
# nothing else from it (no package manager, no shell, no C++ runtime), so this runs no command.
# No libfabric here, on purpose: for RDMA the plugin will dlopen the image's own libfabric.so.1
# (issue 28; not built yet), e.g. AWS's from the EFA installer that aws-ofi-nccl already uses, so
# that one process never holds two; Debian 12's libfabric1 needs glibc 2.34, not 2.31
# (docker/README.md, "libfabric and RDMA devices").
# From the release tarball instead, in your own Dockerfile (docker/README.md):
#   ADD libnccl-net-reduction-server-<version>-linux-x86_64.tar.gz /opt/
#   ENV NCCL_NET_PLUGIN=/opt/libnccl-net-reduction-server-<version>-linux-x86_64/libnccl-net-reduction-server.so NCCL_COLLNET_ENABLE=1

ARG BASE=debian:bookworm-slim
FROM ${BASE}
COPY build/portable/out/libnccl-net-reduction-server.so /opt/reduction-server/lib/
# NCCL (2.20 and later) dlopens NCCL_NET_PLUGIN as given when it is a path, so the plugin needs
# no place on the loader's search path. The reducers come from CLUSTER_SPEC on Vertex AI
# (workerpool2) or from RS_REDUCERS (host:port,...) set when the job starts.
ENV NCCL_NET_PLUGIN=/opt/reduction-server/lib/libnccl-net-reduction-server.so \
    NCCL_COLLNET_ENABLE=1
