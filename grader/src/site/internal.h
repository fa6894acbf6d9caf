// Shared by the site's translation units (site.cpp: the build, the layout, assets and search;
// site_pages.cpp: what each page says). Not part of the grader's public headers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kiln/grader/site.h"

namespace kiln::grader::site {

std::string escape(std::string_view text);  // for HTML text and attribute values
std::string read_text(const fs::path& path);

struct Page {
  std::string file;         // "17_acceleration.html", at the top of the site
  std::string title;        // "17 Acceleration"
  std::string kind;         // home | module | guide: the body's class
  std::string description;  // <meta name="description">
  std::string body;         // the main column
};

struct Context {
  const Workspace& ws;
  const SiteOptions& options;
  std::string readme;  // README.md of the course, or empty

  // The CLI's description of a command; nullptr when this grader has no such command. When the
  // site is built without the CLI's descriptions, every command counts as present.
  const CommandDoc* command(const std::string& name) const;
  bool has_command(const std::string& name) const;
};

// A `## ` section of a Markdown text whose heading starts with `heading`, without the heading line.
std::string markdown_section(const std::string& markdown, const std::string& heading);

Page home_page(const Context& cx);
Page module_page(const Context& cx, const Module& m);
// A guide written in Markdown (site/pages/*.md, or docs/authoring.md), with {{directives}} that
// insert generated parts: {{readme Start}}, {{commands NAME...}}, {{help NAME...}}, {{modules}}.
Page guide_page(const Context& cx, const fs::path& markdown_file, const std::string& file);

}  // namespace kiln::grader::site
