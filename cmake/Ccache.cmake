# ccache as the compiler launcher, with the sloppiness precompiled headers need: without
# pch_defines/time_macros ccache refuses to cache any TU compiled with a .gch, and the
# include_file_* entries stop a freshly rebuilt .gch from disabling direct-mode hits.
find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(_ccache_env
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}
      CCACHE_NOHASHDIR=1)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env ${_ccache_env} ${CCACHE_PROGRAM})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env ${_ccache_env} ${CCACHE_PROGRAM})
endif()
