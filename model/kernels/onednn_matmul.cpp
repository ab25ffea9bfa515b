#include "model/kernels/onednn_matmul.h"

// Debian's oneDNN 2.6 header (this library sees no LibTorch include directory).
#include <oneapi/dnnl/dnnl.h>

#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include "model/kernels/onednn_library.h"

namespace nmt::model::kernels {
namespace {

// The entry points of the matmul primitive's C API, looked up in libdnnl.so.2.
struct MatmulApi {
#define NMT_DNNL_FN(name) decltype(&::name) name = onednn_function<decltype(&::name)>(#name)
  NMT_DNNL_FN(dnnl_engine_create);
  NMT_DNNL_FN(dnnl_stream_create);
  NMT_DNNL_FN(dnnl_stream_wait);
  NMT_DNNL_FN(dnnl_memory_desc_init_by_strides);
  NMT_DNNL_FN(dnnl_matmul_desc_init);
  NMT_DNNL_FN(dnnl_primitive_attr_create);
  NMT_DNNL_FN(dnnl_primitive_attr_destroy);
  NMT_DNNL_FN(dnnl_primitive_attr_set_post_ops);
  NMT_DNNL_FN(dnnl_post_ops_create);
  NMT_DNNL_FN(dnnl_post_ops_destroy);
  NMT_DNNL_FN(dnnl_post_ops_append_sum);
  NMT_DNNL_FN(dnnl_primitive_desc_create);
  NMT_DNNL_FN(dnnl_primitive_desc_destroy);
  NMT_DNNL_FN(dnnl_primitive_desc_query);
  NMT_DNNL_FN(dnnl_primitive_create);
  NMT_DNNL_FN(dnnl_memory_create);
  NMT_DNNL_FN(dnnl_memory_destroy);
  NMT_DNNL_FN(dnnl_primitive_execute);
  NMT_DNNL_FN(dnnl_get_effective_cpu_isa);
#undef NMT_DNNL_FN
  bool complete() const {
    return dnnl_engine_create && dnnl_stream_create && dnnl_stream_wait && dnnl_memory_desc_init_by_strides &&
           dnnl_matmul_desc_init && dnnl_primitive_attr_create && dnnl_primitive_attr_destroy &&
           dnnl_primitive_attr_set_post_ops && dnnl_post_ops_create && dnnl_post_ops_destroy &&
           dnnl_post_ops_append_sum && dnnl_primitive_desc_create && dnnl_primitive_desc_destroy &&
           dnnl_primitive_desc_query && dnnl_primitive_create && dnnl_memory_create && dnnl_memory_destroy &&
           dnnl_primitive_execute && dnnl_get_effective_cpu_isa;
  }
};

void check(dnnl_status_t status, const char* what) {
  if (status != dnnl_success)
    throw std::runtime_error(std::string("oneDNN's ") + what + " failed with status " +
                             std::to_string(static_cast<int>(status)) +
                             (status == dnnl_unimplemented ? " (unimplemented for bf16 here)" : ""));
}

// One primitive per layout: whether op(A) and op(B) are transposed, and whether the product
// accumulates. Dimensions and strides are run-time arguments (DNNL_RUNTIME_DIM_VAL), so
// batches of every length share it. On a 2-core Zen 4 oneDNN 2.6 runs such a primitive on
// its gemm:jit bf16 kernel at 375-424 GFLOP/s for the recipe's products, as fast as the
// brgemm kernels of fixed shapes, without one JIT-compiled kernel per batch length
// (those raised the recipe's peak RSS in train --benchmark from 0.87 to 1.19-1.21 GB).
using ProductKey = std::tuple<bool, bool, bool>;

struct Product {
  dnnl_primitive_t primitive = nullptr;
};

class Matmuls {
 public:
  Matmuls() {
    problem_ = onednn_library_problem();
    if (!problem_.empty()) return;
    if (!api_.complete()) {
      problem_ = "libdnnl.so.2 lacks part of the matmul API";
      return;
    }
    // oneDNN's own ISA (the CPU's, or less where DNNL_MAX_CPU_ISA caps it): without bf16
    // instructions it would emulate them, slower than fp32.
    const unsigned isa = api_.dnnl_get_effective_cpu_isa();
    if ((isa & dnnl_cpu_isa_avx512_core_bf16) != dnnl_cpu_isa_avx512_core_bf16) {
      problem_ = "oneDNN may use no bf16 instructions here (its ISA is capped below AVX512_CORE_BF16; "
                 "is DNNL_MAX_CPU_ISA set?)";
      return;
    }
    isa_ = (isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx ? "AMX" : "AVX512_BF16";
    // Every layout's primitive now, so that a library that cannot make one is refused when
    // bf16 is chosen (train's start), not at the first product of a run.
    try {
      check(api_.dnnl_engine_create(&engine_, dnnl_cpu, 0), "engine_create");
      check(api_.dnnl_stream_create(&stream_, engine_, dnnl_stream_default_flags), "stream_create");
      for (bool trans_a : {false, true})
        for (bool trans_b : {false, true})
          for (bool accumulate : {false, true}) product(trans_a, trans_b, accumulate);
    } catch (const std::runtime_error& e) {
      problem_ = e.what();
    }
  }
  const std::string& problem() const { return problem_; }
  const std::string& isa() const { return isa_; }
  std::string kernel() {
    std::lock_guard<std::mutex> lock(mutex_);
    return kernel_;
  }

  void run(const MatrixView& a, const MatrixView& b, float* c, int64_t ldc, bool accumulate) {
    if (!problem_.empty()) throw std::runtime_error("bf16 GEMM unavailable: " + problem_);
    const Product& p = product(a.transposed, b.transposed, accumulate);
    const dnnl_memory_desc_t da = describe(a.rows, a.cols, a.transposed ? 1 : a.ld, a.transposed ? a.ld : 1, dnnl_bf16);
    const dnnl_memory_desc_t db = describe(b.rows, b.cols, b.transposed ? 1 : b.ld, b.transposed ? b.ld : 1, dnnl_bf16);
    const dnnl_memory_desc_t dc = describe(a.rows, b.cols, ldc, 1, dnnl_f32);
    dnnl_memory_t ma = nullptr, mb = nullptr, mc = nullptr;
    check(api_.dnnl_memory_create(&ma, &da, engine_, const_cast<void*>(a.data)), "memory_create");
    check(api_.dnnl_memory_create(&mb, &db, engine_, const_cast<void*>(b.data)), "memory_create");
    check(api_.dnnl_memory_create(&mc, &dc, engine_, c), "memory_create");
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
    const dnnl_status_t status = api_.dnnl_primitive_execute(p.primitive, stream_, 3, args);
    api_.dnnl_memory_destroy(ma);
    api_.dnnl_memory_destroy(mb);
    api_.dnnl_memory_destroy(mc);
    check(status, "primitive_execute");
    check(api_.dnnl_stream_wait(stream_), "stream_wait");
  }

 private:
  // 2-D descriptor of `rows` x `cols` with the given strides.
  dnnl_memory_desc_t describe(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, dnnl_data_type_t t) {
    dnnl_memory_desc_t md;
    const dnnl_dims_t dims = {rows, cols}, strides = {row_stride, col_stride};
    check(api_.dnnl_memory_desc_init_by_strides(&md, 2, dims, t, strides), "memory_desc_init_by_strides");
    return md;
  }

  const Product& product(bool trans_a, bool trans_b, bool accumulate) {
    const ProductKey key{trans_a, trans_b, accumulate};
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = products_.find(key);
    if (it != products_.end()) return it->second;
    constexpr int64_t any = DNNL_RUNTIME_DIM_VAL;
    const dnnl_memory_desc_t a = describe(any, any, trans_a ? 1 : any, trans_a ? any : 1, dnnl_bf16);
    const dnnl_memory_desc_t b = describe(any, any, trans_b ? 1 : any, trans_b ? any : 1, dnnl_bf16);
    const dnnl_memory_desc_t c = describe(any, any, any, 1, dnnl_f32);
    Product p;
    dnnl_matmul_desc_t desc;
    check(api_.dnnl_matmul_desc_init(&desc, &a, &b, nullptr, &c), "matmul_desc_init");
    dnnl_primitive_attr_t attr = nullptr;
    dnnl_post_ops_t post_ops = nullptr;
    check(api_.dnnl_primitive_attr_create(&attr), "primitive_attr_create");
    if (accumulate) {
      check(api_.dnnl_post_ops_create(&post_ops), "post_ops_create");
      check(api_.dnnl_post_ops_append_sum(post_ops, 1.0f), "post_ops_append_sum");
      check(api_.dnnl_primitive_attr_set_post_ops(attr, post_ops), "primitive_attr_set_post_ops");
    }
    dnnl_primitive_desc_t pd = nullptr;
    const dnnl_status_t made = api_.dnnl_primitive_desc_create(&pd, &desc, attr, engine_, nullptr);
    if (post_ops) api_.dnnl_post_ops_destroy(post_ops);
    api_.dnnl_primitive_attr_destroy(attr);
    check(made, "primitive_desc_create (bf16 matmul)");
    const char* impl = nullptr;
    if (api_.dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl) kernel_ = impl;
    const dnnl_status_t created = api_.dnnl_primitive_create(&p.primitive, pd);
    api_.dnnl_primitive_desc_destroy(pd);
    check(created, "primitive_create");
    return products_.emplace(key, p).first->second;
  }

  MatmulApi api_;
  std::string problem_, kernel_, isa_;
  dnnl_engine_t engine_ = nullptr;
  dnnl_stream_t stream_ = nullptr;
  std::mutex mutex_;
  std::map<ProductKey, Product> products_;  // at most 8, kept for the process's life
};

Matmuls& matmuls() {
  static Matmuls m;
  return m;
}

}  // namespace

const std::string& onednn_matmul_problem() { return matmuls().problem(); }

void onednn_bf16_matmul(const MatrixView& a, const MatrixView& b, float* c, int64_t ldc, bool accumulate) {
  matmuls().run(a, b, c, ldc, accumulate);
}

std::string onednn_matmul_kernel() { return matmuls().kernel(); }

const std::string& onednn_bf16_isa() { return matmuls().isa(); }

}  // namespace nmt::model::kernels
