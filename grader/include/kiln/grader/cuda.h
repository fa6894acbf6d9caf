// The CUDA Toolkit and devices on this machine, for the modules' device parts (device/).
#pragma once

#include <filesystem>
#include <vector>

namespace kiln::grader {

namespace fs = std::filesystem;

// nvcc, where the CUDA Toolkit is installed: $KILN_NVCC, then $CUDACXX, then nvcc on PATH, then
// /usr/local/cuda/bin/nvcc. Empty when there is none (KILN_NVCC set to "" or "none" turns the
// device parts off). Whether a device is present is only known by running on it: the device
// checks ask the CUDA runtime themselves.
fs::path find_nvcc();

// The toolkit's folder (nvcc's bin/ parent): the sandbox shows it read-only to compiles.
fs::path cuda_toolkit_dir(const fs::path& nvcc);

// /dev/nvidia* device nodes: the sandbox passes them through so device checks can reach a GPU.
std::vector<fs::path> cuda_device_nodes();

}  // namespace kiln::grader
