// Module 05 checks for batches: batch_indices and its last partial batch, collate, the
// DataLoader's epochs and num_batches, and the Fisher-Yates shuffle driven by the Wichmann-Hill
// generator. Expected batches are sliced here by plain loops; expected orders come from the
// generator and the shuffle written out again in data_testing.h.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "data_testing.h"
#include "kiln/data.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using data_testing::batches_of;
using data_testing::list_of;
using data_testing::TrustedWichmannHill;
using testing::data_of;
using testing::observe;
using testing::TensorData;
using Batches = std::vector<std::vector<std::int64_t>>;

// order cut into batches of batch_size, the last one partial (trusted).
Batches reference_batches(const std::vector<std::int64_t>& order, std::int64_t batch_size, bool drop_last) {
  Batches out;
  const auto n = static_cast<std::int64_t>(order.size());
  for (std::int64_t start = 0; start < n; start += batch_size) {
    const std::int64_t stop = std::min(start + batch_size, n);
    if (drop_last && stop - start < batch_size) break;
    out.emplace_back(order.begin() + start, order.begin() + stop);
  }
  return out;
}

// A dataset of n images (rows, cols) of the run, or flat (n, rows·cols), labelled 10·i + 1.
Dataset run_dataset(std::int64_t n, std::int64_t rows, std::int64_t cols, bool flat, std::uint64_t stream) {
  Dataset d;
  d.images = testing::random_tensor(flat ? Shape{n, rows * cols} : Shape{n, rows, cols}, stream, 0.0f, 1.0f);
  for (std::int64_t i = 0; i < n; ++i) d.labels.push_back(10 * i + 1);
  return d;
}

// The images and labels of `data` at `indices` (trusted).
std::pair<TensorData, std::vector<std::int64_t>> reference_collate(const Dataset& data,
                                                                   const std::vector<std::int64_t>& indices) {
  const TensorData images = data_of(data.images);
  const std::int64_t per_image = images.numel() / images.shape[0];
  std::vector<float> values;
  std::vector<std::int64_t> labels;
  for (const std::int64_t i : indices) {
    values.insert(values.end(), images.values.begin() + i * per_image, images.values.begin() + (i + 1) * per_image);
    labels.push_back(data.labels[static_cast<std::size_t>(i)]);
  }
  Shape shape = images.shape;
  shape[0] = static_cast<std::int64_t>(indices.size());
  return {data_of(shape, values), labels};
}

}  // namespace

TEST(Data, Batching) {
  // Orders that are not 0, 1, 2, ...: the batches must hold the order's values. The run adds
  // one of 31 to 33 indices, shuffled by the run's generator (not by the Wichmann-Hill shuffle,
  // which is the Shuffle check's answer and stays in the judge), in batches of 2 to 9.
  auto reversed = [](std::int64_t n) {
    std::vector<std::int64_t> order;
    for (std::int64_t i = n - 1; i >= 0; --i) order.push_back(i);
    return order;
  };
  testing::Generator draw(571);
  const std::int64_t run_n = 31 + draw.below(3), run_batch = 2 + draw.below(8);
  std::vector<std::int64_t> run_order;
  for (std::int64_t i = 0; i < run_n; ++i) run_order.push_back(i);
  for (std::int64_t i = run_n - 1; i >= 1; --i) std::swap(run_order[i], run_order[draw.below(i + 1)]);
  // The largest batch size there is, INT64_MAX, holds 3 indices in one batch (none with drop_last).
  // An empty order has no batches.
  constexpr std::int64_t largest = std::numeric_limits<std::int64_t>::max();
  const std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>> cases = {
      {reversed(7), 3}, {reversed(6), 3},        {reversed(5), 1},         {reversed(2), 5},
      {reversed(1), 1}, {run_order, run_batch}, {reversed(3), largest}, {reversed(0), 3}};
  for (const auto& [order, batch_size] : cases) {
    for (const bool drop_last : {false, true}) {
      const auto n = static_cast<std::int64_t>(order.size());
      const std::int64_t left = n % batch_size;
      const testing::Params params = {{"indices", testing::counted(n, "index", "indices")},
                                      {"batch_size", std::to_string(batch_size)},
                                      {"left", std::to_string(left)}};
      const auto got = observe(fmt::format("batch_indices({}, {}, {})", list_of(order, 8), batch_size, drop_last),
                               [&] { return batch_indices(order, batch_size, drop_last); });
      if (!KILN_EXPECT_OK(got, "batches_wrong", params)) return;
      KILN_JUDGE {
        const Batches expected = reference_batches(order, batch_size, drop_last);
        if (*got == expected) continue;
        // Which mistake: the partial batch lost, or kept in spite of drop_last, or something else.
        const Batches without_partial = reference_batches(order, batch_size, true);
        const Batches with_partial = reference_batches(order, batch_size, false);
        const std::string detail =
            fmt::format("{} gave {}, expected {}", got.call(), batches_of(*got), batches_of(expected));
        if (!drop_last && left != 0 && *got == without_partial) {
          KILN_FAIL("partial_batch_lost", params, detail);
        } else if (drop_last && left != 0 && *got == with_partial) {
          KILN_FAIL("drop_last_ignored", params, detail);
        } else {
          KILN_FAIL("batches_wrong", params, detail);
        }
        return;
      }
    }
  }

  // collate: indices out of order, one of them twice, from 7 images (3, 5); one image of a flat
  // dataset (7, 15); a batch of every image of 2 in reverse.
  const Dataset images = run_dataset(7, 3, 5, false, 572);
  const Dataset flat = run_dataset(7, 3, 5, true, 573);
  const Dataset two = run_dataset(2, 4, 2, false, 574);
  const std::vector<std::tuple<std::string, const Dataset*, std::vector<std::int64_t>>> gathers = {
      {"7 images (3, 5)", &images, {4, 0, 6, 4}},
      {"7 flat images (15)", &flat, {6}},
      {"2 images (4, 2)", &two, {1, 0}},
  };
  for (const auto& [what, data, indices] : gathers) {
    const auto got = observe(fmt::format("collate(<{}>, {})", what, list_of(indices)), [&] {
      const Batch b = collate(*data, indices);
      return std::pair(b.images, b.labels);
    });
    if (!KILN_EXPECT_OK(got, "collate_wrong")) return;
    KILN_JUDGE {
      const auto [expected_images, expected_labels] = reference_collate(*data, indices);
      const testing::Comparison c = testing::compare(got->first, expected_images, 0.0);
      if (!c.close || got->second != expected_labels) {
        KILN_FAIL("collate_wrong", {},
                  got.call() + ": " +
                      (!c.shapes_match ? "the images have shape " + to_string(got->first.shape) + ", expected " +
                                             to_string(expected_images.shape)
                       : !c.close      ? "the images: " + c.describe()
                                  : "the labels are " + list_of(got->second) + ", expected " + list_of(expected_labels)));
        return;
      }
    }
  }

  // A batch is a copy: a write into it (normalising it in place, say) leaves the dataset as it
  // was. Consecutive indices, every batch of a loader that does not shuffle, too: a view of the
  // dataset's images there would hold the right values and share the dataset's storage.
  for (const std::vector<std::int64_t>& indices : {std::vector<std::int64_t>{2, 3, 4}, std::vector<std::int64_t>{5, 1}}) {
    const auto after = observe(fmt::format("b = collate(<7 images (3, 5)>, {}), then b.images's first pixel set to 42, "
                                           "then the dataset's images",
                                           list_of(indices)),
                               [&] {
                                 const Dataset data = run_dataset(7, 3, 5, false, 576);
                                 Batch b = collate(data, indices);
                                 b.images.storage_data()[b.images.offset()] = 42.0f;
                                 return data.images;
                               });
    if (!KILN_EXPECT_OK(after, "collate_wrong")) return;
    KILN_JUDGE {
      const TensorData expected = data_of(run_dataset(7, 3, 5, false, 576).images);
      if (after->values != expected.values) {
        const auto changed = std::mismatch(after->values.begin(), after->values.end(), expected.values.begin());
        const auto at = changed.first - after->values.begin();
        KILN_FAIL("collate_shares_images", {{"indices", list_of(indices)}},
                  fmt::format("after {}: the dataset's pixel {} (image {}) is {}, was {}", after.call(), at, at / 15,
                              *changed.first, *changed.second));
        return;
      }
    }
  }

  // collate of no indices: the batch of no images, B = 0, with the dataset's image shape after it,
  // (0, 3, 5) or (0, 15), and no labels; not a default Batch, whose images are a scalar.
  for (const auto& [what, data] : {std::pair{"7 images (3, 5)", &images}, std::pair{"7 flat images (15)", &flat}}) {
    const auto got = observe(fmt::format("collate(<{}>, [])", what), [&] {
      const Batch b = collate(*data, {});
      return std::pair(b.images, b.labels);
    });
    Shape expected_shape = data->images.shape();
    expected_shape[0] = 0;
    const testing::Params params = {{"expected", to_string(expected_shape)}};
    if (!KILN_EXPECT_OK(got, "empty_batch_wrong", params)) return;
    KILN_JUDGE {
      if (got->first.shape != expected_shape || !got->second.empty()) {
        KILN_FAIL("empty_batch_wrong", params,
                  fmt::format("{} gave images of shape {} and {}", got.call(), to_string(got->first.shape),
                              testing::counted(got->second.size(), "label")));
        return;
      }
    }
  }

  // num_batches: 7 in 3s, 6 in 3s, 2 in 5s, 5 in 1s, the run's sizes, and 7 in batches of INT64_MAX
  // and INT64_MAX - 1 (one batch, where N + B - 1 is past INT64_MAX), each with and without drop_last.
  const std::vector<std::pair<std::int64_t, std::int64_t>> loaders = {
      {7, 3}, {6, 3}, {2, 5}, {5, 1}, {run_n, run_batch}, {7, largest}, {7, largest - 1}};
  for (const auto& [n, batch_size] : loaders) {
    for (const bool drop_last : {false, true}) {
      const Dataset data = run_dataset(n, 2, 3, true, 575);
      const auto got =
          observe(fmt::format("DataLoader(<{} examples>, {}, false, 0, {}).num_batches()", n, batch_size, drop_last),
                  [&] { return DataLoader(data, batch_size, false, 0, drop_last).num_batches(); });
      const testing::Params params = {{"examples", testing::counted(n, "example")},
                                      {"batch_size", std::to_string(batch_size)},
                                      {"drop_last", drop_last ? "true" : "false"}};
      if (!KILN_EXPECT_OK(got, "num_batches_wrong", params)) return;
      KILN_JUDGE {
        // Whole batches, plus one for a partial batch unless drop_last: no sum that can overflow.
        const std::int64_t expected = n / batch_size + (!drop_last && n % batch_size != 0 ? 1 : 0);
        if (*got != expected) {
          // Where N + B - 1 is past INT64_MAX, (N + B - 1) / B overflows: named as that mistake.
          const bool past_int64 = !drop_last && batch_size > largest - (n - 1);
          testing::Params named = params;
          named.push_back({"expected", std::to_string(expected)});
          KILN_FAIL(past_int64 ? "num_batches_overflow" : "num_batches_wrong", named,
                    fmt::format("{} gave {}, expected {}", got.call(), *got, expected));
          return;
        }
      }
    }
  }

  // Arguments that are refused: batch sizes below 1, also for an empty order (which has no
  // batches to cut, but a batch size of 0 or -3 is refused all the same), and indices outside a
  // dataset of 7 images, one past the end and one before the start.
  const std::vector<std::tuple<std::int64_t, std::int64_t, bool>> bad_sizes = {
      {7, 0, false}, {7, -1, false}, {0, 0, false}, {0, -3, true}};
  for (const auto& [n, bad_size, drop_last] : bad_sizes) {
    const std::string call = fmt::format("batch_indices({}, {}, {})", list_of(reversed(n)), bad_size, drop_last);
    const auto got = observe(call, [&] { return batch_indices(reversed(n), bad_size, drop_last); });
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, got, "batching_arguments_not_checked", {},
                                                    {{"call", call}, {"kind", "std::invalid_argument"}});
      if (::testing::Test::HasFailure()) return;
    }
  }
  for (const std::int64_t bad_index : {7, -1}) {
    const std::string call = fmt::format("collate(<7 images (3, 5)>, [0, {}])", bad_index);
    const auto got = observe(call, [&] { return collate(images, {0, bad_index}).labels; });
    KILN_JUDGE {
      testing::expect_throws<IndexError>(__FILE__, __LINE__, got, "batching_arguments_not_checked", {},
                                         {{"call", call}, {"kind", "kiln::IndexError"}});
      if (::testing::Test::HasFailure()) return;
    }
  }

  // An index past 2^32: 4294967298 is far outside 7 images, but held in an int it is 2, an image
  // that exists.
  {
    const std::int64_t past_int = (std::int64_t{1} << 32) + 2;
    const std::string call = fmt::format("collate(<7 images (3, 5)>, [0, {}])", past_int);
    const auto got = observe(call, [&] { return collate(images, {0, past_int}).labels; });
    KILN_JUDGE {
      testing::expect_throws<IndexError>(__FILE__, __LINE__, got, "collate_index_narrowed", {},
                                         {{"call", call}, {"index", std::to_string(past_int)}});
      if (::testing::Test::HasFailure()) return;
    }
  }

  // A dataset of no examples has no batches, with drop_last or without: ⌈0 / B⌉ = 0. The formula
  // 1 + (N - 1) / B, which avoids N + B - 1, gives 1 there ((0 - 1) / B is 0 in C++).
  for (const bool drop_last : {false, true}) {
    const Dataset nothing = run_dataset(0, 2, 3, true, 577);
    const auto got = observe(fmt::format("DataLoader(<0 examples>, 3, false, 0, {}).num_batches()", drop_last),
                             [&] { return DataLoader(nothing, 3, false, 0, drop_last).num_batches(); });
    const testing::Params params = {{"batch_size", "3"}, {"drop_last", drop_last ? "true" : "false"}};
    if (!KILN_EXPECT_OK(got, "num_batches_empty_wrong", params)) return;
    KILN_JUDGE {
      if (*got != 0) {
        KILN_FAIL("num_batches_empty_wrong", params, fmt::format("{} gave {}, expected 0", got.call(), *got));
        return;
      }
    }
  }

  // A dataset whose images are a contiguous view at an offset (the images of a larger block, 5
  // floats in, the floats before them random numbers): its contiguous() is the view itself, and
  // its images start at data(), not at storage_data().
  Dataset shifted;
  shifted.images = testing::at_offset(data_of(testing::random_tensor({5, 3, 4}, 578, 0.0f, 1.0f)), 579);
  for (std::int64_t i = 0; i < 5; ++i) shifted.labels.push_back(10 * i + 3);
  const std::vector<std::int64_t> picks = {3, 0, 4};
  // The same call on a dataset whose images are a fresh tensor of the same values: a batch wrong
  // on both is collate's own mistake (collate_wrong), not the offset's.
  Dataset fresh = shifted;
  fresh.images = data_of(shifted.images).tensor();
  const auto collated = [&](const Dataset& data) {
    const Batch b = collate(data, picks);
    return std::pair(b.images, b.labels);
  };
  const auto fresh_got =
      observe(fmt::format("collate(<5 images (3, 4), a fresh tensor of the same values>, {})", list_of(picks)),
              [&] { return collated(fresh); });
  const auto got = observe(fmt::format("collate(<5 images (3, 4), a view at offset 5 of a larger storage>, {})",
                                       list_of(picks)),
                           [&] { return collated(shifted); });
  KILN_JUDGE {
    const auto [expected_images, expected_labels] = reference_collate(shifted, picks);
    const auto judge = [&](const auto& observed, std::string_view failure) {
      if (!KILN_EXPECT_OK(observed, failure)) return;
      const testing::Comparison c = testing::compare(observed->first, expected_images, 0.0);
      if (!c.close || observed->second != expected_labels) {
        KILN_FAIL(failure, {},
                  observed.call() + ": " +
                      (!c.shapes_match ? "the images have shape " + to_string(observed->first.shape) + ", expected " +
                                             to_string(expected_images.shape)
                       : !c.close      ? "the images: " + c.describe()
                                       : "the labels are " + list_of(observed->second) + ", expected " +
                                        list_of(expected_labels)));
      }
    };
    const auto same = [](const auto& a, const auto& b) {
      return testing::compare(a.first, b.first, 0.0).close && a.second == b.second;
    };
    if (!testing::offset_changes(got, fresh_got, same)) {
      judge(fresh_got, "collate_wrong");
      return;
    }
    judge(got, "collate_offset_ignored");
    if (!::testing::Test::HasFailure())
      KILN_FAIL("collate_offset_ignored", {},
                testing::offset_detail(got, fresh_got, [](const auto& b) {
                  return "images " + testing::list(b.first.values) + " and labels " + list_of(b.second);
                }));
  }
}

namespace {

// How many positions of two orders differ (a missing position counts).
std::size_t count_differences(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  std::size_t count = std::max(a.size(), b.size()) - std::min(a.size(), b.size());
  for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k) count += a[k] != b[k];
  return count;
}

}  // namespace

TEST(Data, Shuffle) {
  // fast.ai's seed, and n = 0, 1 (no draws), 2, 7 (1, 6, 2, 3, 0, 4, 5), 10 and 33; then a seed
  // and an n of 20 to 40 drawn by the run; then n = 60,000, Fashion-MNIST's training set, where
  // u·(i + 1) in float (24 bits) lands on the wrong integer for a few swaps in a thousand. After
  // the shuffle, the generator's next draw shows how many numbers it took: exactly n - 1.
  testing::Generator draw(581);
  const std::uint64_t run_seed = draw.next() >> 16;
  const std::int64_t run_n = 20 + draw.below(21);
  std::vector<std::pair<std::int64_t, std::uint64_t>> cases;
  for (const std::int64_t n : {0, 1, 2, 7, 10, 33}) cases.emplace_back(n, 457428938475ULL);
  cases.emplace_back(run_n, run_seed);
  cases.emplace_back(60000, run_seed + 1);
  for (const auto& [n, seed] : cases) {
    const auto got = observe(fmt::format("shuffled_indices({}, g = WichmannHill({})), then g.next()", n, seed), [&] {
      WichmannHill g(seed);
      std::vector<std::int64_t> order = shuffled_indices(n, g);
      return std::pair(order, g.next());
    });
    const testing::Params permutation = {{"n", std::to_string(n)}, {"last", std::to_string(n - 1)}};
    if (!KILN_EXPECT_OK(got, "shuffle_not_permutation", permutation)) return;
    KILN_JUDGE {
      std::vector<std::int64_t> sorted = got->first;
      std::sort(sorted.begin(), sorted.end());
      std::vector<std::int64_t> identity;
      for (std::int64_t i = 0; i < n; ++i) identity.push_back(i);
      if (sorted != identity) {
        KILN_FAIL("shuffle_not_permutation", permutation, fmt::format("{} gave {}", got.call(), list_of(got->first, 40)));
        return;
      }
      TrustedWichmannHill trusted(seed);
      const std::vector<std::int64_t> expected = data_testing::trusted_shuffle(n, trusted);
      const double next = trusted.next();
      const testing::Params order = {{"n", std::to_string(n)}, {"seed", std::to_string(seed)}};
      if (got->first != expected) {
        std::size_t first = 0;
        while (first < got->first.size() && first < expected.size() && got->first[first] == expected[first]) ++first;
        KILN_FAIL("shuffle_order_wrong", order,
                  n <= 40 ? fmt::format("{} gave {}, expected {}", got.call(), list_of(got->first, 40), list_of(expected, 40))
                          : fmt::format("{}: order[{}] is {}, expected {} (the first of the {} indices that differ)",
                                        got.call(), first, first < got->first.size() ? got->first[first] : -1,
                                        first < expected.size() ? expected[first] : -1,
                                        count_differences(got->first, expected)));
        return;
      }
      if (got->second != next) {
        KILN_FAIL("shuffle_order_wrong", order,
                  fmt::format("{}: the order is right, but the next draw is {}, not draw number {} ({}): the shuffle "
                              "did not take exactly n - 1 = {}",
                              got.call(), got->second, std::max<std::int64_t>(n - 1, 0) + 1, next,
                              testing::counted(std::max<std::int64_t>(n - 1, 0), "number")));
        return;
      }
    }
  }

  // No permutation has a negative length: n = -1, and -2^32 + 3, which an int holds as 3, are
  // refused with std::invalid_argument naming n (a std::vector of that size is a length_error).
  for (const std::int64_t bad_n : {std::int64_t{-1}, -(std::int64_t{1} << 32) + 3}) {
    const std::string call = fmt::format("shuffled_indices({}, WichmannHill(1))", bad_n);
    const auto got = observe(call, [&] {
      WichmannHill g(1);
      return shuffled_indices(bad_n, g);
    });
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, got, "shuffle_negative_not_refused",
                                                    {std::to_string(bad_n)}, {{"n", std::to_string(bad_n)}});
      if (::testing::Test::HasFailure()) return;
    }
  }

  // A DataLoader of 10 examples in batches of 4 (4, 4, 2): three epochs without shuffling, then
  // three with the fixed seed and three with a seed of the run. Each epoch is read through the
  // given epoch(), batch by batch, as the labels of its examples (labels are 10·i + 1).
  Dataset data;
  data.images = testing::random_tensor({10, 2, 2}, 582, 0.0f, 1.0f);
  for (std::int64_t i = 0; i < 10; ++i) data.labels.push_back(10 * i + 1);
  // Last, the run's seed with drop_last: every epoch leaves out its last 2 examples.
  for (const auto& [shuffle, seed, drop_last] :
       {std::tuple(false, std::uint64_t{0}, false), std::tuple(true, std::uint64_t{457428938475ULL}, false),
        std::tuple(true, run_seed, false), std::tuple(true, run_seed, true)}) {
    const auto got = observe(
        fmt::format("the labels of 3 epochs of DataLoader(<10 examples>, 4, {}, {}, {})", shuffle, seed, drop_last), [&] {
          DataLoader loader(data, 4, shuffle, seed, drop_last);
          std::vector<std::vector<std::vector<std::int64_t>>> epochs;
          for (int e = 0; e < 3; ++e) {
            std::vector<std::vector<std::int64_t>> batches;
            for (const Batch& batch : loader.epoch()) batches.push_back(batch.labels);
            epochs.push_back(batches);
          }
          return epochs;
        });
    const testing::Params params = {{"n", "10"},
                                    {"batch_size", "4"},
                                    {"shuffle", shuffle ? "true" : "false"},
                                    {"seed", std::to_string(seed)},
                                    {"drop_last", drop_last ? "true" : "false"}};
    if (!KILN_EXPECT_OK(got, "loader_order_wrong", params)) return;
    KILN_JUDGE {
      TrustedWichmannHill trusted(seed);
      for (std::size_t e = 0; e < 3; ++e) {
        std::vector<std::int64_t> order;
        if (shuffle) {
          order = data_testing::trusted_shuffle(10, trusted);
        } else {
          for (std::int64_t i = 0; i < 10; ++i) order.push_back(i);
        }
        for (std::int64_t& i : order) i = 10 * i + 1;
        const Batches expected = reference_batches(order, 4, drop_last);
        if (e >= got->size() || (*got)[e] != expected) {
          KILN_FAIL("loader_order_wrong", params,
                    fmt::format("{}: epoch {} gave {}, expected {}", got.call(), e + 1,
                                e < got->size() ? batches_of((*got)[e]) : "nothing", batches_of(expected)));
          return;
        }
      }
    }
  }
}

}  // namespace kiln
