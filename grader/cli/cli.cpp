#include "cli.h"

namespace kiln::grader::cli {

void on_workspace(CLI::App* sub, Chosen& chosen, std::function<int(const Workspace&)> action) {
  sub->callback([sub, &chosen, action] {
    // A subcommand's callback runs after its own options are parsed; the parent's --root is read
    // when the chosen command runs.
    (void)sub;
    chosen.run = [action](const fs::path& start, char**) { return action(open_workspace(start)); };
  });
}

}  // namespace kiln::grader::cli
