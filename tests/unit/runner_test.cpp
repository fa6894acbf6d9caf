#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "kiln/grader/build.h"
#include "kiln/grader/diagnose.h"
#include "kiln/grader/process.h"
#include "kiln/grader/recipe.h"
#include "kiln/grader/runner.h"
#include "kiln/grader/sandbox.h"

namespace kiln::grader {
namespace {

TEST(ParseFailure, ReadsTheCataloguedIdParamsAndDetail) {
  const ReportedFailure f = parse_failure(
      "Failed\n[kiln-failure] conv_differs\n[kiln-params] {\"difference\":\"0.25\"}\n[kiln-detail] at [0, 1]\n",
      "t.cpp", 7);
  EXPECT_EQ(f.id, "conv_differs");
  EXPECT_EQ(f.params.at("difference"), "0.25");
  EXPECT_EQ(f.detail, "at [0, 1]");
  EXPECT_EQ(f.line, 7);
  EXPECT_TRUE(f.raw.empty());
}

TEST(ParseFailure, KeepsUncataloguedTextRaw) {
  const ReportedFailure f = parse_failure("Expected equality of these values", "t.cpp", 1);
  EXPECT_TRUE(f.id.empty());
  EXPECT_EQ(f.raw, "Expected equality of these values");
}

TEST(FirstError, PrefersTheFirstErrorInAStudentFile) {
  const std::string log =
      "/usr/include/c++/12/bits/stl_vector.h:10:3: error: template noise\n"
      "/course/modules/01_tensor/src/tensor.cpp:42:7: error: 'x' was not declared in this scope\n"
      "/course/modules/01_tensor/src/tensor.cpp:50:1: error: later error\n";
  const auto d = first_error(log, {"/course/modules/01_tensor/src/tensor.cpp"});
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->line, 42);
  EXPECT_EQ(d->column, 7);
  EXPECT_TRUE(d->in_student_file);
  EXPECT_NE(d->explanation.find("does not know"), std::string::npos);
}

// g++ 12's own output, as a student sees it in a log: std::max of an int64_t and an int.
TEST(FirstError, KeepsTheNoteThatExplainsATemplateCallAndNamesBothTypes) {
  const std::string log =
      "/course/modules/01_tensor/src/tensor.cpp: In function ‘int64_t f(int64_t)’:\n"
      "/course/modules/01_tensor/src/tensor.cpp:3:49: error: no matching function for call to ‘max(int64_t&, int)’\n"
      "    3 | std::int64_t f(std::int64_t n) { return std::max(n, 0); }\n"
      "      |                                         ~~~~~~~~^~~~~~\n"
      "In file included from /usr/include/c++/12/algorithm:60,\n"
      "                 from /course/modules/01_tensor/src/tensor.cpp:1:\n"
      "/usr/include/c++/12/bits/stl_algobase.h:254:5: note: candidate: ‘template<class _Tp> constexpr const _Tp& std::max(const _Tp&, const _Tp&)’\n"
      "  254 |     max(const _Tp& __a, const _Tp& __b)\n"
      "      |     ^~~\n"
      "/usr/include/c++/12/bits/stl_algobase.h:254:5: note:   template argument deduction/substitution failed:\n"
      "/course/modules/01_tensor/src/tensor.cpp:3:49: note:   deduced conflicting types for parameter ‘const _Tp’ (‘long int’ and ‘int’)\n"
      "    3 | std::int64_t f(std::int64_t n) { return std::max(n, 0); }\n"
      "      |                                         ~~~~~~~~^~~~~~\n"
      "/usr/include/c++/12/bits/stl_algobase.h:300:5: note: candidate: ‘template<class _Tp, class _Compare> constexpr const _Tp& std::max(const _Tp&, const _Tp&, _Compare)’\n"
      "  300 |     max(const _Tp& __a, const _Tp& __b, _Compare __comp)\n"
      "      |     ^~~\n"
      "/usr/include/c++/12/bits/stl_algobase.h:300:5: note:   template argument deduction/substitution failed:\n"
      "/course/modules/01_tensor/src/tensor.cpp:3:49: note:   deduced conflicting types for parameter ‘const _Tp’ (‘long int’ and ‘int’)\n"
      "    3 | std::int64_t f(std::int64_t n) { return std::max(n, 0); }\n"
      "      |                                         ~~~~~~~~^~~~~~\n"
      "In file included from /usr/include/c++/12/algorithm:61:\n"
      "/usr/include/c++/12/bits/stl_algo.h:5746:5: note: candidate: ‘template<class _Tp> constexpr _Tp std::max(initializer_list<_Tp>)’\n"
      " 5746 |     max(initializer_list<_Tp> __l)\n"
      "      |     ^~~\n"
      "/usr/include/c++/12/bits/stl_algo.h:5746:5: note:   template argument deduction/substitution failed:\n"
      "/course/modules/01_tensor/src/tensor.cpp:3:49: note:   mismatched types ‘std::initializer_list<_Tp>’ and ‘long int’\n"
      "    3 | std::int64_t f(std::int64_t n) { return std::max(n, 0); }\n"
      "      |                                         ~~~~~~~~^~~~~~\n"
      "/usr/include/c++/12/bits/stl_algo.h:5756:5: note: candidate: ‘template<class _Tp, class _Compare> constexpr _Tp std::max(initializer_list<_Tp>, _Compare)’\n"
      " 5756 |     max(initializer_list<_Tp> __l, _Compare __comp)\n"
      "      |     ^~~\n"
      "/usr/include/c++/12/bits/stl_algo.h:5756:5: note:   template argument deduction/substitution failed:\n"
      "/course/modules/01_tensor/src/tensor.cpp:3:49: note:   mismatched types ‘std::initializer_list<_Tp>’ and ‘long int’\n"
      "    3 | std::int64_t f(std::int64_t n) { return std::max(n, 0); }\n"
      "      |                                         ~~~~~~~~^~~~~~\n";
  const auto d = first_error(log, {"/course/modules/01_tensor/src/tensor.cpp"});
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->line, 3);
  ASSERT_FALSE(d->notes.empty()) << "the note that explains the error is kept";
  EXPECT_NE(d->notes[0].find("deduced conflicting types"), std::string::npos) << d->notes[0];
  EXPECT_NE(d->explanation.find("different types (long int and int)"), std::string::npos) << d->explanation;
  EXPECT_NE(d->explanation.find("std::max<std::int64_t>(n, 0)"), std::string::npos) << d->explanation;
}

TEST(FirstError, ExplainsAMissingSemicolon) {
  const std::string log =
      "/course/modules/01_tensor/src/tensor.cpp: In function ‘int f(int)’:\n"
      "/course/modules/01_tensor/src/tensor.cpp:2:2: error: expected ‘,’ or ‘;’ before ‘return’\n"
      "    2 |  return x; }\n"
      "      |  ^~~~~~\n"
      "/course/modules/01_tensor/src/tensor.cpp:2:12: warning: no return statement in function returning non-void [-Wreturn-type]\n"
      "    2 |  return x; }\n"
      "      |            ^\n";
  const auto d = first_error(log, {"/course/modules/01_tensor/src/tensor.cpp"});
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->line, 2);
  EXPECT_NE(d->explanation.find("missing its semicolon"), std::string::npos) << d->explanation;
}

TEST(FirstError, ExplainsAMissingReturn) {
  const std::string log =
      "/course/modules/01_tensor/src/tensor.cpp: In function ‘int f(int)’:\n"
      "/course/modules/01_tensor/src/tensor.cpp:1:37: error: control reaches end of non-void function [-Werror=return-type]\n"
      "    1 | int f(int n) { if (n > 0) return 1; }\n"
      "      |                                     ^\n"
      "cc1plus: some warnings being treated as errors\n";
  const auto d = first_error(log, {"/course/modules/01_tensor/src/tensor.cpp"});
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->line, 1);
  EXPECT_NE(d->explanation.find("return a value on every path"), std::string::npos) << d->explanation;
}

TEST(FirstError, ReadsNvccsOwnForm) {
  const std::string log =
      "/course/modules/17_acceleration/src/gpu_kernels.cpp(14): error: identifier \"sum\" is undefined\n"
      "1 error detected in the compilation of \"lib_17_acceleration__student_cuda.cu\".\n";
  const auto d = first_error(log, {"/course/modules/17_acceleration/src/gpu_kernels.cpp"});
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->file, "/course/modules/17_acceleration/src/gpu_kernels.cpp");
  EXPECT_EQ(d->line, 14);
  EXPECT_EQ(d->message, "identifier \"sum\" is undefined");
  EXPECT_TRUE(d->in_student_file);
}

TEST(FirstError, ExplainsALinkerError) {
  const auto d = first_error("x.o: in function `f':\nx.cpp:(.text+0x1): undefined reference to `kiln::g()'\n", {});
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->message, "undefined reference to kiln::g()");
}

TEST(RunBuiltChecks, SkipsDeviceChecksWithoutNvccAndReportsADeviceCompileError) {
  Check on_gpu;
  on_gpu.id = "on_gpu";
  on_gpu.test = "ProbeDevice.Adds";
  on_gpu.device = true;
  BuildResult built;  // no device binary: nvcc was not found
  built.device_skip_reason = "no CUDA Toolkit: nvcc was not found";
  RunResult run = run_built_checks(built, {&on_gpu}, {});
  ASSERT_EQ(run.checks.size(), 1u);
  EXPECT_EQ(run.checks[0].status, Status::skipped);
  EXPECT_NE(run.checks[0].reason.find("no CUDA Toolkit"), std::string::npos) << run.checks[0].reason;

  built.device_error = Diagnostic{.file = "/course/src/gpu_kernels.cpp", .line = 14, .message = "bad"};
  run = run_built_checks(built, {&on_gpu}, {});
  EXPECT_EQ(run.checks[0].status, Status::did_not_compile);
  EXPECT_EQ(run.checks[0].reason, "did not compile for the device: /course/src/gpu_kernels.cpp:14: bad");
}

TEST(RunProcess, ReportsSignalsExitCodesAndDeadlines) {
  EXPECT_EQ(run_process({.argv = {"sh", "-c", "exit 3"}}).exit_code, 3);
  EXPECT_EQ(run_process({.argv = {"sh", "-c", "kill -SEGV $$"}}).signal, SIGSEGV);
  ProcessSpec sleeper{.argv = {"sleep", "30"}};
  sleeper.should_stop = [](double elapsed) { return elapsed > 0.2; };
  const ProcessResult r = run_process(sleeper);
  EXPECT_TRUE(r.stopped);
  EXPECT_LT(r.wall_s, 5.0) << "a stopped process must not be waited for";
}

TEST(RunProcess, PassesOnNoDescriptorButTheStandardOnesAndTheEventPipe) {
  // A descriptor the grader happens to hold, not marked close-on-exec, at a number of its own.
  const int stray = ::dup2(::open("/dev/null", O_RDONLY), 57);
  ASSERT_EQ(stray, 57);
  const ProcessResult r = run_process({.argv = {"ls", "/proc/self/fd"}, .event_fd = 3});
  ::close(stray);
  std::set<std::string> fds;
  std::istringstream lines(r.out);
  for (std::string fd; lines >> fd;) fds.insert(fd);
  EXPECT_TRUE(fds.count("3")) << "the event pipe is passed on: " << r.out;
  EXPECT_FALSE(fds.count("57")) << "a stray descriptor leaked into the child: " << r.out;
}

TEST(RunProcess, KeepsOnlyTheCappedOutputButCountsAll) {
  ProcessSpec flood{.argv = {"sh", "-c", "head -c 1000000 /dev/zero"}, .output_cap = 1000};
  const ProcessResult r = run_process(flood);
  EXPECT_EQ(r.out.size(), 1000u);
  EXPECT_EQ(r.out_bytes, 1000000u);
}

TEST(RunProcess, DeliversEventLinesAsTheyArrive) {
  std::vector<std::string> events;
  ProcessSpec spec{.argv = {"sh", "-c", "echo one >&3; echo two >&3"}, .event_fd = 3};
  spec.on_event = [&](std::string_view line) { events.emplace_back(line); };
  run_process(spec);
  EXPECT_EQ(events, (std::vector<std::string>{"one", "two"}));
}

TEST(RunProcess, ALongEventLineCostsLinearTimeAndLinesSplitAcrossReadsArriveWhole) {
  // 48 MiB on one line, then two short lines, read 64 KiB at a time.
  std::vector<std::size_t> sizes;
  ProcessSpec spec{.argv = {"sh", "-c", "head -c 50331648 /dev/zero | tr '\\0' x >&3; printf '\\nab\\ncd\\n' >&3"},
                   .event_fd = 3, .event_line_cap = std::size_t(64) << 20};
  spec.on_event = [&](std::string_view line) { sizes.push_back(line.size()); };
  run_process(spec);
  EXPECT_EQ(sizes, (std::vector<std::size_t>{50331648, 2, 2}));
}

TEST(SandboxUsers, TwoGradersOnOneMachineNeverShareAUser) {
  std::optional<SandboxUser> first(std::in_place);
  const SandboxUser second;
  EXPECT_NE(first->uid(), second.uid());
  EXPECT_GE(second.uid(), kSandboxUid);
  EXPECT_LT(second.uid(), kSandboxUid + kSandboxUids);
  const int freed = first->uid();
  first.reset();
  const SandboxUser third;
  EXPECT_EQ(third.uid(), freed) << "a user is free again once its grader lets go of it";
}

}  // namespace
}  // namespace kiln::grader

namespace kiln::grader {
namespace {

TEST(ShortFunction, NamesAHelperOfAnAnonymousNamespaceAndALambdasFunction) {
  EXPECT_EQ(short_function("kiln::Tensor::sum(long, bool) const"), "Tensor::sum");
  EXPECT_EQ(short_function("kiln::(anonymous namespace)::encode_ordinary(std::string const&)"), "encode_ordinary");
  EXPECT_EQ(short_function("(anonymous namespace)::helper(int)"), "helper");
  EXPECT_EQ(short_function("kiln::BpeTokenizer::encode(std::string const&, bool) const::{lambda(std::string const&, "
                           "std::vector<long, std::allocator<long> >&)#1}::operator()(std::string const&, "
                           "std::vector<long, std::allocator<long> >&) const"),
            "a lambda in BpeTokenizer::encode");
}

TEST(SanitizerReport, NamesTheBufferWithTheRightArticleAndCount) {
  auto report_for = [](int bytes, int access = 4) {
    const std::string err = fmt::format(
        "==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1 at pc 0x2 bp 0x3 sp 0x4\n"
        "WRITE of size {} at 0x1 thread T0\n"
        "    #0 0x5 in kiln::add(int, int) /c/modules/01_probe/src/probe.cpp:9\n"
        "0x1 is located 0 bytes to the right of {}-byte region [0x6,0x7)\n"
        "allocated by thread T0 here:\n"
        "    #0 0x8 in operator new[](unsigned long) ../../src/libsanitizer/asan/asan_new_delete.cpp:98\n"
        "    #1 0x9 in kiln::add(int, int) /c/modules/01_probe/src/probe.cpp:8\n"
        "SUMMARY: AddressSanitizer: heap-buffer-overflow\n",
        access, bytes);
    const auto r = sanitizer_report(err, {"/c/modules/01_probe/src/probe.cpp"});
    return r ? r->text : std::string();
  };
  EXPECT_NE(report_for(8).find("an 8-byte buffer (2 floats)"), std::string::npos) << report_for(8);
  EXPECT_NE(report_for(4).find("a 4-byte buffer (1 float)"), std::string::npos) << report_for(4);
  EXPECT_NE(report_for(11).find("an 11-byte buffer"), std::string::npos) << report_for(11);
  EXPECT_NE(report_for(40).find("a 40-byte buffer (10 floats)"), std::string::npos) << report_for(40);
  EXPECT_NE(report_for(800).find("an 800-byte buffer"), std::string::npos) << report_for(800);
  // Counted in the elements of the access: a double or an int64 read past an 8-byte buffer is
  // one value of 8 bytes, not two floats; an access of another size counts nothing.
  EXPECT_NE(report_for(8, 8).find("wrote 8 bytes past the end of an 8-byte buffer (1 value of 8 bytes)"),
            std::string::npos) << report_for(8, 8);
  EXPECT_NE(report_for(24, 8).find("a 24-byte buffer (3 values of 8 bytes)"), std::string::npos) << report_for(24, 8);
  EXPECT_EQ(report_for(8, 1).find("floats"), std::string::npos) << report_for(8, 1);
}

// The launcher a trusted build was configured with (ccache, as bin/test configures its own build),
// which the submission's compile in the sandbox leaves out.
TEST(CompilerLauncher, ReadsTheLauncherTheBuildWasConfiguredWith) {
  const fs::path dir = fs::temp_directory_path() / ("kiln-launcher-" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto cache = [&](const std::string& text) {
    std::ofstream(dir / "CMakeCache.txt") << "CMAKE_BUILD_TYPE:STRING=Check\n" << text;
    return compiler_launcher(dir);
  };
  EXPECT_EQ(cache(""), "");
  EXPECT_EQ(cache("CMAKE_CXX_COMPILER_LAUNCHER:STRING=ccache\nCMAKE_C_COMPILER_LAUNCHER:STRING=other\n"), "ccache");
  EXPECT_EQ(cache("CMAKE_CXX_COMPILER_LAUNCHER:STRING=/usr/bin/env;CCACHE_DEPEND=1;ccache\n"),
            "/usr/bin/env CCACHE_DEPEND=1 ccache");
  EXPECT_EQ(cache("CMAKE_CXX_COMPILER_LAUNCHER:STRING=\n"), "");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::grader
