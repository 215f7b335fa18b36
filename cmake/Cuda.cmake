# Optional CUDA build of the GPU block kernels (executor/cuda/kernels) and NCCL discovery, from the
# toolkit in /usr/local/cuda (cmake/Dependencies.cmake sets MESHPLAN_CUDA_FOUND when its nvcc
# exists). Include after Dependencies.cmake.
#
# Sets MESHPLAN_HAVE_CUDA (ON/OFF; when ON the CUDA language is enabled and CUDA::cudart and
# CUDA::cublas exist) and MESHPLAN_HAVE_NCCL (ON/OFF: nccl.h was found; when ON the imported
# target meshplan::nccl_headers exists). NCCL is compiled against but not linked: the binary
# dlopens libnccl.so.2 when a run asks for it (executor/cuda/nccl_library.h), so it starts on
# machines without NCCL. MESHPLAN_NCCL_LIBRARY is the libnccl found beside the toolkit, if any,
# for the tests that load it. Device code is compiled for sm_90a (SASS) plus compute_80 PTX (JIT for every other
# arch >= sm_80); -DMESHPLAN_CUDA_GENCODE="-gencode=...;-gencode=..." replaces those flags.
option(MESHPLAN_ENABLE_CUDA "Build the CUDA kernels when the CUDA toolkit is found" ON)
set(MESHPLAN_CUDA_GENCODE
    "-gencode=arch=compute_90a,code=sm_90a;-gencode=arch=compute_80,code=compute_80"
    CACHE STRING "nvcc -gencode flags of the CUDA kernels (a ;-list)")

set(MESHPLAN_HAVE_CUDA OFF)
set(MESHPLAN_HAVE_NCCL OFF)
set(MESHPLAN_HAVE_CUDNN OFF)
set(MESHPLAN_CUDNN_FRONTEND_INCLUDE_DIR "${CMAKE_SOURCE_DIR}/.deps/cudnn-frontend/include"
    CACHE PATH "cuDNN frontend headers (tools/fetch-cudnn-frontend.sh puts them there)")

# Dependencies.cmake reports the toolkit only while CMAKE_CUDA_COMPILER is unset; after the first
# configure enable_language(CUDA) has cached it, so an existing cached nvcc counts as found too.
set(meshplan_cuda_available OFF)
if(MESHPLAN_CUDA_FOUND)
  set(meshplan_cuda_available ON)
elseif(CMAKE_CUDA_COMPILER AND EXISTS "${CMAKE_CUDA_COMPILER}")
  set(meshplan_cuda_available ON)
endif()

if(NOT MESHPLAN_ENABLE_CUDA)
  message(STATUS "CUDA: disabled (MESHPLAN_ENABLE_CUDA=OFF)")
elseif(NOT meshplan_cuda_available)
  message(STATUS "CUDA: toolkit not found, CUDA kernels not built")
else()
  if(NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  # Explicit -gencode flags instead of CMake's architecture handling.
  set(CMAKE_CUDA_ARCHITECTURES OFF)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  # One CUDA runtime in every program, linked in statically (CUDA::cudart_static): the binary then
  # needs no libcudart at load time and plans on machines without CUDA (issue 32); the static
  # runtime opens the driver (libcuda) itself at the first CUDA call, which fails with one line
  # where there is none. cuDNN and NCCL (both opened at run time) carry their own runtimes.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(MESHPLAN_HAVE_CUDA ON)
  message(STATUS "CUDA: ${CMAKE_CUDA_COMPILER} (CUDA ${CUDAToolkit_VERSION}), "
                 "flags ${MESHPLAN_CUDA_GENCODE}")

  # NCCL's header from the toolkit directory (include/nccl.h); only the tests look for the library.
  find_path(MESHPLAN_NCCL_INCLUDE_DIR nccl.h
            HINTS /usr/local/cuda/include ${CUDAToolkit_INCLUDE_DIRS} NO_DEFAULT_PATH)
  find_library(MESHPLAN_NCCL_LIBRARY nccl
               HINTS /usr/local/cuda/lib64 ${CUDAToolkit_LIBRARY_DIR} NO_DEFAULT_PATH)
  if(MESHPLAN_NCCL_INCLUDE_DIR)
    if(NOT TARGET meshplan::nccl_headers)
      add_library(meshplan::nccl_headers INTERFACE IMPORTED GLOBAL)
      set_target_properties(meshplan::nccl_headers PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${MESHPLAN_NCCL_INCLUDE_DIR}")
    endif()
    set(MESHPLAN_HAVE_NCCL ON)
    message(STATUS "NCCL: ${MESHPLAN_NCCL_INCLUDE_DIR}/nccl.h (libnccl.so.2 is loaded at run time)")
  else()
    message(STATUS "NCCL: nccl.h not found in the CUDA toolkit directory")
  endif()

  # cuDNN: its headers from the toolkit and the frontend's header-only C++ API. The library itself
  # is opened at run time (dlopen), so programs start where it is missing; see
  # executor/cuda/cudnn_attention.h.
  find_path(MESHPLAN_CUDNN_INCLUDE_DIR cudnn.h
            HINTS /usr/local/cuda/include ${CUDAToolkit_INCLUDE_DIRS} NO_DEFAULT_PATH)
  if(MESHPLAN_CUDNN_INCLUDE_DIR AND EXISTS "${MESHPLAN_CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend.h")
    set(MESHPLAN_HAVE_CUDNN ON)
    message(STATUS "cuDNN: ${MESHPLAN_CUDNN_INCLUDE_DIR}, frontend ${MESHPLAN_CUDNN_FRONTEND_INCLUDE_DIR}")
  else()
    message(STATUS "cuDNN: no cudnn.h in the toolkit or no frontend headers "
                   "(bash tools/fetch-cudnn-frontend.sh); the GPU executor uses its own kernels only")
  endif()
endif()
