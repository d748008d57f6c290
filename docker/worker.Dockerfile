# The worker layer: a training image plus the Reduction Server's NCCL plugin, and the variables
# that make NCCL load it and offload all-reduce to the reducers.
#   scripts/package.sh          # build/packages/libnccl-net-reduction-server_*.deb
#   podman build --format docker -f docker/worker.Dockerfile \
#     --build-arg BASE=<your training image> -t my-trainer-rs .
# BASE must be a Debian 12 (bookworm) based image with apt and a root build user: the package's
# Depends name bookworm's libraries. docker/README.md has the rest.

ARG BASE=debian:bookworm-slim
FROM ${BASE}
COPY build/packages/libnccl-net-reduction-server_*.deb /tmp/rs/
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      /tmp/rs/libnccl-net-reduction-server_*.deb \
 && apt-get clean && rm -rf /tmp/rs /var/lib/apt/lists/*
# NCCL dlopens libnccl-net-<NCCL_NET_PLUGIN>.so; the reducers come from CLUSTER_SPEC on Vertex
# AI (workerpool2) or from RS_REDUCERS (host:port,...) set when the job starts.
ENV NCCL_NET_PLUGIN=reduction-server \
    NCCL_COLLNET_ENABLE=1
