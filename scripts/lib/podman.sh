# shellcheck shell=bash
# Sourced by scripts/image-test.sh: podman set up for a machine with no Docker engine and no
# reachable registry (see docker/README.md).
#
# podman_setup DIR: writes DIR/containers.conf and exports CONTAINERS_CONF. Debian's default
# runtime crun refuses this kind of host's cgroups, so runc with cgroupfs; no systemd, so the
# file events logger; and ulimits within the hard limit (podman's default asks for more).
podman_setup() {
  local dir
  mkdir -p "$1"
  dir=$(cd "$1" && pwd)  # podman's helper processes need an absolute path
  cat >"$dir/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
  export CONTAINERS_CONF="$dir/containers.conf"
}

# debian_base DIR: sets `base` to a local Debian 12 image standing in for debian:bookworm-slim
# (minbase with apt, bookworm + updates + security, documentation left out as -slim does),
# made with mmdebstrap and imported into podman. The tarball is kept in DIR and the image in
# podman's store, both named by a hash of the inputs, and reused while those do not change.
debian_base() {
  local dir=$1
  local args=(--variant=minbase --mode=root --format=tar
              --dpkgopt='path-exclude=/usr/share/doc/*'
              --dpkgopt='path-include=/usr/share/doc/*/copyright'
              --dpkgopt='path-exclude=/usr/share/man/*'
              --dpkgopt='path-exclude=/usr/share/info/*'
              --dpkgopt='path-exclude=/usr/share/locale/*'
              bookworm)
  local mirrors=("deb http://deb.debian.org/debian bookworm main"
                 "deb http://deb.debian.org/debian bookworm-updates main"
                 "deb http://deb.debian.org/debian-security bookworm-security main")
  local key
  key=$(printf '%s\n' "$(mmdebstrap --version)" "${args[@]}" "${mirrors[@]}" | sha256sum | cut -c1-12)
  base="localhost/rs-debian-base:bookworm-$key"
  if podman image exists "$base"; then
    echo "image-test: base $base (cached)"
    return 0
  fi
  local tar="$dir/debian-base-$key.tar"
  if [[ ! -s "$tar" ]]; then
    echo "image-test: making the Debian base with mmdebstrap (about a minute)"
    rm -f "$dir"/debian-base-*.tar
    mmdebstrap --quiet "${args[@]}" "$tar.partial" "${mirrors[@]}" >"$dir/mmdebstrap.log" 2>&1 \
      || { cat "$dir/mmdebstrap.log"; return 1; }
    mv "$tar.partial" "$tar"
  fi
  podman import --quiet "$tar" "$base" >/dev/null
  echo "image-test: base $base (imported from $tar)"
}
