// grader release OUT: the student repository (no solutions, no mutants, no instructor-only
// files), proven free of solution code; and grader bundle gradescope OUT.zip: a Gradescope
// autograder built on `grader grade`.
#include <algorithm>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "cli.h"
#include "kiln/grader/leaks.h"
#include "kiln/grader/process.h"

namespace kiln::grader {

namespace {

// What never goes to students: the solutions and mutants, the framework's own tests (their
// fixtures hold solution code), CI set-up and the authoring guide.
const std::vector<std::string> kInstructorOnly = {"solutions/", "tests/", ".ci/", ".github/", "docs/authoring.md",
                                                  ".grader/", "build/", "grader/templates/module/"};

bool instructor_only(const std::string& relative) {
  for (const auto& prefix : kInstructorOnly)
    if (relative.rfind(prefix, 0) == 0) return true;
  return false;
}

// The course's files: what git tracks (and new files it does not ignore), or every file.
std::vector<std::string> course_files(const fs::path& root) {
  std::vector<std::string> out;
  const ProcessResult git = run_process({.argv = {"git", "-C", root.string(), "ls-files", "-z", "--cached", "--others",
                                                  "--exclude-standard"},
                                         .output_cap = 64 << 20});
  if (git.ok() && fs::exists(root / ".git")) {
    std::size_t start = 0;
    for (std::size_t i = 0; i < git.out.size(); ++i) {
      if (git.out[i] != '\0') continue;
      out.push_back(git.out.substr(start, i - start));
      start = i + 1;
    }
  } else {
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
      const std::string rel = fs::relative(it->path(), root).generic_string();
      if (it->is_directory() && (rel == ".git" || rel == "build" || rel == ".grader")) it.disable_recursion_pending();
      else if (it->is_regular_file()) out.push_back(rel);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void copy_preserving_mode(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), to);
  return text;
}

void write_executable(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
}

void require_empty(const fs::path& out) {
  if (fs::exists(out) && !(fs::is_directory(out) && fs::is_empty(out)))
    throw CourseError(fmt::format("{} already exists and is not empty: name a new folder", out.string()));
}

// Every module's student files as committed (relative path -> content), and a note for each one
// whose working copy differs: what students receive must not depend on a working tree.
std::map<std::string, std::string> committed_stubs(const Workspace& ws, std::vector<std::string>& notes,
                                                   const std::string& what) {
  std::map<std::string, std::string> out;
  for (const auto& m : ws.course.modules) {
    const PristineStubs stubs = pristine_stubs(ws, m);
    for (const auto& f : m.student_files)
      out[fs::relative(m.dir / f, ws.course.root).generic_string()] = read_file(stubs.root / f);
    const std::string note = edited_stubs_note(m, stubs, what);
    if (!note.empty() && stubs.from_git) notes.push_back(note);
  }
  return out;
}

// The release's README: for students, generated from the course itself.
std::string student_readme(const Workspace& ws) {
  std::string modules;
  for (const auto& m : ws.course.modules)
    modules += fmt::format("| {} | {} | {} | {} |\n", m.number_text(), m.title, m.subtitle, m.hours);
  std::string text = read_file(ws.kiln_home / "grader" / "templates" / "student-README.md");
  return replace_all(text, "@MODULES@", modules);
}

}  // namespace

std::vector<Body> solution_bodies(const Workspace& ws) {
  std::vector<Body> bodies;
  for (const auto& m : ws.course.modules) {
    std::vector<Body> mine;
    for (const auto& f : m.student_files) {
      const fs::path file = ws.course.solution_dir(m) / f;
      if (!fs::exists(file)) continue;
      auto found = function_bodies(file, 12);
      mine.insert(mine.end(), found.begin(), found.end());
    }
    // A helper the reference shares with the module's given code (an error-raising helper, say)
    // is public already: students receive it. Only the rest is solution code.
    const auto given = find_leaks(mine, m.given_sources());
    for (auto& body : mine) {
      const bool public_already = std::any_of(given.begin(), given.end(), [&](const Leak& l) {
        return l.body.file == body.file && l.body.line == body.line;
      });
      if (!public_already) bodies.push_back(std::move(body));
    }
  }
  return bodies;
}

int run_release(const Workspace& ws, const std::string& out_name) {
  require_solutions(ws, "release");
  const fs::path out = fs::absolute(out_name);
  require_empty(out);
  std::vector<std::string> notes;
  const auto stubs = committed_stubs(ws, notes, "the release");
  for (const auto& note : notes) std::printf("Note: %s.\n", note.c_str());
  std::size_t copied = 0;
  for (const auto& rel : course_files(ws.course.root)) {
    if (instructor_only(rel) || !fs::is_regular_file(ws.course.root / rel)) continue;
    if (const auto stub = stubs.find(rel); stub != stubs.end()) {
      write_if_changed(out / rel, stub->second);
    } else if (rel == "README.md") {
      write_if_changed(out / rel, student_readme(ws));
    } else {
      copy_preserving_mode(ws.course.root / rel, out / rel);
    }
    ++copied;
  }
  fs::create_directories(out / ".github" / "workflows");
  fs::copy_file(ws.kiln_home / "grader" / "templates" / "github-workflow.yml", out / ".github" / "workflows" / "kiln.yml",
                fs::copy_options::overwrite_existing);

  // The proof: no function body of any reference solution appears anywhere in the release.
  const auto bodies = solution_bodies(ws);
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(out))
    if (e.is_regular_file() && e.file_size() < (4u << 20)) files.push_back(e.path());
  const auto leaks = find_leaks(bodies, files);
  if (!leaks.empty()) {
    bool in_stub = false, elsewhere = false;
    for (const auto& leak : leaks) {
      const std::string where = fs::relative(leak.found_in, out).generic_string();
      const bool stub = stubs.count(where) > 0;
      (stub ? in_stub : elsewhere) = true;
      std::fprintf(stderr, "grader: solution code in the release: the body of %s (%s:%d) appears in %s%s\n",
                   leak.body.signature.c_str(), fs::relative(leak.body.file, ws.course.root).c_str(), leak.body.line,
                   where.c_str(), stub ? ", a student file as committed" : "");
    }
    fs::remove_all(out);
    if (in_stub) {
      std::fprintf(stderr, "grader: no release written: a stub committed to the course holds the reference "
                           "solution's code (a module was written and committed). Commit the stub again (`git log -- FILE` "
                           "finds the last commit that had it) and release again\n");
    }
    if (elsewhere) {
      std::fprintf(stderr, "grader: no release written: the other files named above hold the reference solution's "
                           "code (a chapter or a given file that quotes it); take it out of them and release again\n");
    }
    return 1;
  }
  // A repository of its own, so that `grader reset` finds the original stubs.
  if (run_process({.argv = {"git", "-C", out.string(), "init", "-q"}}).ok()) {
    run_process({.argv = {"git", "-C", out.string(), "add", "-A"}});
    run_process({.argv = {"git", "-C", out.string(), "-c", "user.name=Kiln", "-c", "user.email=kiln@localhost", "commit",
                          "-q", "-m", "Kiln course"}});
  }
  std::printf("Release written to %s: %zu files, %zu modules, without solutions/ and mutants.\n"
              "No solution code in it: %zu function bodies of the reference solutions compared, token by token, "
              "with all %zu files.\n",
              out.string().c_str(), copied + 1, ws.course.modules.size(), bodies.size(), files.size());
  return 0;
}

int run_bundle(const Workspace& ws, const std::string& kind, const std::string& zip_name,
               const std::vector<std::string>& modules, bool all) {
  require_solutions(ws, "bundle");
  if (kind != "gradescope") throw CourseError(fmt::format("unknown bundle '{}': the one kind is gradescope", kind));
  if (!all && modules.empty()) throw CourseError("name the module the assignment grades with --module N, or --all");
  std::string selection = all ? "--all" : "";
  for (const auto& name : modules) {
    const Module& m = ws.course.find(name);
    selection += fmt::format("{}--module {}", selection.empty() ? "" : " ", m.number_text());
  }

  const fs::path zip = fs::absolute(zip_name);
  const fs::path stage = ws.state_dir() / "bundle";
  fs::remove_all(stage);
  std::vector<std::string> notes;
  const auto stubs = committed_stubs(ws, notes, "the autograder");
  for (const auto& note : notes) std::printf("Note: %s.\n", note.c_str());
  for (const auto& rel : course_files(ws.course.root)) {
    // The autograder keeps the solutions (prerequisites link against them); the sandbox hides them.
    if (rel.rfind("tests/", 0) == 0 || rel.rfind(".ci/", 0) == 0 || rel.rfind(".grader/", 0) == 0) continue;
    if (const auto stub = stubs.find(rel); stub != stubs.end()) write_if_changed(stage / "kiln" / rel, stub->second);
    else if (fs::is_regular_file(ws.course.root / rel)) copy_preserving_mode(ws.course.root / rel, stage / "kiln" / rel);
  }
  const fs::path templates = ws.kiln_home / "grader" / "templates" / "gradescope";
  write_executable(stage / "setup.sh", replace_all(read_file(templates / "setup.sh"), "@SELECTION@", selection));
  write_executable(stage / "run_autograder",
                   replace_all(read_file(templates / "run_autograder"), "@SELECTION@", selection));
  fs::remove(zip);
  const ProcessResult z = run_process({.argv = {"zip", "-q", "-r", zip.string(), "."}, .cwd = stage});
  fs::remove_all(stage);
  if (!z.ok()) throw CourseError("zip failed: " + z.err + " (apt-get install zip)");
  std::printf("Gradescope autograder written to %s (grades: %s). Upload it as the assignment's autograder.\n",
              zip.string().c_str(), selection.c_str());
  return 0;
}

namespace cli {

void add_release_commands(CLI::App& app, Chosen& chosen) {
  auto* release = app.add_subcommand("release", "Instructors: write the student repository, proven free of solutions");
  auto out = std::make_shared<std::string>();
  release->add_option("out", *out, "A new folder for the release")->required();
  on_workspace(release, chosen, [out](const Workspace& ws) { return run_release(ws, *out); });

  struct Bundle {
    std::string kind, zip;
    std::vector<std::string> modules;
    bool all = false;
  };
  auto bundle = std::make_shared<Bundle>();
  auto* sub = app.add_subcommand("bundle", "Instructors: package an autograder for a CI engine (gradescope)");
  sub->add_option("kind", bundle->kind, "gradescope")->required();
  sub->add_option("zip", bundle->zip, "The zip file to write")->required();
  sub->add_option("--module", bundle->modules, "The module the assignment grades (repeatable)");
  sub->add_flag("--all", bundle->all, "Grade every module");
  on_workspace(sub, chosen, [bundle](const Workspace& ws) {
    return run_bundle(ws, bundle->kind, bundle->zip, bundle->modules, bundle->all);
  });
}

}  // namespace cli

}  // namespace kiln::grader
