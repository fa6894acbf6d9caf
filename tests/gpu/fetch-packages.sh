#!/usr/bin/env bash
# Downloads, into .device-debs/, the Debian packages the grader builds with (headers and libraries;
# the GPU machine has the compilers, CMake and Ninja, but reaches no package archive). Run it here,
# then hand .device-debs/ to the GPU machine with tests/gpu/on-device.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
packages=(libgtest-dev libgmock-dev libyaml-cpp-dev libyaml-cpp0.7 libfmt-dev libfmt9 libcli11-dev
          nlohmann-json3-dev libeigen3-dev libbenchmark-dev libbenchmark1debian
          libmd4c-dev libmd4c0 libmd4c-html0 libmd4c-html0-dev)
mkdir -p "$root/.device-debs"
cd "$root/.device-debs"
rm -f ./*.deb
apt-get download "${packages[@]}"
du -sh "$root/.device-debs"
