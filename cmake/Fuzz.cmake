# MESHPLAN_BUILD_FUZZ: libFuzzer targets for the parsers (tests/fuzz/, docs/fuzzing.md). libFuzzer
# comes with clang, so a fuzz build is a separate build directory configured with clang:
#   CXX=clang++ cmake -S . -B build-fuzz -DMESHPLAN_BUILD_FUZZ=ON -DMESHPLAN_BUILD_TESTS=OFF \
#     -DMESHPLAN_BUILD_BENCH=OFF -DMESHPLAN_ENABLE_CUDA=OFF
#   cmake --build build-fuzz --target meshplan_fuzzers
# (tools/fuzz.sh does both and runs every target). Every target of such a build is instrumented
# for the fuzzer, AddressSanitizer and UndefinedBehaviorSanitizer; with a compiler that cannot
# link -fsanitize=fuzzer the option builds nothing and says why.
include(CheckCXXSourceCompiles)

set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,address,undefined")
set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=fuzzer,address,undefined")
check_cxx_source_compiles([[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }
]] MESHPLAN_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)

if(MESHPLAN_HAVE_LIBFUZZER)
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=address,undefined)
else()
  message(WARNING "MESHPLAN_BUILD_FUZZ: ${CMAKE_CXX_COMPILER_ID} cannot build -fsanitize=fuzzer "
                  "(libFuzzer comes with clang: configure with CXX=clang++); no fuzz targets")
endif()
