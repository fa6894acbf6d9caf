// grader new-module NN slug: a new module from the commented template, which `grader verify NN`
// proves sound as it stands.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.h"
#include "kiln/grader/new_module.h"

namespace kiln::grader::cli {

namespace {

// A module number as the course writes it ("7", "07"), read in decimal.
int module_number(const std::string& text, const std::string& what) {
  if (text.empty() || text.size() > 3 || !std::all_of(text.begin(), text.end(), ::isdigit))
    throw CourseError(fmt::format("{} '{}' is not a module number (1 to 99, as 21 or 07)", what, text));
  return std::stoi(text);
}

struct Options {
  std::string number, slug, title, tier = "foundation";
  std::vector<std::string> requires_ = {"1"};
};

}  // namespace

void add_new_module_command(CLI::App& app, Chosen& chosen) {
  auto options = std::make_shared<Options>();
  auto* sub = app.add_subcommand(
      "new-module", "Instructors: write a new module from the template (module.yaml, header, stub, test, reference, "
                    "mutant, chapter) that `grader verify NN` proves sound as it stands");
  sub->add_option("number", options->number, "The module's number, 1 to 99, not taken yet (e.g. 21)")->required();
  sub->add_option("slug", options->slug, "Its slug: lower-case letters, digits and underscores (e.g. flash_attention)")
      ->required();
  sub->add_option("--title", options->title, "Its title (default: the slug, capitalised)");
  sub->add_option("--tier", options->tier, "Its tier")->check(CLI::IsMember(module_tiers()));
  sub->add_option("--requires", options->requires_, "The modules it builds on, e.g. 1,6 (default: 1)")->delimiter(',');
  on_workspace(sub, chosen, [options](const Workspace& ws) {
    NewModule spec;
    spec.number = module_number(options->number, "number");
    spec.slug = options->slug;
    spec.title = options->title;
    spec.tier = options->tier;
    spec.requires_.clear();
    for (const auto& r : options->requires_) spec.requires_.push_back(module_number(r, "prerequisite"));
    const std::vector<fs::path> written = write_new_module(ws.course, ws.kiln_home, spec);

    const std::string name = fmt::format("{:02d}_{}", spec.number, spec.slug);
    std::string text = fmt::format("Module {} written from the template (grader/templates/module/):\n", name);
    for (const auto& f : written) text += fmt::format("  {}\n", f.generic_string());
    const fs::path chapter = fs::path("docs") / (name + ".md");
    if (std::find(written.begin(), written.end(), chapter) == written.end())
      text += fmt::format("  {} kept as it was\n", chapter.generic_string());
    text += fmt::format(
        "It holds one example check (scale), its reference solution, its stub and the mutant that proves its one "
        "catalogued failure.\nNext: `grader verify {0:02d}` proves it sound as it stands; then replace the example with "
        "the module's own, step by step as docs/authoring.md (\"Add a module\") says, verifying again after each step.\n",
        spec.number);
    std::fputs(text.c_str(), stdout);
    return 0;
  });
}

}  // namespace kiln::grader::cli
