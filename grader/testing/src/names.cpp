// How checks write numbers and lists, in the names of calls and in messages: both the observed
// program (a call's name) and the judge use these, so they belong to neither side's secrets.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kiln/testing.h"

namespace kiln::testing {

std::string format_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return fmt::format("{:.3g}", value);
}

std::pair<std::string, std::string> format_pair(double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b)) return {format_number(a), format_number(b)};
  // Enough digits that the two differ where they differ, and that their difference can be read
  // off them to two digits: got 1.9617, expected 1.95, for a difference of 0.00167.
  const double difference = std::fabs(a - b);
  const double largest = std::max(std::fabs(a), std::fabs(b));
  for (int digits = 3; digits < 9; ++digits) {
    std::string x = fmt::format("{:.{}g}", a, digits), y = fmt::format("{:.{}g}", b, digits);
    const double last_place = largest > 0 ? std::pow(10.0, std::floor(std::log10(largest)) - digits + 1) : 0;
    if (x != y && last_place <= difference / 10) return {x, y};
  }
  return {fmt::format("{:.9g}", a), fmt::format("{:.9g}", b)};
}

std::string list(const std::vector<float>& values, std::size_t limit) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size() && i < limit; ++i) out += (i ? ", " : "") + fmt::format("{:g}", values[i]);
  if (values.size() > limit) out += fmt::format(", ... ({} values)", values.size());
  return out + "]";
}

std::string counted_text(const std::string& number, bool one, const std::string& noun,
                         const std::string& nouns) {
  return fmt::format("{} {}", number, one ? noun : nouns.empty() ? noun + "s" : nouns);
}

}  // namespace kiln::testing
