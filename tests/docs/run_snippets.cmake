# cmake -P script: install the build, extract the C++ snippets of README.md and docs/*.md
# (snippet_extract.cpp says how), and compile them in a project of their own that finds
# the package as a user's would. The page of an engine this build leaves out
# (docs/postgres.md without postgres) is skipped: its API is not in the package.
cmake_minimum_required(VERSION 3.25)
string(REPLACE "," ";" ENGINES "${ENGINES}")
string(REPLACE "," ";" ALL_ENGINES "${ALL_ENGINES}")
include(${CMAKE_CURRENT_LIST_DIR}/../support/run_step.cmake)

file(GLOB pages ${SOURCE_DIR}/docs/*.md)
set(markdown ${SOURCE_DIR}/README.md)
foreach(page IN LISTS pages)
  get_filename_component(stem ${page} NAME_WE)
  if(stem IN_LIST ALL_ENGINES AND NOT stem IN_LIST ENGINES)
    message(STATUS "skipped ${page}: this build has no ${stem} engine")
    continue()
  endif()
  list(APPEND markdown ${page})
endforeach()

run_step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
run_step(${EXTRACT} ${WORK_DIR}/snippets ${CONTEXT_DIR} ${SOURCE_DIR} ${markdown})
set(with_libpq OFF)
if("postgres" IN_LIST ENGINES)
  set(with_libpq ON)
endif()
run_step(${CMAKE_COMMAND} -S ${PROJECT} -B ${WORK_DIR}/build -G ${GENERATOR}
         -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DSNIPPET_DIR=${WORK_DIR}/snippets
         -DWITH_LIBPQ=${with_libpq})
run_step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
