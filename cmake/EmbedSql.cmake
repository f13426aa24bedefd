# Embeds an engine's SQL, kept in .sql files readable and runnable as SQL, into a C++ header:
#   cmake -DSTATEMENTS=a.sql -DMIGRATIONS_DIR=dir -DOUTPUT=x.hpp -DNAMESPACE=ns
#         [-DPARAMS=named|dollar|question] -P EmbedSql.cmake
#
# STATEMENTS holds named statements, each introduced by a line "-- name: NAME" (NAME a C++
# identifier) and running to the next such line; comment lines are documentation and left
# out of the embedded text, as is a final ';'. Parameters are written :name everywhere (a
# PostgreSQL cast `::type` is not one). Each statement becomes
#   struct NAME { static constexpr const char* text = "..."; static constexpr int PARAM = N;
#                 static constexpr int param_count = K; };
# where the parameters are numbered 1..K in the order they first appear, so code binds by
# name and no number is ever written by hand. A line "-- params: a, b, c" in the block fixes
# the numbering instead (when a number must stay last, say); it must list every parameter. PARAMS says what the driver is sent:
#   named     (SQLite, the default) the text keeps :name; SQLite numbers named parameters
#             in the same order (https://sqlite.org/lang_expr.html "Parameters").
#   dollar    (libpq) each :name becomes $N.
#   question  (MariaDB) each occurrence becomes ?, and `static constexpr std::array<int, M>
#             positions` gives the parameter N bound at each ?, in order (a name used twice
#             is bound twice).
#
# MIGRATIONS_DIR holds NNNN_what.sql, numbered from 0001 without gaps: they become
# `migrations` (migration N at [N - 1]) and `migration_count`, the schema version. They run
# as scripts and are embedded as written.
cmake_policy(VERSION 3.25)
foreach(var STATEMENTS MIGRATIONS_DIR OUTPUT NAMESPACE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "EmbedSql.cmake: ${var} is required")
  endif()
endforeach()
if(NOT DEFINED PARAMS)
  set(PARAMS named)
endif()
if(NOT PARAMS MATCHES "^(named|dollar|question)$")
  message(FATAL_ERROR "EmbedSql.cmake: PARAMS must be named, dollar or question, not '${PARAMS}'")
endif()
# Stands for a PostgreSQL cast (::) while parameters are looked for; no SQL contains it.
set(cast_mark "@READPAST_CAST@")

set(delimiter "readpast_sql")

# The text without comment lines, trailing ';' and surrounding blank lines.
function(sql_body raw out)
  string(REGEX REPLACE "(^|\n)[ \t]*--[^\n]*" "" text "${raw}")
  string(STRIP "${text}" text)
  string(REGEX REPLACE ";$" "" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

file(READ "${STATEMENTS}" statements)
string(REGEX MATCHALL "-- name: [A-Za-z_][A-Za-z0-9_]*" names "${statements}")
set(body "")
foreach(marker IN LISTS names)
  string(REPLACE "-- name: " "" name "${marker}")
  # The block: from this marker to the next one (or the end).
  string(FIND "${statements}" "${marker}\n" start)
  if(start EQUAL -1)
    message(FATAL_ERROR "EmbedSql.cmake: '${marker}' must end its line")
  endif()
  string(LENGTH "${marker}\n" marker_length)
  math(EXPR start "${start} + ${marker_length}")
  string(SUBSTRING "${statements}" ${start} -1 rest)
  string(FIND "${rest}" "\n-- name: " next)
  if(NOT next EQUAL -1)
    string(SUBSTRING "${rest}" 0 ${next} rest)
  endif()
  set(declared "")
  if(rest MATCHES "(^|\n)-- params: ([^\n]*)")
    string(REGEX REPLACE "[ \t]" "" declared "${CMAKE_MATCH_2}")
    string(REPLACE "," ";" declared "${declared}")
  endif()
  sql_body("${rest}" text)
  if(text STREQUAL "")
    message(FATAL_ERROR "EmbedSql.cmake: statement '${name}' is empty")
  endif()
  # Named parameters in order of first appearance, outside string literals; none may hide
  # inside one, where it would be sent as text.
  string(REGEX MATCHALL "'[^']*'" literals "${text}")
  foreach(literal IN LISTS literals)
    if(literal MATCHES ":[A-Za-z_]")
      message(FATAL_ERROR "EmbedSql.cmake: statement '${name}' has a ':name' inside the literal ${literal}")
    endif()
  endforeach()
  string(REPLACE "::" "${cast_mark}" text "${text}")
  string(REGEX REPLACE "'[^']*'" "''" unquoted "${text}")
  string(REGEX MATCHALL ":[A-Za-z_][A-Za-z0-9_]*" found "${unquoted}")
  set(params "${declared}")
  set(occurrences "")
  foreach(p IN LISTS found)
    string(SUBSTRING "${p}" 1 -1 p)
    if(NOT p IN_LIST params)
      if(declared)
        message(FATAL_ERROR "EmbedSql.cmake: statement '${name}' uses :${p}, missing from its -- params: line")
      endif()
      list(APPEND params "${p}")
    endif()
    list(FIND params "${p}" at)
    math(EXPR at "${at} + 1")
    list(APPEND occurrences ${at})
  endforeach()
  foreach(p IN LISTS declared)
    if(NOT ":${p}" IN_LIST found)
      message(FATAL_ERROR "EmbedSql.cmake: statement '${name}' declares :${p} but does not use it")
    endif()
  endforeach()
  set(index 0)
  foreach(p IN LISTS params)
    math(EXPR index "${index} + 1")
    if(PARAMS STREQUAL "dollar")
      string(REGEX REPLACE ":${p}([^A-Za-z0-9_]|$)" "$${index}\\1" text "${text}")
    elseif(PARAMS STREQUAL "question")
      string(REGEX REPLACE ":${p}([^A-Za-z0-9_]|$)" "?\\1" text "${text}")
    endif()
  endforeach()
  string(REPLACE "${cast_mark}" "::" text "${text}")
  string(APPEND body "struct ${name} {\n  static constexpr const char* text = R\"${delimiter}(${text})${delimiter}\";\n")
  set(index 0)
  foreach(p IN LISTS params)
    math(EXPR index "${index} + 1")
    string(APPEND body "  static constexpr int ${p} = ${index};\n")
  endforeach()
  string(APPEND body "  static constexpr int param_count = ${index};\n")
  if(PARAMS STREQUAL "question")
    list(LENGTH occurrences count)
    string(REPLACE ";" ", " positions "${occurrences}")
    string(APPEND body "  static constexpr std::array<int, ${count}> positions = {${positions}};\n")
  endif()
  string(APPEND body "};\n\n")
endforeach()

file(GLOB migration_files "${MIGRATIONS_DIR}/*.sql")
list(SORT migration_files)
set(migrations "")
set(count 0)
foreach(path IN LISTS migration_files)
  math(EXPR count "${count} + 1")
  get_filename_component(file_name "${path}" NAME)
  string(SUBSTRING "${file_name}" 0 4 number)
  math(EXPR number "${number}")  # "0003" -> 3
  if(NOT number EQUAL count)
    message(FATAL_ERROR "EmbedSql.cmake: migration ${file_name} is not number ${count}")
  endif()
  file(READ "${path}" raw)
  # Migrations run as scripts: their comments stay (they are stored nowhere).
  string(STRIP "${raw}" raw)
  string(APPEND migrations "    // ${file_name}\n    R\"${delimiter}(${raw})${delimiter}\",\n")
endforeach()

get_filename_component(statements_name "${STATEMENTS}" NAME)
file(WRITE "${OUTPUT}.tmp"
"// Generated by cmake/EmbedSql.cmake from ${statements_name} and the migrations beside it;
// do not edit.
#pragma once

#include <array>

namespace ${NAMESPACE} {

${body}// Migration N is migrations[N - 1]; the schema version is their count.
inline constexpr int migration_count = ${count};
inline constexpr std::array<const char*, ${count}> migrations = {
${migrations}};

}  // namespace ${NAMESPACE}
")
# Only a changed header makes its users compile again.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
