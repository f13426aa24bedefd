# Precompiled headers for targets whose sources all include the same heavy header-only
# libraries (CLI11, nlohmann-json, spdlog and fmt, GoogleTest). Parsing them again in every
# source was most of the build, which CI pays three times (strict, ASan, TSan).
# -DREADPAST_PRECOMPILE_HEADERS=OFF builds without them (which checks that every source
# includes what it uses; the fuzz build, tests/fuzz, never uses them).
option(READPAST_PRECOMPILE_HEADERS "Precompile the heavy third-party headers" ON)

# readpast_precompile_headers(TARGET HEADER...) — HEADERs as for target_precompile_headers.
function(readpast_precompile_headers target)
  if(READPAST_PRECOMPILE_HEADERS)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
