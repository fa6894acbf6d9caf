#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
#
# Gradescope's default base image is Ubuntu 22.04 ("jammy"); what differs from Kiln's Debian, and
# what this script and the grader do about it:
# * Compiler and build: jammy's g++ 11 builds Kiln's C++20, and its CMake 3.22 is past the 3.20
#   Kiln needs. The packages come from bin/packages.txt; where the base image's release lacks one,
#   apt-get fails the image build here, naming it.
# * bubblewrap: jammy's is 0.6.1, and the sandbox needs 0.7 or later (it bounds its /tmp with
#   --size). There `grader grade` refuses every submission, saying so; choose a base image with a
#   newer one (Ubuntu 24.04 has 0.9).
# * User namespaces: the sandbox needs unprivileged ones and a /proc that no mount covers in part;
#   Docker's defaults allow neither, and Gradescope does not say what its containers allow. Where
#   they are missing, `grader grade` refuses to run any submission's code (it never grades
#   unsandboxed) and run_autograder writes the reason into results.json, with no points.
# Either refusal shows here first, as a warning: the image may be built where the sandbox differs.
#
# The grader is built here from the course's sources, then the builds `grade` uses (the reference
# libraries, the judge and the observed program of each graded module) by grading the untouched
# stubs once, so that each submission compiles only its own files.
set -euo pipefail
root=${AUTOGRADER_ROOT:-/autograder}
cd "$root/source/kiln"
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y $(awk '/^\[/{exit} !/^\s*(#|$)/' bin/packages.txt)
stubs=$(mktemp -d)
if ! bin/grader grade "$stubs" @SELECTION@ --format json --out "$stubs.json" >/dev/null 2>"$stubs.log"; then
  if ! grep -q "the sandbox is not available" "$stubs.log"; then
    cat "$stubs.log" >&2
    exit 1
  fi
  echo "WARNING: $(grep "the sandbox is not available" "$stubs.log")" >&2
  echo "WARNING: where this holds when students submit, every submission is refused with this reason." >&2
  # Still build what grading needs: the stubs are the course's own code.
  bin/grader grade "$stubs" @SELECTION@ --no-sandbox --format json --out "$stubs.json" >/dev/null
fi
rm -rf "$stubs" "$stubs.json" "$stubs.log"
echo "The grader and the builds for grading are ready."
