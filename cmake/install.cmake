# What `cmake --install build` installs (docs/embedding.md): the `cdui` executable and
# libexec/cdui/cdui-runtime (component runtime), and for a service that embeds the runtime (component dev) the static libraries of the
# facade cdui::server and the HTTP API cdui::http with every library they link, their public headers,
# and the CMake package cdui (find_package(cdui 0.1)). Included by the top-level CMakeLists.txt
# after every folder.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS cdui RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
# The whole command line with libtorch, which cdui becomes for the commands that train or serve
# (apps/runtime_exec.hpp finds it from bin/ by this path).
install(TARGETS cdui-runtime RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/cdui COMPONENT runtime)

# The exported name of each library a service links: cdui::server is the facade (cdui_actors),
# cdui::http the HTTP API; the others are what they link. Static, so the package's targets carry
# the private dependencies (libtorch, ZeroMQ, SQLite, ...) as link-only: cduiConfig.cmake finds them.
set(cdui_exported
  cdui_messages:messages cdui_device_names:device_names cdui_torch_compat:torch_compat cdui_devices:devices
  cdui_credentials:credentials cdui_storage:storage cdui_graph:graph cdui_runtime:runtime cdui_policy:policy
  cdui_actors:server cdui_http_guard:http_guard cdui_dashboard:dashboard cdui_cli:cli cdui_http:http)
set(cdui_exported_targets)
foreach(entry ${cdui_exported})
  string(REPLACE ":" ";" pair ${entry})
  list(GET pair 0 target)
  list(GET pair 1 name)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  # The same names inside this build, for a project that adds cdui with add_subdirectory.
  add_library(cdui::${name} ALIAS ${target})
  list(APPEND cdui_exported_targets ${target})
endforeach()

# Headers go by their project path under include/cdui ("actors/server/server.hpp"), so that
# cdui's folder names (messages/, storage/, apps/) never land in include/ itself.
set(cdui_include_root ${CMAKE_INSTALL_INCLUDEDIR}/cdui)
install(TARGETS ${cdui_exported_targets} EXPORT cduiTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${cdui_include_root})

# The public API: the facade, the HTTP API, and every header they include, transitively. None
# includes a header of torch, CAF, cereal or httplib (http_api.hpp declares httplib::Server only);
# integration/embed_test builds examples/embed against the installed set alone.
set(cdui_public_headers
  actors/policy/run_options.hpp
  actors/policy/study_spec.hpp
  actors/policy/sweep_request.hpp
  actors/policy/sweep_spec.hpp
  actors/server/server.hpp
  apps/http_api.hpp
  messages/actor_status.hpp
  messages/api_error.hpp
  messages/fields.hpp
  messages/memory_ledger.hpp
  messages/run_event.hpp
  messages/run_outcome.hpp
  messages/run_request.hpp
  messages/run_status.hpp
  messages/study.hpp
  messages/sweep.hpp
  messages/version.hpp
  messages/worker.hpp
  storage/run_store.hpp)
foreach(header ${cdui_public_headers})
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${cdui_include_root}/${folder}
          COMPONENT dev)
endforeach()

set(cdui_package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/cdui)
install(EXPORT cduiTargets NAMESPACE cdui:: DESTINATION ${cdui_package_dir} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/cduiConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cduiConfig.cmake
                              INSTALL_DESTINATION ${cdui_package_dir})
# 0.x: a minor version may change the API, so 0.1 takes any 0.1.z and nothing else.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cduiConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cduiConfig.cmake ${PROJECT_BINARY_DIR}/cduiConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/system_targets.cmake
        DESTINATION ${cdui_package_dir} COMPONENT dev)
