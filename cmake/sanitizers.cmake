# Compiler flags of the sanitizer builds (CDUI_SANITIZE) and of the fuzzing build (CDUI_FUZZ), for
# every target that is added after this file. Included by the top-level CMakeLists.txt.
if(CDUI_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "CDUI_FUZZ needs clang and libFuzzer (clang-14, libfuzzer-14-dev): "
                        "configure with -DCMAKE_CXX_COMPILER=clang++-14, or run scripts/fuzz.sh")
  endif()
  if(NOT CDUI_SANITIZE)
    set(CDUI_SANITIZE "address,undefined")
  endif()
  # The libraries get libFuzzer's coverage instrumentation without its main(); fuzz/ links that.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(CDUI_SANITIZE)
  # Frame pointers give whole stacks in reports; line tables come with RelWithDebInfo's -g1.
  add_compile_options(-fsanitize=${CDUI_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${CDUI_SANITIZE})
  message(STATUS "cdui: sanitizers ${CDUI_SANITIZE}")
endif()
