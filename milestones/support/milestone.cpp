#include "milestone.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace kiln::milestone {

namespace {

int event_fd() {
  static const int fd = [] {
    const char* text = std::getenv("KILN_MILESTONE_FD");
    return text && *text ? std::atoi(text) : -1;
  }();
  return fd;
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char code[8];
      std::snprintf(code, sizeof code, "\\u%04x", c);
      out += code;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// One event: a JSON object on the grader's descriptor, or plain text on stderr.
void emit(const std::string& json, const std::string& plain) {
  if (event_fd() < 0) {
    std::fprintf(stderr, "%s\n", plain.c_str());
    return;
  }
  const std::string line = json + "\n";
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(event_fd(), line.data() + done, line.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

Settings* current = nullptr;

void write_floats(const std::string& path, const std::vector<float>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

Settings parse(int argc, char** argv) {
  static Settings settings;
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("option " + option + " needs a value");
    const std::string value = argv[++i];
    // A whole number, all of `value` ("--epochs 3"; "3x", "" and "three" are refused by name).
    const auto whole = [&] {
      std::size_t used = 0;
      long long n = 0;
      try {
        n = std::stoll(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (value.empty() || used != value.size())
        throw std::invalid_argument("option " + option + " needs a whole number, got \"" + value + "\"");
      return n;
    };
    if (option == "--epochs") settings.epochs = static_cast<int>(whole());
    else if (option == "--train") settings.train_count = whole();
    else if (option == "--test") settings.test_count = whole();
    else if (option == "--steps") settings.steps = whole();
    else if (option == "--seed") settings.seed = static_cast<std::uint64_t>(whole());
    else if (option == "--data") settings.data_dir = value;
    else if (option == "--out") settings.out_dir = value;
    else throw std::invalid_argument("unknown option " + option + " (known: --epochs --train --test --steps --seed --data --out)");
  }
  // The folder for logits and parameters is made now, so that a bad one is said before training,
  // not after it.
  std::error_code ec;
  std::filesystem::create_directories(settings.out_dir, ec);
  if (!std::filesystem::is_directory(settings.out_dir))
    throw std::invalid_argument("--out " + settings.out_dir + ": cannot make that folder" +
                                (ec ? " (" + ec.message() + ")" : ""));
  current = &settings;
  return settings;
}

void begin(int epochs, std::int64_t steps_per_epoch) {
  emit("{\"event\": \"begin\", \"epochs\": " + std::to_string(epochs) + ", \"steps_per_epoch\": " +
           std::to_string(steps_per_epoch) + "}",
       "training: " + std::to_string(epochs) + " epochs of " + std::to_string(steps_per_epoch) + " steps");
}

void step(int epoch, std::int64_t step, double loss) {
  emit("{\"event\": \"step\", \"epoch\": " + std::to_string(epoch) + ", \"step\": " + std::to_string(step) +
           ", \"loss\": " + number(loss) + "}",
       "epoch " + std::to_string(epoch) + " step " + std::to_string(step) + ": loss " + number(loss));
}

void epoch_done(int epoch, double mean_train_loss, double seconds) {
  emit("{\"event\": \"epoch\", \"epoch\": " + std::to_string(epoch) + ", \"loss\": " + number(mean_train_loss) +
           ", \"seconds\": " + number(seconds) + "}",
       "epoch " + std::to_string(epoch) + " done: mean loss " + number(mean_train_loss) + " in " + number(seconds) + " s");
}

void parameters(const std::string& which, const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<float> values;
  std::string list;
  for (const auto& [name, tensor] : named) {
    const std::vector<float> v = tensor.to_vector();
    values.insert(values.end(), v.begin(), v.end());
    list += std::string(list.empty() ? "" : ", ") + "{\"name\": " + quoted(name) + ", \"numel\": " +
            std::to_string(v.size()) + "}";
  }
  const std::string dir = current ? current->out_dir : ".";
  write_floats(dir + "/parameters-" + which + ".f32", values);
  emit("{\"event\": \"parameters\", \"which\": " + quoted(which) + ", \"tensors\": [" + list + "]}",
       "parameters (" + which + "): " + std::to_string(named.size()) + " tensors, " + std::to_string(values.size()) +
           " values");
}

void logits(const std::string& name, const Tensor& rows) {
  if (rows.dim() != 2) throw std::invalid_argument("milestone::logits needs a (rows, classes) tensor");
  const std::string dir = current ? current->out_dir : ".";
  write_floats(dir + "/logits-" + name + ".f32", rows.to_vector());
  emit("{\"event\": \"logits\", \"name\": " + quoted(name) + ", \"rows\": " + std::to_string(rows.shape()[0]) +
           ", \"classes\": " + std::to_string(rows.shape()[1]) + "}",
       "logits " + name + ": " + to_string(rows.shape()));
}

void size(const std::string& output, std::int64_t bytes) {
  emit("{\"event\": \"size\", \"name\": " + quoted(output) + ", \"bytes\": " + std::to_string(bytes) + "}",
       output + ": " + std::to_string(bytes) + " weight bytes");
}

void note(const std::string& text) { emit("{\"event\": \"note\", \"text\": " + quoted(text) + "}", text); }

void model(const std::string& name) {
  emit("{\"event\": \"model\", \"name\": " + quoted(name) + "}", "model " + name);
}

}  // namespace kiln::milestone
