#include "kiln/grader/cuda.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace kiln::grader {

namespace {

bool executable(const fs::path& path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }

}  // namespace

fs::path find_nvcc() {
  if (const char* chosen = std::getenv("KILN_NVCC")) {
    const std::string value = chosen;
    if (value.empty() || value == "none") return {};
    return executable(value) ? fs::path(value) : fs::path();
  }
  if (const char* cudacxx = std::getenv("CUDACXX"); cudacxx && executable(cudacxx)) return cudacxx;
  if (const char* path = std::getenv("PATH")) {
    const std::string dirs = path;
    for (std::size_t begin = 0; begin <= dirs.size();) {
      const std::size_t end = std::min(dirs.find(':', begin), dirs.size());
      const fs::path candidate = fs::path(dirs.substr(begin, end - begin)) / "nvcc";
      if (end > begin && executable(candidate)) return candidate;
      begin = end + 1;
    }
  }
  const fs::path usual = "/usr/local/cuda/bin/nvcc";
  return executable(usual) ? usual : fs::path();
}

fs::path cuda_toolkit_dir(const fs::path& nvcc) {
  std::error_code ec;
  const fs::path real = fs::canonical(nvcc, ec);
  return (ec ? nvcc : real).parent_path().parent_path();
}

std::vector<fs::path> cuda_device_nodes() {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/dev", ec)) {
    if (entry.path().filename().string().rfind("nvidia", 0) == 0 && !entry.is_directory(ec))
      out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kiln::grader
