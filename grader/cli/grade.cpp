// grader grade: score submissions, sandboxed (grading.h), and always write the result files.
#include <cstdio>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli.h"

namespace kiln::grader {

namespace {

struct GradeOutput {
  std::string format = "json";  // json | junit | gradescope
  std::string out;              // a file (one submission) or a folder (batch)
};

void write_text(const fs::path& path, const std::string& text) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream out(path);
  out << text;
  if (!out) throw CourseError(fmt::format("cannot write {}", path.string()));
}

std::string render(const std::string& format, const std::vector<Report>& reports, double seconds) {
  if (format == "gradescope") return render_gradescope(reports, seconds);
  if (format == "junit") return render_junit(reports);
  nlohmann::json all = nlohmann::json::array();
  for (const auto& r : reports) all.push_back(nlohmann::json::parse(render_json(r)));
  return (reports.size() == 1 ? all[0] : nlohmann::json{{"version", kResultsVersion}, {"modules", all}}).dump(2) + "\n";
}

int run_grade(const Workspace& ws, const GradeOptions& options, const GradeOutput& output) {
  if (output.format != "json" && output.format != "junit" && output.format != "gradescope")
    throw CourseError(fmt::format("unknown format '{}': use gradescope, junit or json", output.format));
  const GradeResults results = grade_submissions(ws, options);
  if (!options.submission.empty()) {
    const std::string text = render(output.format, results.reports[0], results.seconds);
    if (output.out.empty()) std::fputs(text.c_str(), stdout);
    else write_text(output.out, text);
    int score = 0, max = 0;
    for (const auto& r : results.reports[0]) score += r.score, max += r.max_score;
    std::fprintf(stderr, "graded %s: %d/%d points\n", results.submissions[0].path.string().c_str(), score, max);
    return 0;
  }
  const fs::path out = output.out.empty() ? fs::path(options.batch).parent_path() / "results" : fs::path(output.out);
  const std::string extension = output.format == "junit" ? ".xml" : ".json";
  for (std::size_t i = 0; i < results.submissions.size(); ++i)
    write_text(out / (results.submissions[i].path.filename().string() + extension),
               render(output.format, results.reports[i], results.seconds));
  write_text(out / "gradebook.csv", render_gradebook(results));
  const double n = std::max<double>(1, results.submissions.size());
  const GradePhases& p = results.phases;
  std::fprintf(stderr, "per submission: staging %.2f s, compiling and linking %.2f s, its checks (observed and judged) "
                       "%.2f s, timing the speed-graded checks %.2f s, clean-up %.2f s\n",
               p.stage / n, p.compile / n, p.checks / n, p.speed / n, p.end / n);
  if (results.reference_retimed > 0)
    std::fprintf(stderr, "the reference's speed, timed once per %d submissions, was timed again %d time%s and moved by "
                         "at most %.1f%%\n", kReferenceReuse, results.reference_retimed,
                 results.reference_retimed == 1 ? "" : "s", 100 * results.reference_drift);
  std::fprintf(stderr, "graded %zu submissions in %.1f s (%.1f per minute); results in %s\n", results.submissions.size(),
               results.seconds, results.seconds > 0 ? 60.0 * results.submissions.size() / results.seconds : 0.0,
               out.string().c_str());
  return 0;
}

}  // namespace

namespace cli {

void add_grade_command(CLI::App& app, Chosen& chosen) {
  auto* sub = app.add_subcommand(
      "grade", "Instructors and CI: score submissions sandboxed and write result files (Gradescope, JUnit, JSON)");
  auto options = std::make_shared<GradeOptions>();
  auto output = std::make_shared<GradeOutput>();
  sub->add_option("submission", options->submission, "A submission folder (a student's course tree or its files)");
  sub->add_option("--batch", options->batch, "A folder of submission folders: one result each and a gradebook.csv");
  sub->add_option("--module", options->modules, "The module to grade (repeatable)");
  sub->add_flag("--all", options->all, "Grade every module");
  sub->add_option("--format", output->format, "Result format")->check(CLI::IsMember({"gradescope", "junit", "json"}));
  sub->add_option("--out", output->out, "Result file (one submission) or folder (batch; default: results/ beside it)");
  sub->add_option("-j,--jobs", options->jobs,
                  "Submissions at work at once (with speed checks, one more compiles while another waits to be "
                  "timed)")
      ->check(CLI::Range(1, 64));
  sub->add_flag("--no-sandbox", options->no_sandbox, "Grade without the sandbox (trusted code only)");
  sub->add_option("--compile-timeout", options->compile_timeout_s, "Seconds a submission's compiles may take in all")
      ->check(CLI::Range(1.0, 3600.0));
  on_workspace(sub, chosen, [options, output](const Workspace& ws) { return run_grade(ws, *options, *output); });
}

}  // namespace cli

}  // namespace kiln::grader
