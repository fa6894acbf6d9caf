// The ladder: the same matrix product written three ways, each doing less by hand.
//
// Every function here takes a (n, k) and b (k, m), which may be views (a transposed matrix,
// a row or a column), and returns a new (n, m) tensor. Check the shapes first: when either is
// not 2-D (a 3-D one too, even where its sizes would fit) or a.shape()[1] != b.shape()[0],
// throw kiln::ShapeError with both shapes in the message (to_string(a.shape()) gives "(2, 3)").
// A small helper that all three call keeps it in one place.
// An empty output ((0, k)·(k, m) or (n, k)·(k, 0)) is an empty (n, m) tensor.
// Every tensor a function here is given may be a view, also a contiguous one that starts inside
// its storage (contiguous() returns it as it is): read it through its offset and strides, or
// from data(), never from storage_data() as if it began at the storage's first float;
// linear_forward and linear_backward take views too.
#include <string>
#include <vector>

#include "kiln/layers.h"

namespace kiln {

float dot(const Tensor& u, const Tensor& v) {
  // Σ_p u[p]·v[p] over the n elements of two 1-D tensors; ShapeError naming both shapes when
  // either is not 1-D or their lengths differ. dot([1, 2, 3], [2, 3, 4]) = 2 + 6 + 12 = 20.
  // Either may be a view with a stride other than 1 (column(b, j) steps cols floats at a time):
  // element p of u is u.storage_data()[u.offset() + p·u.strides()[0]] (u.at({p}) works too).
  throw kiln::NotImplemented();
}

Tensor matmul_loops(const Tensor& a, const Tensor& b) {
  // Three nested loops over i (rows of a), j (columns of b) and p (the k inner positions):
  //   c[i, j] += a[i, p]·b[p, j], starting c from zeros.
  // Read a and b through their strides (element (i, p) of a is at
  // a.storage_data()[a.offset() + i·a.strides()[0] + p·a.strides()[1]]) so that views work;
  // a.at({i, p}) is correct too, only slower.
  throw kiln::NotImplemented();
}

Tensor matmul_dot(const Tensor& a, const Tensor& b) {
  // Two loops: c[i, j] = dot(row(a, i), column(b, j)). row() and column() are given views,
  // so nothing is copied. Build c's (n, m) values row-major (element (i, j) at i·m + j).
  throw kiln::NotImplemented();
}

Tensor matmul_broadcast(const Tensor& a, const Tensor& b) {
  // One loop over the rows i of a. row(a, i).unsqueeze(1) is a (k, 1) column; times b (k, m),
  // broadcasting gives the (k, m) matrix of products a[i, p]·b[p, j]; .sum(0) adds over p and
  // leaves the m values of row i of c. Collect the rows (to_vector()) into c's (n, m) values.
  throw kiln::NotImplemented();
}

}  // namespace kiln
