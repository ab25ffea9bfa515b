# Finds every dependency. LibTorch comes from the pinned torch wheel in the virtual
# environment that launch/setup.sh creates; nothing needs to be passed on the command line.

# --- LibTorch from the pinned wheel ------------------------------------------------------
file(STRINGS ${CMAKE_SOURCE_DIR}/launch/versions.env _pins REGEX "^[A-Z0-9_]+=")
foreach(_pin IN LISTS _pins)
  string(REGEX MATCH "^([A-Z0-9_]+)=(.*)$" _ ${_pin})
  set(NMTRAIN_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
endforeach()

if(NOT NMTRAIN_VENV)
  if(DEFINED ENV{NMTRAIN_VENV})
    set(NMTRAIN_VENV $ENV{NMTRAIN_VENV})
  else()
    if(DEFINED ENV{NMTRAIN_CACHE})
      set(_cache $ENV{NMTRAIN_CACHE})
    elseif(DEFINED ENV{XDG_CACHE_HOME})
      set(_cache $ENV{XDG_CACHE_HOME}/nmtrain)
    else()
      set(_cache $ENV{HOME}/.cache/nmtrain)
    endif()
    file(GLOB _venvs LIST_DIRECTORIES true "${_cache}/venv-torch${NMTRAIN_TORCH_VERSION}-py*")
    list(SORT _venvs)
    list(POP_BACK _venvs NMTRAIN_VENV)
  endif()
endif()
if(NOT NMTRAIN_VENV OR NOT EXISTS ${NMTRAIN_VENV}/bin/python)
  message(FATAL_ERROR "No virtual environment with torch ${NMTRAIN_TORCH_VERSION} found: run launch/setup.sh first.")
endif()
set(NMTRAIN_VENV ${NMTRAIN_VENV} CACHE PATH "virtual environment holding the pinned torch wheel")
set(NMTRAIN_PYTHON ${NMTRAIN_VENV}/bin/python CACHE FILEPATH "Python with torch, h5py, sacrebleu")
execute_process(
  COMMAND ${NMTRAIN_PYTHON} -c "import os, torch, site; print(os.path.dirname(torch.__file__)); print(torch.__version__); print(site.getsitepackages()[0])"
  OUTPUT_VARIABLE _torch_info OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${NMTRAIN_PYTHON} cannot import torch: rerun launch/setup.sh")
endif()
string(REPLACE "\n" ";" _torch_info "${_torch_info}")
list(GET _torch_info 0 NMTRAIN_TORCH_ROOT)
list(GET _torch_info 1 _torch_version)
list(GET _torch_info 2 NMTRAIN_SITE_PACKAGES)
if(NOT _torch_version MATCHES "^${NMTRAIN_TORCH_VERSION}")
  message(FATAL_ERROR "torch ${_torch_version} in ${NMTRAIN_VENV}, but launch/versions.env pins ${NMTRAIN_TORCH_VERSION}")
endif()

# The NCCL that the wheel itself loads (the nvidia-nccl wheel): building against it keeps
# one process from ever holding two NCCLs.
set(NMTRAIN_NCCL_ROOT ${NMTRAIN_SITE_PACKAGES}/nvidia/nccl)
find_path(NMTRAIN_NCCL_INCLUDE nccl.h PATHS ${NMTRAIN_NCCL_ROOT}/include NO_DEFAULT_PATH)
find_library(NMTRAIN_NCCL_LIBRARY NAMES nccl libnccl.so.2 PATHS ${NMTRAIN_NCCL_ROOT}/lib NO_DEFAULT_PATH)
include(CheckLanguage)
check_language(CUDA)
set(_cuda_default OFF)
if(CMAKE_CUDA_COMPILER AND NMTRAIN_NCCL_INCLUDE AND NMTRAIN_NCCL_LIBRARY)
  set(_cuda_default ON)
endif()
option(NMTRAIN_WITH_CUDA "Compile the CUDA code paths and the NCCL backend" ${_cuda_default})

if(NMTRAIN_WITH_CUDA)
  # No GPU to detect here: name the architectures (A100, H100) instead of probing.
  set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "")
  set(TORCH_CUDA_ARCH_LIST "8.0;9.0" CACHE STRING "")
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
else()
  # The wheel's TorchConfig would look for CUDA; without the option we still link the
  # same libtorch (its CPU paths), just without our own CUDA sources.
  set(CAFFE2_USE_CUDNN OFF)
endif()
set(CAFFE2_USE_CUDNN ON CACHE BOOL "")
set(USE_CUSPARSELT OFF CACHE BOOL "")
set(USE_CUDSS OFF CACHE BOOL "")
set(USE_CUFILE OFF CACHE BOOL "")
find_package(Torch REQUIRED PATHS ${NMTRAIN_TORCH_ROOT}/share/cmake/Torch NO_DEFAULT_PATH)
add_library(torch_lib INTERFACE)
target_link_libraries(torch_lib INTERFACE ${TORCH_LIBRARIES})
target_compile_options(torch_lib INTERFACE ${TORCH_CXX_FLAGS})
# The wheel's include directory carries its own {fmt} (v12), which shadows Debian's in
# every LibTorch translation unit; use that copy header-only there, so those TUs never
# need Debian's libfmt (v9, used by the LibTorch-free config library).
target_compile_definitions(torch_lib INTERFACE FMT_HEADER_ONLY)
# Executables find libtorch (and the NCCL it loads) inside the wheel at run time.
set(CMAKE_BUILD_RPATH ${NMTRAIN_TORCH_ROOT}/lib ${NMTRAIN_NCCL_ROOT}/lib)
set(CMAKE_INSTALL_RPATH ${CMAKE_BUILD_RPATH})

# --- Debian packages ---------------------------------------------------------------------
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(yaml-cpp REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(ZLIB REQUIRED)
find_package(GTest REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)

add_library(hdf5_lib INTERFACE)
target_include_directories(hdf5_lib INTERFACE ${HDF5_INCLUDE_DIRS})
target_link_libraries(hdf5_lib INTERFACE ${HDF5_C_LIBRARIES})
target_compile_definitions(hdf5_lib INTERFACE ${HDF5_DEFINITIONS})

# The torch wheel's libtorch.so exports its own (statically linked, older) copy of
# std::filesystem; if it precedes libstdc++ in a binary's NEEDED list, calls such as
# std::filesystem::remove_all bind to it and crash. Naming libstdc++ first on every link
# line makes the system's definitions win.
add_link_options(LINKER:--push-state,--no-as-needed -lstdc++ LINKER:--pop-state)
