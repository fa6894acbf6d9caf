// What module 17's cases of views at an offset share: trusted code only. An offset failure only
// for a result that depends on the offset: each such case observes the same call twice, on the
// views at an offset and on fresh tensors of the same values, and judges the two together.
#pragma once

#include <string>

#include <fmt/format.h>

#include "kiln/testing.h"

namespace kiln::offset_testing {

// Whether the view's observation differs from the fresh tensors': one threw and the other did not,
// or their results are further apart than atol + rtol·|fresh|.
inline bool offset_changes(const testing::Observed<testing::TensorData>& view,
                           const testing::Observed<testing::TensorData>& fresh, double atol, double rtol = 0.0) {
  if (view.ok() != fresh.ok()) return true;
  if (!view.ok()) return false;
  const testing::Comparison c = testing::compare(*view, *fresh, atol, rtol);
  return !c.shapes_match || !c.close;
}

// "gave [values]" or "threw <kind>: <message>".
inline std::string gave(const testing::Observed<testing::TensorData>& got) {
  return got.ok() ? "gave " + testing::list(got->values) : "threw " + got.error().kind() + ": " + got.error().message;
}

// Judges such a case (judge only). Where the two results agree, judge(fresh, general_id) judges the
// fresh tensors' result under the function's general failure. Where they differ, the failure is
// offset_id: judge(view, offset_id) reports how the view's result is wrong, and where the view's
// is right (the fresh tensors' was not), the two results are quoted under offset_id.
template <class Judge>
void judge_at_offset(const char* file, int line, const testing::Observed<testing::TensorData>& view,
                     const testing::Observed<testing::TensorData>& fresh, double atol, double rtol,
                     const char* offset_id, testing::Params offset_params, const char* general_id, Judge judge) {
  if (!offset_changes(view, fresh, atol, rtol)) {
    judge(fresh, general_id);
    return;
  }
  if (!judge(view, offset_id)) return;
  offset_params.insert(offset_params.end(), {{"difference", "0 (where the same values in fresh tensors give another result)"}});
  testing::report_failure(file, line, offset_id, offset_params,
                          fmt::format("{} {}, where {} {}", view.call(), gave(view), fresh.call(), gave(fresh)));
}

}  // namespace kiln::offset_testing
