# Warning flags and sanitizer builds, applied through the rs_options interface target.
add_library(rs_options INTERFACE)
target_compile_options(rs_options INTERFACE -Wall -Wextra)
if(RS_WERROR)
  target_compile_options(rs_options INTERFACE -Werror)
endif()

if(RS_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
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

# Fuzz builds instrument every library for coverage; the fuzz targets add the libFuzzer main.
if(RS_BUILD_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
