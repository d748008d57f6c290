#!/usr/bin/env bash
# tests/portable/check_plugin_deps.sh on the portable plugin (it must pass) and on planted
# violations (each must fail, naming what is wrong):
#   - the Debian 12 build of the plugin: Debian 12's shared libraries and GLIBC_2.34 symbols;
#   - a library that imports a symbol newer than glibc 2.31 (arc4random, GLIBC_2.36);
#   - a library that exports one symbol more than NCCL's tables, and one that lacks one.
#   check_plugin_deps_test.sh <portable .so> <Debian 12 .so>
set -euo pipefail
portable=$1 debian=$2
check=$(dirname "$0")/check_plugin_deps.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check_plugin_deps_test: FAILED: $*" >&2; exit 1; }

"$check" "$portable" || fail "the portable plugin"

# expect_violation <label> <file> <pattern...>: the check fails, and says each pattern.
expect_violation() {
  local label=$1 file=$2 report pattern; shift 2
  if report=$("$check" "$file" 2>&1); then fail "$label: the check passed: $report"; fi
  for pattern in "$@"; do
    grep -qE -- "$pattern" <<<"$report" || fail "$label: the report does not name '$pattern':
$report"
  done
  echo "check_plugin_deps_test: $label refused, naming $*"
}

expect_violation "the Debian 12 plugin" "$debian" "NEEDED libspdlog\.so\.1\.10" "NEEDED libfmt\.so\.9" \
  "NEEDED libhwy\.so\.1" "NEEDED libstdc\+\+\.so\.6" "needs GLIBC_2\.34 .*dlopen"

tables='void* ncclNetPlugin_v8; void* ncclNetPlugin_v9; void* ncclNetPlugin_v10;
void* ncclNetPlugin_v11; void* ncclCollNetPlugin_v8; void* ncclCollNetPlugin_v9;
void* ncclCollNetPlugin_v10; void* ncclCollNetPlugin_v11;'
# planted <name> <C source>: a shared library built here from the source.
planted() {
  printf '%s\n' "$2" >"$tmp/$1.c"
  cc -shared -fPIC -O1 -o "$tmp/$1.so" "$tmp/$1.c"
}
planted new-glibc "$tables
#include <stdlib.h>
unsigned draw(void) { return arc4random(); }"
expect_violation "a GLIBC_2.36 import" "$tmp/new-glibc.so" "needs GLIBC_2\.36 .*arc4random"
planted extra-export "$tables int fmt_vformat_clash(void) { return 1; }"
expect_violation "an extra export" "$tmp/extra-export.so" "exports fmt_vformat_clash"
planted missing-table "void* ncclNetPlugin_v11; void* ncclCollNetPlugin_v11;"
expect_violation "missing tables" "$tmp/missing-table.so" "does not export ncclNetPlugin_v8"
echo "check_plugin_deps_test: passed"
