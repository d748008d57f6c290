# The reducer image: reduction-server (and rs-sizer) on Debian 12, run as a non-root user,
# with a health check that asks the daemon itself (grpc.health.v1).
#
# From source (builds everything in the builder stage; about 8 minutes on 2 cores):
#   podman build --format docker -f docker/reducer.Dockerfile \
#     --build-arg RS_GIT_COMMIT=$(git rev-parse --short=12 HEAD) -t reduction-server .
# From packages already built by scripts/package.sh (build/packages/), as CI does:
#   podman build --format docker -f docker/reducer.Dockerfile --target reducer-prebuilt \
#     -t reduction-server .
# docker build takes the same arguments (--format docker is podman's: it keeps HEALTHCHECK).
# Both final stages install the reduction-server .deb on the same runtime stage, so the image
# holds exactly what the package holds. docker/README.md has the rest.

ARG BASE=debian:bookworm-slim

# --- builder: the scripts CI runs (install-deps, build, package) -----------------------------
FROM ${BASE} AS builder
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN scripts/install-deps.sh --build
COPY . .
# No .git in the build context (.dockerignore): the commit comes in as an argument.
ARG RS_GIT_COMMIT=""
RUN scripts/package.sh --reducer-only package -DRS_GIT_COMMIT=${RS_GIT_COMMIT}

# --- runtime: the shared libraries and the image's interface, no binaries yet ---------------
# They include libfabric1 and ibverbs-providers (libibverbs' NIC drivers) for the fabric path
# (proto/FABRIC.md; being wired): a verbs or EFA device given to the container is seen, and
# without one the daemon runs over TCP, as today (docker/README.md).
FROM ${BASE} AS runtime
COPY scripts/install-deps.sh /tmp/rs/
RUN /tmp/rs/install-deps.sh --runtime && apt-get clean && rm -rf /tmp/rs /var/lib/apt/lists/*
# Data plane, gRPC (data + 1) and Prometheus metrics, by convention. Metrics are on by default
# in the image (the daemon's --metrics-listen is off unless set); override or set it empty.
EXPOSE 2222 2223 2224
ENV RS_METRICS_LISTEN=0.0.0.0:2224
# The probe reads the same flags, RS_* variables and CLUSTER_SPEC as the daemon, so it finds the
# gRPC port on its own; it answers within 3 s and exits 0 only when the daemon is SERVING.
HEALTHCHECK --interval=30s --timeout=10s --start-period=10s --retries=3 \
  CMD ["reduction-server", "--health-probe"]
# On Vertex AI (workerPoolSpecs[2]) CLUSTER_SPEC gives the data port; elsewhere flags or RS_*.
ENTRYPOINT ["reduction-server"]
LABEL org.opencontainers.image.title="reduction-server" \
      org.opencontainers.image.description="Reducer daemon of the Reduction Server all-reduce service"

# --- reducer-prebuilt: from build/packages/ in the build context (scripts/package.sh) --------
FROM runtime AS reducer-prebuilt
COPY build/packages/reduction-server_*.deb /tmp/rs/
# dpkg (not apt): a library missing from install-deps.sh --runtime fails the build here.
RUN dpkg -i /tmp/rs/reduction-server_*.deb && rm -rf /tmp/rs
USER 10001:10001

# --- reducer (the default target): from the builder stage ------------------------------------
FROM runtime AS reducer
COPY --from=builder /src/build/packages/reduction-server_*.deb /tmp/rs/
RUN dpkg -i /tmp/rs/reduction-server_*.deb && rm -rf /tmp/rs
USER 10001:10001
