// Where the exception being handled was thrown (thrown.cpp): offsets into this program of the
// frames that threw it, innermost first; empty when it did not pass through this program's throws.
#pragma once

#include <string>
#include <vector>

namespace kiln::testing::detail {

std::vector<std::string> thrown_at();

}  // namespace kiln::testing::detail
