# Cross-build for "any x86-64 glibc >= 2.31": clang from the build machine, everything else
# (glibc 2.31, GCC 10's libstdc++ and crt files, libnettle.a) from a Debian 11 sysroot, and the
# static fmt, spdlog and Highway built into a prefix by scripts/build-portable-plugin.sh.
#   -DRS_SYSROOT=<Debian 11 root>  -DRS_PORTABLE_DEPS=<prefix>
# A compiler and linker that run here but link only against the sysroot is what makes the
# output portable: nothing of Debian 12's glibc or libstdc++ can leak in.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
# try_compile projects re-read this file; they see these two through the environment-free
# platform-variable list.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES RS_SYSROOT RS_PORTABLE_DEPS)
if(NOT RS_SYSROOT OR NOT RS_PORTABLE_DEPS)
  message(FATAL_ERROR "portable toolchain: set RS_SYSROOT and RS_PORTABLE_DEPS")
endif()

set(CMAKE_SYSROOT ${RS_SYSROOT})
set(CMAKE_C_COMPILER clang)
set(CMAKE_CXX_COMPILER clang++)
set(CMAKE_C_COMPILER_TARGET x86_64-linux-gnu)
set(CMAKE_CXX_COMPILER_TARGET x86_64-linux-gnu)

# Headers, libraries and CMake packages from the sysroot and the prefix only; programs (protoc
# and the like, unused here) from the build machine.
set(CMAKE_FIND_ROOT_PATH ${RS_PORTABLE_DEPS})
set(CMAKE_PREFIX_PATH ${RS_PORTABLE_DEPS})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
