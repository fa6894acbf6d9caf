// Module 20 checks for the capstone itself: your model's bytes against the rules (a well-formed
// KCAP file, 784 pixels in and 10 logits out, at most 256 KiB, at least 85% of the 10,000
// Fashion-MNIST test images right), and capstone_predict, right and then timed beside the
// reference's. The accuracy is computed here from the labels of the test set, by the trusted
// reading of the bytes; no prediction of your code enters it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "capstone_testing.h"
#include "kiln/capstone.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::data_of;
using testing::observe;
using testing::SpeedKernel;
using testing::TensorData;

struct Verdict {
  std::string failure;  // "" when the model keeps the rules
  testing::Params params;
  std::optional<capstone_testing::TModel> model;
  capstone_testing::TestFigures figures;
};

// The rules, judged on a model's bytes; what the model does on the test set is computed once per
// distinct file.
Verdict judge_rules(const std::vector<std::uint8_t>& bytes, const capstone_testing::TestSet& set) {
  Verdict v;
  std::string problem;
  v.model = capstone_testing::read(bytes, problem);
  if (!v.model) {
    v.failure = "model_unreadable";
    v.params = {{"problem", problem}};
    return v;
  }
  if (v.model->input_width != capstone::kImageWidth || v.model->output_width != capstone::kClasses) {
    v.failure = "model_shape";
    // Each count with its noun, so that a model of 1 output reads "1 logit".
    v.params = {{"inputs", capstone_testing::counted(v.model->input_width, "pixel")},
                {"outputs", capstone_testing::counted(v.model->output_width, "logit")}};
    return v;
  }
  if (static_cast<std::int64_t>(bytes.size()) > capstone::kMostBytes) {
    v.failure = "model_too_large";
    v.params = {{"bytes", std::to_string(bytes.size())}};
    return v;
  }
  static std::map<std::vector<std::uint8_t>, capstone_testing::TestFigures> known;
  const auto found = known.find(bytes);
  v.figures = found != known.end() ? found->second : (known[bytes] = capstone_testing::on_test_set(*v.model, set));
  if (!(v.figures.largest_logit <= capstone::kLargestLogit)) {
    v.failure = "model_logits_range";
    v.params = {{"largest", fmt::format("{:.6g}", v.figures.largest_logit)}};
  } else if (v.figures.accuracy < capstone::kLeastAccuracy) {
    v.failure = "model_inaccurate";
    v.params = {{"accuracy", fmt::format("{:.2f}%", 100 * v.figures.accuracy)}};
  }
  return v;
}

TEST(Capstone, Model) {
  std::string why;
  const capstone_testing::TestSet* set = capstone_testing::fashion_test(why);
  if (!set) GTEST_SKIP() << why;
  const auto got = observe("capstone_model_bytes()", [] { return capstone_testing::byte_tensor(capstone::capstone_model_bytes()); });
  if (!KILN_EXPECT_OK(got, "model_unreadable", {{"problem", "capstone_model_bytes() threw"}})) return;
  KILN_JUDGE {
    const auto bytes = capstone_testing::bytes_of(*got);
    if (!bytes) {
      KILN_FAIL("model_unreadable", {{"problem", "its values are not bytes"}});
      return;
    }
    testing::note_context(*got);  // the speed check must time these same bytes
    const Verdict v = judge_rules(*bytes, *set);
    if (v.failure.empty() || v.failure == "model_inaccurate")
      testing::report_figure("accuracy", 100 * v.figures.accuracy, "%", true);
    if (v.failure != "model_unreadable" && v.failure != "model_shape")
      testing::report_figure("size", static_cast<double>(bytes->size()), "bytes", false);
    if (!v.failure.empty()) KILN_FAIL(v.failure, v.params);
  }
}

// The timed batch, and the observed calls' smaller one: neither a multiple of 2, 4, 8 or 16, so
// that a loop over blocks of rows meets a last block that is not full.
constexpr std::int64_t kImages = 1001;
constexpr std::int64_t kCheckImages = 67;

// `count` test images of the run, each moved by noise of up to 2/255 a pixel (then kept in
// [0, 1]), so that no batch was ever seen before, whatever was kept from earlier calls.
Tensor fresh_images(std::int64_t count, std::uint64_t stream) {
  std::string why;
  const capstone_testing::TestSet* set = capstone_testing::fashion_test(why);
  if (!set) throw std::runtime_error(why);
  const std::vector<std::int64_t> which = testing::random_ints(static_cast<std::size_t>(count), 10000, stream);
  // The noise from a stream of its own, apart from every call's image choice.
  const std::vector<float> noise =
      data_of(testing::random_tensor({count * 784}, stream ^ (std::uint64_t{1} << 40), -2.0f / 255, 2.0f / 255)).values;
  std::vector<float> x(static_cast<std::size_t>(count * 784));
  for (std::int64_t n = 0; n < count; ++n)
    for (std::int64_t p = 0; p < 784; ++p) {
      const std::size_t k = static_cast<std::size_t>(n * 784 + p);
      const float pixel = set->pixels[static_cast<std::size_t>(which[static_cast<std::size_t>(n)] * 784 + p)] / 255.0f;
      x[k] = std::clamp(pixel + noise[k], 0.0f, 1.0f);
    }
  return Tensor({count, 784}, std::move(x));
}

// The judge of one call: the model (the context, last of the inputs) must keep the rules, and the
// logits must be its own.
std::string judge_predict(const std::vector<Tensor>& inputs, const TensorData& y) {
  std::string why;
  const capstone_testing::TestSet* set = capstone_testing::fashion_test(why);
  if (!set) return why;
  const auto bytes = capstone_testing::bytes_of(data_of(inputs.back()));
  if (!bytes) return "capstone_model_bytes() gave values that are not bytes";
  const Verdict v = judge_rules(*bytes, *set);
  if (v.failure == "model_unreadable") return "the model is not a well-formed KCAP file: " + v.params[0].second;
  if (v.failure == "model_shape")
    return fmt::format("the model takes {} and gives {}, not 784 pixels and 10 logits", v.params[0].second,
                       v.params[1].second);
  if (v.failure == "model_too_large") return "the model is " + v.params[0].second + " bytes, more than the rules allow";
  if (v.failure == "model_logits_range") return "the model's logits reach " + v.params[0].second + ", beyond the rules' ±10,000";
  if (v.failure == "model_inaccurate") return "the model classifies only " + v.params[0].second + " of the test images right";
  const TensorData x = data_of(inputs.front());
  const std::int64_t count = x.shape[0];
  const std::vector<double> want = capstone_testing::logits(*v.model, std::vector<double>(x.values.begin(), x.values.end()), count);
  return capstone_testing::compare_logits(want, y, count, capstone::kClasses, "for " + capstone_testing::counted(count, "image"));
}

TEST(CapstoneSpeed, Predict) {
  std::string why;
  if (!capstone_testing::fashion_test(why)) GTEST_SKIP() << why;
  SpeedKernel kernel;
  kernel.name = "capstone_predict(images)";
  kernel.inputs = [](std::uint64_t stream) { return std::vector<Tensor>{fresh_images(kImages, stream)}; };
  kernel.check_inputs = [](std::uint64_t stream) { return std::vector<Tensor>{fresh_images(kCheckImages, stream)}; };
  kernel.call = [](const std::vector<Tensor>& in) { return capstone::capstone_predict(in[0]); };
  kernel.judge = KILN_JUDGE_ONLY(judge_predict);
  kernel.context = [] { return capstone_testing::byte_tensor(capstone::capstone_model_bytes()); };
  kernel.context_name = "capstone_model_bytes()";
  KILN_SPEED_CHECK(kernel, "predict_wrong");
}

}  // namespace
}  // namespace kiln
