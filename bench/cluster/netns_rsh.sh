#!/usr/bin/env bash
# Open MPI's launch agent inside an emulated cluster (mpirun --mca plm_rsh_agent <this>):
# where mpirun would ssh to a host, this runs the command in the host's network namespace.
# mpirun calls it as `<agent> [ssh-style options] <host> <command words...>`; the host is an
# address from the hostfile, mapped to its namespace by $RS_CLUSTER_HOSTMAP (lines "addr ns").
set -euo pipefail
while [[ ${1:-} == -* ]]; do shift; done
host=${1:?usage: netns_rsh.sh <host> <command...>}
shift
ns=$(awk -v h="$host" '$1 == h { print $2; exit }' "${RS_CLUSTER_HOSTMAP:?RS_CLUSTER_HOSTMAP not set}")
[[ -n $ns ]] || { echo "netns_rsh: $host is not a host of this cluster" >&2; exit 1; }
# Like ssh, hand the words to a shell: mpirun's remote command uses shell syntax.
exec ip netns exec "$ns" /bin/sh -c "$*"
