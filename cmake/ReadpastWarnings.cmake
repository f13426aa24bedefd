# Warnings and sanitizers for every target of this project (not for consumers).
add_library(readpast_warnings INTERFACE)
target_compile_options(readpast_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                                                   -Wnon-virtual-dtor -Wold-style-cast)
if(READPAST_WERROR)
  target_compile_options(readpast_warnings INTERFACE -Werror)
endif()

if(READPAST_SANITIZE)
  add_compile_options(-fsanitize=${READPAST_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${READPAST_SANITIZE})
endif()
