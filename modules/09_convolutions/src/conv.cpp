// Convolution and max pooling by direct loops, forward and backward. Yours to write.
//
// Layouts (row-major; see kiln/conv.h):
//   x (N, C, H, W)               element (n, c, h, w) at ((n·C + c)·H + h)·W + w
//   weight (out_ch, C, k, k)     element (oc, c, kh, kw) at ((oc·C + c)·k + kh)·k + kw
//   out (N, out_ch, out_h, out_w)
// Walk memory directly: t.contiguous() gives a row-major tensor and data() its first element.
// For a view that is already contiguous (one image of a batch) contiguous() is the view itself,
// at its offset: data() points there, the storage's first float is another image.
// Every tensor forward and backward read (x, the weight, the bias, grad_output) may be a
// contiguous view at an offset: read it from data(), where it starts, never storage_data().
// Name loop indices after what they index: n, oc, c, kh, kw, oh, ow.
#include <cmath>
#include <string>
#include <vector>

#include "kiln/conv.h"

namespace kiln {

std::int64_t conv_output_size(std::int64_t size, int kernel_size, int stride, int padding) {
  // How many window positions fit along one axis of the padded input (size + 2·padding), one
  // every `stride`: (size + 2·padding - kernel_size) / stride + 1, in integer division.
  // Example: size 7, kernel 3, stride 2, padding 1 gives 4. Keep it in std::int64_t, as size is:
  // an int padded size wraps past 2^31 (4294967303, kernel 3 must give 4294967301), and 2·padding
  // is doubled in std::int64_t too: padding 2^30 (size 3, kernel 3, stride 1) gives 2147483649.
  throw kiln::NotImplemented();
}

Conv2d::Conv2d(int in_channels, int out_channels, int kernel_size, int stride, int padding,
               bool with_bias, WichmannHill& generator) {
  // Store the five settings in the members of the same names. Then, with
  // bound = 1 / sqrt(in_channels · kernel_size · kernel_size), draw every weight as
  // bound · (2·generator.next() - 1), in row-major order of weight (out_ch, C, k, k); then, if
  // with_bias, every bias value (out_ch) the same way. Without bias, set bias to an empty tensor
  // of shape (0). Both parameters must require grad (set_requires_grad).
  throw kiln::NotImplemented();
}

Tensor Conv2dFunction::forward() {
  // inputs[0] is x (N, C, H, W), inputs[1] the weight (out_ch, C, k, k), inputs[2] the bias
  // (out_ch) when inputs.size() == 3. When x's C differs from the weight's, throw ShapeError
  // naming both shapes (to_string(shape)).
  // For every n, oc, oh, ow:
  //   out[n, oc, oh, ow] = bias[oc] + Σ over c, kh, kw of x[n, c, ih, iw] · weight[oc, c, kh, kw]
  //   with ih = oh·stride - padding + kh and iw = ow·stride - padding + kw;
  //   terms whose (ih, iw) lies outside the image are zero (padding): skip them.
  // out_h and out_w come from conv_output_size. An empty batch (N = 0) gives an empty output
  // (0, out_ch, out_h, out_w).
  throw kiln::NotImplemented();
}

std::vector<Tensor> Conv2dFunction::backward(const Tensor& grad_output) {
  // grad_output is (N, out_ch, out_h, out_w). Start grad_x, grad_w, grad_b at zero with the
  // shapes of x, weight and bias, and run the forward loops again. Each output element's
  // gradient go = grad_output[n, oc, oh, ow] flows back along every term of its sum:
  //   grad_b[oc] += go;  grad_x[n, c, ih, iw] += go · weight[oc, c, kh, kw];
  //   grad_w[oc, c, kh, kw] += go · x[n, c, ih, iw]    (skipping the padding as in forward).
  // The bias gradient takes each go once per output element, not once per input channel (outside the loop over c): grad_b[oc] = Σ_{n, oh, ow} go.
  // Return {grad_x, grad_w, grad_b}, or {grad_x, grad_w} when there is no bias input.
  throw kiln::NotImplemented();
}

Tensor MaxPool2dFunction::forward() {
  // x = inputs[0] (N, C, H, W). out (N, C, out_h, out_w) with out_h = (H - kernel_size) / stride + 1.
  // An empty batch (N = 0) gives an empty output (0, C, out_h, out_w).
  // out[n, c, oh, ow] is the largest x[n, c, oh·stride + kh, ow·stride + kw] over kh, kw in
  // [0, kernel_size). Record in argmax (resize it to out's element count), at out's row-major
  // position, the row-major index into x of that element; on a tie keep the first one. A window
  // of -infinity only has no larger element: it records its first, x[n, c, oh·stride, ow·stride].
  throw kiln::NotImplemented();
}

std::vector<Tensor> MaxPool2dFunction::backward(const Tensor& grad_output) {
  // Start grad_x at zero with x's shape. Output element i (row-major) took x at argmax[i], so
  // only that element receives grad_output's element i; overlapping windows (stride < kernel)
  // can take the same element, and then its gradients add up. Return {grad_x}.
  throw kiln::NotImplemented();
}

}  // namespace kiln
