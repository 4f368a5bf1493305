include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS rehearse_model rehearse_sim EXPORT rehearseTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/model ${PROJECT_SOURCE_DIR}/sim
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rehearse
  FILES_MATCHING PATTERN "*.hpp" PATTERN "cli" EXCLUDE)
if(TARGET rehearse)
  install(TARGETS rehearse RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT rehearseTargets NAMESPACE rehearse:: FILE rehearseTargets.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rehearse)
# The `testing` component (docs/library.md): its own export file, which the
# package config includes only when a project asks for the component, so that
# find_package(rehearse) never looks for GoogleTest or RapidCheck otherwise.
if(TARGET rehearse_testing)
  install(TARGETS rehearse_testing EXPORT rehearseTestingTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT rehearseTestingTargets NAMESPACE rehearse:: FILE rehearseTestingTargets.cmake
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rehearse)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rehearseConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rehearseConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rehearse)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rehearseConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rehearseConfig.cmake
  ${PROJECT_BINARY_DIR}/rehearseConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rehearse)
