// grader bench N --emulator: the module's GPU kernels counted on the grid emulator, a table of
// the counts and a picture of one warp's accesses.
#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kiln/grader/bench.h"
#include "kiln/grader/report.h"

namespace kiln::grader {

std::vector<CountedKernel> parse_counted(const std::string& lines) {
  std::vector<CountedKernel> out;
  std::istringstream in(lines);
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("name")) {
      if (!line.empty()) out.push_back({.name = "(unreadable)", .error = "the bench wrote a line that is not a kernel's counts: " + line.substr(0, 200)});
      continue;
    }
    CountedKernel k{.group = j.value("group", ""), .name = j.value("name", ""), .role = j.value("role", 0),
                    .error = j.value("error", "")};
    for (const auto& f : j.value("figures", nlohmann::json::array()))
      if (f.is_object())
        k.figures.emplace_back(f.value("name", ""), f.contains("value") && f["value"].is_number() ? f["value"].get<double>()
                                                                                                  : std::nan(""));
    for (const auto& a : j.value("accesses", nlohmann::json::array())) {
      CountedKernel::Access access{.buffer = a.value("buffer", ""), .rows = a.value("rows", std::int64_t{0}),
                                   .cols = a.value("cols", std::int64_t{0})};
      for (const auto& e : a.value("first_request", nlohmann::json::array()))
        access.first_request.push_back(e.is_number_integer() ? e.get<std::int64_t>() : -1);
      if (access.rows < 0 || access.cols < 0 || access.rows > (1 << 16) || access.cols > (1 << 16)) access.rows = access.cols = 0;
      k.accesses.push_back(std::move(access));
    }
    out.push_back(std::move(k));
  }
  return out;
}

namespace {

std::string figure(double v) {
  if (v == 0) return "0";
  if (v == static_cast<double>(static_cast<long long>(v))) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:.2f}", v);
}

}  // namespace

// Kernels across, figures down: five kernels fit in 80 columns where ten figures would not.
std::string render_counted_text(const BenchReport& r) {
  std::string out = fmt::format("Bench {} · {} ({}, counted on the grid emulator)\n", r.number, r.title, r.variant);
  std::string group;
  std::vector<const CountedKernel*> kernels;
  auto flush = [&] {
    if (kernels.empty()) return;
    out += "\n" + group + "\n";
    std::string head = fmt::format("  {:<19}", "");
    for (const auto* k : kernels) {
      std::string name = k->name.rfind("matmul_", 0) == 0 ? k->name.substr(7) : k->name;
      head += fmt::format(" {:>12}", name.size() > 12 ? name.substr(0, 12) : name);
    }
    out += head + "\n";
    std::vector<std::string> names;
    for (const auto* k : kernels)
      for (const auto& [name, value] : k->figures)
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    for (const auto& name : names) {
      std::string row = fmt::format("  {:<19}", name);
      for (const auto* k : kernels) {
        std::string cell = k->error.empty() ? "-" : "✗";
        for (const auto& [n, v] : k->figures)
          if (n == name) cell = figure(v);
        row += fmt::format(" {:>12}", cell);
      }
      out += row + "\n";
    }
    for (const auto* k : kernels)
      if (!k->error.empty()) out += "  ✗ " + k->name + ": " + wrap(k->error, terminal_width(), "    ") + "\n";
    kernels.clear();
  };
  for (const auto& k : r.counted) {
    if (k.group != group) flush(), group = k.group;
    kernels.push_back(&k);
  }
  flush();
  out += "\nExact counts, the same on every machine: a transaction is one 128-byte segment a warp's request\n"
         "touches; a bank conflict is a shared-memory pass beyond the first of a request. Every result was\n"
         "checked against a plain product before it was counted.\n";
  if (!r.warp_svg.empty()) out += "The first warp's first loads, drawn: " + r.warp_svg + "\n";
  return out;
}

std::string render_counted_json(const BenchReport& r) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : r.counted) {
    nlohmann::json figures = nlohmann::json::object();
    for (const auto& [name, value] : k.figures) figures[name] = value;
    kernels.push_back({{"group", k.group}, {"name", k.name}, {"role", k.role}, {"error", k.error}, {"counts", figures}});
  }
  return nlohmann::json{{"module", r.module}, {"variant", r.variant}, {"emulator", true}, {"kernels", kernels},
                        {"plots", {r.warp_svg}}}
             .dump(2) +
         "\n";
}

std::string warp_access_svg(const BenchReport& r) {
  // One row per kernel, one panel per buffer: the matrix's first rows at `cell` pixels an element
  // (down to the last row any warp touched, and two more), the 128-byte segments the lanes touched
  // shaded, the touched elements dark.
  const double cell = 6, gap = 30, left = 130, top = 72;
  std::int64_t most_cols = 1, shown_rows = 2;
  std::size_t panels = 1;
  for (const auto& k : r.counted) {
    panels = std::max(panels, k.accesses.size());
    for (const auto& a : k.accesses) {
      most_cols = std::max(most_cols, a.cols);
      for (const std::int64_t e : a.first_request)
        if (e >= 0 && a.cols > 0) shown_rows = std::max(shown_rows, std::min(a.rows, e / a.cols + 3));
    }
  }
  const double panel_w = static_cast<double>(most_cols) * cell, panel_h = static_cast<double>(shown_rows) * cell;
  const double row_h = panel_h + 44;
  const double width = std::max(760.0, left + static_cast<double>(panels) * (panel_w + gap) + 10);
  const double height = top + static_cast<double>(r.counted.size()) * row_h + 10;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"16\" y=\"22\" font-size=\"15\" font-weight=\"bold\">One warp's first load of each matrix ({})</text>\n"
      "<text x=\"16\" y=\"40\" fill=\"#4a5568\">The 32 threads of block (0, 0)'s first warp: the elements they read "
      "(dark) and the 128-byte segments those lie in</text>\n<text x=\"16\" y=\"55\" fill=\"#4a5568\">(shaded), one "
      "transaction each. The matrices' first {} rows are shown.</text>\n",
      width, height, xml_escape(r.counted.empty() ? "" : r.counted.front().group), shown_rows);
  double y = top;
  for (const auto& k : r.counted) {
    s += fmt::format("<text x=\"16\" y=\"{:.1f}\" font-weight=\"bold\">{}</text>\n", y + 30,
                     xml_escape(k.name.rfind("matmul_", 0) == 0 ? k.name.substr(7) : k.name));
    if (!k.error.empty()) {
      s += fmt::format("<text x=\"16\" y=\"{:.1f}\" fill=\"#9b2c2c\">not counted</text>\n", y + 46);
      y += row_h;
      continue;
    }
    double x = left;
    for (const auto& a : k.accesses) {
      const std::int64_t segment_floats = 32;  // 128 bytes of float32
      const std::int64_t rows = std::min(a.rows, shown_rows);
      std::set<std::int64_t> elements, segments;
      for (const std::int64_t e : a.first_request)
        if (e >= 0) elements.insert(e), segments.insert(e / segment_floats);
      s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#f7fafc\" stroke=\"#a0aec0\"/>\n",
                       x, y + 16, static_cast<double>(a.cols) * cell, static_cast<double>(rows) * cell);
      for (const std::int64_t seg : segments) {
        // A segment is 32 consecutive elements; in a row-major matrix it may wrap to the next row.
        for (std::int64_t e = seg * segment_floats; e < (seg + 1) * segment_floats && e < rows * a.cols;) {
          const std::int64_t row = e / a.cols, col = e % a.cols;
          const std::int64_t run = std::min((seg + 1) * segment_floats - e, a.cols - col);
          s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#fbd38d\" stroke=\"#dd6b20\" stroke-width=\"0.5\"/>\n",
                           x + static_cast<double>(col) * cell, y + 16 + static_cast<double>(row) * cell,
                           static_cast<double>(run) * cell, cell);
          e += run;
        }
      }
      for (const std::int64_t e : elements)
        if (e < rows * a.cols)
          s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#9c4221\"/>\n",
                           x + static_cast<double>(e % a.cols) * cell + 0.5, y + 16.5 + static_cast<double>(e / a.cols) * cell,
                           cell - 1, cell - 1);
      s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}: {} element{} in {} segment{}</text>\n", x, y + 11,
                       xml_escape(a.buffer), elements.size(), elements.size() == 1 ? "" : "s", segments.size(),
                       segments.size() == 1 ? "" : "s");
      x += panel_w + gap;
    }
    y += row_h;
  }
  return s + "</svg>\n";
}

}  // namespace kiln::grader
