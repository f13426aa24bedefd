# cmake -P script: the shell example on three files, one with a hostile name that must
# stay a name.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/files ${WORK_DIR}/run)
file(WRITE "${WORK_DIR}/files/a.txt" "one two three\n")
file(WRITE "${WORK_DIR}/files/b.txt" "four five\n")
set(hostile "${WORK_DIR}/files/$(touch pwned).txt")
file(WRITE "${hostile}" "six\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E env READPAST=${READPAST} WORK_DIR=${WORK_DIR}/run
                        bash ${SCRIPT} "${WORK_DIR}/files/a.txt" "${WORK_DIR}/files/b.txt"
                        "${hostile}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "word-count.sh failed (${rc}): ${out}${err}")
endif()
file(READ ${WORK_DIR}/run/counts.txt counts)
foreach(expected "3 ${WORK_DIR}/files/a.txt" "2 ${WORK_DIR}/files/b.txt" "1 ${hostile}")
  string(FIND "${counts}" "${expected}\n" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "'${expected}' missing from counts.txt:\n${counts}")
  endif()
endforeach()
if(EXISTS ${WORK_DIR}/run/pwned OR EXISTS ${WORK_DIR}/files/pwned)
  message(FATAL_ERROR "a file name was run as a command")
endif()
message(STATUS "${out}")
