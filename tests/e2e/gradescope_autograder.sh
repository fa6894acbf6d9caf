#!/usr/bin/env bash
# The Gradescope autograder that `grader bundle gradescope` writes, run as Gradescope runs it: the
# zip unpacked into /autograder/source of a clean root, setup.sh run once (it builds the grader
# from the bundle's sources), then for each submission a fresh /autograder/submission and
# /autograder/results, run_autograder, and results.json checked against Gradescope's format and
# against the score the submission deserves.
#
# The root is a bubblewrap namespace: /autograder is a folder of this test's, the system's
# programs and libraries (and the package database) are there read-only, /tmp and HOME are fresh,
# there is no network and nothing else of this machine (no repository, no build folder, no home);
# under bin/test, its compiler cache is, so that setup.sh's build reuses bin/test's compiles.
# setup.sh runs as Gradescope runs it, as root, when this test runs as root; its apt-get is a
# stand-in that fails unless every package asked for is installed here (this machine's packages
# stand in for the image's). The grader sandboxes each submission with bubblewrap inside the root.
# Usage: tests/e2e/gradescope_autograder.sh GRADER_BINARY KILN_HOME
set -euo pipefail
grader=$1 home=$2
module=01_tensor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$SECONDS
say() { printf '[%4ds] %s\n' $((SECONDS - started)) "$*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# The stand-ins the root gets at /opt/image/bin, first on its PATH.
mkdir -p "$work/image/bin"
cat >"$work/image/bin/apt-get" <<'EOF'
#!/usr/bin/env bash
# apt-get of an image that already has every package: it installs nothing, and fails, naming them,
# when a package asked for is not installed.
set -euo pipefail
case ${1:-} in
  update) exit 0 ;;
  install) shift ;;
  *) echo "apt-get (test image): only update and install are expected here, not: $*" >&2; exit 100 ;;
esac
missing=()
for arg in "$@"; do
  [[ $arg == -* ]] && continue
  dpkg-query -W -f='${Status}' "$arg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$arg")
done
if ((${#missing[@]})); then
  echo "apt-get (test image): setup.sh asks for packages this machine does not have: ${missing[*]}" >&2
  exit 100
fi
EOF
chmod +x "$work/image/bin/apt-get"

mkdir -p "$work/bubblewrap-0.6"
cat >"$work/bubblewrap-0.6/bwrap" <<'EOF'
#!/bin/sh
# bwrap as Ubuntu 22.04 (Gradescope's default base image) has it, by its version: 0.6.1, without --size.
[ "$1" = --version ] && { echo "bubblewrap 0.6.1"; exit 0; }
exec /usr/bin/bwrap "$@"
EOF
chmod +x "$work/bubblewrap-0.6/bwrap"

# in_root [--masked-proc | --bubblewrap-0.6] COMMAND...: runs COMMAND in the root, in /autograder.
# bubblewrap run by root covers parts of /proc read-only; a nested sandbox cannot mount a /proc of
# its own under such a cover, so the root lifts them, as a host's whole /proc would be. With
# --masked-proc it keeps them and covers /proc/sys read-only as Docker does, as in a container that
# masks /proc has it; with --bubblewrap-0.6 the root's bwrap says it is 0.6.1. There the grader
# must refuse. The root has no user namespace of its own: run by root, bubblewrap's would map root
# alone, and the grader could not become its sandbox user (as it does, being root on Gradescope).
in_root() {
  local lift='awk '\''$5 ~ "^/proc/." {print $5}'\'' /proc/self/mountinfo | sort -r | xargs -r umount'
  local extra=() cache=() path=/opt/image/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  case $1 in
    --masked-proc) lift=true extra=(--ro-bind /proc/sys /proc/sys); shift ;;
    --bubblewrap-0.6) extra=(--ro-bind "$work/bubblewrap-0.6" /opt/bubblewrap-0.6) path=/opt/bubblewrap-0.6:$path; shift ;;
  esac
  local system=(--ro-bind /usr /usr --ro-bind /etc /etc --ro-bind /var/lib/dpkg /var/lib/dpkg)
  # Under bin/test, its compiler cache with bin/test's settings: the root's builds reuse what
  # bin/test compiled (bin/test).
  if [[ -n ${CCACHE_DIR:-} ]]; then
    mkdir -p "$CCACHE_DIR"
    extra+=(--bind "$CCACHE_DIR" /var/cache/kiln-ccache)
    cache=(--setenv CCACHE_DIR /var/cache/kiln-ccache --setenv CMAKE_CXX_COMPILER_LAUNCHER ccache
           --setenv CCACHE_BASEDIR /autograder/source/kiln --setenv CCACHE_NOHASHDIR "${CCACHE_NOHASHDIR:-}"
           --setenv CCACHE_DEPEND "${CCACHE_DEPEND:-}" --setenv CCACHE_SLOPPINESS "${CCACHE_SLOPPINESS:-}")
  fi
  for dir in /bin /sbin /lib /lib32 /lib64 /libx32; do
    if [[ -L $dir ]]; then system+=(--symlink "$(readlink "$dir")" "$dir")
    elif [[ -d $dir ]]; then system+=(--ro-bind "$dir" "$dir")
    fi
  done
  bwrap --unshare-pid --unshare-ipc --unshare-uts --unshare-net --unshare-cgroup-try --die-with-parent \
    "${system[@]}" --proc /proc --dev /dev --tmpfs /tmp --tmpfs /root "${extra[@]}" \
    --bind "$work/root" /autograder --ro-bind "$work/image" /opt/image --chdir /autograder \
    --clearenv --setenv HOME /root --setenv LANG C.UTF-8 --setenv PATH "$path" "${cache[@]}" \
    -- sh -c "$lift; exec \"\$@\"" sh "$@"
}

# 1. The bundle, for module 01.
KILN_HOME=$home "$grader" --root "$home" bundle gradescope "$work/autograder.zip" --module 1 >/dev/null
mkdir -p "$work/root/source" "$work/root/submission" "$work/root/results"
unzip -q "$work/autograder.zip" -d "$work/root/source"
cp "$work/root/source/run_autograder" "$work/root/run_autograder"
chmod +x "$work/root/run_autograder"
say "bundle unpacked into the root: $(unzip -Z1 "$work/autograder.zip" | wc -l) entries"

# 2. Nothing of this machine inside, and a sandbox nests in the root as the grader makes it.
in_root sh -c 'for p in /work "$0" /home /media /mnt /srv; do [ ! -e "$p" ] || { echo "$p is visible"; exit 1; }; done
               [ -z "$(ls -A /tmp)" ] && [ -z "$(ls -A /root)" ] || { echo "/tmp or HOME is not fresh"; exit 1; }' "$home" ||
  fail "the root shows something of this machine"
# As the grader runs it: as its sandbox user when root (setpriv), with a /proc of its own.
nested='bwrap --unshare-all --die-with-parent --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib'
nested+=' --symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp -- true'
in_root sh -c "if [ \$(id -u) = 0 ]; then setpriv --reuid=61000 --regid=61000 --clear-groups -- $nested; else $nested; fi" ||
  fail "bubblewrap does not nest in the root (message above): the grader's sandbox cannot run here"

# 3. setup.sh, as Gradescope runs it when it builds the image.
setup_started=$SECONDS
in_root bash -c 'bash /autograder/source/setup.sh; status=$?; times >/tmp/times; tail -n 1 /tmp/times; exit $status' >"$work/setup.log" 2>&1 ||
  { cat "$work/setup.log"; fail "setup.sh failed"; }
read -r user_time system_time < <(tail -n 1 "$work/setup.log")
say "setup.sh: $((SECONDS - setup_started)) s, CPU $user_time user $system_time system (it builds the grader from the" \
    "bundle's sources, then what grading needs)"
[[ -x $work/root/source/kiln/build/grader/kiln-grader ]] || fail "setup.sh built no grader in the root"

# results.json: Gradescope's format (https://gradescope-autograders.readthedocs.io/en/latest/specs/:
# "Output format", "Test case status", "Output String Formatting"; and its leaderboards page) as a
# schema, then the score. In Python's json module: the schema reads as data beside the script that
# runs the grade, with nothing to build.
cat >"$work/check_results.py" <<'PY'
import json, re, sys

VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
FORMAT = {"text", "simple_format", "html", "md", "ansi"}
NUMBER, STRING, OBJECT = "number", "string", "object"
TOP = {"score": NUMBER, "execution_time": NUMBER, "output": STRING, "output_format": FORMAT,
       "test_output_format": FORMAT, "test_name_format": FORMAT, "visibility": VISIBILITY,
       "stdout_visibility": VISIBILITY, "extra_data": OBJECT, "tests": "tests", "leaderboard": "leaderboard"}
TEST = {"score": NUMBER, "max_score": NUMBER, "status": {"passed", "failed"}, "name": STRING,
        "name_format": FORMAT, "number": STRING, "output": STRING, "output_format": FORMAT,
        "tags": "tags", "visibility": VISIBILITY, "extra_data": OBJECT}
ENTRY = {"name": STRING, "value": "value", "order": {"asc", "desc"}}


def problems_of(results):
    found = []
    def check(obj, schema, where):
        if not isinstance(obj, dict):
            return found.append(f"{where} is not an object")
        for key, value in obj.items():
            kind = schema.get(key)
            at = f"{where}.{key}"
            if kind is None:
                found.append(f"{at} is not in Gradescope's format")
            elif kind == NUMBER:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    found.append(f"{at} is not a number: {value!r}")
            elif kind == STRING:
                if not isinstance(value, str):
                    found.append(f"{at} is not a string: {value!r}")
            elif kind == OBJECT:
                if not isinstance(value, dict):
                    found.append(f"{at} is not an object")
            elif kind == "value":
                if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                    found.append(f"{at} is neither a number nor a string: {value!r}")
            elif kind == "tags":
                if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
                    found.append(f"{at} is not a list of strings")
            elif kind in ("tests", "leaderboard"):
                if not isinstance(value, list):
                    found.append(f"{at} is not a list")
                    continue
                for i, item in enumerate(value):
                    check(item, TEST if kind == "tests" else ENTRY, f"{at}[{i}]")
                    if kind == "leaderboard" and isinstance(item, dict):
                        found.extend(f"{at}[{i}] has no {k}" for k in ("name", "value") if k not in item)
            elif value not in kind:
                found.append(f"{at} is {value!r}, not one of {sorted(kind)}")
    check(results, TOP, "results")
    if isinstance(results, dict):
        tests = results.get("tests") if isinstance(results.get("tests"), list) else []
        if "score" not in results and (not tests or any("score" not in t for t in tests if isinstance(t, dict))):
            found.append("results has no score, and not every test has one")
    return found


def score_problems(results, expect, checks, points):
    found = []
    tests, score = results.get("tests", []), results.get("score")
    if expect == "refused":
        if score != 0 or tests:
            found.append(f"a refused grade has score {score} and {len(tests)} tests")
        if "could not grade" not in results.get("output", "") or "sandbox is not available" not in results["output"]:
            found.append("a refused grade does not say that the sandbox is not available:\n" + results.get("output", ""))
        return found
    if len(tests) != checks:
        found.append(f"{len(tests)} tests, the module has {checks} checks")
    if sum(t["max_score"] for t in tests) != points:
        found.append(f"the tests' max_score add up to {sum(t['max_score'] for t in tests)}, not the module's {points} points")
    if score != sum(t["score"] for t in tests):
        found.append(f"score {score} is not the sum of the tests' scores {sum(t['score'] for t in tests)}")
    for t in tests:
        if not 0 <= t["score"] <= t["max_score"]:
            found.append(f"{t['name']}: score {t['score']} outside 0..{t['max_score']}")
        if t.get("status") != ("passed" if t["score"] == t["max_score"] else "failed"):
            found.append(f"{t['name']}: status {t.get('status')} with {t['score']} of {t['max_score']} points")
    if expect == "full":
        if score != points:
            found.append(f"score {score}, not the full {points}:\n" + results.get("output", ""))
            found.extend(f"{t['name']}: {t['output']}" for t in tests if t["status"] != "passed")
    else:
        if score != 0:
            found.append(f"score {score}, not 0")
        found.extend(f"{t['name']} failed without a message" for t in tests if not t.get("output", "").strip())
        if expect == "compile_error":
            output = results.get("output", "")
            if "did not compile" not in output or "tensor.cpp" not in output or "std::vector<int>" not in output:
                found.append("the output does not show the compile error (tensor.cpp, std::vector<int>):\n" + output)
            if results.get("output_format", "simple_format") in ("simple_format", "html"):
                found.append("the output holds '<' and '>' and Gradescope would render it as HTML")
    return found


def doctored(results):
    """Copies of a valid results.json, each with one fault the schema must reject."""
    def edit(change):
        copy = json.loads(json.dumps(results))
        change(copy)
        return copy
    yield "an unknown top-level key", edit(lambda r: r.update(scores=r["score"]))
    yield "score as a string", edit(lambda r: r.update(score=str(r["score"])))
    yield "a boolean score", edit(lambda r: r.update(score=True))
    yield "an unknown visibility", edit(lambda r: r.update(visibility="students"))
    yield "an unknown output_format", edit(lambda r: r.update(output_format="markdown"))
    yield "an unknown key in a test", edit(lambda r: r["tests"][0].update(points=1))
    yield "a status Gradescope does not know", edit(lambda r: r["tests"][0].update(status="ok"))
    yield "a test's name as a number", edit(lambda r: r["tests"][0].update(name=1))
    yield "tags not a list of strings", edit(lambda r: r["tests"][0].update(tags="core"))
    yield "no score anywhere", edit(lambda r: [r.pop("score")] + [t.pop("score") for t in r["tests"]])
    yield "a leaderboard entry without a value", edit(lambda r: r.update(leaderboard=[{"name": "time"}]))
    yield "a leaderboard order Gradescope does not know", edit(
        lambda r: r.update(leaderboard=[{"name": "time", "value": 1.5, "order": "up"}]))
    yield "tests not a list", edit(lambda r: r.update(tests={}))


path, expect, module_yaml = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(module_yaml).read()
checks = len(re.findall(r"^\s+test:", text, re.M))
points = sum(int(p) for p in re.findall(r"^\s+points:\s*(\d+)\s*$", text, re.M))
try:
    results = json.load(open(path))
except (OSError, ValueError) as e:
    sys.exit(f"{path}: no valid JSON: {e}")
found = problems_of(results)
if not found:
    found = score_problems(results, expect, checks, points)
if found:
    sys.exit(f"{path} ({expect}):\n  " + "\n  ".join(found))
verdict = f"score {results['score']} of {points}, {len(results.get('tests', []))} tests, in Gradescope's format"
if expect == "refused":
    verdict = "refused, score 0, saying that the sandbox is not available, in Gradescope's format"
if expect == "full":
    copies = list(doctored(results))
    accepted = [why for why, copy in copies if not problems_of(copy)]
    if accepted:
        sys.exit("the schema accepts a doctored results.json: " + "; ".join(accepted))
    verdict += f"; {len(copies)} doctored copies of it rejected"
print(verdict)
PY

# 4. The submissions, each as Gradescope places it, into an emptied submission and results folder.
solution=$home/solutions/$module/src
place() {  # place KIND: fills the root's submission folder
  local to=$work/root/submission
  case $1 in
    reference) cp "$solution"/*.cpp "$to/" ;;
    stubs) cp "$home/modules/$module/src"/*.cpp "$to/" ;;
    compile_error)
      cp "$solution"/*.cpp "$to/"
      printf '\nstatic std::vector<int> numbers = 1;  // no conversion from int\n' >>"$to/tensor.cpp" ;;
    repository)  # a student's checkout, the module written at its place in it
      cp -r "$home/modules" "$home/bin" "$home/grader" "$home/cmake" "$home/CMakeLists.txt" "$home/README.md" "$to/"
      cp "$solution"/*.cpp "$to/modules/$module/src/" ;;
    src_folder) mkdir "$to/src" && cp "$solution"/*.cpp "$to/src/" ;;
  esac
}
grade() {  # grade KIND EXPECT [--masked-proc | --bubblewrap-0.6]
  local kind=$1 expect=$2
  shift 2
  find "$work/root/submission" "$work/root/results" -mindepth 1 -delete
  place "$kind"
  local t=$SECONDS
  in_root "$@" /autograder/run_autograder >"$work/run.log" 2>&1 ||
    { cat "$work/run.log"; fail "$kind: run_autograder failed"; }
  local verdict
  verdict=$(python3 "$work/check_results.py" "$work/root/results/results.json" "$expect" "$home/modules/$module/module.yaml" 2>&1) ||
    { cat "$work/run.log"; fail "$kind: $verdict"; }
  local where=""
  case ${1:-} in
    --masked-proc) where=", in a root whose /proc is masked" ;;
    --bubblewrap-0.6) where=", with Ubuntu 22.04's bubblewrap 0.6.1" ;;
  esac
  say "$kind$where: $((SECONDS - t)) s, $verdict"
}
grade reference full
grade stubs zero
grade compile_error compile_error
grade repository full
grade src_folder full
# Where the sandbox cannot run (a container that masks /proc; bubblewrap older than 0.7), the grade
# refuses, saying why, and runs nothing of the submission.
grade reference refused --masked-proc
grade reference refused --bubblewrap-0.6
say "passed"
