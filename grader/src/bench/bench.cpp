#include "kiln/grader/bench.h"

#include <sys/resource.h>
#include <sys/time.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "kiln/grader/process.h"
#include "kiln/grader/report.h"

namespace kiln::grader {

namespace {

std::string cpu_model() {
  const std::string info = read_file("/proc/cpuinfo");
  const auto at = info.find("model name");
  if (at == std::string::npos) return "unknown processor";
  const auto colon = info.find(':', at);
  return info.substr(colon + 2, info.find('\n', colon) - colon - 2);
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

fs::path own_directory() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

}  // namespace

namespace {

// Runs the roofline probe once: its figures, and the share of a core it got.
Machine probe_machine(const fs::path& probe) {
  rusage before{}, after{};
  getrusage(RUSAGE_CHILDREN, &before);
  const ProcessResult r = run_process({.argv = {probe.string()}});
  getrusage(RUSAGE_CHILDREN, &after);
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (!r.ok() || !j.is_object())
    throw CourseError(fmt::format("measuring the machine failed ({}): {}", probe.string(), r.err));
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  const double cpu = seconds(after.ru_utime) - seconds(before.ru_utime) + seconds(after.ru_stime) - seconds(before.ru_stime);
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M", std::localtime(&now));
  Machine m{cpu_model(), j["peak_gflops"], j["bandwidth_gbs"], j["llc_bytes"], stamp};
  m.core_share = r.wall_s > 0 ? std::min(1.0, cpu / r.wall_s) : 1.0;
  return m;
}

// Below this share of a core, the probe shared its core with another program.
constexpr double kBusyShare = 0.9;

}  // namespace

Machine machine_roofline(const Workspace& ws, bool remeasure) {
  const fs::path cache = ws.state_dir() / "machine.json";
  // A rebuilt probe measures afresh: its code, or the flags it was built with, may have changed.
  const fs::path probe = own_directory() / "kiln-roofline";
  std::error_code ec;
  const auto built = fs::last_write_time(probe, ec).time_since_epoch().count();
  const std::string key = fmt::format("{} @ {} / probe {}", cpu_model(), host_name(), built);
  if (!remeasure && fs::exists(cache)) {
    const auto j = nlohmann::json::parse(read_file(cache), nullptr, false);
    // Figures measured under load, or contradicted by a later run, are never reused.
    if (j.is_object() && j.value("key", "") == key && !j.value("stale", false)) {
      Machine m{j.value("cpu", ""), j.value("peak_gflops", 0.0), j.value("bandwidth_gbs", 0.0), j.value("llc_bytes", 0L),
                j.value("measured_at", "")};
      m.core_share = j.value("core_share", 1.0);
      return m;
    }
  }
  Machine m = probe_machine(probe);
  if (m.core_share < kBusyShare) {
    const double first = m.core_share;
    m = probe_machine(probe);  // once more: the other program may have finished
    if (m.core_share < kBusyShare) {
      m.warnings.push_back(fmt::format(
          "the machine was busy while it was measured (the probe got {:.0f}% and then {:.0f}% of a core): the peak "
          "and bandwidth, and so the roofline percentages, are too low. Close what else runs and use --remeasure",
          100 * first, 100 * m.core_share));
    }
  }
  write_if_changed(cache, nlohmann::json{{"key", key},
                                         {"cpu", m.cpu},
                                         {"peak_gflops", m.peak_gflops},
                                         {"bandwidth_gbs", m.bandwidth_gbs},
                                         {"llc_bytes", m.llc_bytes},
                                         {"measured_at", m.measured_at},
                                         {"core_share", m.core_share},
                                         {"stale", m.core_share < kBusyShare}}
                                  .dump(2));
  return m;
}

std::string implausible_machine(const std::vector<BenchKernel>& kernels, const Machine& machine) {
  for (const auto& k : kernels) {
    if (k.error.empty() && machine.peak_gflops > 0 && k.gflops > 1.05 * machine.peak_gflops) {
      return fmt::format("{} ran at {:.1f} GFLOP/s, above the measured peak of {:.1f}: the peak was measured while the "
                         "machine was busy. It is measured again on the next run",
                         k.name, k.gflops, machine.peak_gflops);
    }
  }
  return "";
}


std::vector<BenchKernel> parse_benchmark_json(const std::string& json, const Machine& machine) {
  std::vector<BenchKernel> kernels;
  std::map<std::string, std::size_t> index;
  std::vector<int> order;  // registration order (Google Benchmark's family index)
  // Google Benchmark writes NaN for the spread of a constant counter, which JSON does not allow.
  std::string text = json;
  for (const std::string bad : {": NaN", ": -NaN", ": nan", ": -nan", ": Infinity", ": -Infinity", ": inf", ": -inf"}) {
    for (std::size_t at; (at = text.find(bad)) != std::string::npos;) text.replace(at, bad.size(), ": null");
  }
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("benchmarks")) return kernels;
  for (const auto& b : j["benchmarks"]) {
    std::string run = b.value("run_name", b.value("name", ""));
    if (const auto suffix = run.rfind("/real_time"); suffix != std::string::npos && suffix + 10 == run.size())
      run.erase(suffix);
    const auto slash = run.find('/');
    if (!index.count(run)) {
      index[run] = kernels.size();
      BenchKernel k;
      k.group = run.substr(0, slash);
      k.name = slash == std::string::npos ? run : run.substr(slash + 1);
      kernels.push_back(k);
      order.push_back(b.value("family_index", static_cast<int>(order.size())));
    }
    BenchKernel& k = kernels[index[run]];
    if (b.value("error_occurred", false)) {
      k.error = b.value("error_message", "error");
      continue;
    }
    const bool median = b.value("aggregate_name", "") == "median";
    if (!median && b.value("run_type", "") == "aggregate") continue;
    if (!median && k.ms > 0) continue;  // one plain run is enough until the median arrives
    const std::string unit = b.value("time_unit", "ms");
    const double scale = unit == "ns" ? 1e-6 : unit == "us" ? 1e-3 : unit == "s" ? 1e3 : 1.0;
    k.ms = b.value("real_time", 0.0) * scale;
    k.flops = b.value("flops", 0.0);
    k.bytes = b.value("bytes", 0.0);
    k.extra_bytes = b.value("extra_bytes", 0.0);
    k.input_bytes = b.value("input_bytes", 0.0);
    k.role = static_cast<int>(b.value("role", 0.0));
  }
  // Interleaved runs come back shuffled: put them back in the order the module registered them.
  std::vector<std::size_t> by_order(kernels.size());
  for (std::size_t i = 0; i < by_order.size(); ++i) by_order[i] = i;
  std::stable_sort(by_order.begin(), by_order.end(), [&](std::size_t a, std::size_t b) { return order[a] < order[b]; });
  std::vector<BenchKernel> sorted;
  for (std::size_t i : by_order) sorted.push_back(kernels[i]);
  kernels = std::move(sorted);

  // Derived figures; ratios within each group, against its naive and its library baseline.
  std::map<std::string, double> naive_ms, library_ms;
  for (const auto& k : kernels) {
    if (!k.error.empty() || k.ms <= 0) continue;
    if (k.role == 1) naive_ms[k.group] = k.ms;
    if (k.role == 2) library_ms[k.group] = k.ms;
  }
  for (auto& k : kernels) {
    if (!k.error.empty() || k.ms <= 0) continue;
    const double s = k.ms / 1e3;
    k.gflops = k.flops / s / 1e9;
    k.gbs = k.bytes / s / 1e9;
    k.intensity = k.bytes > 0 ? k.flops / k.bytes : 0;
    if (k.flops > 0) {
      const double roof = std::min(machine.peak_gflops, k.intensity * machine.bandwidth_gbs);
      k.roof_pct = roof > 0 ? 100.0 * k.gflops / roof : 0;
    } else if (machine.bandwidth_gbs > 0) {
      k.roof_pct = 100.0 * k.gbs / machine.bandwidth_gbs;  // pure data movement: the bandwidth is the roof
    }
    if (naive_ms.count(k.group)) k.vs_naive = naive_ms[k.group] / k.ms;
    if (library_ms.count(k.group)) k.vs_library = library_ms[k.group] / k.ms;
  }
  return kernels;
}

namespace {

// The device's figures, from the context the GPU bench reports them in.
Machine device_machine(const std::string& json) {
  Machine m;
  const auto j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object() || !j.contains("context")) return m;
  const auto& context = j["context"];
  auto number = [&](const char* key) {
    try {
      return std::stod(context.value(key, "0"));
    } catch (const std::exception&) {
      return 0.0;
    }
  };
  m.cpu = context.value("kiln_device", "CUDA device");
  m.peak_gflops = number("kiln_peak_gflops");
  m.bandwidth_gbs = number("kiln_bandwidth_gbs");
  m.measured_at = "from the CUDA runtime's device attributes";
  return m;
}

}  // namespace

namespace {

// bench --emulator: the same bench program, asked to count its GPU kernels on the emulator.
BenchReport run_emulator_counts(const Workspace& ws, const BenchCommand& cmd, const Module& m, BenchReport report) {
  report.emulator = true;
  // Counting needs no speed; the check build's flags keep the compile short.
  CourseBuild build(ws.course, ws.build_dir("bench-emulator"), ws.kiln_home, "-O1");
  const TestTarget target = cmd.solution ? solution_target(ws.course, m) : student_target(ws.course, m);
  BuildResult built;
  const bool ok = build.build_named(standard_targets(ws.course), {target.bench_name()}, built);
  report.commands = built.commands;
  if (!ok)
    throw CourseError(fmt::format("the bench does not build: {}. Run grader check {} first.",
                                  built.error ? built.error->message : "", m.number_text()));
  const std::vector<std::string> argv = {(build.dir() / target.bench_name()).string(), "--kiln-emulator"};
  report.commands.push_back(shell_quote(argv));
  const ProcessResult r = run_process({.argv = argv, .output_cap = 16 << 20});
  if (!r.started || r.signal != 0)
    throw CourseError(fmt::format("the bench crashed: {}", r.signal ? describe_signal(r.signal) : r.start_error));
  report.counted = parse_counted(r.out);
  if (report.counted.empty())
    throw CourseError(fmt::format("module {} has no kernels to count on the emulator (its bench registers none with "
                                  "kiln::bench::add_counted)",
                                  m.number_text()));
  report.warp_svg = (ws.state_dir() / "bench" / (m.number_text() + "-warp.svg")).string();
  write_if_changed(report.warp_svg, warp_access_svg(report));
  return report;
}

}  // namespace

BenchReport run_bench(const Workspace& ws, const BenchCommand& cmd) {
  const Module& m = ws.course.find(cmd.module);
  if (!cmd.gpu && m.bench_sources().empty())
    throw CourseError(fmt::format("module {} has no benchmarks (no {}/bench/)", m.number_text(), m.name()));
  if (cmd.gpu && m.device_bench_sources().empty())
    throw CourseError(fmt::format("module {} has no GPU bench (no {}/device/bench/)", m.number_text(), m.name()));
  if (cmd.solution) require_solutions(ws, "bench --solution");
  if (cmd.emulator && cmd.gpu) throw CourseError("--emulator counts on the CPU, --gpu times on a device: choose one");
  BenchReport report{m.name(), m.number_text(), m.title, cmd.solution ? "solution" : "student", {}, {}, {}, {}, {}};
  if (cmd.emulator) return run_emulator_counts(ws, cmd, m, report);
  report.repetitions = cmd.repetitions;
  report.gpu = cmd.gpu;
  if (!cmd.gpu) report.machine = machine_roofline(ws, cmd.remeasure);

  // Optimised for this processor, whatever the check build uses.
  CourseBuild build(ws.course, ws.build_dir("bench"), ws.kiln_home, "-O3 -march=native -ffp-contract=fast -DNDEBUG");
  if (cmd.gpu && build.nvcc().empty())
    throw CourseError("the GPU bench needs the CUDA Toolkit, and nvcc was not found (set KILN_NVCC to it if it is "
                      "installed somewhere unusual). `grader bench " + m.number_text() + "` times the CPU kernels.");
  const TestTarget target = cmd.solution ? solution_target(ws.course, m) : student_target(ws.course, m);
  const std::string binary = cmd.gpu ? target.gpu_bench_name() : target.bench_name();
  BuildResult built;
  const bool ok = build.build_named(standard_targets(ws.course), {binary}, built);
  report.commands = built.commands;
  if (!ok) {
    const std::string where = built.error && !built.error->file.empty()
                                  ? fmt::format("{}:{}: ", relative_to(ws.course.root, built.error->file.string()),
                                                built.error->line)
                                  : "";
    throw CourseError(fmt::format("the bench does not build: {}{}. Run grader check {} first.", where,
                                  built.error ? built.error->message : "", m.number_text()));
  }
  std::vector<std::string> argv = {(build.dir() / binary).string(), "--benchmark_format=json",
                                   fmt::format("--benchmark_repetitions={}", cmd.repetitions),
                                   "--benchmark_enable_random_interleaving=true",
                                   "--benchmark_report_aggregates_only=true",
                                   fmt::format("--benchmark_min_time={}", cmd.min_time_s)};
  if (cmd.full) argv.push_back("--kiln-full");
  report.commands.push_back("OMP_NUM_THREADS=1 " + shell_quote(argv));
  const ProcessResult r = run_process({.argv = argv, .env = {{"OMP_NUM_THREADS", "1"}}, .output_cap = 16 << 20});
  if (!r.started || r.signal != 0)
    throw CourseError(fmt::format("the bench crashed: {}", r.signal ? describe_signal(r.signal) : r.start_error));
  if (cmd.gpu && r.exit_code == 3)  // the GPU bench found no device it can use
    throw CourseError(fmt::format("{}. The GPU bench needs one; `grader bench {}` times the CPU kernels, and "
                                  "`grader check {}` runs the GPU kernels on the emulator.",
                                  r.err.substr(0, r.err.find('\n')), m.number_text(), m.number_text()));
  if (cmd.gpu) report.machine = device_machine(r.out);
  report.kernels = parse_benchmark_json(r.out, report.machine);
  if (report.kernels.empty()) throw CourseError("the bench reported nothing:\n" + r.err.substr(0, 2000));
  if (const std::string w = implausible_machine(report.kernels, report.machine); !cmd.gpu && !w.empty()) {
    report.machine.warnings.push_back(w);
    const fs::path cache = ws.state_dir() / "machine.json";
    auto j = nlohmann::json::parse(read_file(cache), nullptr, false);
    if (j.is_object()) write_if_changed(cache, (j["stale"] = true, j).dump(2));
  }

  const fs::path dir = ws.state_dir() / "bench";
  const std::string stem = m.number_text() + (cmd.gpu ? "-gpu" : "");
  report.bars_svg = (dir / (stem + ".svg")).string();
  write_if_changed(report.bars_svg, bars_svg(report));
  // A roofline only where some kernel counts its arithmetic; a growth plot only where kernels
  // were timed on inputs of several sizes.
  const auto any = [&](auto has) { return std::any_of(report.kernels.begin(), report.kernels.end(), has); };
  if (any([](const BenchKernel& k) { return k.flops > 0; })) {
    report.roofline_svg = (dir / (stem + "-roofline.svg")).string();
    write_if_changed(report.roofline_svg, roofline_svg(report));
  }
  if (any([](const BenchKernel& k) { return k.input_bytes > 0; })) {
    report.growth_svg = (dir / (stem + "-growth.svg")).string();
    write_if_changed(report.growth_svg, growth_svg(report));
  }
  return report;
}

namespace {

const char* role_label(int role) { return role == 1 ? " (naive)" : role == 2 ? " (library)" : ""; }

std::string ratio(double r) { return r > 0 ? fmt::format("{:.2f}×", r) : "-"; }

}  // namespace

std::string render_counted_text(const BenchReport& r);  // emulator.cpp
std::string render_counted_json(const BenchReport& r);

std::string render_bench_text(const BenchReport& r) {
  if (r.emulator) return render_counted_text(r);
  std::string out = fmt::format("Bench {} · {} ({}{})\n", r.number, r.title, r.variant, r.gpu ? ", GPU" : "");
  if (r.gpu) {
    out += fmt::format("Device: {}: FP32 peak {:.0f} GFLOP/s, memory {:.0f} GB/s, ridge at {:.1f} FLOP/byte ({})\n",
                       r.machine.cpu, r.machine.peak_gflops, r.machine.bandwidth_gbs,
                       r.machine.bandwidth_gbs > 0 ? r.machine.peak_gflops / r.machine.bandwidth_gbs : 0.0,
                       r.machine.measured_at);
  } else out += fmt::format("Machine: {}, single thread: peak {:.1f} GFLOP/s (FMA loop), bandwidth {:.1f} GB/s (triad), "
                     "ridge at {:.1f} FLOP/byte; measured {}\n",
                     r.machine.cpu, r.machine.peak_gflops, r.machine.bandwidth_gbs,
                     r.machine.bandwidth_gbs > 0 ? r.machine.peak_gflops / r.machine.bandwidth_gbs : 0.0,
                     r.machine.measured_at);
  for (const auto& w : r.machine.warnings) out += "Warning: " + w + ".\n";
  // A group whose kernels count no arithmetic and no traffic (a tokenizer's trainers) shows its
  // times and ratios only.
  std::map<std::string, bool> counted;
  for (const auto& k : r.kernels) counted[k.group] = counted[k.group] || k.flops > 0 || k.bytes > 0;
  std::string group;
  for (const auto& k : r.kernels) {
    if (k.group != group) {
      group = k.group;
      if (counted[group]) {
        out += fmt::format("\n{}\n  {:<26} {:>10} {:>9} {:>8} {:>8} {:>9} {:>9} {:>9}\n", group, "kernel", "time",
                           "GFLOP/s", "GB/s", "FLOP/B", "roofline", "vs naive", r.gpu ? "% cuBLAS" : "vs lib");
      } else {
        out += fmt::format("\n{}\n  {:<26} {:>10} {:>9}\n", group, "kernel", "time", "vs naive");
      }
    }
    const std::string label = k.name + role_label(k.role);
    if (!k.error.empty()) {
      out += fmt::format("  {:<26} not timed: {}\n", label, k.error);
      continue;
    }
    if (!counted[group]) {
      out += fmt::format("  {:<26} {:>10} {:>9}\n", label, format_duration(k.ms), ratio(k.vs_naive));
      continue;
    }
    const std::string vs_library =
        r.gpu ? (k.vs_library > 0 ? fmt::format("{:.1f}%", 100 * k.vs_library) : "-") : ratio(k.vs_library);
    out += fmt::format("  {:<26} {:>10} {:>9.2f} {:>8.2f} {:>8.2f} {:>8.0f}% {:>9} {:>9}", label, format_duration(k.ms), k.gflops,
                       k.gbs, k.intensity, k.roof_pct, ratio(k.vs_naive), vs_library);
    if (k.extra_bytes > 0) out += fmt::format("  +{:.1f} MiB temporary", k.extra_bytes / (1 << 20));
    out += "\n";
  }
  std::vector<std::string> plots;
  for (const std::string& plot : {r.bars_svg, r.roofline_svg, r.growth_svg})
    if (!plot.empty()) plots.push_back(plot);
  out += fmt::format("\nMedian of {} interleaved repetitions; every kernel was checked against its reference just "
                     "before it was timed.\nPlots: {}\n",
                     r.repetitions, fmt::join(plots, ", "));
  return out;
}

std::string render_bench_json(const BenchReport& r) {
  if (r.emulator) return render_counted_json(r);
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : r.kernels) {
    kernels.push_back({{"group", k.group},        {"name", k.name},        {"role", k.role},
                       {"ms", k.ms},              {"flops", k.flops},      {"bytes", k.bytes},
                       {"extra_bytes", k.extra_bytes}, {"gflops", k.gflops}, {"gbs", k.gbs},
                       {"intensity", k.intensity}, {"roofline_percent", k.roof_pct},
                       {"vs_naive", k.vs_naive},  {"vs_library", k.vs_library}, {"input_bytes", k.input_bytes},
                       {"error", k.error}});
  }
  nlohmann::json plots = nlohmann::json::array();
  for (const std::string& plot : {r.bars_svg, r.roofline_svg, r.growth_svg})
    if (!plot.empty()) plots.push_back(plot);
  return nlohmann::json{{"module", r.module},
                        {"variant", r.variant},
                        {"gpu", r.gpu},
                        {"machine",
                         {{"cpu", r.machine.cpu},
                          {"peak_gflops", r.machine.peak_gflops},
                          {"bandwidth_gbs", r.machine.bandwidth_gbs},
                          {"llc_bytes", r.machine.llc_bytes}}},
                        {"kernels", kernels},
                        {"plots", plots}}
             .dump(2) +
         "\n";
}

namespace {

const char* kPalette[] = {"#2b6cb0", "#c05621", "#2f855a", "#9b2c2c", "#6b46c1", "#b7791f",
                          "#2c7a7b", "#97266d", "#1a202c", "#d53f8c", "#718096", "#38a169"};
constexpr int kColors = sizeof kPalette / sizeof kPalette[0];

}  // namespace

namespace {

// The legend beside a plot: a swatch and a line of text per entry, from (x, y) down.
std::string legend(double x, double y, const std::vector<std::pair<std::string, std::string>>& entries, bool circles) {
  std::string out;
  for (const auto& [color, text] : entries) {
    out += circles ? fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"/>", x + 5, y - 4, color)
                   : fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"10\" fill=\"{}\"/>", x, y - 9, color);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", x + 18, y, xml_escape(text));
    y += 18;
  }
  return out;
}

}  // namespace

std::string roofline_svg(const BenchReport& r) {
  // The plot on the left, and a legend on the right naming each point: labels beside points
  // overlap as soon as two kernels land close together.
  const double plot_w = 720, legend_w = 330, w = plot_w + legend_w, left = 70, right = 20, top = 40, bottom = 60;
  const double x0 = 0.01, x1 = 1000, y0 = 0.01;
  const double y1 = std::max(1.0, r.machine.peak_gflops * 3);
  std::vector<const BenchKernel*> points;
  for (const auto& k : r.kernels)
    if (k.error.empty() && k.flops > 0 && k.intensity > 0) points.push_back(&k);
  const double h = std::max(480.0, top + 60 + 18.0 * static_cast<double>(2 * points.size()));
  auto px = [&](double x) { return left + (std::log10(x) - std::log10(x0)) / (std::log10(x1) - std::log10(x0)) * (plot_w - left - right); };
  auto py = [&](double y) { return h - bottom - (std::log10(y) - std::log10(y0)) / (std::log10(y1) - std::log10(y0)) * (h - top - bottom); };
  std::string s = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n"
                              "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
                              "<text x=\"{}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">Roofline · module {} {} ({})</text>\n",
                              w, h, left, r.number, xml_escape(r.title), r.variant);
  for (double x = x0; x <= x1 * 1.001; x *= 10) {
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e2e8f0\"/><text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
                     px(x), top, h - bottom, h - bottom + 16, x);
  }
  for (double y = y0; y <= y1 * 1.001; y *= 10) {
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e2e8f0\"/><text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
                     left, py(y), plot_w - right, left - 6, py(y) + 4, y);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n", (left + plot_w - right) / 2, h - 18);
  s += fmt::format("<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">GFLOP/s</text>\n", (top + h - bottom) / 2, (top + h - bottom) / 2);
  // The roof: bandwidth times intensity, up to the peak.
  const double ridge = r.machine.peak_gflops / std::max(r.machine.bandwidth_gbs, 1e-9);
  const double xa = std::max(x0, y0 / std::max(r.machine.bandwidth_gbs, 1e-9));
  s += fmt::format("<polyline fill=\"none\" stroke=\"#1a202c\" stroke-width=\"2\" points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\"/>\n",
                   px(xa), py(xa * r.machine.bandwidth_gbs), px(ridge), py(r.machine.peak_gflops), px(x1), py(r.machine.peak_gflops));
  // The roof's label sits above its flat part, left-aligned at the ridge or right-aligned at the
  // edge, whichever keeps it inside the plot.
  const bool fits_right = px(ridge) + 230 < plot_w - right;
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">peak {:.1f} GFLOP/s · {:.1f} GB/s</text>\n",
                   fits_right ? px(ridge) + 6 : plot_w - right - 4, py(r.machine.peak_gflops) - 8,
                   fits_right ? "start" : "end", r.machine.peak_gflops, r.machine.bandwidth_gbs);
  // The legend, one heading per group and one line per kernel under it.
  int i = 0;
  double legend_y = top + 10;
  std::string group;
  for (const BenchKernel* k : points) {
    if (k->group != group) {
      group = k->group;
      s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-weight=\"bold\">{}</text>\n", plot_w + 10,
                       legend_y + (i ? 8 : 0), xml_escape(group));
      legend_y += i ? 26 : 18;
    }
    const double x = std::clamp(k->intensity, x0, x1), y = std::clamp(k->gflops, y0, y1);
    const char* color = kPalette[i++ % kColors];
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\" fill-opacity=\"0.85\"><title>{} / {}: {:.2f} GFLOP/s</title></circle>\n",
                     px(x), py(y), color, xml_escape(k->group), xml_escape(k->name), k->gflops);
    s += legend(plot_w + 10, legend_y, {{color, fmt::format("{}{}: {:.1f} GFLOP/s", k->name, role_label(k->role), k->gflops)}}, true);
    legend_y += 18;
  }
  return s + "</svg>\n";
}

std::string bars_svg(const BenchReport& r) {
  // One logarithmic scale for every group, so that a 1.4× bar is shorter than a 94× one wherever
  // they are, and the bars of different groups can be compared.
  const double w = 920, row = 22, left = 230, right = 170, top = 70;
  std::map<std::string, double> slowest;
  for (const auto& k : r.kernels)
    if (k.error.empty()) slowest[k.group] = std::max(slowest[k.group], k.ms);
  double top_speed = 10;
  for (const auto& k : r.kernels)
    if (k.error.empty() && k.ms > 0) top_speed = std::max(top_speed, slowest[k.group] / k.ms);
  const double decades = std::ceil(std::log10(top_speed) - 1e-9);
  const double span = w - left - right;
  auto bar = [&](double speed) { return span * std::log10(std::max(speed, 1.0)) / decades; };

  const char* kColors[] = {"#2b6cb0", "#a0aec0", "#4a5568"};  // your kernel, naive, library
  std::string body;
  std::string group;
  double y = top;
  for (const auto& k : r.kernels) {
    if (k.group != group) {
      group = k.group;
      y += 12;
      body += fmt::format("<text x=\"10\" y=\"{:.0f}\" font-weight=\"bold\">{}</text>\n", y, xml_escape(group));
      y += 6;
    }
    y += row;
    body += fmt::format("<text x=\"{}\" y=\"{:.0f}\" text-anchor=\"end\">{}{}</text>\n", left - 8, y - 6,
                        xml_escape(k.name), role_label(k.role));
    if (!k.error.empty()) {
      body += fmt::format("<text x=\"{}\" y=\"{:.0f}\" fill=\"#9b2c2c\">not timed</text>\n", left, y - 6);
      continue;
    }
    const double speed = slowest[group] / k.ms, len = bar(speed);
    body += fmt::format("<rect x=\"{}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>"
                        "<text x=\"{:.1f}\" y=\"{:.0f}\">{:.2f}× · {}</text>\n",
                        left, y - row + 4, std::max(len, 2.0), row - 8, kColors[std::clamp(k.role, 0, 2)],
                        left + std::max(len, 2.0) + 6, y - 6, speed, format_duration(k.ms));
  }
  // The axis: 1×, 10×, 100× ... with grid lines under the bars.
  std::string axis;
  for (int d = 0; d <= static_cast<int>(decades); ++d) {
    const double x = left + span * d / decades;
    axis += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2:.0f}\" stroke=\"#e2e8f0\"/>"
                        "<text x=\"{0:.1f}\" y=\"{3:.0f}\" text-anchor=\"middle\" fill=\"#4a5568\">{4:g}×</text>\n",
                        x, top - 4, y + 4, y + 20, std::pow(10.0, d));
  }
  // The key names the roles this bench has: module 10 has no library baseline.
  bool has_role[3] = {false, false, false};
  for (const auto& k : r.kernels) has_role[std::clamp(k.role, 0, 2)] = true;
  std::string key;
  double key_x = left;
  for (const auto& [role, label, width] : {std::tuple{0, "your kernel", 130.0}, std::tuple{1, "naive baseline", 150.0},
                                           std::tuple{2, "library baseline (Eigen)", 200.0}}) {
    if (!has_role[role]) continue;
    key += legend(key_x, 48, {{kColors[role], label}}, false);
    key_x += width;
  }
  return fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{:.0f}\" font-family=\"sans-serif\" font-size=\"12\">\n"
                     "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
                     "<text x=\"10\" y=\"24\" font-size=\"15\" font-weight=\"bold\">Module {} {} ({}): speed-up over the slowest kernel of each group (log scale)</text>\n"
                     "{}{}{}<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"middle\" fill=\"#4a5568\">speed-up, the same scale for every group</text>\n</svg>\n",
                     w, y + 48, r.number, xml_escape(r.title), r.variant, key, axis, body, left + span / 2, y + 38);
}

namespace {

// "16 KiB", "1 MiB", "512 B": a size as the growth plot's axis names it.
std::string size_label(double bytes) {
  if (bytes >= 1 << 20) return fmt::format("{:g} MiB", bytes / (1 << 20));
  if (bytes >= 1 << 10) return fmt::format("{:g} KiB", bytes / (1 << 10));
  return fmt::format("{:g} B", bytes);
}

// "1 ms", "10 s", "100 µs": a round time of the growth plot's axis.
std::string time_label(double ms) {
  if (ms >= 1e3) return fmt::format("{:g} s", ms / 1e3);
  if (ms >= 1) return fmt::format("{:g} ms", ms);
  return fmt::format("{:g} µs", ms * 1e3);
}

}  // namespace

std::string growth_svg(const BenchReport& r) {
  // One series per kernel name, its points the groups' input sizes, in the order registered.
  struct Series {
    std::string label;
    int role = 0;
    std::vector<std::pair<double, double>> points;  // (input bytes, ms)
  };
  std::vector<Series> series;
  std::set<double> sizes;
  double fastest = 0, slowest = 0;
  for (const auto& k : r.kernels) {
    if (!k.error.empty() || k.ms <= 0 || k.input_bytes <= 0) continue;
    const std::string label = k.name + role_label(k.role);
    auto found = std::find_if(series.begin(), series.end(), [&](const Series& s) { return s.label == label; });
    if (found == series.end()) found = series.insert(series.end(), Series{label, k.role, {}});
    found->points.emplace_back(k.input_bytes, k.ms);
    sizes.insert(k.input_bytes);
    fastest = fastest > 0 ? std::min(fastest, k.ms) : k.ms;
    slowest = std::max(slowest, k.ms);
  }
  const double plot_w = 640, legend_w = 330, w = plot_w + legend_w, h = 440, left = 80, right = 20, top = 50,
               bottom = 60;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">Module {} {} ({}): time against input size "
      "(both axes logarithmic)</text>\n",
      w, h, left, r.number, xml_escape(r.title), r.variant);
  if (sizes.empty()) {
    return s + fmt::format("<text x=\"{}\" y=\"{}\">no kernel was timed</text>\n</svg>\n", left, h / 2);
  }
  // x: from half a step below the smallest size to half a step above the largest; y: whole decades.
  const double x0 = *sizes.begin() / std::sqrt(2.0), x1 = *sizes.rbegin() * std::sqrt(2.0);
  const double y0 = std::pow(10.0, std::floor(std::log10(fastest))), y1 = std::pow(10.0, std::ceil(std::log10(slowest) + 1e-9));
  auto px = [&](double x) { return left + std::log(x / x0) / std::log(x1 / x0) * (plot_w - left - right); };
  auto py = [&](double y) { return h - bottom - std::log10(y / y0) / std::log10(y1 / y0) * (h - top - bottom); };
  for (const double size : sizes) {
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e2e8f0\"/><text x=\"{0:.1f}\" "
                     "y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                     px(size), top, h - bottom, h - bottom + 16, size_label(size));
  }
  for (double y = y0; y <= y1 * 1.001; y *= 10) {
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e2e8f0\"/><text x=\"{3}\" "
                     "y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                     left, py(y), plot_w - right, left - 6, py(y) + 4, time_label(y));
  }
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#a0aec0\"/>\n", left, top,
                   plot_w - left - right, h - top - bottom);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">input size</text>\n", (left + plot_w - right) / 2,
                   h - 22);
  s += fmt::format("<text x=\"18\" y=\"{0}\" transform=\"rotate(-90 18 {0})\" text-anchor=\"middle\">time per call "
                   "(median)</text>\n",
                   (top + h - bottom) / 2);
  double legend_y = top + 10;
  for (std::size_t i = 0; i < series.size(); ++i) {
    const Series& line = series[i];
    const char* color = kPalette[i % kColors];
    std::string points;
    for (const auto& [x, y] : line.points) points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} points=\"{}\"/>\n", color,
                     line.role == 1 ? " stroke-dasharray=\"6 4\"" : "", points);
    for (const auto& [x, y] : line.points) {
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"><title>{} on {}: {}</title></circle>\n",
                       px(x), py(y), color, xml_escape(line.label), size_label(x), format_duration(y));
    }
    // The key: the line's own stroke, dashed for the naive baseline, and its point.
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"2\"{4}/>"
                     "<circle cx=\"{5:.1f}\" cy=\"{1:.1f}\" r=\"4\" fill=\"{3}\"/><text x=\"{6:.1f}\" y=\"{7:.1f}\">{8}</text>\n",
                     plot_w + 10, legend_y - 4, plot_w + 38, color, line.role == 1 ? " stroke-dasharray=\"6 4\"" : "",
                     plot_w + 24, plot_w + 46, legend_y, xml_escape(line.label));
    legend_y += 20;
  }
  // The ratios at the largest size, where they are largest.
  const std::string largest_group = [&] {
    std::string group;
    double largest = 0;
    for (const auto& k : r.kernels)
      if (k.input_bytes > largest) largest = k.input_bytes, group = k.group;
    return group;
  }();
  legend_y += 10;
  for (const auto& k : r.kernels) {
    if (k.group != largest_group || k.vs_naive <= 0 || k.role == 1) continue;
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}: {:.1f}× the naive at {}</text>\n", plot_w + 10, legend_y,
                     xml_escape(k.name), k.vs_naive, size_label(k.input_bytes));
    legend_y += 18;
  }
  return s + "</svg>\n";
}

}  // namespace kiln::grader
