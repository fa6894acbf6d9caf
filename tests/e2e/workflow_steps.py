#!/usr/bin/env python3
"""Runs the steps of the workflow `grader release` writes, in order, on a clone of a release, as
GitHub Actions would on ubuntu-latest: each `run:` with bash -eo pipefail in the checkout, each
`uses:` by what the action does. Package installs go through an apt-get that only checks that
every package asked for is installed here (the test machine stands in for the runner's image).

Usage: workflow_steps.py RELEASE_FOLDER WORK_FOLDER [MODULE ...]
With modules named, the clone keeps only those modules' folders, so that the step that checks every
module fits a test's time; the steps themselves run unchanged.
"""
import os
import pathlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import yaml

release, work = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
keep = sys.argv[3:]
workflow = yaml.safe_load((release / ".github" / "workflows" / "kiln.yml").read_text())
steps = workflow["jobs"]["check"]["steps"]
checkout = work / "checkout"

# apt-get and sudo as the runner's image would answer them, here without changing the machine.
shims = work / "shims"
shims.mkdir(parents=True)
(shims / "sudo").write_text('#!/usr/bin/env bash\nexec "$@"\n')
(shims / "apt-get").write_text("""#!/usr/bin/env bash
[[ $1 == update ]] && exit 0
[[ $1 == install ]] || { echo "apt-get shim: only update and install are expected, not $*" >&2; exit 1; }
shift
status=0
for pkg in "$@"; do
  [[ $pkg == -* ]] && continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
    { echo "apt-get shim: the workflow installs $pkg, which this machine lacks" >&2; status=1; }
done
exit $status
""")
for shim in shims.iterdir():
    shim.chmod(0o755)
env = dict(os.environ, PATH=f"{shims}:{os.environ['PATH']}", CI="true", GITHUB_ACTIONS="true")
# Under bin/test, its compiler cache, the checkout's paths compiled as bin/test's own (bin/test).
if "CCACHE_DIR" in env:
    env.update(CMAKE_CXX_COMPILER_LAUNCHER="ccache", CCACHE_BASEDIR=str(checkout))
env.pop("KILN_HOME", None)
env.pop("KILN_ROOT", None)


def fail(text):
    print(f"FAIL: {text}")
    sys.exit(1)


def junit_reports(pattern):
    """What mikepenz/action-junit-report reads: testsuite elements of testcase elements."""
    files = sorted(checkout.glob(pattern))
    if not files:
        fail(f"the report step finds no file matching {pattern}")
    for f in files:
        root = ElementTree.parse(f).getroot()
        suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
        if root.tag not in ("testsuite", "testsuites") or not suites:
            fail(f"{f.name}: the root is <{root.tag}>, not a JUnit <testsuites> or <testsuite>")
        cases = [c for s in suites for c in s.findall("testcase")]
        if not cases:
            fail(f"{f.name}: no <testcase>")
        for c in cases:
            if not c.get("name") or not c.get("classname"):
                fail(f"{f.name}: a testcase without name or classname")
        failed = sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
        declared = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
        if failed != declared:
            fail(f"{f.name}: {failed} testcases fail but the suites declare {declared}")
        print(f"  {f.name}: {len(cases)} checks, {failed} not passing")


for number, step in enumerate(steps, 1):
    name = step.get("name") or step.get("uses")
    print(f"== step {number}: {name}", flush=True)
    if "uses" in step:
        action = step["uses"].split("@")[0]
        if action == "actions/checkout":
            subprocess.run(["git", "clone", "-q", str(release), str(checkout)], check=True)
            for module in (checkout / "modules").iterdir() if keep else []:
                if module.name.split("_")[0] not in keep:
                    shutil.rmtree(module)
        elif action == "mikepenz/action-junit-report":
            junit_reports(step["with"]["report_paths"])
        else:
            fail(f"the workflow uses {step['uses']}, which this test does not know how to run")
        continue
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=checkout,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print("\n".join("  " + line for line in done.stdout.splitlines()[-8:]))
    if done.returncode != 0:
        fail(f"step {number} ({name}) exited {done.returncode}")
print(f"the released workflow's {len(steps)} steps passed")
