#include "kiln/testing.h"

#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kiln::testing {

void report_failure(const char* file, int line, std::string_view failure_id, const Params& params,
                    std::string_view detail) {
  // The grader reads these three marker lines; people reading raw GoogleTest output see the id.
  nlohmann::json values = nlohmann::json::object();
  for (const auto& [name, value] : params) values[name] = value;
  std::string text = fmt::format("[kiln-failure] {}\n[kiln-params] {}\n", failure_id, values.dump());
  if (!detail.empty()) text += fmt::format("[kiln-detail] {}\n", detail);
  ADD_FAILURE_AT(file, line) << text;
}

std::string format_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return "inf";
  return fmt::format("{:.3g}", value);
}

}  // namespace kiln::testing
