#!/usr/bin/env bash
# Makes the Debian images the container tests use (scripts/image-test.sh, tests/portable/),
# ahead of them: mmdebstrap spends most of its minutes waiting on the mirror, so scripts/test.sh
# runs this in the background while the release tree builds, and waits for it before the first
# container test. Each image is cached by scripts/lib/podman.sh, so the tests find them made.
#   prefetch_images.sh       (RS_DISTRO_RELEASES as tests/portable/distro_test.sh reads it)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=${BUILD_ROOT:-build}
read -r -a releases <<<"${RS_DISTRO_RELEASES:-bullseye bookworm trixie}"
# shellcheck source=scripts/lib/podman.sh
source scripts/lib/podman.sh
podman_setup "$root/images"
start=$SECONDS
for release in "${releases[@]}"; do
  for variant in bare minbase; do
    debian_image "$root/images" "$release" "$variant"
  done
done
# distro_test.sh's fabric cases: minbase roots with their release's libfabric1.
for release in bookworm trixie; do
  debian_image "$root/images" "$release" minbase libfabric1
done
debian_base "$root/images"  # scripts/image-test.sh's (bookworm minbase: made above if listed)
busybox_image "$root/images"
echo "prefetch_images: ${releases[*]} (bare, minbase) and busybox ready in $((SECONDS - start)) s"
