#!/usr/bin/env bash
# The portable plugin on Debian 11, 12 and 13 (bullseye, bookworm, trixie), each in containers
# made here with nothing installed but glibc, against reducers on this host:
#   - the image holds no C++ runtime, spdlog, fmt, Highway, OpenSSL, Nettle or protobuf (read
#     from its file list), and its glibc version is printed;
#   - docker/worker.Dockerfile built on that image, and in it the harness (itself portable)
#     finding the plugin through the layer's NCCL_NET_PLUGIN and driving it as NCCL does:
#     CollNet all-reduces checked exactly on W nodes, p2p checked, a wrong job secret refused;
#   - the plugin's .deb installed with dpkg -i and with apt install ./ on the release's minbase
#     image (apt and dpkg, no network), the harness loading it by name as NCCL does (p2p).
# Then the fabric: CollNet over libfabric loaded at run time from the image's own libfabric1
# (bookworm's 1.17, trixie's 2.1), and declined in one line where the image has none or its
# provider does not match the reducers'.
# Then the Kubernetes installer: docker/plugin-installer.Dockerfile built on a local busybox, the
# DaemonSet's own commands (deploy/k8s/plugin-installer/) run in it against a host folder, and
# a "GPU pod" (Debian 11, nothing but glibc) mounting that folder read-only as the DaemonSet's
# comment says, CollNet checked.
# Every container and image it makes is removed on every exit path; the Debian roots are cached
# by scripts/lib/podman.sh.
#   distro_test.sh <portable out dir> <reduction-server> <plugin .deb>
# RS_DISTRO_RELEASES overrides the releases ("bullseye bookworm trixie").
set -euo pipefail
out=$(cd "$1" && pwd) server=$2 deb=$(readlink -f "$3")
cd "$(dirname "$0")/../.."
root=${BUILD_ROOT:-build}
read -r -a releases <<<"${RS_DISTRO_RELEASES:-bullseye bookworm trixie}"
W=3
start=$SECONDS
[[ $(id -u) -eq 0 ]] || { echo "distro_test: needs root (podman, mmdebstrap)" >&2; exit 2; }
for f in "$out/libnccl-net-reduction-server.so" "$out/plugin_harness" "$server" "$deb"; do
  [[ -e $f ]] || { echo "distro_test: missing $f" >&2; exit 2; }
done

# shellcheck source=scripts/lib/podman.sh
source scripts/lib/podman.sh
# shellcheck source=scripts/lib/local_reducers.sh
source scripts/lib/local_reducers.sh
podman_setup "$root/images"
tmp=$(mktemp -d)
tag="d$$"
pids=() containers=() built=()
cleanup() {
  local code=$? p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if ((${#containers[@]})); then podman rm -f -i -t 0 "${containers[@]}" >/dev/null 2>&1 || true; fi
  if ((${#built[@]})); then podman rmi -f -i "${built[@]}" >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
step() { echo "distro_test: [$((SECONDS - start)) s] $*"; }
fail() { echo "distro_test: FAILED: $*" >&2; tail -n 20 "$tmp"/reducer*.log >&2; exit 1; }

secret=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
printf '%s\n' "$secret" >"$tmp/secret"
start_local_reducers "$server" 2 "$tmp" --io-threads 1 --log-level warn --secret-file "$tmp/secret"
step "2 reducers on this host (Debian 12 build): $reducers"

# run_harness <label> <image> <mode> <world> [podman run args...]: W containers of <image>, one
# simulated NCCL node each, all of which must pass. The harness finds the plugin through
# NCCL_NET_PLUGIN, as NCCL does; `wrapper` runs first, in front of the harness's command line.
run_harness() {
  local label=$1 image=$2 mode=$3 world=$4; shift 4
  local dir="$tmp/$label" rank procs=() failed=0
  mkdir -p "$dir/rdv"
  for ((rank = 0; rank < world; rank++)); do
    local name="rs-distro-$tag-$label-$rank"
    containers+=("$name")
    podman run --rm --name "$name" --network host -v "$dir/rdv:/rdv" \
      -v "$out/plugin_harness:/opt/rs-test/plugin_harness:ro" \
      -e RS_REDUCERS="$reducers" -e RS_SECRET="$secret" -e NCCL_RS_IFNAME=lo -e RS_STREAMS=2 \
      -e RS_CONNECT_TIMEOUT_MS=10000 -e NCCL_RS_RENDEZVOUS_TIMEOUT_MS=60000 "$@" "$image" \
      ${wrapper[@]+"${wrapper[@]}"} /opt/rs-test/plugin_harness --version 11 --mode "$mode" \
      --rank "$rank" --world "$world" --dir /rdv >"$dir/rank$rank.log" 2>&1 &
    procs+=($!)
  done
  for ((rank = 0; rank < world; rank++)); do
    wait "${procs[$rank]}" || { failed=1; echo "--- $label rank $rank:"; tail -n 20 "$dir/rank$rank.log"; }
  done
  ((failed == 0)) || fail "$label"
}
wrapper=()

for release in "${releases[@]}"; do
  # --- nothing but glibc, and the worker layer on it ----------------------------------------
  debian_image "$root/images" "$release" bare
  bare=$image
  extra=$(tar -tf "$image_tar" | grep -E '/lib(stdc\+\+|spdlog|fmt|hwy|crypto|ssl|nettle|protobuf|grpc)[^/]*\.so' || true)
  [[ -z $extra ]] || fail "$release's bare image holds $extra"
  glibc=$(podman run --rm --network none "$bare" /lib/x86_64-linux-gnu/libc.so.6 | awk 'NR == 1')
  step "$release: $glibc; libc6 and its dependencies alone: no C++ runtime, spdlog, fmt, Highway, OpenSSL, Nettle, protobuf"
  worker="localhost/rs-distro-worker:$release-$tag"
  built+=("$worker")
  podman build --format docker --pull=never --network=none -f docker/worker.Dockerfile \
    --build-arg BASE="$bare" -t "$worker" . >"$tmp/worker-$release.log" 2>&1 \
    || { cat "$tmp/worker-$release.log"; fail "$release: docker/worker.Dockerfile"; }
  # The harness finds the plugin through the layer's NCCL_NET_PLUGIN, as NCCL would. Every
  # (type, op) and size on the oldest glibc; each type and op once on the others, which load
  # the same .so (the release tree's ctest sends the whole matrix too).
  mode=collnet-adapter
  [[ $release == "${releases[0]}" ]] && mode=collnet
  run_harness "$release-collnet" "$worker" "$mode" "$W"
  run_harness "$release-p2p" "$worker" p2p "$W"
  run_harness "$release-wrong-secret" "$worker" collnet-refused 2 -e RS_SECRET=not-the-job-secret-0123456789
  grep -q "auth proof is wrong" "$tmp/$release-wrong-secret/rank0.log" \
    || fail "$release: the refusal does not say why: $(cat "$tmp/$release-wrong-secret/rank0.log")"
  step "$release: docker/worker.Dockerfile on it; CollNet on $W nodes exact, p2p exact, a wrong secret refused"

  # --- the Debian package -------------------------------------------------------------------
  debian_image "$root/images" "$release" minbase
  minbase=$image
  # dpkg -i, then the harness loads it by name (libnccl-net-reduction-server.so, through the
  # linker cache its trigger updated).
  # shellcheck disable=SC2016  # $@ is the container shell's
  wrapper=(/bin/sh -c 'dpkg -i /tmp/plugin.deb >/dev/null && exec "$@"' sh)
  run_harness "$release-dpkg" "$minbase" p2p 2 -v "$deb:/tmp/plugin.deb:ro" -e NCCL_NET_PLUGIN=reduction-server
  wrapper=()
  name="rs-distro-$tag-$release-apt"
  containers+=("$name")
  podman run --rm --name "$name" --network none -v "$deb:/tmp/plugin.deb:ro" "$minbase" sh -c \
    'apt-get install -y -q /tmp/plugin.deb &&
     dpkg -s libnccl-net-reduction-server | grep -q "^Status: install ok installed" &&
     ldconfig -p | grep -q libnccl-net-reduction-server.so' >"$tmp/apt-$release.log" 2>&1 \
    || { cat "$tmp/apt-$release.log"; fail "$release: apt install ./ of the plugin's package"; }
  step "$release: the .deb (Depends: $(dpkg-deb -f "$deb" Depends)) by dpkg -i, loaded by name; by apt install ./ offline"
done

# --- the fabric: libfabric loaded at run time, where the image has it -----------------------------
# Two more reducers offer the fabric (libfabric's tcp provider on loopback, this host's 1.17); the
# plugin, mounted into the images, is told RS_FABRIC=tcp. Where the image has its release's
# libfabric1, installed as apt installs it, the payloads must go over the fabric; where it has
# none (a bare image: glibc alone), the plugin still loads and CollNet runs over TCP, its log
# saying why.
tcp_reducers=$reducers
mkdir -p "$tmp/fabric"
start_local_reducers "$server" 2 "$tmp/fabric" --io-threads 1 --log-level warn \
  --secret-file "$tmp/secret" --fabric-provider tcp --fabric-node 127.0.0.1
fabric_case() {
  local label=$1 release=$2 variant=$3 packages=$4 expect=$5 provider=${6:-tcp}
  debian_image "$root/images" "$release" "$variant" "$packages"
  run_harness "fabric-$label" "$image" collnet-adapter 2 \
    -v "$out/libnccl-net-reduction-server.so:/opt/rs-test/lib/libnccl-net-reduction-server.so:ro" \
    -e NCCL_NET_PLUGIN=/opt/rs-test/lib/libnccl-net-reduction-server.so -e RS_FABRIC="$provider" \
    -e RS_FABRIC_NODE=127.0.0.1 -e RS_HARNESS_EXPECT_FABRIC="$expect"
}
# libfabric_version: the libfabric1 of the image fabric_case last used.
libfabric_version() {
  tar -xOf "$image_tar" ./var/lib/dpkg/status |
    awk '/^Package: libfabric1$/ { found = 1 } found && /^Version:/ { print $2; exit }'
}
fabric_case bookworm bookworm minbase libfabric1 1
step "bookworm with its libfabric1 $(libfabric_version): the plugin loaded it; CollNet's payloads over the fabric, exact"
# libfabric 2.x's "tcp" is its own RDM protocol, not 1.17's ofi_rxm over tcp: asked for "tcp",
# the worker finds the reducer's grant names another provider and declines, in one line; asked
# for the layered provider by name, it speaks the reducer's protocol across the two versions.
fabric_case trixie-tcp trixie minbase libfabric1 \
  "declined:the peer's fabric grant: provider 'tcp;ofi_rxm', ours 'tcp'" tcp
fabric_case trixie-tcp-rxm trixie minbase libfabric1 1 "tcp;ofi_rxm"
step "trixie with its libfabric1 $(libfabric_version): RS_FABRIC=tcp declined against the host's 1.17 ('tcp;ofi_rxm' granted, 'tcp' here); RS_FABRIC='tcp;ofi_rxm': CollNet's payloads over the fabric, exact"
fabric_case "no-libfabric" "${releases[0]}" bare libc6 "declined:libfabric is not installed"
step "${releases[0]} without libfabric: the plugin loaded, the fabric declined in one line, CollNet exact over TCP"
reducers=$tcp_reducers

# --- the Kubernetes installer ---------------------------------------------------------------------
busybox_image "$root/images"
installer="localhost/rs-distro-installer:$tag"
built+=("$installer")
podman build --format docker --pull=never --network=none -f docker/plugin-installer.Dockerfile \
  --build-arg BASE="$image" -t "$installer" . >"$tmp/installer.log" 2>&1 \
  || { cat "$tmp/installer.log"; fail "docker/plugin-installer.Dockerfile"; }
manifest=deploy/k8s/plugin-installer/plugin-installer.yaml
# container_command <init|main> <name>: the container's command from the manifest, one word a line.
container_command() {
  python3 - "$manifest" "$1" "$2" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
key = {"init": "initContainers", "main": "containers"}[sys.argv[2]]
[c] = [c for c in doc["spec"]["template"]["spec"][key] if c["name"] == sys.argv[3]]
print("\n".join(c["command"]))
PY
}
mapfile -t install_cmd < <(container_command init install)
mapfile -t pause_cmd < <(container_command main pause)
host_dir="$tmp/node/home/kubernetes/bin/reduction-server"
mkdir -p "$host_dir"
podman run --rm --network none -v "$host_dir:/host" "$installer" "${install_cmd[@]}" >"$tmp/install.log" 2>&1 \
  || { cat "$tmp/install.log"; fail "the DaemonSet's install command"; }
[[ $(sha256sum <"$host_dir/libnccl-net-reduction-server.so") == "$(sha256sum <"$out/libnccl-net-reduction-server.so")" ]] \
  || fail "the installed plugin differs from the build's"
[[ $(ls -A "$host_dir") == libnccl-net-reduction-server.so ]] || fail "the install left $(ls -A "$host_dir")"
name="rs-distro-$tag-pause"
containers+=("$name")
podman run -d --name "$name" --network none --read-only --user 65534:65534 "$installer" "${pause_cmd[@]}" >/dev/null
[[ $(podman inspect -f '{{.State.Status}}' "$name") == running ]] || fail "the pause container is not running"
podman stop -t 10 "$name" >/dev/null
[[ $(podman inspect -f '{{.State.ExitCode}}' "$name") == 0 ]] || fail "the pause container did not stop on SIGTERM"
debian_image "$root/images" bullseye bare
run_harness installer-gpu-pod "$image" collnet 2 -v "$host_dir:/opt/reduction-server/lib:ro" \
  -e NCCL_NET_PLUGIN=/opt/reduction-server/lib/libnccl-net-reduction-server.so
step "installer image ($(podman image inspect -f '{{.Size}}' "$installer" | numfmt --to=iec) with its base): \
the DaemonSet's commands installed the plugin; a Debian 11 pod mounting it all-reduced exactly"
step "passed: ${releases[*]}, the installer"
