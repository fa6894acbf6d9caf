// The module map as SVG: one column per depth (a module sits one column right of its deepest
// prerequisite), modules of a column stacked by number. An arrow to the next column is an S-curve
// between the boxes; one that skips columns arcs over the top, so that it never runs behind a box.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "kiln/grader/site.h"

namespace kiln::grader {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

struct Box {
  double x = 0, y = 0;
  int depth = 0, row = 0;
  int out_used = 0, in_used = 0;  // arcs already attached to the top edge
};

constexpr double kWidth = 184, kHeight = 72, kColumnGap = 56, kRowGap = 28, kPad = 12;

}  // namespace

std::string module_map_svg(const Course& course) {
  std::map<int, Box> boxes;
  std::map<int, int> rows_in_column;
  for (const auto& m : course.modules) {  // ordered by number, and a module requires lower numbers
    Box b;
    for (int r : m.requires_)
      if (boxes.count(r)) b.depth = std::max(b.depth, boxes[r].depth + 1);
    b.row = rows_in_column[b.depth]++;
    boxes[m.number] = b;
  }
  // Height of the arcs over the top: the longest skip decides the margin.
  int longest_skip = 0;
  for (const auto& m : course.modules)
    for (int r : m.requires_)
      if (boxes.count(r)) longest_skip = std::max(longest_skip, boxes[m.number].depth - boxes[r].depth - 1);
  const double arc_margin = longest_skip > 0 ? 22.0 + 22.0 * longest_skip : 0.0;
  int columns = 0, rows = 0;
  for (const auto& [depth, count] : rows_in_column) columns = std::max(columns, depth + 1), rows = std::max(rows, count);
  for (auto& [number, b] : boxes) {
    b.x = kPad + b.depth * (kWidth + kColumnGap);
    b.y = kPad + arc_margin + b.row * (kHeight + kRowGap);
  }
  const double width = 2 * kPad + columns * kWidth + std::max(0, columns - 1) * kColumnGap;
  const double height = 2 * kPad + arc_margin + rows * kHeight + std::max(0, rows - 1) * kRowGap;

  std::string svg = fmt::format(
      "<svg class=\"module-map\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" "
      "height=\"{1}\" role=\"group\" aria-label=\"Module map: each arrow points from a prerequisite to a module "
      "that builds on it\">\n"
      "<defs><marker id=\"map-arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
      "markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" class=\"map-arrowhead\"/>"
      "</marker></defs>\n",
      width, height);

  // Arrows first, so that the boxes sit on top of them.
  for (const auto& m : course.modules) {
    Box& to = boxes[m.number];
    std::vector<int> reqs;
    for (int r : m.requires_)
      if (boxes.count(r)) reqs.push_back(r);
    std::sort(reqs.begin(), reqs.end(), [&](int a, int b) { return boxes[a].depth > boxes[b].depth; });
    for (int r : reqs) {
      Box& from = boxes[r];
      const Module* dep = course.by_number(r);
      std::string path;
      if (to.depth == from.depth + 1) {
        const double x1 = from.x + kWidth, y1 = from.y + kHeight / 2, x2 = to.x - 2, y2 = to.y + kHeight / 2;
        const double mid = (x1 + x2) / 2;
        path = fmt::format("M{},{} C{},{} {},{} {},{}", x1, y1, mid, y1, mid, y2, x2, y2);
      } else {
        const int skip = to.depth - from.depth - 1;
        const double x1 = from.x + kWidth * 0.62 + 14 * from.out_used++;
        const double x2 = to.x + kWidth * 0.38 - 14 * to.in_used++;
        const double lift = 18.0 + 22.0 * skip + 10.0;
        path = fmt::format("M{},{} C{},{} {},{} {},{}", x1, from.y, x1, from.y - lift * 1.3, x2, to.y - lift * 1.3,
                           x2, to.y - 2);
      }
      svg += fmt::format("<path class=\"map-edge\" d=\"{}\" marker-end=\"url(#map-arrow)\"><title>{} {} builds on {} {}"
                         "</title></path>\n",
                         path, m.number_text(), escape(m.title), dep->number_text(), escape(dep->title));
    }
  }

  for (const auto& m : course.modules) {
    const Box& b = boxes[m.number];
    std::string dots;
    for (int i = 1; i <= 4; ++i) dots += i <= m.difficulty ? "●" : "○";
    svg += fmt::format(
        "<a href=\"{name}.html\" class=\"map-node tier-{tier}\"><title>{num} {title}: {subtitle}</title>"
        "<rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" rx=\"10\"/>"
        "<rect class=\"map-band\" x=\"{x}\" y=\"{y}\" width=\"6\" height=\"{h}\" rx=\"3\"/>"
        "<text x=\"{tx}\" y=\"{y1}\" class=\"map-num\">{num}</text>"
        "<text x=\"{tx}\" y=\"{y2}\" class=\"map-title\">{title}</text>"
        "<text x=\"{tx}\" y=\"{y3}\" class=\"map-meta\">{tier} · {dots} · {hours} h</text></a>\n",
        fmt::arg("name", m.name()), fmt::arg("tier", escape(m.tier)), fmt::arg("num", m.number_text()),
        fmt::arg("title", escape(m.title)), fmt::arg("subtitle", escape(m.subtitle)), fmt::arg("x", b.x),
        fmt::arg("y", b.y), fmt::arg("w", kWidth), fmt::arg("h", kHeight), fmt::arg("tx", b.x + 18),
        fmt::arg("y1", b.y + 22), fmt::arg("y2", b.y + 43), fmt::arg("y3", b.y + 61), fmt::arg("dots", dots),
        fmt::arg("hours", escape(m.hours)));
  }
  svg += "</svg>";
  return svg;
}

}  // namespace kiln::grader
