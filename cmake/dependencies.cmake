# Every dependency comes from Debian (scripts/install-deps.sh installs them).
# cduiConfig.cmake.in finds the same ones (but the build-only CLI11 and Boost): keep them alike.
# Which libtorch (docs/gpu.md): Debian's 1.13 (CPU only; the README's default), or PyPI's torch 2.x
# built for CUDA, installed by scripts/install-torch-pip.sh into a virtual environment of its own.
# The differences between the two live in torch_compat/ alone.
set(CDUI_TORCH "debian" CACHE STRING "libtorch to build against: debian (1.13, CPU) or pip (torch 2.x with CUDA)")
set_property(CACHE CDUI_TORCH PROPERTY STRINGS debian pip)
if(CDUI_TORCH STREQUAL "pip")
  set(CDUI_TORCH_VENV "$ENV{HOME}/.cache/cdui/torch-2.11.0-cu130" CACHE PATH
      "The virtual environment scripts/install-torch-pip.sh made")
  if(NOT EXISTS "${CDUI_TORCH_VENV}/bin/python")
    message(FATAL_ERROR "CDUI_TORCH=pip: no Python in ${CDUI_TORCH_VENV}: run scripts/install-torch-pip.sh "
                        "(or set CDUI_TORCH_VENV to the environment it made)")
  endif()
  execute_process(
    COMMAND "${CDUI_TORCH_VENV}/bin/python" -c "import torch.utils; print(torch.utils.cmake_prefix_path, end='')"
    OUTPUT_VARIABLE CDUI_TORCH_PREFIX RESULT_VARIABLE status ERROR_VARIABLE error)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "CDUI_TORCH=pip: ${CDUI_TORCH_VENV}/bin/python cannot import torch: ${error}")
  endif()
  # torch/ itself first too: TorchConfig looks for libtorch and libc10 by name, and Debian's
  # libtorch-dev (the default configuration's) has the same names in /usr/lib.
  get_filename_component(CDUI_TORCH_ROOT "${CDUI_TORCH_PREFIX}/../.." ABSOLUTE)
  list(PREPEND CMAKE_PREFIX_PATH "${CDUI_TORCH_PREFIX}" "${CDUI_TORCH_ROOT}")
  # The wheel's TorchConfig finds the CUDA toolkit for its headers; the libraries it loads at run
  # time are the wheel's (nvidia-* wheels, through libtorch's RUNPATH), one CUDA runtime.
  find_package(Torch 2 REQUIRED)
  # The wheel's libtorch.so and libtorch_cpu.so export copies of libstdc++'s std::filesystem (built
  # into them for older systems). A binary's call binds to the first library in its NEEDED list
  # that defines the symbol, which was libtorch's, and its remove_all crashed here (a call through a
  # null pointer). libstdc++ first in every binary's NEEDED list, so cdui's calls are libstdc++'s.
  add_link_options("LINKER:--push-state,--no-as-needed" -lstdc++ "LINKER:--pop-state")
elseif(CDUI_TORCH STREQUAL "debian")
  # Debian's TorchConfig reports 1.13.0 for the 1.13.1 package.
  find_package(Torch 1.13 REQUIRED)
else()
  message(FATAL_ERROR "CDUI_TORCH is '${CDUI_TORCH}': it takes debian or pip")
endif()
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
