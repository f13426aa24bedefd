# Warnings and sanitizers for every target of this project (not for consumers).
add_library(readpast_warnings INTERFACE)
target_compile_options(readpast_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                                                   -Wnon-virtual-dtor -Wold-style-cast)
if(READPAST_WERROR)
  target_compile_options(readpast_warnings INTERFACE -Werror)
endif()
# GCC's -Wmaybe-uninitialized reports false positives inside the standard library when the
# sanitizers' instrumentation changes what gets inlined (e.g. std::regex, std::function at
# -O1 with -fsanitize=address): a warning about code that is not ours must not fail the
# sanitizer build. The strict build keeps the warning.
if(READPAST_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(readpast_warnings INTERFACE -Wno-maybe-uninitialized)
endif()
# GCC 12 warns (-Wtsan) that ThreadSanitizer does not model std::atomic_thread_fence, which
# Asio's handler invocation uses (asio/detail/std_fenced_block.hpp, for `readpast serve`).
# Asio's scheduler hands handlers between threads under a mutex, which ThreadSanitizer does
# see, so the fence adds no ordering it would miss.
if(READPAST_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(readpast_warnings INTERFACE -Wno-tsan)
endif()
# GCC 12's flow-sensitive bounds warnings misfire on libstdc++'s own std::string and
# std::vector code at -O2 (GCC bugs 105329, 105651: "forming offset [32, 61] is out of the
# bounds [0, 32]" for a string inserted into a vector), depending on what the optimiser
# inlines. They stay warnings, shown in every build, but cannot fail one.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(readpast_warnings INTERFACE -Wno-error=array-bounds
                                                     -Wno-error=stringop-overflow
                                                     -Wno-error=restrict)
endif()

if(READPAST_SANITIZE)
  add_compile_options(-fsanitize=${READPAST_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${READPAST_SANITIZE})
endif()
