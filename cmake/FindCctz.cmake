# Finds cctz, Google's time-zone library (Debian: libcctz-dev), which ships neither a CMake
# package nor a pkg-config file: schedules read cron fields in a time zone through it
# (src/core/schedule_spec.cpp). Defines the imported target Cctz::cctz.
find_path(CCTZ_INCLUDE_DIR cctz/time_zone.h)
find_library(CCTZ_LIBRARY cctz)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Cctz REQUIRED_VARS CCTZ_LIBRARY CCTZ_INCLUDE_DIR)
if(Cctz_FOUND AND NOT TARGET Cctz::cctz)
  add_library(Cctz::cctz UNKNOWN IMPORTED)
  set_target_properties(Cctz::cctz PROPERTIES IMPORTED_LOCATION "${CCTZ_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${CCTZ_INCLUDE_DIR}")
endif()
mark_as_advanced(CCTZ_INCLUDE_DIR CCTZ_LIBRARY)
