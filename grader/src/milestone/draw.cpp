// A milestone run's pictures: the training loss curve, and accuracy against weight bytes.
#include "kiln/grader/milestone.h"

#include <algorithm>
#include <array>
#include <map>
#include <cmath>

#include <fmt/format.h>

#include "kiln/grader/report.h"

namespace kiln::grader {

namespace {

std::string percent(double fraction) { return fmt::format("{:.2f}%", 100 * fraction); }

// The tradeoff plot's frame, and where a point of it lies.
struct TradeoffFrame {
  double w = 760, h = 420, left = 70, right = 40, top = 56, bottom = 56;
  double lx0 = 0, lx1 = 1;  // log10 of the bytes at the ends of the x axis
  double ya = 0, yb = 1;    // accuracy at the ends of the y axis
  double px(double bytes) const { return left + (std::log10(bytes) - lx0) / (lx1 - lx0) * (w - left - right); }
  double py(double acc) const { return h - bottom - (acc - ya) / std::max(1e-9, yb - ya) * (h - top - bottom); }
};

// Each output's point and its label. Each label takes the first of eight places around its point
// whose box meets no label placed before it and no point (boxes estimated at 7 pixels a
// character, 14 high).
std::string tradeoff_points(const MilestoneResult& r, const TradeoffFrame& f) {
  struct Box {
    double x0, y0, x1, y1;
    bool meets(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
  };
  std::string s;
  std::vector<Box> taken;
  for (const auto& j : r.judged)
    if (j.bytes > 0) taken.push_back({f.px(double(j.bytes)) - 6, f.py(j.accuracy) - 6, f.px(double(j.bytes)) + 6, f.py(j.accuracy) + 6});
  for (const auto& j : r.judged) {
    if (j.bytes <= 0) continue;
    const double x = f.px(double(j.bytes)), y = f.py(j.accuracy);
    const std::string label = j.output + " " + percent(j.accuracy);
    const double width = 7.0 * static_cast<double>(label.size()), height = 14;
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"/>\n", x, y, j.met ? "#2b6cb0" : "#c05621");
    const std::pair<double, double> places[] = {{8, -height / 2}, {-8 - width, -height / 2}, {4, -height - 8}, {-width - 4, -height - 8},
                                                {4, 8}, {-width - 4, 8}, {-width / 2, -height - 10}, {-width / 2, 10}};
    Box chosen{x + 8, y - height / 2, x + 8 + width, y + height / 2};
    for (const auto& [dx, dy] : places) {
      const Box b{x + dx, y + dy, x + dx + width, y + dy + height};
      if (b.x0 < f.left || b.x1 > f.w - 4 || b.y0 < f.top - 12 || b.y1 > f.h - f.bottom) continue;
      if (std::none_of(taken.begin(), taken.end(), [&](const Box& t) { return t.meets(b); })) {
        chosen = b;
        break;
      }
    }
    taken.push_back(chosen);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", chosen.x0, chosen.y1 - 3, xml_escape(label));
  }
  return s;
}

}  // namespace

std::string tradeoff_svg(const MilestoneResult& r) {
  // Accuracy against weight bytes, one point per output that has both; bytes on a log scale.
  double b0 = 1e300, b1 = 0, a0 = 1, a1 = 0;
  for (const auto& j : r.judged)
    if (j.bytes > 0) b0 = std::min(b0, double(j.bytes)), b1 = std::max(b1, double(j.bytes)), a0 = std::min(a0, j.accuracy),
                     a1 = std::max(a1, j.accuracy);
  TradeoffFrame f;
  f.lx0 = std::floor(std::log10(b0) * 2) / 2, f.lx1 = std::ceil(std::log10(b1) * 2) / 2 + (b0 == b1 ? 0.5 : 0);
  f.ya = std::max(0.0, std::floor(a0 * 10) / 10), f.yb = std::min(1.0, std::ceil(a1 * 20 + 0.01) / 20);
  std::string s = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n"
                              "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
                              "<text x=\"{}\" y=\"22\" font-size=\"14\" font-weight=\"bold\">{}</text>\n"
                              "<text x=\"{}\" y=\"38\" fill=\"#4a5568\">test accuracy against the bytes of the weights, {} run</text>\n",
                              f.w, f.h, f.left, xml_escape(r.title), f.left, r.run);
  for (double e = std::ceil(f.lx0); e <= f.lx1 + 1e-9; e += 1)
    for (const double m : {1.0, 2.0, 5.0}) {
      const double bytes = m * std::pow(10.0, e);
      if (std::log10(bytes) > f.lx1 + 1e-9) continue;
      const std::string label = bytes >= 1e6 ? fmt::format("{:g} MB", bytes / 1e6) : fmt::format("{:g} kB", bytes / 1e3);
      s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e2e8f0\"/><text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                       f.px(bytes), f.top, f.h - f.bottom, f.h - f.bottom + 16, label);
    }
  for (double a = f.ya; a <= f.yb + 1e-9; a += (f.yb - f.ya > 0.3 ? 0.1 : 0.05))
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#e2e8f0\"/><text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.0f}%</text>\n",
                     f.left, f.py(a), f.w - f.right, f.py(a), f.left - 6, f.py(a) + 4, 100 * a);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">weight bytes (log scale)</text>\n", (f.left + f.w - f.right) / 2, f.h - 16);
  s += fmt::format("<text x=\"18\" y=\"{0}\" transform=\"rotate(-90 18 {0})\" text-anchor=\"middle\">test accuracy</text>\n", (f.top + f.h - f.bottom) / 2);
  s += tradeoff_points(r, f);
  return s + "</svg>\n";
}

namespace {

// A round step for about five gridlines from 0 to `highest`: 1, 2, 2.5 or 5 times a power of ten.
double round_step(double highest) {
  const double wanted = highest / 5, scale = std::pow(10.0, std::floor(std::log10(wanted)));
  for (const double m : {1.0, 2.0, 2.5, 5.0})
    if (m * scale >= wanted * (1 - 1e-9)) return m * scale;
  return 10 * scale;
}

// The loss plot's frame: epochs 0 to x1 across, losses 0 to y1 up.
struct LossFrame {
  double w = 720, h = 360, left = 60, right = 20, top = 40, bottom = 50;
  double x1 = 1, y1 = 1;
  double px(double x) const { return left + x / x1 * (w - left - right); }
  double py(double y) const { return h - bottom - std::clamp(y, 0.0, y1) / y1 * (h - top - bottom); }
};

// The steps a curve's running mean averages: about 1% of them; 1 (no mean) under 200 steps.
std::size_t mean_window(std::size_t steps) { return steps < 200 ? 1 : steps / 100; }

// Every step's loss, thin; a running mean over about 1% of the steps, thick; in one model's colours.
// A curve too short for a mean is drawn once, thick.
std::string loss_lines(const std::vector<std::pair<double, double>>& curve, const LossFrame& f,
                       const char* thin = "#90cdf4", const char* thick = "#2b6cb0") {
  std::string raw, smooth;
  const std::size_t window = mean_window(curve.size());
  double sum = 0;
  // At most about 2,000 points of each line: a picture, not a data file.
  const std::size_t stride = std::max<std::size_t>(1, curve.size() / 2000);
  for (std::size_t i = 0; i < curve.size(); ++i) {
    sum += curve[i].second;
    if (i >= window) sum -= curve[i - window].second;
    if (i % stride != 0 && i + 1 != curve.size()) continue;
    raw += fmt::format("{:.1f},{:.1f} ", f.px(curve[i].first), f.py(curve[i].second));
    if (i + 1 >= window) smooth += fmt::format("{:.1f},{:.1f} ", f.px(curve[i].first), f.py(sum / static_cast<double>(window)));
  }
  if (window == 1) return fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", thick, raw);
  return fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1\" points=\"{}\"/>\n", thin, raw) +
         fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\" points=\"{}\"/>\n", thick, smooth);
}

// The curve's models: one (name "") for a trainer of one model, else each model's steps.
struct ModelCurve {
  std::string name;
  std::vector<std::pair<double, double>> curve;
};
std::vector<ModelCurve> model_curves(const MilestoneResult& r) {
  if (r.models.empty()) return {{"", r.curve}};
  std::vector<ModelCurve> out;
  for (std::size_t k = 0; k < r.models.size(); ++k) {
    const std::size_t from = std::min(r.models[k].first, r.curve.size());
    const std::size_t to = k + 1 < r.models.size() ? std::min(r.models[k + 1].first, r.curve.size()) : r.curve.size();
    out.push_back({r.models[k].second, {r.curve.begin() + static_cast<std::ptrdiff_t>(from),
                                        r.curve.begin() + static_cast<std::ptrdiff_t>(to)}});
  }
  return out;
}

}  // namespace

std::string loss_curve_svg(const MilestoneResult& r) {
  LossFrame f;
  double highest = 0;
  for (const auto& [x, y] : r.curve) f.x1 = std::max(f.x1, x), highest = std::max(highest, y);
  for (const auto& j : r.judged) highest = std::max(highest, j.loss);
  if (!(highest > 0) || !std::isfinite(highest)) highest = 1;
  // The axis ends at the first round value at or above the highest loss, with a gridline at each step.
  const double step = round_step(highest);
  const int steps = std::max(1, static_cast<int>(std::ceil(highest / step - 1e-9)));
  f.y1 = step * steps;
  std::string s = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n"
                              "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
                              "<text x=\"{}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{} ({} run): training loss</text>\n",
                              f.w, f.h, f.left, xml_escape(r.title), r.run);
  for (int i = 0; i <= steps; ++i) {
    const double y = step * i;
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#e2e8f0\"/><text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n",
                     f.left, f.py(y), f.w - f.right, f.py(y), f.left - 6, f.py(y) + 4, y);
  }
  // An epoch tick every 1, 2, 5, 10, 20, ... epochs: a dozen labels at most.
  int every = 1;
  for (int scale = 1; std::ceil(f.x1) / every > 12; scale *= 10)
    for (const int step : {1, 2, 5})
      if (std::ceil(f.x1) / every > 12) every = step * scale;
  for (int e = 0; e <= static_cast<int>(std::ceil(f.x1)); e += every) {
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e2e8f0\"/><text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                     f.px(e), f.top, f.h - f.bottom, f.h - f.bottom + 16, e);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">epoch</text>\n", (f.left + f.w - f.right) / 2, f.h - 14);
  s += fmt::format("<text x=\"16\" y=\"{0}\" transform=\"rotate(-90 16 {0})\" text-anchor=\"middle\">loss (nats)</text>\n", (f.top + f.h - f.bottom) / 2);
  // Each model's curve in its own colours; the test loss the grader computed at the end of the
  // model's curve (of the whole run, for a trainer of one model).
  static constexpr std::array<std::array<const char*, 2>, 3> kColours = {
      {{"#90cdf4", "#2b6cb0"}, {"#fbd38d", "#b7791f"}, {"#9ae6b4", "#2f855a"}}};
  const std::vector<ModelCurve> curves = model_curves(r);
  std::map<std::string, std::pair<double, const char*>> end_of;  // model -> last x, colour
  for (std::size_t k = 0; k < curves.size(); ++k) {
    const auto& colour = kColours[k % kColours.size()];
    s += loss_lines(curves[k].curve, f, colour[0], colour[1]);
    if (!curves[k].curve.empty()) end_of[curves[k].name] = {curves[k].curve.back().first, colour[1]};
  }
  double legend_y = f.top + 14;
  for (const auto& j : r.judged) {
    const auto end = end_of.find(j.output);
    const double x = end == end_of.end() ? f.x1 : end->second.first;
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"#c05621\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                     f.px(x), f.py(j.loss), end == end_of.end() ? "#c05621" : end->second.second);
    // An output named "test" is the test set itself: "test loss", not "test: test loss".
    const std::string of = j.output == "test" ? "" : xml_escape(j.output) + ": ";
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#c05621\">{}test loss {:.3f}, accuracy {}</text>\n",
                     f.w - f.right - 4, legend_y, of, j.loss, percent(j.accuracy));
    legend_y += 16;
  }
  for (std::size_t k = 0; k < curves.size(); ++k) {
    const std::string of = curves[k].name.empty() ? "" : xml_escape(curves[k].name) + ": ";
    const std::size_t window = mean_window(curves[k].curve.size());
    const std::string mean = window == 1 ? "" : fmt::format(", and its running mean over {} steps", window);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"{}\">{}training loss per step{}</text>\n",
                     f.w - f.right - 4, legend_y, kColours[k % kColours.size()][1], of, mean);
    legend_y += 16;
  }
  return s + "</svg>\n";
}

}  // namespace kiln::grader
