// Corpus reading speed (printed, not a test): 1,000,000 samples of the same seeded lengths written as
// bare lengths, CSV with a quoted text column, JSON Lines, and gzip-compressed JSON Lines, each read with
// load_corpus_file (best of 3), beside `wc -l` of the same file as the floor of touching every byte.
// Also 20,000 samples as JSON Lines with their `input_ids` arrays (the heavy case: every token is parsed).
// Usage: corpus_io_bench [--samples N]
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "bench/timing.hpp"
#include "io/corpus_io.hpp"
#include "planner/corpus.hpp"

using namespace stepcast;

namespace {

using bench::best_of;
using bench::seconds;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

void write_gzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb6");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
}

// CPU seconds of this process (the build machine is shared: wall clock there measures the neighbours too).
double cpu_seconds(const std::function<void()>& f) {
  const std::clock_t t0 = std::clock();
  f();
  return static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
}

void report(const char* what, const std::string& path, int64_t samples) {
  int64_t read = 0;
  double cpu = 1e300;
  const double s = best_of(3, [&] { cpu = std::min(cpu, cpu_seconds([&] { read = io::load_corpus_file(path).size(); })); });
  const std::string wc = "wc -l < " + path + " > /dev/null";
  const double floor = best_of(3, [&] { (void)std::system(wc.c_str()); });
  std::printf("%-34s %9.1f MB  wall %7.3f s  cpu %7.3f s  %6.2f M samples/cpu-s  (wc -l wall %.3f s)%s\n", what,
              static_cast<double>(std::filesystem::file_size(path)) / 1e6, s, cpu, static_cast<double>(read) / cpu / 1e6,
              floor, read == samples ? "" : "  SAMPLE COUNT WRONG");
}

}  // namespace

int main(int argc, char** argv) {
  int64_t samples = 1000000;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--samples") samples = std::atoll(argv[i + 1]);
  planner::SyntheticSpec spec;
  spec.samples = samples;
  spec.seed = 1;
  spec.max_length = 65536;
  spec.components = {{1.0, 2000, 0.81}};  // the shipped seed-like corpus's mix (docs/planner.md)
  const planner::Corpus c = planner::generate_synthetic(spec);
  std::string lengths, csv = "id,text,length,kept,root\n", jsonl;
  for (int64_t i = 0; i < samples; ++i) {
    const auto n = std::to_string(c.lengths[static_cast<size_t>(i)]);
    const auto k = std::to_string(c.lengths[static_cast<size_t>(i)] / 3);
    const auto root = std::to_string(i % 3000);
    lengths += n + "\n";
    csv += std::to_string(i) + ",\"a \"\"quoted\"\", text\"," + n + "," + k + ",doc-" + root + "\n";
    jsonl += "{\"id\": " + std::to_string(i) + ", \"length\": " + n + ", \"kept\": " + k + ", \"root\": \"doc-" + root + "\"}\n";
  }
  const auto dir = std::filesystem::temp_directory_path() / ("stepcast_corpus_bench_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string p_len = (dir / "c.txt").string(), p_csv = (dir / "c.csv").string(),
                    p_jsonl = (dir / "c.jsonl").string(), p_gz = (dir / "c.jsonl.gz").string(),
                    p_ids = (dir / "ids.jsonl").string();
  write_text(p_len, lengths);
  write_text(p_csv, csv);
  write_text(p_jsonl, jsonl);
  write_gzip(p_gz, jsonl);
  std::printf("corpus_io_bench: %lld samples (log-normal, median 2,000 tokens)\n", static_cast<long long>(samples));
  report("lengths, one per line", p_len, samples);
  report("CSV, quoted text + kept + root", p_csv, samples);
  report("JSON Lines, length + kept + root", p_jsonl, samples);
  report("JSON Lines .gz", p_gz, samples);
  const int64_t with_ids = std::min<int64_t>(samples, 20000);
  std::string ids;
  int64_t tokens = 0;
  for (int64_t i = 0; i < with_ids; ++i) {
    ids += "{\"input_ids\": [";
    for (int32_t t = 0; t < c.lengths[static_cast<size_t>(i)]; ++t) ids += (t == 0 ? "" : ", ") + std::to_string(1000 + (t * 7919) % 250000);
    ids += "]}\n";
    tokens += c.lengths[static_cast<size_t>(i)];
  }
  write_text(p_ids, ids);
  std::printf("(input_ids: %lld samples, %.1f M tokens)\n", static_cast<long long>(with_ids), static_cast<double>(tokens) / 1e6);
  report("JSON Lines, input_ids arrays", p_ids, with_ids);
  std::filesystem::remove_all(dir);
  return 0;
}
