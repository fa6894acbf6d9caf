// Module @NN@, @TITLE@: the public contract that the stubs, the reference solution, the tests and
// later modules share. Later modules include it as "kiln/@SLUG@.h".
//
// Written by `grader new-module`: replace the example function with the module's own, and say
// here, once, what the reader needs (layouts, conventions, the errors each function raises).
#pragma once

#include "kiln/tensor.h"

namespace kiln {

// ---------------------------------------------------------------------------------------------
// Yours (src/@SLUG@.cpp)

// x with every element multiplied by factor: a new tensor of x's shape. x may be a view.
Tensor @SLUG@_scale(const Tensor& x, float factor);

}  // namespace kiln
