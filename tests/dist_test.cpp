// Communicator and gradient reducer. Run alone (world size 1) by ctest, and under
// `mpirun -np 2` (tests/CMakeLists.txt) where the collectives really reduce.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "dist/communicator.h"
#include "dist/dist_error.h"
#include "dist/grad_reducer.h"
#include "tests/test_env.h"

namespace nmt::dist {
namespace {

std::unique_ptr<Communicator> mpi() {
  DistConfig c;
  c.backend = Backend::kMpi;
  return make_communicator(c, nmt::testing::process_group(), torch::kCPU);
}

TEST(Communicator, AllReduceBroadcastAndGather) {
  auto comm = mpi();
  const int r = comm->rank(), w = comm->world_size();
  if (w == 1) GTEST_SKIP() << "one rank sums nothing: runs under mpirun -np 2 (mpirun.communicator_and_reducer)";
  auto t = torch::full({5}, static_cast<float>(r + 1));
  auto work = comm->all_reduce_sum(t);
  work->wait();
  EXPECT_TRUE(t.equal(torch::full({5}, static_cast<float>(w * (w + 1) / 2))));
  auto b = torch::full({3}, static_cast<double>(r));
  comm->broadcast(b, 0);
  EXPECT_TRUE(b.equal(torch::zeros({3}, torch::kFloat64)));
  const auto all = comm->all_gather_bytes("rank" + std::to_string(r));
  ASSERT_EQ(static_cast<int>(all.size()), w);
  for (int k = 0; k < w; ++k) EXPECT_EQ(all[k], "rank" + std::to_string(k));
  EXPECT_EQ(comm->all_reduce_max(static_cast<double>(r)), w - 1);
}

TEST(Communicator, SixteenBitSumsMatchTorchRoundingPerAddition) {
  auto comm = mpi();
  const int r = comm->rank(), w = comm->world_size();
  if (w == 1) GTEST_SKIP() << "one rank sums nothing: runs under mpirun -np 2 (mpirun.communicator_and_reducer)";
  for (auto dtype : {torch::kBFloat16, torch::kHalf}) {
    // Every rank's values, known to all: rank k holds gen(k).
    auto gen = [](int k) { return torch::linspace(-3.0, 5.0, 257, torch::kFloat32).mul(1.0 + 0.37 * k).sin().mul(100); };
    auto t = gen(r).to(dtype);
    comm->all_reduce_sum(t)->wait();
    torch::Tensor want = gen(0).to(dtype);
    for (int k = 1; k < w; ++k) want = (want.to(torch::kFloat32) + gen(k).to(dtype).to(torch::kFloat32)).to(dtype);
    if (w <= 2) EXPECT_TRUE(t.equal(want)) << dtype;  // one addition: the order cannot matter
    else EXPECT_TRUE(torch::allclose(t.to(torch::kFloat32), want.to(torch::kFloat32), 2e-2, 1e-1)) << dtype;
  }
}

TEST(Communicator, BackendMustFitTheDevice) {
  DistConfig c;
  c.backend = Backend::kMpi;
  // A job set up wrong is the user's to fix (exit 2, no restart), not a fault.
  EXPECT_THROW(make_communicator(c, nmt::testing::process_group(), torch::Device(torch::kCUDA, 0)), DistSetupError);
  c.backend = Backend::kAuto;
  EXPECT_EQ(make_communicator(c, nmt::testing::process_group(), torch::kCPU)->name(), "mpi");
  if (!nccl_compiled()) {
    c.backend = Backend::kNccl;
    EXPECT_THROW(make_communicator(c, nmt::testing::process_group(), torch::kCPU), DistSetupError);
  }
}

std::vector<torch::Tensor> params(std::vector<int64_t> sizes) {
  std::vector<torch::Tensor> out;
  for (int64_t n : sizes) {
    auto p = torch::zeros({n}, torch::requires_grad());
    p.mutable_grad() = torch::zeros({n});
    out.push_back(p);
  }
  return out;
}

TEST(Reducer, BucketsCoverEveryGradientOnceInReverseOrderUnderTheCap) {
  auto comm = mpi();
  const std::vector<int64_t> sizes = {100, 30, 500, 7, 260, 260, 1, 90};
  const double cap_mb = 1200.0 / (1024 * 1024);  // 1200 bytes = 300 floats
  GradReducer reducer(params(sizes), *comm, cap_mb);
  std::vector<int> seen(sizes.size(), 0);
  size_t last = sizes.size();
  for (const auto& bucket : reducer.buckets()) {
    int64_t bytes = 0;
    for (size_t k : bucket) {
      ++seen[k];
      EXPECT_LT(k, last) << "parameters must come in reverse order";
      last = k;
      bytes += sizes[k] * 4;
    }
    if (bucket.size() > 1) {
      EXPECT_LE(bytes, 1200);  // a single oversized parameter gets its own bucket
    }
  }
  for (size_t k = 0; k < sizes.size(); ++k) EXPECT_EQ(seen[k], 1) << k;
  EXPECT_EQ(reducer.buckets().front().front(), sizes.size() - 1);
}

TEST(Reducer, SumsOverRanksAndStartsDuringBackward) {
  auto comm = mpi();
  const int r = comm->rank(), w = comm->world_size();
  if (w == 1) GTEST_SKIP() << "one rank sums nothing: runs under mpirun -np 2 (mpirun.communicator_and_reducer)";
  auto ps = params({64, 64, 64, 64, 64, 64});
  GradReducer reducer(ps, *comm, 64 * 4 / (1024.0 * 1024.0));  // one parameter per bucket
  // A chain, so backward produces the gradients one after another: p5's first.
  torch::Tensor x = torch::ones({64});
  for (auto& p : ps) x = torch::tanh(x + p * static_cast<float>(r + 1));
  reducer.arm();
  x.sum().backward();
  reducer.finish();
  // Expected: the sum over ranks of each rank's own gradient, computed without reducer.
  std::vector<torch::Tensor> local;
  for (int k = 0; k < w; ++k) {
    auto qs = params({64, 64, 64, 64, 64, 64});
    torch::Tensor y = torch::ones({64});
    for (auto& q : qs) y = torch::tanh(y + q * static_cast<float>(k + 1));
    y.sum().backward();
    for (size_t i = 0; i < qs.size(); ++i) {
      if (k == 0) local.push_back(qs[i].grad().clone());
      else local[i] += qs[i].grad();
    }
  }
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_TRUE(torch::allclose(ps[i].grad(), local[i], 1e-5, 1e-6)) << i;
  if (w > 1) {
    EXPECT_GT(reducer.started_during_backward(), 0) << "no bucket started before backward ended";
    std::printf("rank %d: %lld of %zu buckets started during backward\n", r,
                static_cast<long long>(reducer.started_during_backward()), reducer.buckets().size());
  }
}

// The NCCL backend's config for this job: where more ranks run on this host than it has GPUs
// (launch/gpu_check.sh's ranks sharing one GPU), dist.shared_gpu=allow, which needs NCCL 2.30.
DistConfig nccl_config(const ProcessGroup& g) {
  DistConfig c;
  c.backend = Backend::kNccl;
  if (g.local_size() > static_cast<int>(torch::cuda::device_count())) c.shared_gpu = SharedGpu::kAllow;
  return c;
}

TEST(NcclBackend, AllReduceOnGpu) {
  if (!nccl_compiled()) GTEST_SKIP() << "built without NMTRAIN_WITH_CUDA";
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine: NCCL backend compiled, not run";
  const auto& g = nmt::testing::process_group();
  const torch::Device gpu(torch::kCUDA, g.local_rank() % torch::cuda::device_count());
  auto comm = make_communicator(nccl_config(g), g, gpu);
  auto t = torch::full({1000}, static_cast<float>(g.rank() + 1), gpu);
  comm->all_reduce_sum(t)->wait();
  const int w = g.world_size();
  EXPECT_TRUE(t.cpu().equal(torch::full({1000}, static_cast<float>(w * (w + 1) / 2))));
}

// Every collective on the GPU, in every dtype gradients may travel in (and doubles, for the
// scalar sums). At -np 1 (launch/gpu_check.sh) a sum is the tensor itself, which still runs
// each NCCL call end to end; at -np N the sums are checked against N(N+1)/2.
TEST(NcclBackend, EveryCollectiveInEveryDtype) {
  if (!nccl_compiled()) GTEST_SKIP() << "built without NMTRAIN_WITH_CUDA";
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine: NCCL backend compiled, not run";
  const auto& g = nmt::testing::process_group();
  const torch::Device gpu(torch::kCUDA, g.local_rank() % torch::cuda::device_count());
  auto comm = make_communicator(nccl_config(g), g, gpu);
  const int w = g.world_size();
  for (auto dtype : {torch::kFloat32, torch::kFloat64, torch::kBFloat16, torch::kHalf}) {
    const auto on_gpu = torch::TensorOptions().device(gpu).dtype(dtype);
    auto ring = torch::full({4099}, g.rank() + 1, on_gpu), ordered = ring.clone();
    comm->all_reduce_sum(ring)->wait();
    comm->all_reduce_sum_rank_order(ordered)->wait();
    const auto want = torch::full({4099}, w * (w + 1) / 2, torch::TensorOptions().dtype(dtype));
    EXPECT_TRUE(ring.cpu().equal(want)) << dtype;
    EXPECT_TRUE(ordered.cpu().equal(want)) << dtype;
    auto b = torch::full({17}, g.rank() == 0 ? 7 : -1, on_gpu);
    comm->broadcast(b, 0);
    EXPECT_TRUE(b.cpu().equal(torch::full({17}, 7, torch::TensorOptions().dtype(dtype)))) << dtype;
  }
  comm->barrier();
  const auto gathered = comm->all_gather_bytes("rank " + std::to_string(g.rank()));
  ASSERT_EQ(gathered.size(), static_cast<size_t>(w));
  for (int r = 0; r < w; ++r) EXPECT_EQ(gathered[static_cast<size_t>(r)], "rank " + std::to_string(r));
  EXPECT_DOUBLE_EQ(comm->all_reduce_sum(1.5), 1.5 * w);
  EXPECT_DOUBLE_EQ(comm->all_reduce_max(static_cast<double>(g.rank())), w - 1.0);
}

// Random values, every rank its own: NCCL's sums on the GPU against the MPI backend's of the
// same values on the CPU (independent code: MPI_Iallreduce, our 16-bit sums), in every dtype;
// and the 16-bit sums against the fp32 sum of the same inputs within recursive summation's
// bound, (w - 1) u sum|x| plus the final rounding u |sum| (u = 2^-8 bf16, 2^-11 fp16).
// At w = 2 each sum is one addition, so the backends must agree bit for bit.
TEST(NcclBackend, SumsMatchTheMpiBackendAndSixteenBitBounds) {
  if (!nccl_compiled()) GTEST_SKIP() << "built without NMTRAIN_WITH_CUDA";
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine: NCCL backend compiled, not run";
  const auto& g = nmt::testing::process_group();
  const int w = g.world_size();
  if (w == 1) GTEST_SKIP() << "one rank sums nothing: launch/gpu_check.sh runs it at -np 2 and 4";
  const torch::Device gpu(torch::kCUDA, g.local_rank() % torch::cuda::device_count());
  auto nccl = make_communicator(nccl_config(g), g, gpu);
  auto cpu = mpi();
  for (auto dtype : {torch::kFloat32, torch::kFloat64, torch::kBFloat16, torch::kHalf}) {
    auto gen = torch::make_generator<at::CPUGeneratorImpl>(1000 + g.rank());
    const auto mine = torch::randn({100003}, gen, torch::kFloat32).mul(10).to(dtype);
    auto on_gpu = mine.to(gpu), on_cpu = mine.clone();
    nccl->all_reduce_sum(on_gpu)->wait();
    cpu->all_reduce_sum(on_cpu)->wait();
    const auto got = on_gpu.cpu();
    if (w == 2) {
      EXPECT_TRUE(got.equal(on_cpu)) << dtype << ": NCCL and MPI sums differ";
    } else {
      EXPECT_TRUE(torch::allclose(got.to(torch::kFloat64), on_cpu.to(torch::kFloat64), 2e-2, 1e-1)) << dtype;
    }
    if (dtype != torch::kBFloat16 && dtype != torch::kHalf) continue;
    auto wide = mine.to(torch::kFloat32).to(gpu), magnitude = wide.abs();
    nccl->all_reduce_sum(wide)->wait();
    nccl->all_reduce_sum(magnitude)->wait();
    const double u = dtype == torch::kBFloat16 ? 1.0 / 256 : 1.0 / 2048;
    const auto bound = magnitude.cpu().mul((w - 1) * u).add(wide.cpu().abs().mul(u)).add(1e-6);
    const auto err = (got.to(torch::kFloat32) - wide.cpu()).abs();
    EXPECT_TRUE(err.le(bound).all().item<bool>())
        << dtype << ": 16-bit sum off the fp32 sum by " << err.max().item<float>() << ", bound there "
        << bound[err.argmax()].item<float>();
  }
}

// A communicator that claims a world of two but forwards every call to a real one of one:
// the gradient reducer then arms its hooks and buckets CUDA gradients as it does on two GPUs,
// and a sum over "two" ranks of which one is real must give back each gradient unchanged.
class ClaimsTwoRanks : public Communicator {
 public:
  explicit ClaimsTwoRanks(Communicator& real) : real_(real) {}
  std::string name() const override { return real_.name(); }
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  torch::Device device() const override { return real_.device(); }
  void set_phase(const std::string& phase) override { real_.set_phase(phase); }
  std::unique_ptr<Work> all_reduce_sum(torch::Tensor t) override { return real_.all_reduce_sum(t); }
  std::unique_ptr<Work> all_reduce_sum_rank_order(torch::Tensor t) override { return real_.all_reduce_sum_rank_order(t); }
  void broadcast(torch::Tensor t, int root) override { real_.broadcast(t, root); }
  void barrier() override { real_.barrier(); }
  std::vector<std::string> all_gather_bytes(const std::string& mine) override { return real_.all_gather_bytes(mine); }

 private:
  Communicator& real_;
};

TEST(NcclBackend, ReducerHooksBucketCudaGradientsDuringBackward) {
  if (!nccl_compiled()) GTEST_SKIP() << "built without NMTRAIN_WITH_CUDA";
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine: NCCL backend compiled, not run";
  const auto& g = nmt::testing::process_group();
  if (g.world_size() != 1) GTEST_SKIP() << "forwards to a world of one: run at -np 1";
  DistConfig c;
  c.backend = Backend::kNccl;
  const torch::Device gpu(torch::kCUDA, g.local_rank() % torch::cuda::device_count());
  auto real = make_communicator(c, g, gpu);
  ClaimsTwoRanks two(*real);
  for (auto wire : {torch::kFloat32, torch::kBFloat16}) {
    std::vector<torch::Tensor> ps, qs;
    for (int i = 0; i < 6; ++i) {
      ps.push_back(torch::randn({64}, torch::TensorOptions().device(gpu)).requires_grad_());
      qs.push_back(ps.back().detach().clone().requires_grad_());
    }
    auto chain = [](const std::vector<torch::Tensor>& v) {
      torch::Tensor x = torch::ones({64}, v[0].options().requires_grad(false));
      for (const auto& p : v) x = torch::tanh(x + p);
      return x.sum();
    };
    chain(qs).backward();  // the reference: no reducer
    for (auto& p : ps) p.mutable_grad() = torch::zeros_like(p);
    GradReducer reducer(ps, two, 64 * 4 / (1024.0 * 1024.0), /*overlap=*/true, /*rank_order=*/false, wire);
    reducer.arm();
    chain(ps).backward();
    reducer.finish();
    EXPECT_GT(reducer.started_during_backward(), 0) << "no bucket started during backward";
    const double tol = wire == torch::kFloat32 ? 0 : 1.0 / 128;  // bf16 travel: 8 mantissa bits
    for (size_t i = 0; i < ps.size(); ++i)
      EXPECT_TRUE(torch::allclose(ps[i].grad().cpu(), qs[i].grad().cpu(), tol, 1e-6)) << "parameter " << i << " " << wire;
  }
}

}  // namespace
}  // namespace nmt::dist
