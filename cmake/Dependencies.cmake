# Third-party dependencies, all from Debian packages (see README: the set-up command installs them).
find_package(tomlplusplus REQUIRED)   # libtomlplusplus-dev
find_package(CLI11 REQUIRED)          # libcli11-dev
find_package(nlohmann_json 3 REQUIRED) # nlohmann-json3-dev (model config.json files)
find_package(Eigen3 3.3 REQUIRED NO_MODULE)  # libeigen3-dev (executor kernels)
find_package(Threads REQUIRED)
if(MESHPLAN_BUILD_TESTS)
  find_package(GTest REQUIRED)        # libgtest-dev
endif()
find_package(benchmark QUIET)         # libbenchmark-dev
if(MESHPLAN_BUILD_BENCH AND NOT benchmark_FOUND)
  message(STATUS "Google Benchmark not found: bench/ is skipped")
endif()

# CUDA and NCCL are optional (the GPU backend, cmake/Cuda.cmake); they come from /usr/local/cuda
# when present.
if(EXISTS "/usr/local/cuda/bin/nvcc")
  set(MESHPLAN_CUDA_FOUND ON)
  message(STATUS "CUDA toolkit found in /usr/local/cuda")
else()
  set(MESHPLAN_CUDA_FOUND OFF)
  message(STATUS "CUDA toolkit not found: GPU backend not built")
endif()
