// Given: launching the GPU kernels of kiln/gpu.h on the emulator, with guarded output buffers.
#include <cmath>
#include <stdexcept>
#include <string>

#include "kiln/gpu.h"

namespace kiln {

namespace {

// n floats of `initial`, then the guard (kGuard, kGuardFloats: kiln/gpu.h).
std::vector<float> guarded(std::size_t n, float initial) {
  std::vector<float> buffer(n + kGuardFloats, initial);
  std::fill(buffer.begin() + static_cast<std::ptrdiff_t>(n), buffer.end(), kGuard);
  return buffer;
}

void check_guard(const std::vector<float>& buffer, std::size_t n, const char* kernel) {
  for (std::size_t i = n; i < buffer.size(); ++i) {
    if (buffer[i] != kGuard) {
      throw std::out_of_range(std::string(kernel) + " wrote " + std::to_string(i - n + 1) +
                              " floats past the end of its output: a thread outside the output did not stop");
    }
  }
}

// After the write guard: any other access outside the tensors (a load past the edge, above all),
// which the emulator notes and a GPU would not report.
void check_stray(const char* kernel) {
  const std::string& stray = grid::last_launch().stray;
  if (!stray.empty()) {
    throw IndexError(std::string(kernel) + ": " + stray +
                     ": a thread whose element lies past the edge must not touch memory there");
  }
}

unsigned blocks(std::int64_t size, int per_block = kTile) {
  return static_cast<unsigned>((size + per_block - 1) / per_block);
}

// The values, then kGuardFloats zeros: a stray read stays inside the allocation (the emulator
// reports it, by the tensor's own size).
template <class T>
std::vector<T> padded(std::vector<T> values) {
  values.resize(values.size() + kGuardFloats, T{0});
  return values;
}

std::vector<float> padded_copy(const Tensor& t) { return padded(t.to_vector()); }

}  // namespace

Tensor emulate_matmul(const Tensor& a, const Tensor& b, MatmulKernel kernel) {
  if (a.dim() != 2 || b.dim() != 2 || a.shape()[1] != b.shape()[0])
    throw ShapeError("emulate_matmul: cannot multiply " + to_string(a.shape()) + " by " + to_string(b.shape()));
  const int n = static_cast<int>(a.shape()[0]), k = static_cast<int>(a.shape()[1]), m = static_cast<int>(b.shape()[1]);
  const std::vector<float> a_values = padded_copy(a), b_values = padded_copy(b);
  std::vector<float> c = guarded(std::size_t(n) * m, kUnwritten);
  const grid::Dim3 block{kTile, kTile, 1};
  const float* a_ptr = grid::track(a_values.data(), std::size_t(n) * k, a_values.size(), "a");
  const float* b_ptr = grid::track(b_values.data(), std::size_t(k) * m, b_values.size(), "b");
  float* c_ptr = grid::track(c.data(), std::size_t(n) * m, c.size(), "c");
  switch (kernel) {
    case MatmulKernel::naive:
      grid::launch({blocks(n), blocks(m), 1}, block, matmul_naive_kernel, a_ptr, b_ptr, c_ptr, n, k, m);
      break;
    case MatmulKernel::coalesced:
      grid::launch({blocks(m), blocks(n), 1}, block, matmul_coalesced_kernel, a_ptr, b_ptr, c_ptr, n, k, m);
      break;
    case MatmulKernel::tiled:
      grid::launch({blocks(m), blocks(n), 1}, block, matmul_tiled_kernel, a_ptr, b_ptr, c_ptr, n, k, m);
      break;
    case MatmulKernel::blocktile_1d:
      grid::launch({blocks(m, kBlockN), blocks(n, kBlockM), 1}, {kBlockN, kBlockM / kThreadM, 1},
                   matmul_blocktile_1d_kernel, a_ptr, b_ptr, c_ptr, n, k, m);
      break;
    case MatmulKernel::blocktile_2d:
      grid::launch({blocks(m, kBlockN), blocks(n, kBlockM), 1}, {kBlockN / kThreadN, kBlockM / kThreadM, 1},
                   matmul_blocktile_2d_kernel, a_ptr, b_ptr, c_ptr, n, k, m);
      break;
  }
  check_guard(c, std::size_t(n) * m, "the matmul kernel");
  check_stray("the matmul kernel");
  c.resize(std::size_t(n) * m);
  return Tensor({n, m}, std::move(c));
}

Tensor emulate_embedding_gather(const Tensor& w, const std::vector<std::int64_t>& ids) {
  const int count = static_cast<int>(ids.size()), dim = static_cast<int>(w.shape()[1]);
  for (std::int64_t id : ids)
    if (id < 0 || id >= w.shape()[0])
      throw IndexError("id " + std::to_string(id) + " is outside the table of " + std::to_string(w.shape()[0]) + " rows");
  const std::vector<float> table = padded_copy(w);
  std::vector<float> out = guarded(std::size_t(count) * dim, kUnwritten);
  const float* w_ptr = grid::track(table.data(), std::size_t(w.shape()[0]) * dim, table.size(), "w");
  const std::vector<std::int64_t> id_values = padded(ids);
  const std::int64_t* ids_ptr = grid::track(id_values.data(), ids.size(), id_values.size(), "ids");
  float* out_ptr = grid::track(out.data(), std::size_t(count) * dim, out.size(), "out");
  grid::launch({blocks(dim), blocks(count), 1}, {kTile, kTile, 1}, embedding_gather_kernel, w_ptr, ids_ptr, out_ptr,
               count, dim);
  check_guard(out, std::size_t(count) * dim, "embedding_gather_kernel");
  check_stray("embedding_gather_kernel");
  out.resize(std::size_t(count) * dim);
  return Tensor({count, dim}, std::move(out));
}

Tensor emulate_embedding_scatter_add(const Tensor& g, const std::vector<std::int64_t>& ids, std::int64_t rows) {
  const int count = static_cast<int>(ids.size()), dim = static_cast<int>(g.shape()[1]);
  for (std::int64_t id : ids)
    if (id < 0 || id >= rows)
      throw IndexError("id " + std::to_string(id) + " is outside the table of " + std::to_string(rows) + " rows");
  const std::vector<float> grads = padded_copy(g);
  std::vector<float> grad_w = guarded(std::size_t(rows) * dim, 0.0f);  // the scatter-add adds into zeros
  const float* g_ptr = grid::track(grads.data(), std::size_t(count) * dim, grads.size(), "g");
  const std::vector<std::int64_t> id_values = padded(ids);
  const std::int64_t* ids_ptr = grid::track(id_values.data(), ids.size(), id_values.size(), "ids");
  float* grad_w_ptr = grid::track(grad_w.data(), std::size_t(rows) * dim, grad_w.size(), "grad_w");
  grid::launch({blocks(dim), blocks(count), 1}, {kTile, kTile, 1}, embedding_scatter_add_kernel, g_ptr, ids_ptr,
               grad_w_ptr, count, dim);
  check_guard(grad_w, std::size_t(rows) * dim, "embedding_scatter_add_kernel");
  check_stray("embedding_scatter_add_kernel");
  grad_w.resize(std::size_t(rows) * dim);
  return Tensor({rows, dim}, std::move(grad_w));
}

}  // namespace kiln
