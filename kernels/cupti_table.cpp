#include "kernels/cupti_table.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "io/json_text.hpp"
#include "model/errors.hpp"
#include "model/limits.hpp"

namespace stepcast::kernels {
namespace {

using nlohmann::json;

json header_json(const CuptiTableHeader& h) {
  // nlohmann's ordered_json would keep the key order; the version key must come first so that a
  // reader can tell the format from the first bytes, so it is written by hand.
  json rest = {{"device", h.device},         {"compute_major", h.compute_major},
               {"compute_minor", h.compute_minor}, {"num_sms", h.num_sms},
               {"steps", h.steps},           {"short_threshold_ns", h.short_threshold_ns},
               {"label", h.label}};
  return rest;
}

std::string header_line(const CuptiTableHeader& h) {
  std::string body = header_json(h).dump();  // "{...}"
  return "{\"stepcast_cupti_table\":" + std::to_string(kCuptiTableVersion) + "," + body.substr(1);
}

json row_json(const CuptiKernelRow& r) {
  return {{"name", r.name},         {"kind", r.kind},       {"count", r.count},
          {"total_ns", r.total_ns}, {"min_ns", r.min_ns},   {"max_ns", r.max_ns},
          {"short_count", r.short_count}, {"short_ns", r.short_ns}};
}

std::string where(const std::string& source, size_t line, size_t col) {
  return source + ":" + std::to_string(line) + ":" + std::to_string(col) + ": ";
}

// Reads `key` of `obj` into `out` when present; records a problem when it has the wrong type or range.
template <typename T>
void take(const json& obj, const char* key, T& out, bool required, Diagnostics& d, const std::string& at) {
  const auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) d.add(at + std::string(key) + " is missing. Violated constraint: required");
    return;
  }
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // An integer field takes an integer in T's range: a float (1e28) would be cast, past the range undefined.
    constexpr auto max = std::numeric_limits<T>::max();
    const bool fits = it->is_number_unsigned()  ? it->template get<uint64_t>() <= static_cast<uint64_t>(max)
                      : it->is_number_integer() ? it->template get<int64_t>() <= static_cast<int64_t>(max) &&
                                                      it->template get<int64_t>() >= std::numeric_limits<T>::min()
                                                : false;
    if (!fits) {
      d.add(at + std::string(key) + " = " + limits::cut(it->dump()) + ". Violated constraint: an integer <= " +
            std::to_string(max));
      return;
    }
  }
  try {
    out = it->get<T>();
  } catch (const json::exception&) {
    d.add(at + std::string(key) + " = " + limits::cut(it->dump()) + ". Violated constraint: wrong type");
    return;
  }
  if constexpr (std::is_arithmetic_v<T>) {
    if (out < 0) d.add(at + std::string(key) + " = " + it->dump() + ". Violated constraint: >= 0");
  }
}

void check_keys(const json& obj, const std::set<std::string>& known, Diagnostics& d, const std::string& at) {
  for (const auto& [key, value] : obj.items()) {
    if (known.count(key) == 0) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      d.add(at + limits::cut(key) + " = " + limits::cut(value.dump()) +
            ". Violated constraint: unknown key (known: " + list + ")");
    }
  }
}

CuptiTableHeader parse_header(const json& j, Diagnostics& d, const std::string& at) {
  CuptiTableHeader h;
  int version = 0;
  take(j, "stepcast_cupti_table", version, true, d, at);
  if (version != kCuptiTableVersion && j.contains("stepcast_cupti_table"))
    d.add(at + "stepcast_cupti_table = " + std::to_string(version) +
          ". Violated constraint: == " + std::to_string(kCuptiTableVersion) + " (the version this stepcast reads)");
  take(j, "device", h.device, false, d, at);
  take(j, "compute_major", h.compute_major, false, d, at);
  take(j, "compute_minor", h.compute_minor, false, d, at);
  take(j, "num_sms", h.num_sms, false, d, at);
  take(j, "steps", h.steps, false, d, at);
  if (h.steps < 1) d.add(at + "steps = " + std::to_string(h.steps) + ". Violated constraint: >= 1");
  take(j, "short_threshold_ns", h.short_threshold_ns, false, d, at);
  take(j, "label", h.label, false, d, at);
  check_keys(j, {"stepcast_cupti_table", "device", "compute_major", "compute_minor", "num_sms", "steps",
                 "short_threshold_ns", "label"},
             d, at);
  return h;
}

// Bounds on a row's figures (docs/reliability.md, "Bounds on user sizes"): a table holds one profiled step or a
// few (10^4-10^5 launches on the H200 tables under measurements/records/); 10^12 launches would be 23 days of
// device time at 2 us each, and limits::kMaxSeconds of device time is 10^18 ns. Both keep the sums over a
// table's rows inside int64 (checked in parse_cupti_table).
constexpr int64_t kMaxLaunches = 1'000'000'000'000;
constexpr int64_t kMaxTotalNs = static_cast<int64_t>(limits::kMaxSeconds * 1e9);

void check_bound(Diagnostics& d, const std::string& at, const char* key, int64_t value, int64_t max) {
  if (value > max) d.add(at + key + " = " + std::to_string(value) + ". Violated constraint: <= " + std::to_string(max));
}

CuptiKernelRow parse_row(const json& j, Diagnostics& d, const std::string& at) {
  CuptiKernelRow r;
  take(j, "name", r.name, true, d, at);
  take(j, "kind", r.kind, false, d, at);
  if (r.kind != "kernel" && r.kind != "memcpy" && r.kind != "memset")
    d.add(at + "kind = \"" + r.kind + "\". Violated constraint: one of kernel, memcpy, memset");
  take(j, "count", r.count, true, d, at);
  take(j, "total_ns", r.total_ns, true, d, at);
  take(j, "min_ns", r.min_ns, false, d, at);
  take(j, "max_ns", r.max_ns, false, d, at);
  take(j, "short_count", r.short_count, false, d, at);
  take(j, "short_ns", r.short_ns, false, d, at);
  check_bound(d, at, "count", r.count, kMaxLaunches);
  check_bound(d, at, "short_count", r.short_count, kMaxLaunches);
  for (const auto& [key, value] : {std::pair{"total_ns", r.total_ns}, {"min_ns", r.min_ns}, {"max_ns", r.max_ns},
                                   {"short_ns", r.short_ns}})
    check_bound(d, at, key, value, kMaxTotalNs);
  if (r.count >= 0 && r.short_count > r.count)
    d.add(at + "short_count = " + std::to_string(r.short_count) + ". Violated constraint: <= count");
  if (r.total_ns >= 0 && r.short_ns > r.total_ns)
    d.add(at + "short_ns = " + std::to_string(r.short_ns) + ". Violated constraint: <= total_ns");
  check_keys(j, {"name", "kind", "count", "total_ns", "min_ns", "max_ns", "short_count", "short_ns"}, d, at);
  return r;
}

// The output policy of io/atomic_file (docs/user-guide.md "Output files"), repeated here because kernels/ sits
// below io/ (docs/architecture.md) and the harness, which writes these tables, may not use io/ either: an
// exclusively created temporary file beside the target (never a stale or another writer's file), written
// whole, fsynced, renamed over the target, and the folder fsynced; the temporary file goes when a step fails.
// No --force here: the harness names one table per probe point and rewrites it when the point is re-measured.
int create_temp_beside(const std::filesystem::path& target, std::string& temp) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp = target.string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    if (errno != EEXIST) throw Error("cannot write " + target.string() + ": " + std::strerror(errno));
  }
  throw Error("cannot write " + target.string() + ": 100 temporary names beside it are taken");
}

void write_and_sync(int fd, const std::string& text, const std::string& temp) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("cannot write " + temp + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) throw Error("cannot sync " + temp + ": " + std::strerror(errno));
}

// The rename is durable once the folder's entry is on disk; some file systems cannot sync a folder.
void sync_folder(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void CuptiTableBuilder::add(std::string_view name, std::string_view kind, int64_t duration_ns) {
  std::string key;
  key.reserve(kind.size() + 1 + name.size());
  key.append(kind).push_back('\n');
  key.append(name);
  auto [it, fresh] = rows_.try_emplace(std::move(key));
  CuptiKernelRow& r = it->second;
  if (fresh) {
    r.name = std::string(name);
    r.kind = std::string(kind);
    r.min_ns = duration_ns;
    r.max_ns = duration_ns;
  }
  ++r.count;
  r.total_ns += duration_ns;
  r.min_ns = std::min(r.min_ns, duration_ns);
  r.max_ns = std::max(r.max_ns, duration_ns);
  if (duration_ns < header_.short_threshold_ns) {
    ++r.short_count;
    r.short_ns += duration_ns;
  }
}

CuptiTable CuptiTableBuilder::table() const {
  CuptiTable t;
  t.header = header_;
  for (const auto& [key, row] : rows_) t.rows.push_back(row);
  std::sort(t.rows.begin(), t.rows.end(), [](const CuptiKernelRow& a, const CuptiKernelRow& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    if (a.name != b.name) return a.name < b.name;
    return a.kind < b.kind;
  });
  return t;
}

std::string cupti_table_to_jsonl(const CuptiTable& table) {
  std::string out = header_line(table.header) + "\n";
  for (const auto& r : table.rows) out += row_json(r).dump() + "\n";
  return out;
}

void write_cupti_table(const CuptiTable& table, const std::filesystem::path& path) {
  const std::string text = cupti_table_to_jsonl(table);
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::string temp;
  const int fd = create_temp_beside(path, temp);
  try {
    write_and_sync(fd, text, temp);
  } catch (...) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  const bool closed = ::close(fd) == 0;
  if (!closed || ::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temp.c_str());
    throw Error("cannot write " + path.string() + ": " + why);
  }
  sync_folder(dir);
}

bool looks_like_cupti_table(std::string_view first_bytes) {
  size_t i = 0;
  while (i < first_bytes.size() && (first_bytes[i] == ' ' || first_bytes[i] == '\t' || first_bytes[i] == '\n' ||
                                    first_bytes[i] == '\r'))
    ++i;
  if (i >= first_bytes.size() || first_bytes[i] != '{') return false;
  ++i;
  while (i < first_bytes.size() && (first_bytes[i] == ' ' || first_bytes[i] == '\t')) ++i;
  return first_bytes.substr(i, 22) == "\"stepcast_cupti_table\"";
}

namespace {

// Launches and nanoseconds over the rows read so far: the analysis adds them in int64.
struct RowSums {
  int64_t launches = 0;
  int64_t total_ns = 0;
  bool refused = false;  // said once
};

void add_to_sums(const CuptiKernelRow& r, RowSums& sums, Diagnostics& d, const std::string& at) {
  // A row past its own bounds is reported by parse_row already.
  if (sums.refused || r.count < 0 || r.total_ns < 0 || r.count > kMaxLaunches || r.total_ns > kMaxTotalNs) return;
  const auto launches = limits::checked_add(sums.launches, r.count);
  const auto ns = limits::checked_add(sums.total_ns, r.total_ns);
  if (launches && ns && *launches <= kMaxLaunches && *ns <= kMaxTotalNs) {
    sums.launches = *launches;
    sums.total_ns = *ns;
    return;
  }
  sums.refused = true;
  d.add(at + "the rows up to this one add up to more than " + std::to_string(kMaxLaunches) + " launches or " +
        std::to_string(kMaxTotalNs) + " ns. Violated constraint: a table's sums within those bounds");
}

}  // namespace

CuptiTable parse_cupti_table(std::string_view text, const std::string& source_name) {
  Diagnostics d;
  RowSums sums;
  CuptiTable t;
  bool have_header = false;
  size_t line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    // Bounded: a row nested 100 000 deep would overflow the stack when a message dumps it.
    io::JsonParse parsed = io::parse_json_bounded(line);
    if (!parsed.ok) {
      d.add(where(source_name, line_no, parsed.byte + 1) + "malformed JSON (" + limits::cut(parsed.message) + ")");
      continue;
    }
    json j = std::move(parsed.value);
    const std::string at = where(source_name, line_no, 1);
    if (!j.is_object()) {
      d.add(at + "a line is " + std::string(j.type_name()) + ". Violated constraint: a JSON object");
      continue;
    }
    if (!have_header) {
      if (!j.contains("stepcast_cupti_table")) {
        d.add(at + "the first line is not a table header. Violated constraint: starts with "
                   "{\"stepcast_cupti_table\": 1, ...}");
        return (d.throw_if_any(), t);
      }
      t.header = parse_header(j, d, at);
      have_header = true;
      continue;
    }
    t.rows.push_back(parse_row(j, d, at));
    add_to_sums(t.rows.back(), sums, d, at);
  }
  if (!have_header) d.add(source_name + ":1:1: empty table. Violated constraint: a header line");
  d.throw_if_any();
  return t;
}

CuptiTable read_cupti_table(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open for reading");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_cupti_table(ss.str(), path.string());
}

}  // namespace stepcast::kernels
