// The module map as SVG. Columns by depth (a module sits one column right of its deepest
// prerequisite); within a column, modules ordered by where their prerequisites sit, so that arrows
// cross little; columns centred on each other. Arrows are the direct prerequisites without those a
// module already gets through another one (the transitive reduction): 17 requires 01, 06 and 09,
// but 09 requires 06, which requires 01, so one arrow 09 -> 17 says it all. An arrow that still
// skips a column arcs over the top, clear of the boxes.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "kiln/grader/site.h"
#include "internal.h"

namespace kiln::grader {

namespace {

using site::escape;

// "5-7" as a range: "5–7".
std::string range(std::string s) {
  if (const auto dash = s.find('-'); dash != std::string::npos) s.replace(dash, 1, "–");
  return s;
}

struct Box {
  double x = 0, y = 0;
  int depth = 0;
  double order = 0;  // position within the column
  int out_arcs = 0, in_arcs = 0;
};

constexpr double kWidth = 184, kHeight = 72, kColumnGap = 64, kRowGap = 26, kPad = 12;

using Arrows = std::map<int, std::vector<int>>;  // module number -> the modules its arrows come from

// The arrows: each direct prerequisite not reached through another direct prerequisite.
Arrows arrows_into(const Course& course) {
  Arrows arrows;
  for (const auto& m : course.modules) {
    for (int r : m.requires_) {
      if (!course.by_number(r)) continue;
      bool implied = false;
      for (int other : m.requires_) {
        const Module* o = course.by_number(other);
        if (!o || other == r) continue;
        for (const Module* p : course.prerequisites(*o)) implied |= p->number == r;
      }
      if (!implied) arrows[m.number].push_back(r);
    }
  }
  return arrows;
}

struct Layout {
  std::map<int, Box> boxes;  // by module number
  double width = 0, height = 0;
};

// Where each box goes: its column by depth, its row by the barycentre of its arrows' sources, the
// columns centred on each other, and room above them for the arcs that skip a column.
Layout layout(const Course& course, Arrows& arrows) {
  Layout out;
  std::map<int, Box>& boxes = out.boxes;
  std::map<int, std::vector<int>> columns;
  for (const auto& m : course.modules) {  // ordered by number; a module requires lower numbers
    Box b;
    for (int r : m.requires_)
      if (boxes.count(r)) b.depth = std::max(b.depth, boxes[r].depth + 1);
    boxes[m.number] = b;
    columns[b.depth].push_back(m.number);
  }
  std::size_t rows = 0;
  for (auto& [depth, numbers] : columns) {
    // Barycentre: the mean position of the boxes its arrows come from.
    auto centre = [&](int n) {
      const auto& from = arrows[n];
      if (from.empty()) return static_cast<double>(n);
      double sum = 0;
      for (int r : from) sum += boxes[r].order;
      return sum / static_cast<double>(from.size());
    };
    std::stable_sort(numbers.begin(), numbers.end(), [&](int a, int b) { return centre(a) < centre(b); });
    for (std::size_t i = 0; i < numbers.size(); ++i) boxes[numbers[i]].order = static_cast<double>(i);
    rows = std::max(rows, numbers.size());
  }
  int skips = 0;
  for (const auto& [to, from] : arrows)
    for (int r : from) skips += boxes[to].depth - boxes[r].depth > 1;
  const double arc_margin = skips > 0 ? 34.0 + 10.0 * skips : 0.0;
  for (auto& [depth, numbers] : columns) {
    const double shift = (static_cast<double>(rows) - static_cast<double>(numbers.size())) / 2.0;
    for (int n : numbers) {
      Box& b = boxes[n];
      b.x = kPad + depth * (kWidth + kColumnGap);
      b.y = kPad + arc_margin + (b.order + shift) * (kHeight + kRowGap);
    }
  }
  out.width = 2 * kPad + static_cast<double>(columns.size()) * (kWidth + kColumnGap) - kColumnGap;
  out.height = 2 * kPad + arc_margin + static_cast<double>(rows) * (kHeight + kRowGap) - kRowGap;
  return out;
}

// The <svg> element's opening and the arrowhead marker the arrows use.
std::string svg_open(double width, double height) {
  return fmt::format(
      "<svg class=\"module-map\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" "
      "height=\"{1}\" role=\"group\" aria-label=\"The module map: an arrow points from a module to one that builds "
      "on it\">\n"
      "<defs><marker id=\"map-arrow\" viewBox=\"0 0 10 10\" refX=\"8\" refY=\"5\" markerWidth=\"7\" "
      "markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,1 L9,5 L0,9 z\" class=\"map-arrowhead\"/>"
      "</marker></defs>\n",
      width, height);
}

// The arrows layer: a curve into the next column, or an arc over the top into a later one.
std::string arrow_paths(const Course& course, Arrows& arrows, std::map<int, Box>& boxes) {
  std::string svg;
  int arc = 0;
  for (const auto& m : course.modules) {
    Box& to = boxes[m.number];
    for (int r : arrows[m.number]) {
      Box& from = boxes[r];
      const Module* dep = course.by_number(r);
      std::string path;
      if (to.depth == from.depth + 1) {
        const double x1 = from.x + kWidth, y1 = from.y + kHeight / 2, x2 = to.x - 1, y2 = to.y + kHeight / 2;
        const double mid = (x1 + x2) / 2;
        path = fmt::format("M{},{} C{},{} {},{} {},{}", x1, y1, mid, y1, mid, y2, x2, y2);
      } else {
        // Up from the top of one box, over everything, down onto the top of the other.
        const double x1 = from.x + kWidth * 0.7 + 10 * from.out_arcs++;
        const double x2 = to.x + kWidth * 0.3 - 10 * to.in_arcs++;
        const double top = kPad + 8 + 10 * arc++;
        path = fmt::format("M{},{} C{},{} {},{} {},{}", x1, from.y, x1, top - 12, x2, top - 12, x2, to.y - 1);
      }
      svg += fmt::format("<path class=\"map-edge\" d=\"{}\" marker-end=\"url(#map-arrow)\"><title>{} {} builds on {} {}"
                         "</title></path>\n",
                         path, m.number_text(), escape(m.title), dep->number_text(), escape(dep->title));
    }
  }
  return svg;
}

// The boxes layer: each module as a link with its number, title, difficulty and hours.
std::string module_boxes(const Course& course, const std::map<int, Box>& boxes) {
  std::string svg;
  for (const auto& m : course.modules) {
    const Box& b = boxes.at(m.number);
    std::string dots;
    for (int i = 1; i <= 4; ++i) dots += i <= m.difficulty ? "●" : "○";
    svg += fmt::format(
        "<a href=\"{name}.html\" class=\"map-node tier-{tier}\"><title>{num} {title}: {subtitle}</title>"
        "<rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" rx=\"10\"/>"
        "<rect class=\"map-band\" x=\"{x}\" y=\"{y}\" width=\"6\" height=\"{h}\" rx=\"3\"/>"
        "<text x=\"{tx}\" y=\"{y1}\" class=\"map-num\">{num}</text>"
        "<text x=\"{tx}\" y=\"{y2}\" class=\"map-title\">{title}</text>"
        "<text x=\"{tx}\" y=\"{y3}\" class=\"map-meta\">{dots}  {hours} h</text></a>\n",
        fmt::arg("name", m.name()), fmt::arg("tier", escape(m.tier)), fmt::arg("num", m.number_text()),
        fmt::arg("title", escape(m.title)), fmt::arg("subtitle", escape(m.subtitle)), fmt::arg("x", b.x),
        fmt::arg("y", b.y), fmt::arg("w", kWidth), fmt::arg("h", kHeight), fmt::arg("tx", b.x + 18),
        fmt::arg("y1", b.y + 22), fmt::arg("y2", b.y + 43), fmt::arg("y3", b.y + 61), fmt::arg("dots", dots),
        fmt::arg("hours", escape(range(m.hours))));
  }
  return svg;
}

}  // namespace

std::string module_map_svg(const Course& course) {
  Arrows arrows = arrows_into(course);
  Layout map = layout(course, arrows);
  std::string svg = svg_open(map.width, map.height);
  svg += arrow_paths(course, arrows, map.boxes);  // first, so that the boxes sit on top of them
  svg += module_boxes(course, map.boxes);
  return svg + "</svg>";
}

}  // namespace kiln::grader
