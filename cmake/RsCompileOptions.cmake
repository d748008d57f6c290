# Warning flags and sanitizer builds, applied through the rs_options interface target.
add_library(rs_options INTERFACE)
target_compile_options(rs_options INTERFACE -Wall -Wextra)
if(RS_WERROR)
  target_compile_options(rs_options INTERFACE -Werror)
endif()

# UBSan without its vptr check (-fno-sanitize=vptr): it checks the dynamic type of every object
# a member is reached through, which our code, with no downcast anywhere, can get wrong only
# through an object's lifetime, which ASan checks; and it took a sixth to two fifths of each
# compile (Asio's templates are full of such calls), in s of CPU with and without it: rs_server's
# first unity batch 82 and 68, rs_transport's 28-31 and 19.5, dataplane/failure_test.cc 19.3
# and 11.7.
if(RS_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(RS_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  # GCC warns that TSan does not model the fences Asio uses; the warning is about TSan's
  # coverage, not about our code, and -Werror would stop the build on it.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-tsan)
  endif()
  add_link_options(-fsanitize=thread)
elseif(NOT RS_SANITIZE STREQUAL "")
  message(FATAL_ERROR "RS_SANITIZE must be '', 'address' or 'thread', not '${RS_SANITIZE}'")
endif()

# Shared libraries resolve every symbol at link time, except under Clang's sanitizers: Clang
# links their runtime into executables only, so a shared library's __asan_*/__tsan_* calls are
# left for the executable that loads it to resolve (GCC links the runtime's shared library in).
set(RS_LINK_NO_UNDEFINED -Wl,--no-undefined)
if(RS_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(RS_LINK_NO_UNDEFINED "")
endif()

# Fuzz builds instrument every library for coverage; the fuzz targets add the libFuzzer main.
if(RS_BUILD_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=vptr
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
