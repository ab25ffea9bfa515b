#include "model/kernels/onednn_library.h"

#include <mutex>

namespace nmt::model::kernels {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kUnderAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kUnderAsan = true;
#else
constexpr bool kUnderAsan = false;
#endif
#else
constexpr bool kUnderAsan = false;
#endif

struct Library {
  void* handle = nullptr;
  std::string problem;
};

const Library& library() {
  static Library lib;
  static std::once_flag once;
  std::call_once(once, [] {
    if (kUnderAsan) {
      lib.problem = "AddressSanitizer refuses RTLD_DEEPBIND, which libdnnl.so.2 needs beside LibTorch's own oneDNN";
      return;
    }
    lib.handle = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!lib.handle) lib.problem = std::string("cannot load libdnnl.so.2 (Debian package libdnnl2): ") + dlerror();
  });
  return lib;
}

}  // namespace

void* onednn_library() { return library().handle; }
const std::string& onednn_library_problem() { return library().problem; }

}  // namespace nmt::model::kernels
