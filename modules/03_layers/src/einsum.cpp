// Einstein summation for one or two operands with an explicit output.
//
// Every tensor a function here is given may be a view, also a contiguous one that starts inside
// its storage (contiguous() returns it as it is): read it through its offset and strides, or
// from data(), never from storage_data() as if it began at the storage's first float;
// linear_forward and linear_backward take views too.
//
// kiln/layers.h lists the rules and the errors. One general way to write it:
//   1. Parse: split the spec at "->" and ",", and reject a malformed one with
//      std::invalid_argument whose message quotes the spec (see the header's list). Look for
//      the two characters "->": a '-' alone ("ij-ji", "ij-") is no arrow.
//   2. Sizes: give every letter its size from the operands' shapes; a letter with two different
//      sizes, or an operand whose dim() differs from its number of letters, is a ShapeError
//      quoting the spec and naming the shapes. 0 is a size like any other ("ij,jk->ik" on (2, 0)
//      and (3, 0) is an error): mark a letter not seen yet with -1, not 0.
//   3. Loops: one loop per distinct letter, the output's letters first, then the summed ones.
//      For every loop, how far it moves in each operand (that operand's stride for the letter,
//      0 if it lacks the letter) and in the output. Then at every combination of indices:
//        out[output letters] += a[a's letters] · b[b's letters]
//      The output starts from zeros; a scalar output (no letters) has shape ().
// For "ik,kj->ij" that is exactly matmul_loops; for "ij->ji" nothing is summed or multiplied.
// Step 3 as a single "odometer" (a counter per letter, the last turning fastest) works for any
// number of letters; a private helper shared by both overloads avoids writing it twice.
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/layers.h"

namespace kiln {

Tensor einsum(const std::string& spec, const Tensor& a, const Tensor& b) {
  // Two operands: "ik,kj->ij", "ij,ij->ij", "i,j->ij", "bik,bkj->bij", "i,i->", ...
  throw kiln::NotImplemented();
}

Tensor einsum(const std::string& spec, const Tensor& a) {
  // One operand: "ij->ji" (transpose), "ij->i" (sum each row), "ij->" (sum of all elements).
  // "ij->ij" moves nothing, but its result is still a new tensor: not a, nor a.contiguous().
  throw kiln::NotImplemented();
}

}  // namespace kiln
