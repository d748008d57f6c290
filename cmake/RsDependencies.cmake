# Every dependency comes from Debian's packages (scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)

# Asio ships no CMake config and no .pc file: standalone headers only.
find_path(ASIO_INCLUDE_DIR asio.hpp REQUIRED)
add_library(rs_asio INTERFACE)
target_include_directories(rs_asio SYSTEM INTERFACE ${ASIO_INCLUDE_DIR})
# ASIO_DISABLE_STD_ALIGNED_ALLOC: Asio decides between aligned_alloc/free and operator
# new/delete for its handler memory from _GLIBCXX_HAVE_ALIGNED_ALLOC, which is defined only once
# some standard header came first. A file that includes Asio before any standard header would
# allocate with one and another free with the other (ASan: alloc-dealloc-mismatch); one choice
# for every file removes the dependence on include order.
target_compile_definitions(rs_asio INTERFACE ASIO_STANDALONE ASIO_NO_DEPRECATED
                                             ASIO_DISABLE_STD_ALIGNED_ALLOC)
target_link_libraries(rs_asio INTERFACE Threads::Threads)

find_package(spdlog CONFIG REQUIRED)
find_package(hwy CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)

# Authentication with the job secret (core/wire/auth.cc): Nettle's HMAC-SHA256 (nettle-dev).
# The portable plugin links its static archive, which every Debian release ships.
find_path(NETTLE_INCLUDE_DIR nettle/hmac.h REQUIRED)
if(RS_PORTABLE_PLUGIN)
  find_library(NETTLE_LIBRARY NAMES libnettle.a REQUIRED)
else()
  find_library(NETTLE_LIBRARY NAMES nettle REQUIRED)
endif()
add_library(rs_nettle INTERFACE)
# The headers are in the compiler's own search path (<nettle/...> under /usr/include): naming
# that directory again with -isystem would reorder it before libstdc++'s and break
# #include_next in the sysroot build.
target_link_libraries(rs_nettle INTERFACE ${NETTLE_LIBRARY})

# libfabric (libfabric-dev), for the RDMA data path: RS_HAVE_FABRIC says whether it was found;
# rs_fabric exists only then and gives its users the RS_HAVE_FABRIC define. The portable plugin
# takes only its headers from the sysroot and loads the library at run time (RS_FABRIC_DLOPEN).
set(RS_HAVE_FABRIC OFF)
set(RS_FABRIC_DLOPEN OFF)
string(TOUPPER "${RS_WITH_FABRIC}" rs_with_fabric)
if(NOT rs_with_fabric MATCHES "^(AUTO|ON|OFF|TRUE|FALSE|YES|NO|1|0)$")
  message(FATAL_ERROR "RS_WITH_FABRIC is '${RS_WITH_FABRIC}': AUTO, ON or OFF")
endif()
if(RS_PORTABLE_PLUGIN)
  if(NOT rs_with_fabric MATCHES "^(OFF|FALSE|NO|0)$")
    find_path(LIBFABRIC_INCLUDE_DIR rdma/fabric.h)
    if(LIBFABRIC_INCLUDE_DIR)
      set(RS_HAVE_FABRIC ON)
      set(RS_FABRIC_DLOPEN ON)
    elseif(NOT rs_with_fabric STREQUAL "AUTO")
      message(FATAL_ERROR "RS_WITH_FABRIC=${RS_WITH_FABRIC} but the sysroot has no rdma/fabric.h "
                          "(libfabric-dev)")
    endif()
  endif()
elseif(NOT rs_with_fabric MATCHES "^(OFF|FALSE|NO|0)$")
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(LIBFABRIC QUIET IMPORTED_TARGET libfabric>=1.11)
  endif()
  if(LIBFABRIC_FOUND)
    set(RS_HAVE_FABRIC ON)
  elseif(NOT rs_with_fabric STREQUAL "AUTO")
    message(FATAL_ERROR "RS_WITH_FABRIC=${RS_WITH_FABRIC} but pkg-config found no libfabric >= 1.11 "
                        "(install libfabric-dev, or configure with -DRS_WITH_FABRIC=AUTO)")
  endif()
endif()

if(RS_PORTABLE_PLUGIN)
  # Everything but glibc inside the plugin and the harness, hidden: C++ runtime included, so
  # that neither needs a newer libstdc++ than the image has, nor binds to the host's.
  add_link_options(-static-libstdc++ -static-libgcc -Wl,--exclude-libs,ALL)
  return()
endif()

find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
# gRPC's TLS certificates for the health probe (libssl-dev).
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
# The reducer's /metrics endpoint (prometheus-cpp-dev: core, and pull over civetweb).
find_package(prometheus-cpp CONFIG REQUIRED)
if(RS_BUILD_TESTS)
  find_package(Catch2 CONFIG REQUIRED)
endif()

# The CUDA toolkit is optional and used for its headers alone: tests/cuda checks our fp8
# rounding against CUDA's own host conversions. Nothing needs a device or links CUDA.
set(RS_HAVE_CUDA OFF)
if(RS_WITH_CUDA)
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  set(RS_HAVE_CUDA ${CUDAToolkit_FOUND})
endif()
message(STATUS "Reduction Server: CUDA headers=${RS_HAVE_CUDA} libfabric=${RS_HAVE_FABRIC} "
               "sanitize='${RS_SANITIZE}'")
