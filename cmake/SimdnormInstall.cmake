# cmake --install: headers, library, CMake package, pkg-config file, tools.
include(CMakePackageConfigHelpers)

install(TARGETS simdnorm EXPORT simdnormTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/simdnorm
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(SIMDNORM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/simdnorm)
install(EXPORT simdnormTargets NAMESPACE simdnorm::
  DESTINATION ${SIMDNORM_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/simdnormConfig.cmake.in
  ${PROJECT_BINARY_DIR}/simdnormConfig.cmake
  INSTALL_DESTINATION ${SIMDNORM_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/simdnormConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/simdnormConfig.cmake
              ${PROJECT_BINARY_DIR}/simdnormConfigVersion.cmake
  DESTINATION ${SIMDNORM_CMAKE_DIR})

# pkg-config: paths relative to the .pc file's prefix, so the tree relocates.
if(BUILD_SHARED_LIBS)
  set(SIMDNORM_PC_PRIVATE "")
else()
  set(SIMDNORM_PC_PRIVATE "Requires.private: libhwy tbb")
endif()
file(RELATIVE_PATH SIMDNORM_PC_UP "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig"
     "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" SIMDNORM_PC_UP "${SIMDNORM_PC_UP}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/simdnorm.pc.in
  ${PROJECT_BINARY_DIR}/simdnorm.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/simdnorm.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
