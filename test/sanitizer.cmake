# The sanitizer build (included by the top-level CMakeLists.txt when MEMRA_SANITIZER_BUILD is ON;
# test/CMakeLists.txt runs it as the external project memra_san in build/san with clang++).
# Every lib/ source is compiled ONCE with ASan + UBSan and libFuzzer's coverage instrumentation
# (-fsanitize=fuzzer-no-link; without the fuzzer runtime the coverage hooks are no-ops), and linked
# into three kinds of programs:
#   memra_parser_asan  the parser, state-file and hardening Catch2 tests (ctest: parser_asan)
#   memra_asan         the whole CLI (shell.cli_numbers runs every numeric option through it)
#   fuzz_<target>      libFuzzer targets from fuzz/ (shell.fuzz_smoke; tools/fuzz/long-run.sh)
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "the sanitizer build needs clang++ (libFuzzer); got ${CMAKE_CXX_COMPILER_ID}")
endif()
find_package(Catch2 REQUIRED)

set(MEMRA_SAN_FLAGS -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
    -fsanitize=fuzzer-no-link)
add_library(memra_san_core STATIC ${MEMRA_LIB_SOURCES})
target_include_directories(memra_san_core PUBLIC ${CMAKE_SOURCE_DIR}/lib ${CMAKE_BINARY_DIR}/generated
                           ${XXHASH_INCLUDE_DIR} ${SODIUM_INCLUDE_DIR})
target_compile_options(memra_san_core PUBLIC ${MEMRA_SAN_FLAGS})
target_link_options(memra_san_core PUBLIC -fsanitize=address,undefined)
target_link_libraries(memra_san_core PUBLIC nlohmann_json::nlohmann_json Threads::Threads PkgConfig::PCRE2 ${SODIUM_LIBRARY}
                      ${CMAKE_DL_LIBS})
target_compile_definitions(memra_san_core PUBLIC MEMRA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
add_dependencies(memra_san_core memra_version)

add_executable(memra_asan ${MEMRA_CLI_SOURCES})
target_include_directories(memra_asan PRIVATE ${CMAKE_SOURCE_DIR}/cli)
target_link_libraries(memra_asan PRIVATE memra_san_core CLI11::CLI11)

set(T ${CMAKE_SOURCE_DIR}/test)
add_executable(memra_parser_asan
  ${T}/safetensors_test.cpp ${T}/config_test.cpp ${T}/npy_test.cpp ${T}/state_file_test.cpp ${T}/snapshot_test.cpp
  ${T}/decode_state_test.cpp ${T}/hardening_test.cpp ${T}/file_io_test.cpp ${T}/state_auth_test.cpp ${T}/main_test.cpp)
target_link_libraries(memra_parser_asan PRIVATE memra_san_core Catch2::Catch2)
target_compile_definitions(memra_parser_asan PRIVATE MEMRA_FIXTURES="${CMAKE_SOURCE_DIR}/models")

file(GLOB MEMRA_FUZZ_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/fuzz/fuzz_*.cpp)
foreach(src ${MEMRA_FUZZ_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE memra_san_core)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_compile_definitions(${name} PRIVATE MEMRA_FIXTURES="${CMAKE_SOURCE_DIR}/models")
endforeach()
