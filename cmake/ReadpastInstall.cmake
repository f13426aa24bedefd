# install(EXPORT ...) so that another project can find_package(readpast) after
# `cmake --install`; tests/package builds such a consumer.
include(CMakePackageConfigHelpers)

install(TARGETS readpast EXPORT readpastTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS readpast_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/readpast DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT readpastTargets NAMESPACE readpast::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/readpast)

get_property(package_dependencies GLOBAL PROPERTY READPAST_PACKAGE_DEPENDENCIES)
list(JOIN package_dependencies "\n" READPAST_PACKAGE_DEPENDENCY_LINES)
configure_package_config_file(cmake/readpastConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/readpastConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/readpast)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/readpastConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/readpastConfig.cmake
              ${PROJECT_BINARY_DIR}/readpastConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindCctz.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/readpast)
