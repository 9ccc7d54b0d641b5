#include "io/public_measurements.hpp"

#include <csv.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "io/gpu_table.hpp"
#include "model/errors.hpp"

namespace stepcast::io {
namespace {

const std::vector<std::string> kColumns = {
    "gpu",  "arch",     "kind",  "family",  "path",   "dtype",  "direction", "m",           "n",    "k",
    "batch", "heads",   "head_dim", "seqlen", "causal", "bytes", "value",   "unit",        "source", "locator",
    "read", "note",     "model", "method",  "micro_batch", "gpus"};
const std::vector<std::string> kAlways = {"gpu", "arch", "kind", "value", "unit", "source", "locator", "read"};
const std::vector<std::string> kKinds = {"gemm", "attention", "memory", "tensor_path", "step"};
const std::vector<std::string> kPaths = {"mma", "wgmma", "tcgen05", "mfma"};

// Per kind: the columns a row must fill and the units it may use.
struct KindRule {
  std::vector<std::string> required;
  std::vector<std::string> units;
};
const std::map<std::string, KindRule>& kind_rules() {
  static const std::map<std::string, KindRule> rules = {
      {"gemm", {{"family", "path", "m", "n", "k"}, {"tflops"}}},
      {"attention", {{"family", "path", "direction", "head_dim", "seqlen"}, {"tflops"}}},
      {"memory", {{"family"}, {"gbs"}}},
      {"tensor_path", {{"path"}, {"tflops", "fraction_of_peak"}}},
      {"step", {{"model", "method", "micro_batch", "seqlen", "gpus"}, {"tokens_per_s_per_gpu", "run_s", "s_per_step"}}}};
  return rules;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool one_of(const std::string& v, const std::vector<std::string>& choices) {
  return std::find(choices.begin(), choices.end(), v) != choices.end();
}

// 1-based character column where each field of a raw CSV line starts (quotes respected).
std::vector<int> field_columns(const std::string& line) {
  std::vector<int> cols{1};
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"') quoted = !quoted;
    else if (line[i] == ',' && !quoted) cols.push_back(static_cast<int>(i) + 2);
  }
  return cols;
}

// The fields of one line through libcsv (RFC 4180); false when the line is not one complete record.
bool parse_line(const std::string& line, std::vector<std::string>& fields, std::string& why) {
  csv_parser parser{};
  csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI);
  struct Sink {
    std::vector<std::string>* fields;
    int records = 0;
  } sink{&fields};
  const auto on_field = [](void* data, size_t size, void* self) {
    static_cast<Sink*>(self)->fields->emplace_back(static_cast<const char*>(data), size);
  };
  const auto on_record = [](int, void* self) { ++static_cast<Sink*>(self)->records; };
  fields.clear();
  bool ok = csv_parse(&parser, line.data(), line.size(), on_field, on_record, &sink) == line.size() &&
            csv_fini(&parser, on_field, on_record, &sink) == 0 && sink.records == 1;
  if (!ok) why = parser.status != 0 ? csv_strerror(csv_error(&parser)) : "not one record on one line";
  csv_free(&parser);
  return ok;
}

class FileReader {
 public:
  FileReader(std::string path, const std::vector<model::GpuSpec>& gpus, const std::vector<model::ArchSpec>& archs,
             Diagnostics& diagnostics)
      : path_(std::move(path)), gpus_(gpus), archs_(archs), diagnostics_(diagnostics) {}

  std::vector<model::PublicPoint> read() {
    std::ifstream in(path_);
    if (!in) {
      diagnostics_.add(path_ + ":1:1: cannot read the file. Violated constraint: a readable CSV file");
      return {};
    }
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || line.front() == '#') continue;  // blank lines and comments
      line_ = number;
      std::vector<std::string> fields;
      std::string why;
      if (!parse_line(line, fields, why)) {
        problem(1, why + ". Violated constraint: RFC 4180 CSV, one record a line");
        continue;
      }
      cols_ = field_columns(line);
      if (header_.empty()) {
        header(fields);
        if (header_.empty()) return {};
        continue;
      }
      row(fields);
    }
    if (header_.empty()) problem_at(1, 1, "no header line. Violated constraint: a CSV header naming the columns");
    return std::move(points_);
  }

 private:
  void problem_at(int line, int col, const std::string& message) {
    diagnostics_.add(path_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + message);
  }
  void problem(int col, const std::string& message) { problem_at(line_, col, message); }
  int col_of(const std::string& column) const {
    const auto it = std::find(header_.begin(), header_.end(), column);
    const size_t i = static_cast<size_t>(it - header_.begin());
    return i < cols_.size() ? cols_[i] : 1;
  }

  void header(const std::vector<std::string>& fields) {
    bool ok = true;
    for (size_t i = 0; i < fields.size(); ++i) {
      const int col = i < cols_.size() ? cols_[i] : 1;
      if (!one_of(fields[i], kColumns)) {
        problem(col, "column '" + fields[i] + "'. Violated constraint: one of " + joined(kColumns));
        ok = false;
      } else if (std::count(fields.begin(), fields.end(), fields[i]) > 1 &&
                 std::find(fields.begin(), fields.end(), fields[i]) != fields.begin() + static_cast<long>(i)) {
        problem(col, "column '" + fields[i] + "' twice. Violated constraint: each column once");
        ok = false;
      }
    }
    for (const auto& c : kAlways)
      if (!one_of(c, fields)) {
        problem(1, "no column '" + c + "'. Violated constraint: every file has " + joined(kAlways));
        ok = false;
      }
    if (ok) header_ = fields;
  }

  const std::string& field(const std::vector<std::string>& fields, const std::string& column) const {
    static const std::string empty;
    const auto it = std::find(header_.begin(), header_.end(), column);
    return it == header_.end() ? empty : fields[static_cast<size_t>(it - header_.begin())];
  }

  // A positive finite number, or 0 when empty and not required.
  double number(const std::vector<std::string>& fields, const std::string& column, bool required) {
    const std::string& text = field(fields, column);
    if (text.empty()) {
      if (required) problem(col_of(column), column + " is empty. Violated constraint: a number > 0 for this kind");
      return 0;
    }
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !std::isfinite(v) || !(v > 0)) {
      problem(col_of(column), column + " = '" + text + "'. Violated constraint: a finite number > 0");
      return 0;
    }
    return v;
  }

  const model::GpuSpec* gpu(const std::string& name) const {
    for (const auto& g : gpus_)
      if (g.name == name || one_of(name, g.aliases)) return &g;
    return nullptr;
  }

  void check_identity(model::PublicPoint& p) {
    if (model::find_arch(archs_, p.arch) == nullptr)
      problem(col_of("arch"), "arch '" + p.arch + "'. Violated constraint: an arch of scenarios/gpus.yaml");
    const model::GpuSpec* g = gpu(p.gpu);
    if (g == nullptr) {
      if (p.unit != "fraction_of_peak")
        problem(col_of("gpu"), "gpu '" + p.gpu + "' is not in scenarios/gpus.yaml. Violated constraint: a GPU of "
                               "the table (its peaks turn the value into an efficiency; add the GPU first)");
      return;
    }
    p.gpu = g->name;  // aliases resolve to the table's name
    if (g->arch != p.arch)
      problem(col_of("arch"), "arch '" + p.arch + "' for '" + g->name + "'. Violated constraint: the table's arch, '" +
                                  g->arch + "'");
  }

  void check_provenance(const model::PublicPoint& p) {
    for (const char* c : {"source", "locator"})
      if (field_text(p, c).empty())
        problem(col_of(c), std::string(c) + " is empty. Violated constraint: every row says where it was published "
                                            "(repository + file, or paper + table, or vendor document + section)");
    const bool date = p.read.size() == 10 && p.read[4] == '-' && p.read[7] == '-' &&
                      std::all_of(p.read.begin(), p.read.end(), [](char ch) { return ch == '-' || std::isdigit(static_cast<unsigned char>(ch)); });
    if (!date) problem(col_of("read"), "read = '" + p.read + "'. Violated constraint: the date it was read, YYYY-MM-DD");
  }
  static const std::string& field_text(const model::PublicPoint& p, const std::string& c) {
    return c == "source" ? p.source : p.locator;
  }

  void check_kind(const std::vector<std::string>& fields, model::PublicPoint& p) {
    if (!one_of(p.kind, kKinds)) {
      problem(col_of("kind"), "kind = '" + p.kind + "'. Violated constraint: one of " + joined(kKinds));
      return;
    }
    const KindRule& rule = kind_rules().at(p.kind);
    for (const auto& c : rule.required)
      if (field(fields, c).empty())
        problem(col_of(c), c + " is empty. Violated constraint: a " + p.kind + " row has " + joined(rule.required));
    if (!one_of(p.unit, rule.units))
      problem(col_of("unit"), "unit = '" + p.unit + "'. Violated constraint: for " + p.kind + ", one of " + joined(rule.units));
    if (!p.path.empty() && !one_of(p.path, kPaths))
      problem(col_of("path"), "path = '" + p.path + "'. Violated constraint: one of " + joined(kPaths));
    if (!p.direction.empty() && !one_of(p.direction, {"fwd", "bwd", "fwd+bwd"}))
      problem(col_of("direction"), "direction = '" + p.direction + "'. Violated constraint: fwd, bwd or fwd+bwd");
    if (p.unit == "fraction_of_peak" && p.value > 1.5)
      problem(col_of("value"), "value = " + field(fields, "value") + ". Violated constraint: a fraction of peak <= 1.5");
  }

  void row(const std::vector<std::string>& fields) {
    if (fields.size() != header_.size()) {
      problem(1, "a row of " + std::to_string(fields.size()) + " fields. Violated constraint: " +
                     std::to_string(header_.size()) + " fields, as in the header");
      return;
    }
    model::PublicPoint p;
    p.file = base_name(path_);
    p.line = line_;
    std::string* texts[] = {&p.gpu, &p.arch, &p.kind, &p.family, &p.path, &p.dtype, &p.direction, &p.unit,
                            &p.source, &p.locator, &p.read, &p.note, &p.model, &p.method};
    const char* names[] = {"gpu", "arch", "kind", "family", "path", "dtype", "direction", "unit",
                           "source", "locator", "read", "note", "model", "method"};
    for (size_t i = 0; i < std::size(names); ++i) *texts[i] = field(fields, names[i]);
    double* numbers[] = {&p.m, &p.n, &p.k, &p.batch, &p.heads, &p.head_dim, &p.seqlen, &p.bytes, &p.micro_batch, &p.gpus};
    const char* number_names[] = {"m", "n", "k", "batch", "heads", "head_dim", "seqlen", "bytes", "micro_batch", "gpus"};
    for (size_t i = 0; i < std::size(number_names); ++i)
      *numbers[i] = number(fields, number_names[i], false);  // required ones are reported by check_kind
    p.value = number(fields, "value", true);
    const std::string& causal = field(fields, "causal");
    if (!causal.empty() && causal != "true" && causal != "false")
      problem(col_of("causal"), "causal = '" + causal + "'. Violated constraint: true or false");
    p.causal = causal == "true";
    if (p.gpu.empty()) problem(col_of("gpu"), "gpu is empty. Violated constraint: the device measured");
    check_kind(fields, p);
    check_identity(p);
    check_provenance(p);
    points_.push_back(p);
  }

  std::string path_;
  const std::vector<model::GpuSpec>& gpus_;
  const std::vector<model::ArchSpec>& archs_;
  Diagnostics& diagnostics_;
  std::vector<std::string> header_;
  std::vector<int> cols_;
  int line_ = 1;
  std::vector<model::PublicPoint> points_;
};

}  // namespace

std::vector<model::PublicPoint> load_public_measurements(const std::string& path,
                                                         const std::vector<model::GpuSpec>& gpus,
                                                         const std::vector<model::ArchSpec>& archs) {
  Diagnostics diagnostics;
  auto points = FileReader(path, gpus, archs, diagnostics).read();
  diagnostics.throw_if_any();
  return points;
}

std::string public_points_initialiser(const std::vector<model::PublicPoint>& points) {
  std::ostringstream out;
  out.precision(17);
  for (const auto& p : points) {
    out << "    {" << quoted(p.file) << ", " << p.line;
    for (const std::string* s : {&p.gpu, &p.arch, &p.kind, &p.family, &p.path, &p.dtype, &p.direction})
      out << ", " << quoted(*s);
    for (double v : {p.m, p.n, p.k, p.batch, p.heads, p.head_dim, p.seqlen}) out << ", " << v;
    out << ", " << (p.causal ? "true" : "false") << ", " << p.bytes << ", " << p.value;
    for (const std::string* s : {&p.unit, &p.source, &p.locator, &p.read, &p.note, &p.model, &p.method})
      out << ", " << quoted(*s);
    out << ", " << p.micro_batch << ", " << p.gpus << "},\n";
  }
  return out.str();
}

}  // namespace stepcast::io
