// The course site: static HTML generated from the sources the checks use (module.yaml, the module
// headers and stubs, the chapters in docs/), so that no page can drift from the code students get.
// Templates and assets live in site/ of the framework; Markdown goes through md4c, math through
// KaTeX in the browser, and every asset is copied into the output (it works from disk, offline).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/grader/workspace.h"

namespace kiln::grader {

// One command of the CLI as the CLI itself describes it, so that the site's command pages quote
// the real options rather than a copy that could go stale.
struct CommandDoc {
  std::string name;         // "check"
  std::string description;  // the one line `grader --help` shows
  std::string help;         // the full `grader NAME --help`
};

struct SiteOptions {
  fs::path out;                    // empty: site/_site under the course root
  std::vector<CommandDoc> commands;  // empty: commands are listed without descriptions
};

struct SiteSummary {
  fs::path out;
  int pages = 0;
  double seconds = 0;
};

// Writes the whole site into options.out. Refuses a non-empty folder that is not a previous site
// (CourseError), so that a mistyped --out cannot overwrite someone's files.
SiteSummary build_site(const Workspace& ws, const SiteOptions& options);

// Serves `dir` over HTTP/1.0 on address:port until the process is stopped. Port 0 picks a free
// one; on_ready gets the port actually bound. Throws CourseError when it cannot bind.
void serve_site(const fs::path& dir, const std::string& address, int port, const std::function<void(int)>& on_ready);

// A function the student writes: a stub in a student file that throws kiln::NotImplemented,
// matched to its declaration in the public headers (the module's own, then its prerequisites').
struct StudentFunction {
  std::string name;         // "Tensor::reshape", "autograd::AddFunction::backward"
  std::string signature;    // the header's declaration, qualified: "Tensor Tensor::reshape(Shape shape) const"
  std::string description;  // the first sentence(s) of the header's comment
  std::string contract;     // the header's whole comment, lines kept
  std::string file;         // the student file, relative to the module: "src/tensor.cpp"
  int line = 0;             // where the definition starts in it
  std::string header;       // where it is declared, relative to the course root; empty if nowhere
};
std::vector<StudentFunction> student_functions(const Course& course, const Module& m);

// CommonMark plus tables and $math$ (as <x-equation> elements for KaTeX), headings given ids
// (unique, and none of reserved_ids: the ids the page itself uses).
std::string markdown_to_html(const std::string& markdown, const std::vector<std::string>& reserved_ids = {});

// The module map: every module as a node, linked to its page, with an arrow from each prerequisite.
std::string module_map_svg(const Course& course);

}  // namespace kiln::grader
