# Imported targets for the dependencies that ship no CMake config in Debian: CAF::core, CAF::io
# (no config, no .pc), PkgConfig::HTTPLIB and PkgConfig::SODIUM (a .pc only). Included by
# cmake/dependencies.cmake for the build, and installed beside cduiConfig.cmake, which includes it
# so that a service linking cdui::server gets the same targets.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
# cpp-httplib is a compiled library; its Cflags carry the defines that must match the .so.
if(NOT TARGET PkgConfig::HTTPLIB)
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
endif()
# Credentials (random, SHA-256); libzmq3-dev depends on it too.
if(NOT TARGET PkgConfig::SODIUM)
  pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
endif()

# CAF 0.17 ships neither a CMake config nor a .pc file in Debian.
if(NOT TARGET CAF::core)
  find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
  find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
  find_library(CAF_IO_LIBRARY caf_io REQUIRED)
  add_library(CAF::core UNKNOWN IMPORTED)
  set_target_properties(CAF::core PROPERTIES
    IMPORTED_LOCATION "${CAF_CORE_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
  add_library(CAF::io UNKNOWN IMPORTED)
  set_target_properties(CAF::io PROPERTIES
    IMPORTED_LOCATION "${CAF_IO_LIBRARY}"
    INTERFACE_LINK_LIBRARIES CAF::core)
endif()
