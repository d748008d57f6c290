# Debian packages (CPack DEB), one per component:
#   reduction-server              component "reducer": the daemon and rs-sizer, in /usr/bin, from
#                                 a Debian 12 tree; Depends from dpkg-shlibdeps
#   libnccl-net-reduction-server  component "plugin": the NCCL plugin, where dlopen finds it, from
#                                 the portable tree (RS_PORTABLE_PLUGIN): it needs only glibc 2.31
# scripts/package.sh builds each from its tree into build/packages/; the reducer image installs
# the first, so image and package cannot drift.

set(RS_PACKAGE_MAINTAINER
    "Reduction Server maintainers <maintainers@users.noreply.a-seed-2fab55ad.example>"
    CACHE STRING "Maintainer field of the Debian packages")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME reduction-server)
set(CPACK_PACKAGE_VENDOR "Reduction Server")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${RS_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
# One component per tree: nothing else installed by the project lands in a package by accident.
if(RS_PORTABLE_PLUGIN)
  set(CPACK_COMPONENTS_ALL plugin)
else()
  set(CPACK_COMPONENTS_ALL reducer)
endif()
set(CPACK_DEB_COMPONENT_INSTALL ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <name>_<version>-<release>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
# The reducer's Depends come from dpkg-shlibdeps. The portable plugin's are written out: the
# libraries it needs are glibc's alone (tests/portable/check_plugin_deps.sh), and 2.31 is the
# oldest glibc it is built against and tested on.
if(RS_PORTABLE_PLUGIN)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_PLUGIN_PACKAGE_DEPENDS "libc6 (>= 2.31)")
  # ldconfig after install and removal, so that dlopen finds it by name (NCCL_NET_PLUGIN=
  # reduction-server); CPack adds this itself only when it runs dpkg-shlibdeps.
  set(CPACK_DEBIAN_PLUGIN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/debian/plugin/triggers)
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
else()
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${RS_PACKAGE_MAINTAINER}")

set(CPACK_DEBIAN_REDUCER_PACKAGE_NAME reduction-server)
set(CPACK_DEBIAN_REDUCER_PACKAGE_SECTION net)
set(CPACK_DEBIAN_REDUCER_DESCRIPTION
    "all-reduce service for data-parallel training: the reducer daemon
reduction-server is the CPU-only reducer of the Reduction Server: GPU workers
stream gradient chunks to it over TCP, it sums them with SIMD code and streams
the sums back. Runs as a Vertex AI reduction-server pool or a Kubernetes pool.
Also contains rs-sizer, the calculator that sizes a reducer pool.")

set(CPACK_DEBIAN_PLUGIN_PACKAGE_NAME libnccl-net-reduction-server)
set(CPACK_DEBIAN_PLUGIN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PLUGIN_DESCRIPTION
    "NCCL net/CollNet plugin for the Reduction Server
libnccl-net-reduction-server.so lets NCCL run all-reduces through a pool of
reduction-server reducers. NCCL loads it with NCCL_NET_PLUGIN=reduction-server
and uses it for all-reduce with NCCL_COLLNET_ENABLE=1; RS_REDUCERS or
CLUSTER_SPEC names the reducers. NCCL itself comes with the training stack.")

include(CPack)
