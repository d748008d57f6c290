# shellcheck shell=bash
# Sourced by scripts/image-test.sh and tests/portable/: podman set up for a machine with no
# Docker engine and no reachable registry (see docker/README.md).
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

# debian_image DIR RELEASE VARIANT [PACKAGES]: sets `image` to a local Debian image of RELEASE
# (bullseye, bookworm, trixie) made with mmdebstrap and imported into podman:
#   minbase  apt and dpkg, documentation left out as debian:*-slim does (a stand-in for
#            debian:<release>-slim where no registry can be reached), and PACKAGES where given
#            beyond libc6, installed as apt installs them (their scripts run)
#   bare     PACKAGES (default libc6) and what they depend on, unpacked, nothing else: no shell,
#            no dpkg, no C++ runtime; for programs that must need nothing but glibc
# The tarball is kept in DIR and the image in podman's store, both named by a hash of the
# inputs, and reused while those do not change. Sets `image_tar` to the tarball.
debian_image() {
  local dir=$1 release=$2 variant=$3 packages=${4:-libc6}
  # A mirror that drops a connection now and then must not fail a CI run.
  local args=(--mode=root --format=tar --aptopt='Acquire::Retries "5"')
  case "$variant" in
    minbase) [[ $packages == libc6 ]] || args+=(--include="$packages")
             args+=(--variant=minbase
                    --dpkgopt='path-exclude=/usr/share/doc/*'
                    --dpkgopt='path-include=/usr/share/doc/*/copyright'
                    --dpkgopt='path-exclude=/usr/share/man/*'
                    --dpkgopt='path-exclude=/usr/share/info/*'
                    --dpkgopt='path-exclude=/usr/share/locale/*') ;;
    # Releases whose /bin, /lib and /lib64 are links into /usr (bookworm and later) get them
    # from mmdebstrap's own hook, as their images have: ELF interpreters name /lib64/...
    bare) args+=(--variant=extract --include="$packages"
                 --hook-dir=/usr/share/mmdebstrap/hooks/maybe-merged-usr) ;;
    *) echo "debian_image: unknown variant '$variant' (minbase, bare)" >&2; return 2 ;;
  esac
  local mirrors=("deb http://deb.debian.org/debian $release main"
                 "deb http://deb.debian.org/debian $release-updates main"
                 "deb http://deb.debian.org/debian-security $release-security main")
  local key label=$variant
  # A root with more than libc6 is cached under its own name (minbase-libfabric1, ...).
  [[ $packages == libc6 ]] || label="$variant-${packages//[^a-z0-9]/-}"
  key=$(printf '%s\n' "$(mmdebstrap --version)" "${args[@]}" "$release" "${mirrors[@]}" | sha256sum | cut -c1-12)
  image="localhost/rs-debian-$label:$release-$key"
  image_tar="$dir/debian-$label-$release-$key.tar"
  if [[ ! -s "$image_tar" ]]; then
    echo "podman: making a Debian $release $label root with mmdebstrap (under a minute to a few)"
    mkdir -p "$dir"
    rm -f "$dir"/debian-"$label"-"$release"-*.tar
    mmdebstrap --quiet "${args[@]}" "$release" "$image_tar.partial" "${mirrors[@]}" \
      >"$dir/mmdebstrap-$label-$release.log" 2>&1 \
      || { cat "$dir/mmdebstrap-$label-$release.log"; return 1; }
    mv "$image_tar.partial" "$image_tar"
  fi
  if ! podman image exists "$image"; then
    podman import --quiet "$image_tar" "$image" >/dev/null
    echo "podman: $image imported from $image_tar"
  fi
}

# debian_base DIR: sets `base` to a local Debian 12 image standing in for debian:bookworm-slim.
debian_base() {
  debian_image "$1" bookworm minbase
  # shellcheck disable=SC2034  # the caller's
  base=$image
}

# busybox_image DIR: sets `image` to a local stand-in for busybox:1.36 (the installer image's
# base where no registry can be reached): Debian's static busybox and its applets, nothing else.
busybox_image() {
  local dir=$1 bin=/bin/busybox key
  if [[ ! -x $bin ]] || ! file -b "$bin" | grep -q 'statically linked'; then
    echo "busybox_image: no static $bin (Debian's busybox-static)" >&2
    return 2
  fi
  key=$(sha256sum "$bin" | cut -c1-12)
  image="localhost/rs-busybox:$key"
  podman image exists "$image" && return 0
  local root
  root=$(mktemp -d)
  mkdir -p "$root/bin" "$root/tmp"
  cp "$bin" "$root/bin/busybox"
  local applet
  for applet in $("$bin" --list); do
    [[ $applet == busybox ]] || ln -s busybox "$root/bin/$applet"
  done
  tar -C "$root" -cf "$dir/busybox-$key.tar" . && rm -rf "$root"
  podman import --quiet "$dir/busybox-$key.tar" "$image" >/dev/null
  echo "podman: $image imported from Debian's busybox-static"
}
