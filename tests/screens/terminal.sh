#!/usr/bin/env bash
# Pictures of what a student reads in the terminal, 80 columns wide, as PNG files:
#   crash.png          a check that writes past a buffer, described by the sanitizers
#   compile-error.png  a type mismatch in a template call, with the compiler's note
#   hang.png           a check stopped at its time limit, and where it was
#   watch.png          `grader watch` after a save: the rule with the time and the file
#   thrown.png         an error that escapes the student's reshape, placed where it was thrown
#   building.png       a module's first build, saying what it builds
#   values.png         a GELU constant off in its fourth digit: got and expected with digits enough
#   link-error.png     a definition whose parameter differs from the header's declaration
#   cascade.png        a wrong tie rule in train_bpe: one failure, the checks that need it waiting
#   hint.png           `grader hint 17 im2col`: the course's catalogued sentence, verbatim, and its hint
#   bench.png, bench-roofline.png   module 17's bench plots (the reference kernels)
# Usage: tests/screens/terminal.sh [OUT_DIR]   (default: build/screenshots)
# The grader runs on a scratch copy of this repository, so nothing here is changed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$here/bin/kiln-env"
kiln_install_packages --tests
out=$(realpath -m "${1:-$here/build/screenshots}")
mkdir -p "$out"
work=$(mktemp -d /tmp/kiln-screens-XXXXXX)
trap 'tmux kill-server 2>/dev/null || true; rm -rf "$work"' EXIT
git -C "$here" ls-files -z --cached --others --exclude-standard |
  (cd "$here" && xargs -0 cp -P --parents -t "$work" 2>/dev/null)
cd "$work"
git init -q && git add -A && git -c user.name=k -c user.email=k@k commit -qm course

# Renders what tmux shows (colours included) as a PNG, through aha and headless Chromium.
shoot() {  # shoot SESSION NAME ROWS
  local html="$work/$2.html"
  tmux capture-pane -t "$1" -e -p -S 0 -E "$3" |
    aha --black --title "$2" |
    sed 's|<pre>|<pre style="font-family: DejaVu Sans Mono, monospace; font-size: 14px; line-height: 1.25; margin: 12px">|' \
      >"$html"
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$work/chromium" --hide-scrollbars \
    --screenshot="$out/$2.png" --window-size=720,$((24 + 18 * $3)) "file://$html" >/dev/null 2>&1
  echo "wrote $out/$2.png"
}

# Runs a command in an 80-column terminal and waits until it prints `marker`.
run80() {  # run80 SESSION MARKER COMMAND...
  local session=$1 marker=$2
  shift 2
  tmux new-session -d -s "$session" -x 80 -y 60 "cd $work && $* ; sleep 600"
  for _ in $(seq 1 600); do
    tmux capture-pane -t "$session" -p | grep -q "$marker" && return 0
    sleep 1
  done
  echo "timed out waiting for '$marker' in $session" >&2
  return 1
}

tensor=modules/01_tensor/src/tensor.cpp
cp solutions/01_tensor/src/*.cpp modules/01_tensor/src/
bin/grader check 01 >/dev/null 2>&1 || true  # builds the grader and module 01 first

# A write one past the end of the output in elementwise.
sed -i 's/for (std::int64_t i = 0; i < inner; ++i) {/for (std::int64_t i = 0; i <= inner; ++i) {/' "$tensor"
run80 crash "points" bin/grader check 01
shoot crash crash 22

# std::max of an int64_t and an int.
cp solutions/01_tensor/src/tensor.cpp "$tensor"
sed -i '0,/^float Tensor::norm() const {/s//float Tensor::norm() const {\n  const std::int64_t n = std::max(numel(), 0);\n  (void)n;/' "$tensor"
run80 compile "points" bin/grader check 01
shoot compile compile-error 26

# A reduction that never ends.
cp solutions/01_tensor/src/tensor.cpp "$tensor"
sed -i 's/for (std::int64_t i = 0; i < numel(); ++i) total += x_data\[i\];/for (std::int64_t i = 0; i < numel(); i += 0) total += x_data[i];/' "$tensor"
run80 hang "points" bin/grader check 01 --check sum_and_mean
shoot hang hang 12

# watch, then a save.
cp solutions/01_tensor/src/tensor.cpp "$tensor"
run80 watch "save to check again" bin/grader watch 01
sleep 1
sed -i 's/for (std::int64_t i = 0; i < numel(); ++i) total += x_data\[i\];/for (std::int64_t i = 0; i <= numel(); ++i) total += x_data[i];/' "$tensor"
for _ in $(seq 1 300); do
  tmux capture-pane -t watch -p | grep -q "src/tensor.cpp changed" && tmux capture-pane -t watch -p | grep -q "save to check again" && break
  sleep 1
done
shoot watch watch 34

# A -1 in reshape refused although it is the only one: the error names where it was thrown.
cp solutions/01_tensor/src/tensor.cpp "$tensor"
sed -i 's/if (shape\[d\] == -1 \&\& inferred == shape.size()) {/if (shape[d] == -1 \&\& inferred != shape.size()) {/' "$tensor"
run80 thrown "points" bin/grader check 01 --check reshape
shoot thrown thrown 12
cp solutions/01_tensor/src/tensor.cpp "$tensor"

# Module 02's first build, shot while it runs; then its checks with a GELU constant typo.
activations=modules/02_activations/src
cp solutions/02_activations/src/*.cpp "$activations/"
sed -i 's/0\.044715f/0.04715f/' "$activations/elementwise.cpp"
run80 building "Building module 02" bin/grader check 02 --check gelu
shoot building building 6
for _ in $(seq 1 600); do tmux capture-pane -t building -p | grep -q "points" && break; sleep 1; done
run80 values "points" bin/grader check 02 --check gelu
shoot values values 16

# softmax defined with an int dim where the header declares std::int64_t.
cp solutions/02_activations/src/elementwise.cpp "$activations/"
sed -i 's/^Tensor softmax(const Tensor& x, std::int64_t dim) {/Tensor softmax(const Tensor\& x, int dim) {/' \
  "$activations/softmax.cpp"
run80 link "points" bin/grader check 02
shoot link link-error 26

# train_bpe that lets the last of tied pairs win: bpe_ties fails, bpe_train waits for it.
cp solutions/10_tokenization/src/*.cpp modules/10_tokenization/src/
sed -i 's/if (count > best_count) {/if (count >= best_count) {/' modules/10_tokenization/src/bpe.cpp
run80 cascade "points" bin/grader check 10
shoot cascade cascade 34

run80 hint "end of the hint" "bin/grader hint 17 im2col; echo end of the hint"
shoot hint hint 24

# The bench plots, as pictures.
bin/grader bench 17 --solution >/dev/null 2>&1 || true
for plot in 17 17-roofline; do
  svg=$work/.grader/bench/$plot.svg
  [[ -f $svg ]] || { echo "no $svg: the bench did not run" >&2; continue; }
  name=bench${plot#17}
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$work/chromium" --hide-scrollbars \
    --screenshot="$out/$name.png" --window-size=1060,640 "file://$svg" >/dev/null 2>&1
  echo "wrote $out/$name.png"
done
