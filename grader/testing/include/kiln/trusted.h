// Trusted helpers that several modules' checks share: the course's generator written out again,
// so that expected values depend on no student code, and a scratch folder for checks that read
// files.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::testing {

// Module 01's Wichmann-Hill generator (AS 183), independent of the student's WichmannHill.
class TrustedWichmannHill {
 public:
  explicit TrustedWichmannHill(std::uint64_t seed) {
    x_ = static_cast<std::int64_t>(seed % 30268) + 1;
    seed /= 30268;
    y_ = static_cast<std::int64_t>(seed % 30306) + 1;
    seed /= 30306;
    z_ = static_cast<std::int64_t>(seed % 30322) + 1;
  }
  double next() {
    x_ = 171 * x_ % 30269;
    y_ = 172 * y_ % 30307;
    z_ = 170 * z_ % 30323;
    return std::fmod(x_ / 30269.0 + y_ / 30307.0 + z_ / 30323.0, 1.0);
  }

 private:
  std::int64_t x_, y_, z_;
};

// dL/d(inputs[which]) for L = Σ weights ⊙ f(inputs), by central differences in double: for a
// trusted f written in double, exact up to rounding where f is at most quadratic in each input.
inline std::vector<double> double_numeric_gradient(
    const std::function<std::vector<double>(const std::vector<std::vector<double>>&)>& f,
    std::vector<std::vector<double>> inputs, std::size_t which, const std::vector<double>& weights, double eps = 1e-6) {
  const auto loss = [&] {
    const std::vector<double> y = f(inputs);
    double total = 0;
    for (std::size_t n = 0; n < y.size(); ++n) total += weights[n] * y[n];
    return total;
  };
  std::vector<double> grad(inputs[which].size());
  for (std::size_t n = 0; n < grad.size(); ++n) {
    const double original = inputs[which][n];
    inputs[which][n] = original + eps;
    const double up = loss();
    inputs[which][n] = original - eps;
    const double down = loss();
    inputs[which][n] = original;
    grad[n] = (up - down) / (2 * eps);
  }
  return grad;
}

// A scratch folder, removed with everything in it when the check ends.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& what)
      : path_(std::filesystem::temp_directory_path() /
              ("kiln-check-" + what + "-" + std::to_string(static_cast<long>(::getpid())))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  // Writes the bytes to the file `name` in this folder and returns its path.
  std::string write(const std::string& name, std::string_view bytes) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream out(file, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return file.string();
  }
  std::string write(const std::string& name, const std::vector<std::uint8_t>& bytes) const {
    return write(name, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  std::string path_of(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace kiln::testing
