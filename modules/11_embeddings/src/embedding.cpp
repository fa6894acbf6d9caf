// The lookup (a gather), its backward pass (a scatter-add), and the one-hot matrix they replace.
//
// Every function that takes ids checks each one before using it: an id outside [0, rows) must
// raise kiln::IndexError whose message names the id and the number of rows (or classes), e.g.
// "index 705 is out of range for a table of 703 rows". Without the check, the loops read or
// write past the end of the table. A small helper keeps the check and the message in one place.
#include <algorithm>
#include <string>

#include "kiln/embeddings.h"

namespace kiln {

Tensor one_hot(const Indices& indices, std::int64_t num_classes) {
  // out (n, num_classes), n = indices.size(), zeros except out[k, indices[k]] = 1.
  // one_hot({3, 0, 2}, 4) = [[0, 0, 0, 1], [1, 0, 0, 0], [0, 0, 1, 0]].
  // Tensor::zeros, then write through data(): element (k, c) is at k·num_classes + c.
  throw kiln::NotImplemented();
}

Tensor embedding_lookup(const Tensor& weight, const Indices& indices) {
  // weight (rows, dim), 2-D (ShapeError otherwise), possibly a view: call contiguous() first,
  // then row r starts at data() + r·dim. weight may be a contiguous view at an offset too: read
  // it from data(), where it starts, never storage_data(). out (n, dim): copy row indices[k]
  // into row k (std::copy_n does a row at once). The result must equal
  // one_hot(indices, rows)·weight.
  // rows is shape()[0], also for a table of dim 0, whose rows are empty: (5, 0) has 5 of them.
  throw kiln::NotImplemented();
}

Tensor embedding_backward(const Tensor& grad_output, const Indices& indices, std::int64_t num_embeddings) {
  // grad_output (n, dim) with n = indices.size() (ShapeError naming its shape otherwise, also for
  // no ids: then only a (0, dim) grad_output is taken).
  // grad (num_embeddings, dim) starts at zeros; then for every k, row indices[k] of grad gets
  // row k of grad_output ADDED to it. An id can occur more than once ({1, 3, 1}): each occurrence
  // contributes its own row, exactly as one_hot(indices)ᵀ·grad_output would sum them.
  throw kiln::NotImplemented();
}

Tensor EmbeddingFunction::forward() {
  // The lookup of the table inputs[0] at this node's indices.
  throw kiln::NotImplemented();
}

std::vector<Tensor> EmbeddingFunction::backward(const Tensor& grad_output) {
  // One gradient, for the one input: the scatter-add into a table with inputs[0]'s number of rows.
  throw kiln::NotImplemented();
}

Tensor Embedding::forward(const Indices& indices) const {
  // Through EmbeddingFunction::apply(weight, indices), so that the graph records the lookup and
  // backward() reaches weight. Calling embedding_lookup directly gives the right numbers but no
  // gradient.
  throw kiln::NotImplemented();
}

}  // namespace kiln
