# Run at every build (cmake -P): writes OUT with the source tree's commit, touching it only when
# the commit changed, so a new commit recompiles one file and an unchanged tree nothing.
# Inputs: SRC (source dir), OUT (header to write), OVERRIDE (RS_GIT_COMMIT, for builds without .git).
set(commit "${OVERRIDE}")
if(NOT commit)
  execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND commit)
    execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(dirty)
      string(APPEND commit "-dirty")
    endif()
  else()
    set(commit "unknown")
  endif()
endif()
set(text "#define RS_GIT_COMMIT \"${commit}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
