// Batches: a shuffled order, cut into batches, and the examples gathered for each batch.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/data.h"

namespace kiln {

std::vector<std::int64_t> shuffled_indices(std::int64_t n, WichmannHill& generator) {
  // Fisher-Yates, exactly as kiln/data.h states it: start from 0, 1, ..., n-1; for i from n-1
  // down to 1, draw u = generator.next(), take j = floor(u·(i + 1)) and swap order[i] with
  // order[j] (std::swap). i + 1, not i: j = i (the element staying put) must be possible.
  // First, n < 0: std::invalid_argument with n in its message.
  throw kiln::NotImplemented();
}

std::vector<std::vector<std::int64_t>> batch_indices(const std::vector<std::int64_t>& order, std::int64_t batch_size,
                                                     bool drop_last) {
  // Batches start at 0, batch_size, 2·batch_size, ... while the start is inside `order`; each
  // ends at the start plus batch_size or at the end of `order`, whichever comes first. With
  // drop_last, a last batch shorter than batch_size is left out. std::invalid_argument when
  // batch_size < 1, checked first, so that an empty order is refused too.
  throw kiln::NotImplemented();
}

Batch collate(const Dataset& data, const std::vector<std::int64_t>& indices) {
  // Batch image k is image indices[k] of data.images, whatever its shape after the first
  // dimension ((rows, cols) or (784)): copy its pixels in order into a tensor whose first size is
  // indices.size() (0 for no indices: a (0, 28, 28) batch, not a default Batch) and whose other
  // sizes are data.images's. data.images.contiguous().data() gives the pixels row-major; image i
  // starts i·(pixels per image) floats in. Labels likewise. Always a copy, consecutive indices
  // too: a view of the dataset's images would let a write into the batch change the dataset.
  // IndexError for an index outside [0, data.size()).
  // data.images may be a view at an offset: its images start at data(), not at storage_data().
  // An index is compared as the int64 it is: 2^32 + 2 is outside the dataset, not image 2.
  throw kiln::NotImplemented();
}

std::int64_t DataLoader::num_batches() const {
  // N = data_.size(): ⌈N / batch_size_⌉ in integers is N / batch_size_ whole batches, plus one
  // when N % batch_size_ != 0; with drop_last_ it is N / batch_size_. (The classic
  // (N + batch_size_ - 1) / batch_size_ overflows for a batch size near INT64_MAX.)
  // A dataset of no examples has 0 batches.
  throw kiln::NotImplemented();
}

std::vector<std::vector<std::int64_t>> DataLoader::next_epoch() {
  // The order: 0, 1, ..., N-1, or shuffled_indices(N, generator_) when shuffle_. Use the member
  // generator_, which goes on from epoch to epoch; a new WichmannHill(seed_) here would give
  // every epoch the same order. Then batch_indices(order, batch_size_, drop_last_).
  throw kiln::NotImplemented();
}

}  // namespace kiln
