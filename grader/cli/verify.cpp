// grader verify [N ...|--all] [--seeds N | --mutation [--sample K] [--min-score P] [--recheck-equivalents]
// [--at FILE:LINE]]:
// the instructor's proof that the course is sound, or how many mistakes its checks catch
// (grading.h).
#include "cli.h"

namespace kiln::grader::cli {

void add_verify_command(CLI::App& app, Chosen& chosen) {
  auto* sub = app.add_subcommand(
      "verify", "Instructors: prove modules sound (solution passes, stubs fail, every mutant fires its message)");
  auto options = std::make_shared<VerifyOptions>();
  auto all = std::make_shared<bool>(false);
  sub->add_option("modules", options->modules, "Modules to verify (default: all)");
  sub->add_flag("--all", *all, "Every module");
  sub->add_option("--seed", options->seed, "Seed of the checks' inputs (default: the one `grader check` uses)");
  auto* seeds = sub->add_option("--seeds", options->seeds,
                                "Instead: every reference through its checks at N fresh seeds, as grade draws them")
                    ->check(CLI::PositiveNumber);
  auto* mutation = sub->add_flag("--mutation", options->mutation,
                "Instead: the mutation score, every reference file's generated mutants run through the checks");
  mutation->excludes(seeds);
  sub->add_option("--sample", options->sample, "With --mutation: only K mutants per module, the same K every run")
      ->check(CLI::NonNegativeNumber)
      ->needs(mutation);
  sub->add_option("--min-score", options->min_score, "With --mutation: a module scoring under this percent fails")
      ->check(CLI::Range(0.0, 100.0))
      ->needs(mutation);
  sub->add_flag("--recheck-equivalents", options->recheck_equivalents,
                "With --mutation: also run the mutants module.yaml lists as equivalent; a killed one is a problem")
      ->needs(mutation);
  sub->add_option("--at", options->at,
                  "With --mutation: only the mutants at FILE:LINE (\"acceleration.cpp:207\"; repeatable)")
      ->needs(mutation);
  on_workspace(sub, chosen, [options, all](const Workspace& ws) {
    if (*all) options->modules.clear();
    return verify_course(ws, *options) == 0 ? 0 : 1;
  });
}

}  // namespace kiln::grader::cli
