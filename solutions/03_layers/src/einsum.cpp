// Einstein summation for one or two operands with an explicit output: one loop per letter.
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/layers.h"

namespace kiln {

namespace {

// What a spec says: one string of letters per operand, and the output's letters.
struct Subscripts {
  std::vector<std::string> operands;
  std::string output;
};

[[noreturn]] void bad_spec(const std::string& spec, const std::string& why) {
  throw std::invalid_argument("einsum(\"" + spec + "\"): " + why);
}

bool is_letter(char c) { return c >= 'a' && c <= 'z'; }

// Splits "ik,kj->ij" into {"ik", "kj"} and "ij" and checks everything that needs no shapes.
Subscripts parse(const std::string& spec, std::size_t operand_count) {
  const std::size_t arrow = spec.find("->");
  if (arrow == std::string::npos) bad_spec(spec, "the spec needs \"->\" followed by the output's letters");
  Subscripts s;
  s.output = spec.substr(arrow + 2);
  std::string left = spec.substr(0, arrow);
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = left.find(',', start);
    s.operands.push_back(left.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (s.operands.size() != operand_count) {
    bad_spec(spec, "the spec has " + std::to_string(s.operands.size()) + " operand(s) but " +
                       std::to_string(operand_count) + " tensor(s) were given");
  }

  std::array<bool, 26> in_operands{};
  for (const std::string& letters : s.operands) {
    std::array<bool, 26> seen{};
    for (char c : letters) {
      if (!is_letter(c)) bad_spec(spec, std::string("'") + c + "' is not a lowercase letter");
      if (seen[c - 'a']) bad_spec(spec, std::string("letter '") + c + "' appears twice in one operand");
      seen[c - 'a'] = true;
      in_operands[c - 'a'] = true;
    }
  }
  std::array<bool, 26> in_output{};
  for (char c : s.output) {
    if (!is_letter(c)) bad_spec(spec, std::string("'") + c + "' is not a lowercase letter");
    if (in_output[c - 'a']) bad_spec(spec, std::string("letter '") + c + "' appears twice in the output");
    if (!in_operands[c - 'a']) bad_spec(spec, std::string("output letter '") + c + "' is in no operand");
    in_output[c - 'a'] = true;
  }
  return s;
}

std::string shapes_text(const std::vector<Tensor>& operands) {
  std::string text;
  for (const Tensor& t : operands) text += (text.empty() ? "" : " and ") + to_string(t.shape());
  return text;
}

Tensor contract(const std::string& spec, const std::vector<Tensor>& operands) {
  const Subscripts s = parse(spec, operands.size());

  // The size of every letter, from the first operand that has it; every other must agree.
  std::array<std::int64_t, 26> size;
  size.fill(-1);
  for (std::size_t t = 0; t < operands.size(); ++t) {
    const std::string& letters = s.operands[t];
    if (static_cast<std::int64_t>(letters.size()) != operands[t].dim()) {
      throw ShapeError("einsum(\"" + spec + "\"): operand " + std::to_string(t) + " has letters \"" + letters +
                       "\" but shape " + to_string(operands[t].shape()) + " (shapes " + shapes_text(operands) + ")");
    }
    for (std::size_t d = 0; d < letters.size(); ++d) {
      std::int64_t& known = size[letters[d] - 'a'];
      const std::int64_t here = operands[t].shape()[d];
      if (known == -1) {
        known = here;
      } else if (known != here) {
        throw ShapeError("einsum(\"" + spec + "\"): letter '" + letters[d] + "' has sizes " +
                         std::to_string(known) + " and " + std::to_string(here) + " in shapes " + shapes_text(operands));
      }
    }
  }

  // One loop per letter: the output's letters first, in output order, then the summed ones.
  std::string loops = s.output;
  for (const std::string& letters : s.operands) {
    for (char c : letters) {
      if (loops.find(c) == std::string::npos) loops += c;
    }
  }
  const std::size_t depth = loops.size();

  // The output, row-major, one dimension per output letter (shape () when there is none).
  Shape out_shape;
  for (char c : s.output) out_shape.push_back(size[c - 'a']);
  Tensor out = Tensor::zeros(out_shape);
  if (out.numel() == 0) return out;
  std::int64_t total = 1;
  for (char c : loops) total *= size[c - 'a'];
  if (total == 0) return out;  // an empty sum: all zeros

  // How far each loop steps in every operand and in the output (0 where the letter is absent).
  const std::size_t count = operands.size();
  std::vector<const float*> values(count);
  std::vector<std::vector<std::int64_t>> step(count, std::vector<std::int64_t>(depth, 0));
  for (std::size_t t = 0; t < count; ++t) {
    values[t] = operands[t].storage_data() + operands[t].offset();
    for (std::size_t d = 0; d < s.operands[t].size(); ++d) step[t][loops.find(s.operands[t][d])] = operands[t].strides()[d];
  }
  std::vector<std::int64_t> out_step(depth, 0);
  for (std::size_t d = 0; d < s.output.size(); ++d) out_step[d] = out.strides()[d];

  // An odometer over all the loops but the last, the one before last turning fastest; the last
  // loop runs on its own inside it, with fixed steps, since it turns most often.
  float* out_values = out.data();
  if (depth == 0) {  // only scalars: one product
    float product = 1.0f;
    for (std::size_t t = 0; t < count; ++t) product *= values[t][0];
    out_values[0] = product;
    return out;
  }
  const std::size_t last = depth - 1;
  const std::int64_t last_size = size[loops[last] - 'a'];
  std::vector<std::int64_t> index(depth, 0);
  std::vector<std::int64_t> position(count, 0);
  std::int64_t out_position = 0;
  for (std::int64_t n = 0; n < total / last_size; ++n) {
    // The last loop: one or two operands, walked with their fixed steps.
    const float* a_values = values[0] + position[0];
    const std::int64_t a_step = step[0][last];
    float* out_row = out_values + out_position;
    const std::int64_t out_row_step = out_step[last];
    if (count == 2) {
      const float* b_values = values[1] + position[1];
      const std::int64_t b_step = step[1][last];
      for (std::int64_t q = 0; q < last_size; ++q) out_row[q * out_row_step] += a_values[q * a_step] * b_values[q * b_step];
    } else {
      for (std::int64_t q = 0; q < last_size; ++q) out_row[q * out_row_step] += a_values[q * a_step];
    }
    for (std::size_t l = last; l-- > 0;) {
      const std::int64_t letter_size = size[loops[l] - 'a'];
      ++index[l];
      for (std::size_t t = 0; t < count; ++t) position[t] += step[t][l];
      out_position += out_step[l];
      if (index[l] < letter_size) break;
      index[l] = 0;
      for (std::size_t t = 0; t < count; ++t) position[t] -= step[t][l] * letter_size;
      out_position -= out_step[l] * letter_size;
    }
  }
  return out;
}

}  // namespace

Tensor einsum(const std::string& spec, const Tensor& a, const Tensor& b) { return contract(spec, {a, b}); }

Tensor einsum(const std::string& spec, const Tensor& a) { return contract(spec, {a}); }

}  // namespace kiln
