#include "kernels/trace_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#ifdef STEPCAST_WITH_ZLIB
#include <zlib.h>
#endif

#include "kernels/cupti_table.hpp"
#include "model/errors.hpp"
#include "model/limits.hpp"

namespace stepcast::kernels {
namespace {

using namespace std::string_view_literals;  // key == "ph"sv: compares lengths before bytes (the hot path)

constexpr size_t kWindowBytes = 1 << 20;  // 1 MiB read window: large enough that refills cost nothing
constexpr int kMaxDepth = 256;            // nesting deeper than this is not a profiler trace

// Thrown inside the tokenizer; turned into an InputError with the file name at the top.
struct SyntaxError {
  uint64_t offset;
  std::string what;
};

// A well-formed number the trace cannot mean (a timestamp of 1e308 us, -Infinity, a duration past any run):
// refused at its line and column, which the error path counts by reading the file again up to `offset`.
struct ValueError {
  uint64_t offset;  // the number's first byte
  std::string what;
};

// Bounds on an event's numbers (docs/reliability.md, "Bounds on user sizes"). Kineto writes timestamps in
// microseconds, since the Unix epoch (~1.7e15) or since the trace began; 1e17 us is 3,170 years. A duration
// is at most limits::kMaxSeconds; pid and External id are integers that a double holds exactly.
constexpr double kMaxTimestampUs = 1e17;
constexpr double kMaxDurationUs = limits::kMaxSeconds * 1e6;
constexpr double kMaxIdentifier = 9007199254740992.0;  // 2^53

// Bytes of a file, decompressed when it is gzip (zlib reads plain files transparently too).
class ByteSource {
 public:
  explicit ByteSource(const std::filesystem::path& path) : path_(path.string()) {
#ifdef STEPCAST_WITH_ZLIB
    gz_ = gzopen(path_.c_str(), "rb");
    if (gz_ == nullptr) throw InputError(path_ + ": cannot open for reading");
    gzbuffer(gz_, 1 << 18);
#else
    file_ = std::fopen(path_.c_str(), "rb");
    if (file_ == nullptr) throw InputError(path_ + ": cannot open for reading");
#endif
  }
  ~ByteSource() {
#ifdef STEPCAST_WITH_ZLIB
    if (gz_ != nullptr) gzclose(gz_);
#else
    if (file_ != nullptr) std::fclose(file_);
#endif
  }
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Fills `buf` with up to `size` bytes; 0 at the end. Throws SyntaxError on a corrupt or truncated stream.
  size_t read(char* buf, size_t size, uint64_t offset) {
#ifdef STEPCAST_WITH_ZLIB
    const int n = gzread(gz_, buf, static_cast<unsigned>(size));
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(gz_, &code);
      throw SyntaxError{offset, std::string("gzip stream is corrupt or truncated (") + msg + ")"};
    }
    if (n == 0) {
      int code = 0;
      const char* msg = gzerror(gz_, &code);
      if (code != Z_OK && code != Z_STREAM_END)
        throw SyntaxError{offset, std::string("gzip stream is corrupt or truncated (") + msg + ")"};
    }
    return static_cast<size_t>(n);
#else
    return std::fread(buf, 1, size, file_);
#endif
  }

 private:
  std::string path_;
#ifdef STEPCAST_WITH_ZLIB
  gzFile gz_ = nullptr;
#else
  FILE* file_ = nullptr;
#endif
};

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

bool iequals(const std::string& a, const char* b) {
  const size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  return true;
}

struct Agg {
  std::string name;
  std::string collective;
  std::string launched_by;
  std::string kind;
  int64_t count = 0;
  double time_us = 0;
  int64_t short_count = 0;
  double short_us = 0;
};

struct DeviceProps {
  int64_t id = -1;
  DeviceInfo info;
  int warp_size = 0;
};

// What a JSON file that is not a profiler trace looks like, from its top-level shape.
struct Shape {
  bool top_is_array = false;
  bool trace_events = false;       // the object has a "traceEvents" array
  bool schema_and_nodes = false;   // "schema" and "nodes": PyTorch's execution trace (ExecutionTraceObserver)
  int64_t array_objects = 0;       // top-level array: elements that are objects with "ph" (trace events)
  int64_t array_other = 0;         // top-level array: elements that are not (memory timeline rows are arrays)
  int64_t array_arrays = 0;        // of those, arrays
  int64_t cpu_events = 0;          // host-side events (cpu_op, user_annotation, python_function, ...)
  int64_t foreign_device_events = 0;  // events of an accelerator this reader does not read (MTIA)
  std::string foreign_device;
};

// Kineto writes the same deviceProperties keys for CUDA and ROCm; an AMD device shows in its name ("AMD
// Instinct MI250X", or "AMD Radeon Graphics" from ROCm 6), its gcnArchName, or its 64-wide wavefronts
// (warpSize 64; every NVIDIA GPU has 32).
std::string vendor_of(const DeviceProps& d) {
  const std::string& n = d.info.name;
  if (n.find("AMD") != std::string::npos || n.find("Radeon") != std::string::npos ||
      n.find("Instinct") != std::string::npos || !d.info.gcn_arch.empty() || d.warp_size == 64)
    return "AMD";
  if (n.find("NVIDIA") != std::string::npos || n.find("Tesla") != std::string::npos ||
      n.find("GeForce") != std::string::npos || n.find("Quadro") != std::string::npos || d.warp_size == 32)
    return "NVIDIA";
  return "";
}

// The tokenizer and the trace grammar in one: a hand-written recursive descent over a sliding window.
class ChromeTraceParser {
 public:
  ChromeTraceParser(ByteSource& src, double short_threshold_us)
      : src_(src), buf_(kWindowBytes), p_(buf_.data()), end_(buf_.data()), short_us_(short_threshold_us) {}

  void parse() {
    const char c = next_nonspace();
    if (c == '{') {
      parse_top_object();
    } else if (c == '[') {
      shape_.top_is_array = true;
      parse_events_array(true);  // the JSON Array Format of the Trace Event spec
    } else {
      back_fail("expected '{' or '[' at the start of a trace", c);
    }
    if (const char rest = next_nonspace_or_end(); rest != 0) back_fail("unexpected bytes after the end of the trace's JSON value", rest);
  }

  KernelTable result(const std::string& source, double short_threshold_s);
  void split_convolution_launches();
  const Shape& shape() const { return shape_; }

 private:
  // --- byte window -------------------------------------------------------------------------------
  bool refill() {
    base_ += static_cast<uint64_t>(end_ - buf_.data());
    const size_t n = src_.read(buf_.data(), buf_.size(), base_);
    p_ = buf_.data();
    end_ = p_ + n;
    return n > 0;
  }
  bool at_end() { return p_ == end_ && !refill(); }
  uint64_t offset() const { return base_ + static_cast<uint64_t>(p_ - buf_.data()); }
  [[noreturn]] void fail(const std::string& what) const { throw SyntaxError{offset(), what}; }
  [[noreturn]] void fail_eof(const char* inside) const {
    throw SyntaxError{offset(), std::string("unexpected end of file inside ") + inside + " (truncated trace?)"};
  }
  char get(const char* inside) {
    if (p_ == end_ && !refill()) fail_eof(inside);
    return *p_++;
  }
  char next_nonspace() {
    for (;;) {
      while (p_ != end_ && is_space(*p_)) ++p_;
      if (p_ != end_) return *p_++;
      if (!refill()) fail_eof("the JSON text");
    }
  }
  char next_nonspace_or_end() {  // 0 at the end of the input
    for (;;) {
      while (p_ != end_ && is_space(*p_)) ++p_;
      if (p_ != end_) return *p_++;
      if (!refill()) return 0;
    }
  }
  void expect(char want, const char* inside) {
    const char c = next_nonspace();
    if (c != want) {
      --p_;
      fail(std::string("expected '") + want + "' in " + inside + ", found " + describe(c));
    }
  }
  static std::string describe(char c) {
    if (static_cast<unsigned char>(c) < 0x20) return "byte " + std::to_string(static_cast<int>(c));
    return std::string("'") + c + "'";
  }

  // --- strings -----------------------------------------------------------------------------------
  // After the opening quote. Appends the decoded string to `out` (when given).
  void read_string(std::string* out) {
    for (;;) {
      const char* start = p_;
      while (p_ != end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) ++p_;
      if (out != nullptr) out->append(start, static_cast<size_t>(p_ - start));
      if (p_ == end_) {
        if (!refill()) fail_eof("a string");
        continue;
      }
      const char c = *p_++;
      if (c == '"') return;
      if (c != '\\') {
        --p_;
        fail("control character inside a string");
      }
      read_escape(out);
    }
  }
  void read_escape(std::string* out) {
    const char e = get("a string escape");
    char plain = 0;
    switch (e) {
      case '"': plain = '"'; break;
      case '\\': plain = '\\'; break;
      case '/': plain = '/'; break;
      case 'b': plain = '\b'; break;
      case 'f': plain = '\f'; break;
      case 'n': plain = '\n'; break;
      case 'r': plain = '\r'; break;
      case 't': plain = '\t'; break;
      case 'u': {
        uint32_t cp = read_hex4();
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // a surrogate pair: \uD83D\uDE00
          if (get("a string escape") != '\\' || get("a string escape") != 'u') fail("lone high surrogate in \\u escape");
          const uint32_t lo = read_hex4();
          if (lo < 0xDC00 || lo > 0xDFFF) fail("invalid low surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (out != nullptr) append_utf8(*out, cp);
        return;
      }
      default:
        --p_;
        fail("invalid escape '\\" + std::string(1, e) + "' in a string");
    }
    if (out != nullptr) out->push_back(plain);
  }
  uint32_t read_hex4() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = get("a \\u escape");
      v <<= 4;
      if (h >= '0' && h <= '9') v |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') v |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v |= static_cast<uint32_t>(h - 'A' + 10);
      else fail("invalid hex digit in \\u escape");
    }
    return v;
  }
  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // --- numbers and literals ----------------------------------------------------------------------
  // `first` is the number's first character, already consumed.
  double read_number(char first) {
    if (first == '-' && (p_ != end_ || refill()) && *p_ == 'I') {
      read_literal(*p_++);
      return -std::numeric_limits<double>::infinity();
    }
    char tok[64];
    size_t n = 0;
    tok[n++] = first;
    for (;;) {
      if (p_ == end_ && !refill()) break;
      const char c = *p_;
      if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+')) break;
      if (n == sizeof(tok)) fail("number too long");
      tok[n++] = c;
      ++p_;
    }
    const bool json_start = first == '-' || (first >= '0' && first <= '9');
    double v = 0;
    const char* b = tok + (first == '-' ? 1 : 0);  // from_chars takes no '+', and JSON no leading '+'
    const auto [ptr, ec] = std::from_chars(b, tok + n, v);
    if (!json_start || ec != std::errc() || ptr != tok + n || b == tok + n || !(*b >= '0' && *b <= '9'))
      fail("malformed number '" + std::string(tok, n) + "'");
    return first == '-' ? -v : v;
  }
  // `v`, the value of key_ read from offset `at`, when it is within [-max, max] (so finite); else a ValueError
  // whose constraint is `what`.
  double checked(double v, uint64_t at, double max, const char* what) const {
    if (v >= -max && v <= max) return v;
    char shown[64];
    std::snprintf(shown, sizeof shown, "%.15g", v);
    throw ValueError{at, limits::cut(key_) + " = " + shown + ". Violated constraint: " + what};
  }

  // true, false, null; and NaN, Infinity, -Infinity, which Python's json writes and reads (so a trace
  // that json.load accepts is read here too).
  void read_literal(char first) {
    const char* word = first == 't' ? "true" : first == 'f' ? "false" : first == 'n' ? "null" : first == 'N' ? "NaN" : "Infinity";
    for (const char* w = word + 1; *w != 0; ++w)
      if (get("a literal") != *w) {
        --p_;
        fail(std::string("malformed literal (expected ") + word + ")");
      }
  }

  // --- generic values ----------------------------------------------------------------------------
  void skip_value(char first, int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than 256 levels");
    switch (first) {
      case '"': read_string(nullptr); return;
      case '{': skip_object(depth); return;
      case '[': skip_array(depth); return;
      case 't': case 'f': case 'n': case 'N': case 'I': read_literal(first); return;
      default:
        if (first == '-' || (first >= '0' && first <= '9')) {
          read_number(first);
          return;
        }
        --p_;
        fail("expected a JSON value, found " + describe(first));
    }
  }
  void skip_object(int depth) {
    char c = next_nonspace();
    if (c == '}') return;
    for (;;) {
      if (c != '"') back_fail("expected a key string in an object", c);
      read_string(nullptr);
      expect(':', "an object");
      skip_value(next_nonspace(), depth + 1);
      c = next_nonspace();
      if (c == '}') return;
      if (c != ',') back_fail("expected ',' or '}' in an object", c);
      c = next_nonspace();
    }
  }
  void skip_array(int depth) {
    char c = next_nonspace();
    if (c == ']') return;
    for (;;) {
      skip_value(c, depth + 1);
      c = next_nonspace();
      if (c == ']') return;
      if (c != ',') back_fail("expected ',' or ']' in an array", c);
      c = next_nonspace();
    }
  }
  [[noreturn]] void back_fail(const std::string& what, char found) {
    --p_;
    fail(what + ", found " + describe(found));
  }

  // --- the trace's grammar -----------------------------------------------------------------------
  void parse_top_object() {
    char c = next_nonspace();
    if (c == '}') return;
    for (;;) {
      if (c != '"') back_fail("expected a key string in the trace object", c);
      key_.clear();
      read_string(&key_);
      expect(':', "the trace object");
      c = next_nonspace();
      if (key_ == "traceEvents"sv && c == '[') {
        shape_.trace_events = true;
        parse_events_array(false);
      } else if ((key_ == "deviceProperties"sv || key_ == "computeProperties"sv) && c == '[') {
        parse_device_properties();  // "computeProperties": Kineto's name for it in 2021
      } else {
        if (key_ == "schema"sv) saw_schema_ = true;
        if (key_ == "nodes"sv) saw_nodes_ = true;
        shape_.schema_and_nodes = saw_schema_ && saw_nodes_;
        skip_value(c, 1);
      }
      c = next_nonspace();
      if (c == '}') return;
      if (c != ',') back_fail("expected ',' or '}' in the trace object", c);
      c = next_nonspace();
    }
  }

  // The Trace Event format lets the JSON Array Format end without its closing ']' (a tracer that was
  // killed leaves it so); `top_level` accepts that end after a complete event or a trailing comma.
  void parse_events_array(bool top_level) {
    char c = top_level ? next_nonspace_or_end() : next_nonspace();
    if (c == ']' || c == 0) return;
    for (;;) {
      if (c == '{') {
        parse_event();
      } else {
        ++shape_.array_other;
        if (c == '[') ++shape_.array_arrays;
        skip_value(c, 2);
      }
      c = top_level ? next_nonspace_or_end() : next_nonspace();
      if (c == ']' || c == 0) return;
      if (c != ',') back_fail("expected ',' or ']' in traceEvents", c);
      c = top_level ? next_nonspace_or_end() : next_nonspace();
      if (c == 0) return;
    }
  }

  // One event object; keeps ph, cat, name, ts, dur, pid.
  void parse_event() {
    ph_.clear();
    cat_.clear();
    name_.clear();
    collective_.clear();
    external_id_ = -1;
    double ts = 0, dur = -1;
    int64_t pid = -1;
    char c = next_nonspace();
    if (c != '}') {
      for (;;) {
        if (c != '"') back_fail("expected a key string in an event", c);
        key_.clear();
        read_string(&key_);
        expect(':', "an event");
        c = next_nonspace();
        if (c == '"' && (key_ == "ph"sv || key_ == "cat"sv || key_ == "name"sv)) {
          read_string(key_ == "ph"sv ? &ph_ : key_ == "cat"sv ? &cat_ : &name_);
        } else if ((c == '-' || (c >= '0' && c <= '9')) && (key_ == "ts"sv || key_ == "dur"sv || key_ == "pid"sv)) {
          const uint64_t at = offset() - 1;
          const double v = read_number(c);
          if (key_ == "ts"sv) ts = checked(v, at, kMaxTimestampUs, "a finite timestamp within +-1e17 us");
          else if (key_ == "dur"sv) dur = checked(v, at, kMaxDurationUs, "a finite duration within +-1e15 us (31 years)");
          else pid = static_cast<int64_t>(checked(v, at, kMaxIdentifier, "an integer within +-2^53"));
        } else if (c == '{' && key_ == "args"sv && (cat_.empty() || iequals(cat_, "kernel") || is_convolution_op())) {
          parse_args();  // Kineto writes cat and name before args: other host events' large args are skipped unread
        } else {
          skip_value(c, 3);
        }
        c = next_nonspace();
        if (c == '}') break;
        if (c != ',') back_fail("expected ',' or '}' in an event", c);
        c = next_nonspace();
      }
    }
    if (!ph_.empty()) ++shape_.array_objects;
    else ++shape_.array_other;
    take_event(ts, dur, pid);
  }

  // An event's args: only a NCCL kernel's "Collective name" is kept.
  void parse_args() {
    char c = next_nonspace();
    if (c == '}') return;
    for (;;) {
      if (c != '"') back_fail("expected a key string in an event's args", c);
      key_.clear();
      read_string(&key_);
      expect(':', "an event's args");
      c = next_nonspace();
      if (c == '"' && key_ == "Collective name"sv) read_string(&collective_);
      else if ((c == '-' || (c >= '0' && c <= '9')) && (key_ == "External id"sv || key_ == "external id"sv)) {
        const uint64_t at = offset() - 1;
        external_id_ = static_cast<int64_t>(checked(read_number(c), at, kMaxIdentifier, "an integer within +-2^53"));
      }
      else skip_value(c, 4);
      c = next_nonspace();
      if (c == '}') return;
      if (c != ',') back_fail("expected ',' or '}' in an event's args", c);
      c = next_nonspace();
    }
  }

  // A convolution operator (aten::cudnn_convolution, aten::convolution_backward, Kineto's 2021 cat
  // "Operator"): cuDNN runs some convolutions as cuBLAS GEMMs (volta_sgemm_64x64_nt under
  // aten::cudnn_convolution_backward_weight in the Kineto ResNet-50 sample), which only the launching
  // operator tells apart from a matrix multiply.
  bool is_convolution_op() const {
    return (cat_ == "cpu_op"sv || cat_ == "Operator"sv) && name_.find("convolution") != std::string::npos;
  }

  void take_event(double ts_us, double dur_us, int64_t pid) {
    if (is_convolution_op() && ph_ == "X"sv && external_id_ >= 0) convolution_ops_.insert(external_id_);
    if (ph_ != "X"sv || dur_us < 0) return;
    const char* kind = nullptr;
    if (iequals(cat_, "kernel")) kind = "kernel";
    else if (iequals(cat_, "gpu_memcpy") || iequals(cat_, "memcpy")) kind = "memcpy";
    else if (iequals(cat_, "gpu_memset") || iequals(cat_, "memset")) kind = "memset";
    if (kind == nullptr) {
      if (name_.rfind("ProfilerStep#", 0) == 0 && (cat_ == "user_annotation"sv || cat_ == "cpu_op"sv))
        steps_.insert(name_);
      count_other_event();
      return;
    }
    key_ = name_;
    if (!collective_.empty()) key_.append("\x1f").append(collective_);
    auto it = index_.find(key_);
    if (it == index_.end()) {
      it = index_.emplace(key_, static_cast<uint32_t>(aggs_.size())).first;
      aggs_.push_back(Agg{name_, collective_, "", kind});
    }
    Agg& a = aggs_[it->second];
    ++a.count;
    a.time_us += dur_us;
    if (dur_us < short_us_) {
      ++a.short_count;
      a.short_us += dur_us;
    }
    ++pid_counts_[pid];
    // Relative to the first device activity, so that µs timestamps of ~1e15 (Unix epoch) keep their
    // sub-µs digits in seconds.
    if (activity_.empty()) origin_us_ = ts_us;
    activity_.push_back({(ts_us - origin_us_) * 1e-6, (ts_us - origin_us_ + dur_us) * 1e-6, it->second});
    external_ids_.push_back(kind == std::string_view("kernel") ? external_id_ : -1);
    durations_us_.push_back(dur_us);
  }

  // Events that are not device activity: host events, or an accelerator whose kernels are not read
  // (MTIA traces record "mtia_ccp_events" / "mtia_runtime", no "kernel").
  void count_other_event() {
    if (cat_.rfind("mtia", 0) == 0) {
      ++shape_.foreign_device_events;
      shape_.foreign_device = "MTIA";
    } else if (ph_ != "M"sv) {  // metadata (process / thread names) is not an event of the run
      ++shape_.cpu_events;
    }
  }

  void parse_device_properties() {
    char c = next_nonspace();
    if (c == ']') return;
    for (;;) {
      if (c == '{') {
        devices_.push_back(parse_device());
      } else {
        skip_value(c, 2);
      }
      c = next_nonspace();
      if (c == ']') return;
      if (c != ',') back_fail("expected ',' or ']' in deviceProperties", c);
      c = next_nonspace();
    }
  }

  DeviceProps parse_device() {
    DeviceProps d;
    char c = next_nonspace();
    if (c == '}') return d;
    for (;;) {
      if (c != '"') back_fail("expected a key string in deviceProperties", c);
      key_.clear();
      read_string(&key_);
      expect(':', "deviceProperties");
      c = next_nonspace();
      const bool num = c == '-' || (c >= '0' && c <= '9');
      if (c == '"' && (key_ == "name"sv || key_ == "gcnArchName"sv)) {
        read_string(key_ == "name"sv ? &d.info.name : &d.info.gcn_arch);
      } else if (num && (key_ == "id"sv || key_ == "computeMajor"sv || key_ == "computeMinor"sv || key_ == "major"sv ||
                         key_ == "minor"sv || key_ == "numSms"sv || key_ == "multiProcessorCount"sv || key_ == "warpSize"sv)) {
        const auto v = static_cast<int>(read_number(c));
        if (key_ == "id"sv) d.id = v;
        else if (key_ == "computeMajor"sv || key_ == "major"sv) d.info.compute_major = v;
        else if (key_ == "computeMinor"sv || key_ == "minor"sv) d.info.compute_minor = v;
        else if (key_ == "warpSize"sv) d.warp_size = v;
        else d.info.num_sms = v;
      } else {
        skip_value(c, 3);
      }
      c = next_nonspace();
      if (c == '}') {
        d.info.vendor = vendor_of(d);
        return d;
      }
      if (c != ',') back_fail("expected ',' or '}' in deviceProperties", c);
      c = next_nonspace();
    }
  }

  ByteSource& src_;
  std::vector<char> buf_;
  char* p_ = nullptr;
  char* end_ = nullptr;
  uint64_t base_ = 0;
  double short_us_;
  std::string key_, ph_, cat_, name_, collective_;
  int64_t external_id_ = -1;                    // the event's args "External id": links a kernel to its operator
  std::unordered_set<int64_t> convolution_ops_;  // External ids of convolution operators
  std::vector<int64_t> external_ids_;            // per activity_ entry
  std::vector<double> durations_us_;             // per activity_ entry, as the trace wrote them
  std::unordered_map<std::string, uint32_t> index_;  // name (+ collective) -> aggs_ row
  std::vector<Agg> aggs_;
  std::unordered_set<std::string> steps_;
  std::unordered_map<int64_t, int64_t> pid_counts_;
  std::vector<Activity> activity_;
  double origin_us_ = 0;
  std::vector<DeviceProps> devices_;
  Shape shape_;
  bool saw_schema_ = false, saw_nodes_ = false;
};

// Launches of a kernel by a convolution operator move to a row of their own (same name, launched_by
// "convolution"), so that the same cuBLAS GEMM kernel counts as convolution there and as GEMM elsewhere.
void ChromeTraceParser::split_convolution_launches() {
  if (convolution_ops_.empty()) return;
  std::vector<int64_t> twin(aggs_.size(), -1);
  for (size_t i = 0; i < activity_.size(); ++i) {
    if (external_ids_[i] < 0 || convolution_ops_.count(external_ids_[i]) == 0) continue;
    Activity& act = activity_[i];
    if (twin[act.kernel] < 0) {
      twin[act.kernel] = static_cast<int64_t>(aggs_.size());
      const Agg& from = aggs_[act.kernel];
      aggs_.push_back(Agg{from.name, from.collective, "convolution", from.kind});
    }
    Agg& from = aggs_[act.kernel];
    Agg& to = aggs_[static_cast<size_t>(twin[act.kernel])];
    const double recorded_us = durations_us_[i];
    --from.count;
    ++to.count;
    from.time_us -= recorded_us;
    to.time_us += recorded_us;
    if (recorded_us < short_us_) {
      --from.short_count;
      ++to.short_count;
      from.short_us -= recorded_us;
      to.short_us += recorded_us;
    }
    act.kernel = static_cast<uint32_t>(twin[act.kernel]);
  }
  // Rows left without launches go; the activity keeps pointing at the right rows.
  std::vector<uint32_t> new_index(aggs_.size());
  std::vector<Agg> kept;
  for (size_t i = 0; i < aggs_.size(); ++i) {
    new_index[i] = static_cast<uint32_t>(kept.size());
    if (aggs_[i].count > 0) kept.push_back(std::move(aggs_[i]));
  }
  aggs_ = std::move(kept);
  for (auto& act : activity_) act.kernel = new_index[act.kernel];
}

// Union of the intervals: the time at least one stream was busy.
double busy_s(const std::vector<Activity>& activity) {
  std::vector<std::pair<double, double>> iv;
  iv.reserve(activity.size());
  for (const auto& a : activity) iv.emplace_back(a.start_s, a.end_s);
  std::sort(iv.begin(), iv.end());
  double busy = 0, cur_start = 0, cur_end = 0;
  bool open = false;
  for (const auto& [s, e] : iv) {
    if (!open || s > cur_end) {
      if (open) busy += cur_end - cur_start;
      cur_start = s;
      cur_end = e;
      open = true;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (open) busy += cur_end - cur_start;
  return busy;
}

KernelTable ChromeTraceParser::result(const std::string& source, double short_threshold_s) {
  KernelTable t;
  t.source = source;
  t.format = "chrome_trace";
  t.short_threshold_s = short_threshold_s;
  t.steps = static_cast<int64_t>(steps_.size());
  // Kineto gives GPU events the device index as pid; the device that ran most kernels is the one reported.
  int64_t device_pid = -1, best = -1;
  for (const auto& [pid, n] : pid_counts_)
    if (n > best || (n == best && pid < device_pid)) {
      best = n;
      device_pid = pid;
    }
  for (const auto& d : devices_)
    if (d.id == device_pid) t.device = d.info;
  if (t.device.name.empty() && t.device.compute_major == 0 && !devices_.empty()) t.device = devices_.front().info;
  split_convolution_launches();
  for (auto& a : aggs_)
    t.kernels.push_back({a.name, a.kind, a.collective, a.launched_by, a.count, a.time_us * 1e-6, a.short_count,
                         a.short_us * 1e-6});
  if (!activity_.empty()) {
    double first = activity_.front().start_s, last = activity_.front().end_s;
    for (const auto& a : activity_) {
      first = std::min(first, a.start_s);
      last = std::max(last, a.end_s);
    }
    t.window_s = last - first;
    t.busy_s = busy_s(activity_);
  }
  t.activity = std::move(activity_);
  t.host_events = shape_.cpu_events;
  return t;
}

KernelTable from_cupti(const CuptiTable& c, const std::string& source) {
  KernelTable t;
  t.source = source;
  t.format = "cupti_table";
  // CUPTI is NVIDIA's: a table that names a compute capability was measured on an NVIDIA device.
  t.device.name = c.header.device;
  t.device.vendor = c.header.compute_major > 0 ? "NVIDIA" : "";
  t.device.compute_major = c.header.compute_major;
  t.device.compute_minor = c.header.compute_minor;
  t.device.num_sms = c.header.num_sms;
  t.steps = c.header.steps;
  t.short_threshold_s = static_cast<double>(c.header.short_threshold_ns) * 1e-9;
  for (const auto& r : c.rows)
    t.kernels.push_back({r.name, r.kind, "", "", r.count, static_cast<double>(r.total_ns) * 1e-9, r.short_count,
                         static_cast<double>(r.short_ns) * 1e-9});
  return t;
}

std::string first_bytes(const std::filesystem::path& path) {
  ByteSource src(path);
  std::string head(256, '\0');
  size_t n = 0;
  try {
    n = src.read(head.data(), head.size(), 0);
  } catch (const SyntaxError&) {
    n = 0;  // the full read reports it with its offset
  }
  head.resize(n);
  return head;
}

// A property of the whole document: located at its top-level value (line 1, column 1), so that every
// refusal names file:line:col (docs/reliability.md).
[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& looks_like) {
  throw InputError(path.string() + ":1:1: " + looks_like +
                   ". Violated constraint: a torch.profiler Chrome trace (an object with \"traceEvents\", or an array "
                   "of trace events), as export_chrome_trace or tensorboard_trace_handler write it");
}

// JSON that parsed but is not a profiler trace: say what it looks like instead of reading it as a trace
// with no device activity.
void refuse_non_trace(const std::filesystem::path& path, const Shape& s) {
  if (s.top_is_array) {
    if (s.array_other > 0 && s.array_objects == 0)
      refuse(path, "a JSON array of " + std::to_string(s.array_other) + " values that are not trace events (no \"ph\")" +
                       (s.array_arrays == s.array_other ? ": arrays, like the rows of a memory timeline (export_memory_timeline)" : ""));
    return;  // an array of events (or an empty one)
  }
  if (s.trace_events) return;
  if (s.schema_and_nodes)
    refuse(path, "a PyTorch execution trace (\"schema\" and \"nodes\": ExecutionTraceObserver), which records "
                 "operators, not device kernels");
  refuse(path, "JSON without \"traceEvents\" (not a profiler trace)");
}

// A trace of an accelerator whose kernels this reader does not know (no CUDA / ROCm kernel events).
void refuse_foreign_device(const std::filesystem::path& path, const Shape& s, const KernelTable& t) {
  if (!t.kernels.empty() || s.foreign_device_events == 0) return;
  throw InputError(path.string() + ": the trace of an accelerator stepcast does not read (" + s.foreign_device + ": " +
                   std::to_string(s.foreign_device_events) + " events" +
                   (t.device.name.empty() ? "" : ", device " + t.device.name) +
                   ") and no CUDA or ROCm kernels. Violated constraint: a trace with CUDA or ROCm device activity");
}

// "LINE:COL" (1-based) of byte `offset` of the (decompressed) file: counted on the error path only, by
// reading the file again, so that the reader's hot loop keeps no line count.
std::string line_and_column(const std::filesystem::path& path, uint64_t offset) {
  ByteSource src(path);
  std::vector<char> buf(kWindowBytes);
  uint64_t done = 0, line = 1, column = 1;
  while (done < offset) {
    const size_t n = src.read(buf.data(), static_cast<size_t>(std::min<uint64_t>(buf.size(), offset - done)), done);
    if (n == 0) break;
    for (size_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    done += n;
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

}  // namespace

KernelTable read_chrome_trace(const std::filesystem::path& path, const ReadOptions& options) {
  if (!std::filesystem::exists(path)) throw InputError(path.string() + ": no such file");
  ByteSource src(path);
  ChromeTraceParser parser(src, options.short_threshold_s * 1e6);
  try {
    parser.parse();
  } catch (const ValueError& e) {
    throw InputError(path.string() + ":" + line_and_column(path, e.offset) + ": " + e.what + " (byte " +
                     std::to_string(e.offset) + (path.extension() == ".gz" ? " of the decompressed stream" : "") + ")");
  } catch (const SyntaxError& e) {
    if (e.offset == 0 && e.what.find("found '<'") != std::string::npos)
      throw InputError(path.string() + ":" + line_and_column(path, 0) +
                       ": an HTML or XML file (a memory timeline exported as .html?), not a profiler "
                       "trace. Violated constraint: a torch.profiler Chrome trace (export_chrome_trace, "
                       "tensorboard_trace_handler)");
    throw InputError(path.string() + ": byte " + std::to_string(e.offset) +
                     (path.extension() == ".gz" ? " of the decompressed stream" : "") + ": " + e.what +
                     ". Violated constraint: a complete JSON Chrome trace");
  }
  refuse_non_trace(path, parser.shape());
  KernelTable t = parser.result(path.string(), options.short_threshold_s);
  refuse_foreign_device(path, parser.shape(), t);
  return t;
}

KernelTable read_kernel_table(const std::filesystem::path& path, const ReadOptions& options) {
  if (!std::filesystem::exists(path)) throw InputError(path.string() + ": no such file");
  if (std::filesystem::is_directory(path)) throw InputError(path.string() + ": is a directory, not a trace");
  if (looks_like_cupti_table(first_bytes(path))) {
    // Through ByteSource, so that a gzipped table reads as well as a plain one.
    ByteSource src(path);
    std::string text;
    std::vector<char> buf(kWindowBytes);
    try {
      while (const size_t n = src.read(buf.data(), buf.size(), text.size())) text.append(buf.data(), n);
    } catch (const SyntaxError& e) {
      throw InputError(path.string() + ": byte " + std::to_string(e.offset) + ": " + e.what);
    }
    return from_cupti(parse_cupti_table(text, path.string()), path.string());
  }
  return read_chrome_trace(path, options);
}

}  // namespace stepcast::kernels
