#pragma once
// Debian's libdnnl.so.2, opened once at run time with RTLD_DEEPBIND (gemm.h says why), and
// the entry points of it that the kernels use, looked up by name. Only oneDNN's header is
// needed at build time.
#include <string>

namespace nmt::model::kernels {

// The library's handle, or null where it cannot be opened; then onednn_library_problem()
// says why (missing, or AddressSanitizer, which refuses RTLD_DEEPBIND).
void* onednn_library();
const std::string& onednn_library_problem();

// The function `name` of the library, cast to F, or null where it or the library is missing.
template <typename F>
F onednn_function(const char* name);

}  // namespace nmt::model::kernels

#include <dlfcn.h>

template <typename F>
F nmt::model::kernels::onednn_function(const char* name) {
  void* lib = onednn_library();
  return lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
}
