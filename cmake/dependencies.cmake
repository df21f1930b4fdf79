# Every dependency comes from Debian (scripts/install-deps.sh installs them).
# cduiConfig.cmake.in finds the same ones (but the build-only CLI11 and Boost): keep them alike.
# Debian's TorchConfig reports 1.13.0 for the 1.13.1 package.
find_package(Torch 1.13 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(cereal REQUIRED)
find_package(cppzmq REQUIRED)
find_package(Boost REQUIRED COMPONENTS unit_test_framework)
# Threads, PkgConfig, cpp-httplib, libsodium and CAF.
include(${CMAKE_CURRENT_LIST_DIR}/system_targets.cmake)
# Chart.js, for the dashboard's charts: compiled into cdui (apps/CMakeLists.txt), so that the page
# fetches nothing from the network. Build-only: the package needs none of it.
find_file(CDUI_CHART_JS chart.min.js PATHS /usr/share/javascript/chart.js NO_DEFAULT_PATH)
if(NOT CDUI_CHART_JS)
  message(FATAL_ERROR "Chart.js is missing (/usr/share/javascript/chart.js/chart.min.js): install "
                      "Debian's libjs-chart.js, or run scripts/install-deps.sh")
endif()
