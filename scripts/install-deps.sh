#!/usr/bin/env bash
# Installs the Debian packages the build, tests and benchmarks need. Idempotent: it runs apt only
# when something is missing. The Dockerfiles call this same script.
#   scripts/install-deps.sh            build + test dependencies
#   scripts/install-deps.sh --build    build and packaging, without check-deploy.sh's and the
#                                      image test's tools (the reducer image's builder stage)
#   scripts/install-deps.sh --runtime  only what the reducer binary needs at run time
#   scripts/install-deps.sh --no-deploy-check  build + test dependencies without those of
#                                      scripts/check-deploy.sh (for an image's build stage)
set -euo pipefail

build_pkgs=(
  cmake ninja-build g++ clang libclang-rt-14-dev pkg-config git
  libasio-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libspdlog-dev libfmt-dev catch2 libhwy-dev
  nlohmann-json3-dev libcli11-dev
  # authentication with the job secret: Nettle's HMAC-SHA256; OpenSSL for gRPC's TLS checks
  nettle-dev libssl-dev
  iproute2 procps
  # tests/fault/partition.sh cuts one path between namespaces with nft
  nftables
  libgloo-dev libopenmpi-dev openmpi-bin sysstat iperf3 ethtool
  # rs-sizer's CLI test reads its --json output with jq
  jq
  # metrics: the daemon's /metrics endpoint; a real Prometheus server and promtool for its test
  prometheus-cpp-dev prometheus curl
  # RDMA through libfabric (core/transport/fabric, proto/FABRIC.md): its headers and .pc file;
  # fi_info (libfabric-bin) to see which providers and devices a machine has
  libfabric-dev libfabric-bin
)
# scripts/check-deploy.sh: yamllint (it brings python3-yaml) and Node.js with npm for the typed
# check of Kubernetes manifests. A machine whose own Node.js already provides both (NodeSource's
# nodejs provides npm and conflicts with Debian's) keeps its own.
if [[ "${1:-}" != "--no-deploy-check" && "${1:-}" != "--build" ]]; then
  build_pkgs+=(yamllint)
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    build_pkgs+=(nodejs npm)
  fi
fi
runtime_pkgs=(libgrpc++1.51 libprotobuf32 libspdlog1.10 libfmt9 libhwy1 libnettle8 libssl3 ca-certificates
  # metrics: the /metrics endpoint (prometheus-cpp over civetweb)
  libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0
  # the fabric data path (libfabric: verbs, EFA, tcp providers); without a device the reducer
  # runs over TCP alone, never fails to start
  libfabric1
  # libibverbs' user-space drivers (mlx4/mlx5, efa, bnxt_re, irdma, ...): without them libfabric's
  # verbs provider sees no NIC. Debian 12's libfabric1 already depends on it (not a Recommends,
  # which --no-install-recommends would skip); named here so that the image keeps it if that
  # dependency ever changes. 1.2 MB; it opens nothing until a device is present.
  ibverbs-providers
)

pkgs=("${build_pkgs[@]}")
[[ "${1:-}" == "--runtime" ]] && pkgs=("${runtime_pkgs[@]}")
# Debian packages (scripts/package.sh): CPack's DEB generator runs dpkg-shlibdeps and file.
package_pkgs=(dpkg-dev file)
# Images (scripts/image-test.sh, tests/portable/): podman with runc (Debian's default crun
# refuses this host's cgroups), mmdebstrap for Debian bases and the portable plugin's sysroot
# where no registry can be reached, a static busybox for the plugin installer's base.
image_pkgs=(podman runc mmdebstrap busybox-static)
case "${1:-}" in
  "" | --no-deploy-check) pkgs+=("${package_pkgs[@]}" "${image_pkgs[@]}") ;;
  --build) pkgs+=("${package_pkgs[@]}") ;;
  --runtime) ;;  # the reducer image's runtime stage: dpkg -i of our package checks this list
  *) echo "install-deps: unknown option '$1' (--build, --runtime, --no-deploy-check)" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi

SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO=sudo
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
