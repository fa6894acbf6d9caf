#!/usr/bin/env bash
# The README's two commands, in the README's order, on a fresh clone: `bin/grader check 01` first
# (with chromium out of sight, as on a machine where only bin/test installs it), then `bin/test`.
# Then the instructors' commands on a clone whose module 01 a student has written: verify and
# release must use the stubs as committed, and say so.
set -euo pipefail
source_repo=$1
work=$(mktemp -d /tmp/kiln-readme-XXXXXX)
trap 'rm -rf "$work"' EXIT
git clone -q "$source_repo" "$work/kiln"
cd "$work/kiln"
# Under bin/test, its compiler cache, this clone's paths compiled as bin/test's own (bin/test).
if [[ -n ${CCACHE_DIR:-} ]]; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$work/kiln"; fi

# A PATH on which every program of /usr/bin is found except chromium.
mkdir "$work/bin"
for p in /usr/bin/* /usr/sbin/*; do
  case $(basename "$p") in chromium*) continue ;; esac
  ln -sf "$p" "$work/bin/$(basename "$p")" 2>/dev/null || true
done

echo "== bin/grader check 01 (no chromium on the PATH)"
set +e
PATH="$work/bin" bin/grader check 01 >"$work/check.out" 2>&1
status=$?
set -e
cat "$work/check.out" | tail -5
[[ $status -eq 1 ]] || { echo "FAIL: check 01 on the stubs should exit 1, exited $status"; exit 1; }
grep -q "not written yet" "$work/check.out" || { echo "FAIL: the stubs should read 'not written yet'"; exit 1; }
# The first run builds for a minute or more; it says what it builds and counts the steps.
for said in "building the grader (first run only)" "kiln: building: step [0-9]* of [0-9]*" "Building module 01's checks"; do
  grep -q "$said" "$work/check.out" || { echo "FAIL: the first check should say '$said' while it builds"; exit 1; }
done

echo "== bin/test (the browser test, which needs chromium)"
bin/test -R '^site_browser$' >"$work/test.out" 2>&1 || { tail -40 "$work/test.out"; echo "FAIL: bin/test after check"; exit 1; }
tail -3 "$work/test.out"

echo "== module 01 written by a student: verify and release use the committed stubs"
cp solutions/01_tensor/src/*.cpp modules/01_tensor/src/
bin/grader verify 01 >"$work/verify.out" 2>&1 || { cat "$work/verify.out"; echo "FAIL: verify 01 on an edited tree"; exit 1; }
grep -q "differ.* from the committed stub" "$work/verify.out" || { cat "$work/verify.out"; echo "FAIL: verify should say the stubs differ"; exit 1; }
grep -q "The course is sound" "$work/verify.out"
bin/grader release "$work/release" >"$work/release.out" 2>&1 || { cat "$work/release.out"; echo "FAIL: release of an edited tree"; exit 1; }
grep -q "committed" "$work/release.out" || { cat "$work/release.out"; echo "FAIL: release should say it used the committed stubs"; exit 1; }
cmp -s "$work/release/modules/01_tensor/src/tensor.cpp" <(git show HEAD:modules/01_tensor/src/tensor.cpp) ||
  { echo "FAIL: the release holds the edited file, not the committed stub"; exit 1; }
echo "== an instructor adds a module: grader new-module, then grader verify proves the template sound"
bin/grader new-module 21 demo >"$work/new.out" 2>&1 || { cat "$work/new.out"; echo "FAIL: new-module 21 demo"; exit 1; }
bin/grader verify 21 >"$work/verify21.out" 2>&1 || { cat "$work/verify21.out"; echo "FAIL: verify 21 of the template"; exit 1; }
grep -q "The course is sound" "$work/verify21.out"
tail -4 "$work/verify21.out"
rm -rf modules/21_demo solutions/21_demo docs/21_demo.md
[[ -z $(git status --porcelain --untracked-files=all -- modules solutions docs | grep 21_demo) ]] ||
  { echo "FAIL: the template left files behind"; exit 1; }
echo "README order: passed"
