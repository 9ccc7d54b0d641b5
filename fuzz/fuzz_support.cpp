#include "fuzz/fuzz_support.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <typeinfo>

#include "cli/app.hpp"
#include "io/coefficients_io.hpp"
#include "io/model_config.hpp"
#include "model/errors.hpp"
#include "model/limits.hpp"

#ifndef STEPCAST_SCENARIOS
#define STEPCAST_SCENARIOS "scenarios"
#endif
#ifndef STEPCAST_MEASUREMENTS
#define STEPCAST_MEASUREMENTS "measurements"
#endif

namespace stepcast::fuzz {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void broken(const std::string& promise, const std::vector<std::string>& args, const std::string& detail) {
  std::string command = "stepcast";
  for (const auto& a : args) command += " " + a;
  std::fprintf(stderr, "\nFUZZ ORACLE: %s\n  command: %s\n  %s\n", promise.c_str(), command.c_str(), detail.c_str());
  std::abort();
}

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    fs::path d = fs::path(tmp != nullptr ? tmp : "/tmp") / ("stepcast-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    for (const char* shared : {"corpora", "coefficients", "models"}) {
      std::error_code ec;
      fs::create_directory_symlink(fs::path(STEPCAST_SCENARIOS) / shared, d / shared, ec);
    }
    std::error_code ec;
    fs::create_directory_symlink(fs::path(STEPCAST_MEASUREMENTS) / "records", d / "measurements", ec);
    // A campaign's paths are relative to the folder holding measurements/ (this one): scenarios/ as in the repository.
    fs::create_directory_symlink(fs::path(STEPCAST_SCENARIOS), d / "scenarios", ec);
    return d;
  }();
  return dir;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Figures that are durations, sizes, tokens or counts: never negative.
bool non_negative_key(const std::string& key) {
  if (key.rfind("margin_", 0) == 0 || key.rfind("missing_", 0) == 0) return false;  // differences (signed_figure_key)
  for (const char* suffix : {"_s", "_gib", "bytes", "tokens", "_count", "launches", "_ns"})
    if (ends_with(key, suffix)) return true;
  for (const char* part : {"params", "flops", "bytes"})
    if (key.find(part) != std::string::npos) return true;
  return key == "count" || key == "rows" || key == "width" || key == "records";
}

// Figures that may be negative but never NaN (relative errors, shares, differences: plan's margin to the card,
// validate --run's missing memory).
bool signed_figure_key(const std::string& key) {
  for (const char* suffix : {"_rel", "_pct", "_pp", "percent", "share", "_ratio"})
    if (ends_with(key, suffix)) return true;
  return key.rfind("margin_", 0) == 0 || key.rfind("missing_", 0) == 0;
}

// Figures whose null is documented as "not known from this input" rather than a NaN: kernel tables from
// CUPTI and traces without a timeline cannot say how much communication overlapped (docs/kernels.md).
bool nullable_key(const std::string& key) { return key == "not_overlapped_s"; }

void check_figures(const nlohmann::json& j, const std::string& key, const std::vector<std::string>& args) {
  if (j.is_null() && !nullable_key(key) && (non_negative_key(key) || signed_figure_key(key)))
    broken("every figure is a number", args, key + " = null (NaN or infinity)");
  if (j.is_number() && non_negative_key(key) && j.get<double>() < 0)
    broken("every time, size and count is >= 0", args, key + " = " + j.dump());
  if (j.is_object())
    for (const auto& [k, v] : j.items()) check_figures(v, k, args);
  if (j.is_array())
    for (const auto& v : j) check_figures(v, key, args);
}

// A refusal names the fuzzed file and a line ("<input>:<digits>"), or for a streamed Chrome trace the byte
// offset ("<input>: byte <digits>", docs/kernels.md).
bool names_input_line(const std::string& text, const std::string& input) {
  for (size_t at = text.find(input + ":"); at != std::string::npos; at = text.find(input + ":", at + 1)) {
    const size_t after = at + input.size() + 1;
    if ((after < text.size() && text[after] >= '0' && text[after] <= '9') || text.compare(after, 6, " byte ") == 0)
      return true;
  }
  return false;
}

bool& whole_commands_flag() {
  static bool on = std::getenv("STEPCAST_FUZZ_COMMANDS") != nullptr;
  return on;
}

bool is_json_request(const std::vector<std::string>& args) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--format" && args[i + 1] == "json") return true;
  return false;
}

}  // namespace

std::string scratch_file(const uint8_t* data, size_t size, const std::string& name) {
  const fs::path path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path.string();
}

std::string shipped(const std::string& relative) { return (fs::path(STEPCAST_SCENARIOS) / relative).string(); }

std::string measured(const std::string& relative) { return (fs::path(STEPCAST_MEASUREMENTS) / relative).string(); }

const model::Coefficients& shipped_coefficients() {
  static const model::Coefficients c = io::load_coefficients(shipped("coefficients/h200-hf-peft-sdpa-grouped_mm.yaml"));
  return c;
}

const model::ModelShape& shipped_model() {
  static const model::ModelShape shape = io::load_model_config(shipped("models/gemma-4-26b-a4b.json"));
  return shape;
}

bool reads_or_refuses(const std::function<void()>& read, const std::string& input) {
  const std::vector<std::string> reader{"(reader) " + input};
  try {
    read();
    return true;
  } catch (const InputError& e) {
    if (!names_input_line(e.what(), input)) broken("a refusal names file:line", reader, std::string(e.what()).substr(0, 600));
  } catch (const std::exception& e) {
    broken("a reader throws only InputError", reader, std::string(typeid(e).name()) + ": " + limits::cut(e.what()));
  }
  return false;
}

void computes_or_refuses(const std::function<void()>& compute, const std::string& what) {
  try {
    compute();
  } catch (const InputError&) {
    // A refusal: exit 2 in the command (whether it names the file is checked by the whole command).
  } catch (const std::exception& e) {
    broken("a computation throws only InputError", {what}, std::string(typeid(e).name()) + ": " + limits::cut(e.what()));
  }
}

void check_figure(double value, const std::string& what) {
  if (!std::isfinite(value) || value < 0) broken("every figure is finite and >= 0", {what}, std::to_string(value));
}

void check_json_figures(const nlohmann::json& j) { check_figures(j, "", {"(analysis)"}); }

bool whole_commands() { return whole_commands_flag(); }
void set_whole_commands(bool on) { whole_commands_flag() = on; }

int run_stepcast(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv_text{"stepcast"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  const int code = cli::run(static_cast<int>(argv.size()), argv.data());
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  if (std::getenv("STEPCAST_FUZZ_VERBOSE") != nullptr)
    std::fprintf(stderr, "exit %d\n%s%s", code, out.str().c_str(), err.str().c_str());
  if (code != 0 && code != 1 && code != 2) broken("exit code 0, 1 or 2", args, "exit " + std::to_string(code));
  if (code == 2 && !names_input_line(err.str(), input))
    broken("a refusal names file:line", args, "stderr: " + err.str().substr(0, 600));
  if (code != 2 && is_json_request(args)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(out.str());
    } catch (const nlohmann::json::exception& e) {
      broken("--format json prints JSON", args, e.what());
    }
    check_figures(j, "", args);
  }
  return code;
}

}  // namespace stepcast::fuzz
