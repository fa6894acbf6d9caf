// Benchmarks for `grader bench`. A module's bench/*.cpp files register kernels; the bench main
// times them with Google Benchmark (interleaved, repeated, median reported), after checking each
// one against its reference just before it is timed. A kernel that is wrong is not timed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::bench {

enum class Role {
  kernel,    // one of the student's kernels (or the reference's, with --solution)
  naive,     // the given naive baseline of its group: ratios are taken against it
  library,   // the given library baseline (Eigen): ratios are taken against it
};

struct Kernel {
  std::string group;   // what is compared, with its size: "matmul 512x512"
  std::string name;    // "tiled_matmul"
  Role role = Role::kernel;
  double flops = 0;    // floating-point operations per call
  double bytes = 0;    // bytes that must move to or from memory per call (compulsory traffic)
  double extra_bytes = 0;  // temporary memory a call allocates beyond its inputs and output
  std::function<void()> run;               // one call
  // Empty when the kernel's last result is right, otherwise what differs. Called once before
  // each timed repetition.
  std::function<std::string()> validate;
  // The size of the input in bytes, for a bench that measures how time grows with it (the
  // corpus of a tokenizer's trainer): its kernels are drawn, time against input size, one line
  // per kernel name across the groups. 0: not part of such a series. Last, so that a kernel
  // written as {group, name, role, flops, bytes, extra_bytes, run, validate} needs no change.
  double input_bytes = 0;
};

// A kernel run once on the grid emulator (`grader bench N --emulator`): what it counted, in place
// of a time. Counts depend only on the sizes, so one run is exact.
struct Figure {
  std::string name;   // "load transactions of b"
  double value = 0;
};
// One buffer as a matrix, and the elements that the first warp's first load of it touched
// (lane by lane, -1 for a lane that did not load): drawn as the warp's access pattern.
struct WarpAccess {
  std::string buffer;
  std::int64_t rows = 0, cols = 0;
  std::vector<std::int64_t> first_request;
};
struct Counts {
  std::vector<Figure> figures;
  std::vector<WarpAccess> accesses;
};
struct Counted {
  std::string group;   // "matmul 64x64x64 on the emulator"
  std::string name;
  Role role = Role::kernel;
  std::function<Counts()> run;              // one launch: its counts
  std::function<std::string()> validate;    // as Kernel::validate, after the run
};

struct Options {
  bool full = false;  // the sources' full sizes instead of the quicker defaults
};

// Registers a kernel; call from register_benchmarks().
void add(Kernel kernel);
// Registers a kernel to count on the emulator; call from register_benchmarks().
void add_counted(Counted kernel);

// Values uniform in [-1, 1), the same on every machine: std::mt19937's sequence is fixed by the
// C++ standard, and the conversion to float is done here, not by a library distribution.
std::vector<float> uniform_values(std::size_t count, std::uint32_t seed);

// Relative difference check for validators: "" or "largest difference 0.5 at 17".
std::string compare(const float* actual, const float* expected, std::size_t n, double tolerance);

}  // namespace kiln::bench

// Each module's bench defines this: it registers the module's kernels for these options.
void register_benchmarks(const kiln::bench::Options& options);
