// The inputs every check draws: the run's seed and the generator. Linked into the observed
// program as well as the judge, so nothing here computes an expected value.
#include <cmath>
#include <cstdlib>
#include <utility>

#include "kiln/protocol.h"
#include "kiln/testing.h"

namespace kiln::testing {

namespace {

std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

Tensor TensorData::tensor() const { return Tensor(shape, values); }

std::uint64_t run_seed() {
  static const std::uint64_t seed = [] {
    const char* text = std::getenv(kiln::protocol::kSeed);
    return text && *text ? std::strtoull(text, nullptr, 0) : 0x6b696c6eULL;  // "kiln"
  }();
  return seed;
}

Generator::Generator(std::uint64_t stream) {
  std::uint64_t mix = run_seed();
  state_ = splitmix(mix) ^ stream * 0xd1b54a32d192ed03ULL;
}

std::uint64_t Generator::next() { return splitmix(state_); }

double Generator::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

float Generator::uniform(float low, float high) {
  const float v = low + (high - low) * static_cast<float>(uniform());
  return v < high ? v : std::nextafter(high, low);  // rounding must not reach high
}

std::int64_t Generator::below(std::int64_t bound) {
  return bound <= 0 ? 0 : static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(bound));
}

Tensor random_tensor(const Shape& shape, std::uint64_t stream, float low, float high) {
  Generator generator(stream);
  std::vector<float> values(static_cast<std::size_t>(numel(shape)));
  for (float& v : values) v = generator.uniform(low, high);
  return Tensor(shape, std::move(values));
}

Tensor hashed_random_tensor(const Shape& shape, std::uint64_t stream, float low, float high) {
  std::uint64_t mix = run_seed();
  const std::uint64_t key = splitmix(mix) ^ stream * 0xd1b54a32d192ed03ULL;
  std::vector<float> values(static_cast<std::size_t>(numel(shape)));
  const float step = (high - low) * 0x1.0p-24f;
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint64_t counter = key + i * 0x9e3779b97f4a7c15ULL;  // SplitMix64's i-th state, without the chain
    const float v = low + step * static_cast<float>(splitmix(counter) >> 40);  // 24 bits: exact in a float
    values[i] = v < high ? v : std::nextafter(high, low);
  }
  return Tensor(shape, std::move(values));
}

std::vector<std::int64_t> random_ints(std::size_t count, std::int64_t bound, std::uint64_t stream) {
  Generator generator(stream);
  std::vector<std::int64_t> out(count);
  for (auto& v : out) v = generator.below(bound);
  return out;
}

std::vector<std::int64_t> random_ints(std::size_t count, std::int64_t low, std::int64_t high, std::uint64_t stream) {
  Generator generator(stream);
  std::vector<std::int64_t> out(count);
  for (auto& v : out) v = low + generator.below(high - low);
  return out;
}

Tensor at_offset(const TensorData& values, std::uint64_t stream, std::int64_t before) {
  Generator generator(stream);
  const std::int64_t after = 3;
  std::vector<float> storage;
  storage.reserve(static_cast<std::size_t>(before + values.numel() + after));
  for (std::int64_t i = 0; i < before; ++i) storage.push_back(generator.uniform(-8.0f, 8.0f));
  storage.insert(storage.end(), values.values.begin(), values.values.end());
  for (std::int64_t i = 0; i < after; ++i) storage.push_back(generator.uniform(-8.0f, 8.0f));
  Shape strides(values.shape.size());
  std::int64_t step = 1;
  for (std::size_t d = strides.size(); d-- > 0;) {
    strides[d] = step;
    step *= values.shape[d];
  }
  const auto size = static_cast<std::int64_t>(storage.size());
  return make_view(Tensor({size}, std::move(storage)), values.shape, std::move(strides), before);
}

}  // namespace kiln::testing
