#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
root=${AUTOGRADER_ROOT:-/autograder}
cd "$root/source/kiln"
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y $(awk '/^\[/{exit} !/^\s*(#|$)/' bin/packages.txt)
# Build the grader and the reference libraries now, so each submission only compiles its own files.
bin/grader check @MODULE@ --solution >/dev/null || true
