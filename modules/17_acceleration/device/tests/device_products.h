// What the device checks share: each matrix-product kernel run on the device for every size and
// compared with a product summed in double (in the judge only: kiln/testing.h, KILN_JUDGE).
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/gpu_device.h"
#include "kiln/testing.h"

namespace kiln::device_testing {

using Sizes = std::vector<std::tuple<int, int, int>>;  // (n, k, m): (n × k) · (k × m)
using Kernels = std::vector<std::pair<MatmulKernel, const char*>>;

// Empty when the kernels can run on a device here, else why not. Whether a device is there is
// itself observed: the judge that decides may run where the device is not, and must skip exactly
// when the run it judges skipped.
inline std::string device_unavailable() {
  const auto why = testing::observe("kiln::device::unavailable_reason()", [] { return device::unavailable_reason(); });
  if (!why.ok()) return "no CUDA device: " + why.describe_error();
  return *why;
}

// Every kernel on every size, inputs drawn from `stream` on: the first kernel that writes past c
// fails `out_of_bounds`, the first whose product differs fails `differs`, both naming {kernel}.
inline void check_device_products(const Kernels& kernels, const Sizes& sizes, std::uint64_t first_stream,
                                  const char* out_of_bounds, const char* differs) {
  for (const auto& [kernel, name] : kernels) {
    std::uint64_t stream = first_stream;
    for (const auto& [n, k, m] : sizes) {
      const Tensor a = testing::random_tensor({n, k}, stream++), b = testing::random_tensor({k, m}, stream++);
      const std::vector<float> a_values = testing::data_of(a).values, b_values = testing::data_of(b).values;
      // The launch and the read-back in one call: the result, or what the launcher found.
      const auto c = testing::observe(fmt::format("the {} kernel on the device for ({} × {}) · ({} × {})", name, n, k, k, m), [&] {
        device::Matmul product(a_values, b_values, n, k, m);
        product.run(kernel);
        return product.result();
      });
      if (!c.ok() && c.error().is("std::out_of_range")) {
        KILN_FAIL(out_of_bounds, {{"kernel", name}}, c.describe_error());
        return;
      }
      if (!KILN_EXPECT_OK(c, differs, {{"kernel", name}})) return;  // {difference} filled for a call that threw
      KILN_JUDGE {
        const testing::Comparison comparison =
            testing::compare(testing::data_of({n, m}, *c), testing::reference_matmul(a, b), 1e-4);
        if (!comparison.close) {
          KILN_FAIL(differs, {{"kernel", name}, {"difference", testing::format_number(comparison.max_abs_diff)}},
                    c.call() + (comparison.shapes_match ? ": " + comparison.describe()
                                                        : fmt::format(" gave {} values, expected {}", c->size(), n * m)));
          return;
        }
      }
    }
  }
}

}  // namespace kiln::device_testing
