// Measures this machine's single-thread roofline: peak FLOP/s from a loop of independent fused
// multiply-adds, and memory bandwidth from a STREAM-style triad over arrays four times the
// last-level cache. Prints JSON. Built with -O3 -march=native -ffp-contract=fast (so a·b + c is one
// fused instruction, as in the module benches; strict ISO C++ mode would otherwise split it).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

#if defined(__AVX512F__)
constexpr int kLanes = 16;
#else
constexpr int kLanes = 8;
#endif
typedef float vec __attribute__((vector_size(kLanes * 4)));

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Twelve independent accumulator chains keep every FMA unit busy despite its latency; each lives
// in a register of its own (14 of the 16 vector registers, with the two constants).
double peak_gflops() {
  constexpr int kChains = 12;
  vec scale, shift, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11;
  for (int l = 0; l < kLanes; ++l) {
    scale[l] = 0.999999f;
    shift[l] = 0.000001f;
    a0[l] = a1[l] = a2[l] = a3[l] = a4[l] = a5[l] = 1.0f + 0.001f * l;
    a6[l] = a7[l] = a8[l] = a9[l] = a10[l] = a11[l] = 2.0f - 0.001f * l;
  }
  const long iterations = 20'000'000;
  double best = 0;
  for (int trial = 0; trial < 5; ++trial) {
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < iterations; ++i) {
      a0 = a0 * scale + shift, a1 = a1 * scale + shift, a2 = a2 * scale + shift, a3 = a3 * scale + shift;
      a4 = a4 * scale + shift, a5 = a5 * scale + shift, a6 = a6 * scale + shift, a7 = a7 * scale + shift;
      a8 = a8 * scale + shift, a9 = a9 * scale + shift, a10 = a10 * scale + shift, a11 = a11 * scale + shift;
      // Keeps the chains in registers and the loop from being folded away.
      asm volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7), "+x"(a8),
                   "+x"(a9), "+x"(a10), "+x"(a11));
    }
    const double t = seconds_since(start);
    best = std::max(best, 2.0 * kLanes * kChains * iterations / t / 1e9);
  }
  const vec sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
  if (sum[0] == 12345.0f) std::puts("");  // keep the result alive
  return best;
}

long last_level_cache_bytes() {
  for (const char* index : {"index3", "index2"}) {
    std::ifstream in(std::string("/sys/devices/system/cpu/cpu0/cache/") + index + "/size");
    std::string size;
    if (in >> size) {
      long n = std::stol(size);
      if (size.back() == 'K') n <<= 10;
      if (size.back() == 'M') n <<= 20;
      return n;
    }
  }
  return 32L << 20;
}

// a[i] = b[i] + s·c[i]; counts 3 arrays of traffic per pass, as STREAM does.
double triad_gbs(long llc) {
  const std::size_t n = std::max<std::size_t>(4 * llc / sizeof(float), 16u << 20);
  std::vector<float> a(n, 0.0f), b(n, 1.0f), c(n, 2.0f);
  double best = 0;
  for (int trial = 0; trial < 8; ++trial) {
    const auto start = std::chrono::steady_clock::now();
    const float s = 3.0f + trial;
    for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    asm volatile("" : : "r"(a.data()) : "memory");
    const double t = seconds_since(start);
    best = std::max(best, 3.0 * n * sizeof(float) / t / 1e9);
  }
  return best;
}

}  // namespace

int main() {
  const long llc = last_level_cache_bytes();
  const double flops = peak_gflops();
  const double bandwidth = triad_gbs(llc);
  std::printf("{\"peak_gflops\": %.2f, \"bandwidth_gbs\": %.2f, \"llc_bytes\": %ld, \"lanes\": %d}\n", flops,
              bandwidth, llc, kLanes);
}
