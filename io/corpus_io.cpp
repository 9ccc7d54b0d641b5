#include "io/corpus_io.hpp"

#include "io/atomic_file.hpp"

#include <csv.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include "model/errors.hpp"

#ifdef STEPCAST_WITH_ZLIB
#include <zlib.h>
#endif
#include <unistd.h>

namespace stepcast::io {
namespace {

constexpr size_t kMaxReported = 20;

std::string display_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

bool is_gzip(std::string_view bytes) { return bytes.size() >= 2 && bytes[0] == '\x1f' && bytes[1] == '\x8b'; }

#ifdef STEPCAST_WITH_ZLIB
// zlib reads gzip and plain files alike (gzread passes plain bytes through), so one reader serves both.
std::string read_whole_file(const std::string& path) {
  const std::string name = display_name(path);
  gzFile f = nullptr;
  if (path == "-") {
    const int fd = dup(STDIN_FILENO);
    if (fd >= 0) f = gzdopen(fd, "rb");
  } else {
    std::FILE* probe = std::fopen(path.c_str(), "rb");  // a clear message for a missing file, before zlib
    if (probe == nullptr) throw InputError(name + ": cannot open the corpus file (does it exist, is it readable?)");
    std::fclose(probe);
    f = gzopen(path.c_str(), "rb");
  }
  if (f == nullptr) throw InputError(name + ": cannot open the corpus file");
  gzbuffer(f, 1 << 18);
  std::string text;
  std::vector<char> buf(1 << 18);
  int n = 0;
  while ((n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0) text.append(buf.data(), static_cast<size_t>(n));
  int code = Z_OK;
  const char* message = gzerror(f, &code);  // a truncated stream ends with Z_BUF_ERROR, not a read error
  const std::string error = n < 0 || code != Z_OK ? message : "";
  gzclose(f);
  if (!error.empty())
    throw InputError(name + ": cannot decompress the corpus (zlib: " + error +
                     "). Violated constraint: a complete gzip file, or plain text");
  return text;
}
#else
std::string read_whole_file(const std::string& path) {
  const std::string name = display_name(path);
  std::FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw InputError(name + ": cannot open the corpus file (does it exist, is it readable?)");
  std::string text;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  if (f != stdin) std::fclose(f);
  if (failed) throw InputError(name + ": read error");
  if (is_gzip(text))
    throw InputError(name + ": a gzip file, and this build has no zlib. Violated constraint: plain text "
                            "(rebuild with zlib1g-dev, or gunzip it first)");
  return text;
}
#endif

// Collects bad lines; only the first kMaxReported are spelled out.
class Problems {
 public:
  explicit Problems(std::string name) : name_(std::move(name)) {}
  void add(int64_t line, size_t col, const std::string& what) {
    if (messages_.size() < kMaxReported)
      messages_.push_back(name_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + what);
    ++count_;
  }
  bool any() const { return count_ > 0; }
  const std::string& name() const { return name_; }
  void throw_if_any() const {
    if (count_ == 0) return;
    auto all = messages_;
    if (count_ > messages_.size())
      all.push_back(name_ + ": " + std::to_string(count_ - messages_.size()) + " more bad lines not shown (" +
                    std::to_string(count_) + " in all); the corpus was not loaded");
    throw InputError(all);
  }

 private:
  std::string name_;
  std::vector<std::string> messages_;
  size_t count_ = 0;
};

// A non-negative decimal integer that fits int32, the whole field; false otherwise.
bool parse_int(std::string_view field, int64_t& out) {
  if (field.empty() || field.size() > 10) return false;
  int64_t v = 0;
  for (char ch : field) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + (ch - '0');
  }
  if (v > std::numeric_limits<int32_t>::max()) return false;
  out = v;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Calls f(line_number, line) for every line (without its "\n" or "\r\n"); a final newline ends the last line.
template <typename F>
void for_each_raw_line(std::string_view text, F&& f) {
  int64_t number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    ++number;
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    f(number, line);
    pos = end + 1;
  }
}

// The same, without comment lines.
template <typename F>
void for_each_line(std::string_view text, F&& f) {
  for_each_raw_line(text, [&](int64_t number, std::string_view line) {
    if (line.empty() || line.front() != '#') f(number, line);
  });
}

// At most 40 characters of a field for a message; control bytes become '?' so that a binary file never
// reaches the terminal.
std::string shown(std::string_view s) {
  std::string out(1, '\'');
  for (char ch : s.substr(0, 40)) out += static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f ? '?' : ch;
  out.append(s.size() > 40 ? "...'" : "'");
  return out;
}

// Refuses the sample past `cap` (`stored` are kept already) at its line, before it is stored: a file can
// never allocate more than planning could hold.
void check_room(int64_t stored, int64_t cap, int64_t line, const Problems& problems) {
  if (stored < cap) return;
  throw InputError(problems.name() + ":" + std::to_string(line) + ":1: sample " + std::to_string(stored + 1) +
                   ". Violated constraint: at most " + std::to_string(cap) + " samples (about " +
                   std::to_string(planner::kBytesPerSample) +
                   " bytes each while planning; docs/planner.md \"Bounded resources\")");
}

constexpr const char* kLengthRule = "an integer in [1, 2147483647]";

void check_length(int64_t number, std::string_view field, size_t col, Problems& problems, int64_t& length) {
  if (!parse_int(trim(field), length) || length < 1) {
    problems.add(number, col, "length = " + shown(field) + ". Violated constraint: " + kLengthRule);
    length = 0;
  }
}

// Roots are any text; the corpus keeps dense ids in order of first appearance.
class RootIds {
 public:
  int32_t id(std::string_view root) {
    const auto [it, added] = ids_.emplace(std::string(root), static_cast<int32_t>(ids_.size()));
    return it->second;
  }
  int64_t count() const { return static_cast<int64_t>(ids_.size()); }

 private:
  std::unordered_map<std::string, int32_t> ids_;
};

// ---- one length per line -------------------------------------------------------------------------

planner::Corpus parse_lengths(std::string_view text, int64_t cap, Problems& problems) {
  planner::Corpus corpus;
  corpus.lengths.reserve(static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(text.size() / 4), cap)));
  for_each_line(text, [&](int64_t number, std::string_view line) {
    if (trim(line).empty()) {
      problems.add(number, 1, "empty line. Violated constraint: one length per line");
      return;
    }
    check_room(corpus.size(), cap, number, problems);
    int64_t length = 0;
    check_length(number, line, 1, problems, length);
    corpus.lengths.push_back(static_cast<int32_t>(length));
  });
  return corpus;
}

// ---- CSV (libcsv, RFC 4180) --------------------------------------------------------------------------

std::vector<std::string> default_length_names(const CorpusOptions& o, bool json) {
  if (!o.length_field.empty()) return {o.length_field};
  if (json) return {"length", "num_tokens", "input_ids"};
  return {"length", "num_tokens"};
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

struct Columns {
  int length = -1, kept = -1, root = -1;
  size_t count = 0;
};

// Reads records with libcsv, line by line so that every record knows the line it started on. A record may
// span lines (a quoted field with a newline); lines between records that start with '#' are comments.
class CsvReader {
 public:
  CsvReader(const CorpusOptions& options, Problems& problems) : options_(options), problems_(problems) {
    csv_init(&parser_, CSV_STRICT | CSV_STRICT_FINI);
  }
  ~CsvReader() { csv_free(&parser_); }
  CsvReader(const CsvReader&) = delete;
  CsvReader& operator=(const CsvReader&) = delete;

  planner::Corpus read(std::string_view text) {
    for_each_raw_line(text, [&](int64_t number, std::string_view line) { feed(number, line); });
    if (csv_fini(&parser_, on_field, on_record, this) != 0)
      problems_.add(record_line_, 1, "an unterminated quoted field. Violated constraint: RFC 4180 CSV");
    if (!header_done_) problems_.add(1, 1, "the file has no header line. Violated constraint: a CSV header");
    corpus_.num_roots = roots_.count();
    return std::move(corpus_);
  }

 private:
  void feed(int64_t number, std::string_view line) {
    if (between_records_) {
      if (!line.empty() && line.front() == '#') return;
      if (trim(line).empty()) {
        problems_.add(number, 1, "empty line. Violated constraint: one sample per line");
        return;
      }
      record_line_ = number;
    }
    between_records_ = false;
    const std::string with_newline = std::string(line) + "\n";
    if (csv_parse(&parser_, with_newline.data(), with_newline.size(), on_field, on_record, this) != with_newline.size()) {
      problems_.add(number, 1, std::string(csv_strerror(csv_error(&parser_))) + ". Violated constraint: RFC 4180 CSV "
                               "(a quote inside a quoted field is doubled: \"\")");
      csv_free(&parser_);  // start afresh on the next line
      csv_init(&parser_, CSV_STRICT | CSV_STRICT_FINI);
      fields_.clear();
      between_records_ = true;
    }
  }

  static void on_field(void* data, size_t size, void* self) {
    static_cast<CsvReader*>(self)->fields_.emplace_back(static_cast<const char*>(data), size);
  }
  static void on_record(int, void* self) {
    auto* r = static_cast<CsvReader*>(self);
    r->record();
    r->fields_.clear();
    r->between_records_ = true;
  }

  void record() {
    if (!header_done_) {
      header_done_ = true;
      header();
      return;
    }
    if (cols_.length < 0) return;  // the header is already reported
    if (fields_.size() != cols_.count) {
      problems_.add(record_line_, 1, "a row of " + std::to_string(fields_.size()) + " fields. Violated constraint: " +
                                         std::to_string(cols_.count) + " fields, as in the header");
      return;
    }
    check_room(corpus_.size(), options_.max_samples, record_line_, problems_);
    int64_t length = 0;
    check_length(record_line_, fields_[static_cast<size_t>(cols_.length)], 1, problems_, length);
    corpus_.lengths.push_back(static_cast<int32_t>(length));
    if (cols_.kept >= 0) {
      int64_t kept = 0;
      const std::string& field = fields_[static_cast<size_t>(cols_.kept)];
      if (!parse_int(trim(field), kept) || kept > length)
        problems_.add(record_line_, 1, "kept = " + shown(field) + ". Violated constraint: an integer in [0, length]");
      corpus_.kept.push_back(static_cast<int32_t>(kept));
    }
    if (cols_.root >= 0) {
      const auto root = trim(fields_[static_cast<size_t>(cols_.root)]);
      if (root.empty()) problems_.add(record_line_, 1, "root is empty. Violated constraint: a document id");
      corpus_.roots.push_back(roots_.id(root));
    }
  }

  // The length column is the first of the accepted names present; other columns are ignored.
  void header() {
    cols_.count = fields_.size();
    const auto names = default_length_names(options_, false);
    for (size_t n = 0; n < names.size() && cols_.length < 0; ++n)
      for (size_t i = 0; i < fields_.size() && cols_.length < 0; ++i)
        if (trim(fields_[i]) == names[n]) cols_.length = static_cast<int>(i);
    for (size_t i = 0; i < fields_.size(); ++i) {
      const auto f = trim(fields_[i]);
      const bool length_again = cols_.length >= 0 && static_cast<int>(i) != cols_.length &&
                                f == trim(fields_[static_cast<size_t>(cols_.length)]);
      int* slot = f == "kept" ? &cols_.kept : f == "root" ? &cols_.root : nullptr;
      if (length_again || (slot != nullptr && *slot >= 0))
        problems_.add(record_line_, 1, "CSV header column " + shown(f) + " twice. Violated constraint: each column once");
      else if (slot != nullptr)
        *slot = static_cast<int>(i);
    }
    if (cols_.length < 0)
      problems_.add(record_line_, 1, "the CSV header has no length column (" + joined(names) +
                                         "). Violated constraint: one of them (--length-field names another)");
  }

  const CorpusOptions& options_;
  Problems& problems_;
  csv_parser parser_{};
  std::vector<std::string> fields_;
  bool between_records_ = true;
  bool header_done_ = false;
  int64_t record_line_ = 1;
  Columns cols_;
  planner::Corpus corpus_;
  RootIds roots_;
};

// ---- JSON Lines (nlohmann's SAX parser: an `input_ids` array is counted, never built) -----------------

// What one line's object holds, of the fields a corpus needs. Only top-level keys count.
class SampleFields {
 public:
  using json = nlohmann::json;
  explicit SampleFields(const std::vector<std::string>& length_names) : length_names_(length_names) { reset(); }

  void reset() {
    depth_ = 0;
    not_object_ = false;
    values_.assign(length_names_.size() + 3, std::nullopt);
    kept_labels_ = 0;
    counting_ = -1;
    key_slot_ = SIZE_MAX;
    root_.clear();
    keys_.clear();
    bad_.clear();
  }

  // Slots: the length names in order, then kept, labels (counted: not -100), root.
  size_t kept_slot() const { return length_names_.size(); }
  size_t labels_slot() const { return length_names_.size() + 1; }
  size_t root_slot() const { return length_names_.size() + 2; }

  bool null() { return value(Kind::other, 0); }
  bool boolean(bool) { return value(Kind::other, 0); }
  bool number_integer(json::number_integer_t v) { return value(Kind::integer, v); }
  bool number_unsigned(json::number_unsigned_t v) {
    return value(Kind::integer, v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v));
  }
  bool number_float(json::number_float_t, const json::string_t&) { return value(Kind::other, 0); }
  bool string(json::string_t& s) {
    if (depth_ == 1 && key_slot_ == root_slot()) root_ = s;
    return value(Kind::text, 0);
  }
  bool binary(json::binary_t&) { return value(Kind::other, 0); }
  bool start_object(std::size_t) {
    if (depth_ == 0) {
      ++depth_;
      return true;
    }
    value(Kind::other, 0);
    ++depth_;
    return true;
  }
  bool key(json::string_t& k) {
    if (depth_ == 1) {
      key_slot_ = slot_of(k);
      if (key_slot_ != SIZE_MAX) key_ = k;  // the name only matters for a field we read (messages)
      if (collect_keys_ && keys_.size() < 8) keys_.push_back(k);
    }
    return true;
  }
  bool end_object() {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) {
    if (depth_ == 0) {
      not_object_ = true;
      return false;
    }
    value(Kind::array, 0);
    if (depth_ == 1) {
      counting_ = key_slot_ == SIZE_MAX ? -1 : static_cast<int>(key_slot_);
      count_ = 0;
    }
    ++depth_;
    return true;
  }
  bool end_array() {
    --depth_;
    if (depth_ == 1 && counting_ >= 0) {
      const auto slot = static_cast<size_t>(counting_);
      if (slot < length_names_.size()) values_[slot] = count_;
      if (slot == labels_slot()) values_[slot] = kept_labels_;
      counting_ = -1;
    }
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception&) {
    error_position_ = position;
    error_token_ = last_token;
    return false;
  }

  bool not_object() const { return not_object_; }
  const std::optional<int64_t>& at(size_t slot) const { return values_[slot]; }
  const std::string& root() const { return root_; }
  // The top-level keys (the first 8) are collected only when asked: a message needs them, reading does not.
  void collect_keys(bool on) { collect_keys_ = on; }
  const std::vector<std::string>& keys() const { return keys_; }
  const std::string& bad() const { return bad_; }  // a tracked field of the wrong type
  size_t error_position() const { return error_position_; }
  const std::string& error_token() const { return error_token_; }

 private:
  enum class Kind { integer, text, array, other };

  size_t slot_of(const std::string& key) const {
    for (size_t i = 0; i < length_names_.size(); ++i)
      if (key == length_names_[i]) return i;
    if (key == "kept") return kept_slot();
    if (key == "labels") return labels_slot();
    if (key == "root") return root_slot();
    return SIZE_MAX;
  }

  bool value(Kind kind, int64_t v) {
    if (depth_ == 0) {
      not_object_ = true;
      return false;
    }
    if (depth_ == 2 && counting_ >= 0) {
      ++count_;
      if (kind == Kind::integer && v != -100 && static_cast<size_t>(counting_) == labels_slot()) ++kept_labels_;
      return true;
    }
    if (depth_ != 1) return true;
    const size_t slot = key_slot_;
    if (slot == SIZE_MAX) return true;
    const bool ok = slot == root_slot()       ? (kind == Kind::text || kind == Kind::integer)
                    : slot == labels_slot()   ? kind == Kind::array
                    : slot == kept_slot()     ? kind == Kind::integer
                                              : (kind == Kind::integer || kind == Kind::array);
    if (!ok && bad_.empty()) bad_ = key_;
    if (kind == Kind::integer && ok) {
      values_[slot] = v;
      if (slot == root_slot()) root_ = std::to_string(v);
    }
    return true;
  }

  const std::vector<std::string>& length_names_;
  int depth_ = 0;
  bool not_object_ = false;
  std::string key_;
  std::vector<std::optional<int64_t>> values_;
  int64_t kept_labels_ = 0;
  int counting_ = -1;
  int64_t count_ = 0;
  std::string root_;
  size_t key_slot_ = SIZE_MAX;
  bool collect_keys_ = false;
  std::vector<std::string> keys_;
  std::string bad_;
  size_t error_position_ = 0;
  std::string error_token_;
};

std::string type_rule(const std::string& key) {
  if (key == "kept") return "an integer";
  if (key == "labels") return "an array of token ids (-100 = no loss)";
  if (key == "root") return "a string or an integer";
  return "an integer, or an array whose length is the sample's";
}

planner::Corpus parse_jsonl(std::string_view text, const CorpusOptions& options, Problems& problems) {
  const auto names = default_length_names(options, true);
  SampleFields f(names);
  planner::Corpus corpus;
  RootIds roots;
  bool any_kept = false, any_root = false;
  std::vector<int64_t> kept;  // -1: this sample has none
  std::vector<std::string> root_of;
  std::vector<int64_t> line_of;
  for_each_line(text, [&](int64_t number, std::string_view line) {
    if (trim(line).empty()) {
      problems.add(number, 1, "empty line. Violated constraint: one JSON object per line");
      return;
    }
    f.reset();
    const bool parsed = nlohmann::json::sax_parse(line.begin(), line.end(), &f);
    if (f.not_object()) {
      problems.add(number, 1, "not a JSON object. Violated constraint: one JSON object per line");
      return;
    }
    if (!parsed) {
      problems.add(number, f.error_position() == 0 ? 1 : f.error_position(),
                   "invalid JSON near " + shown(f.error_token()) + ". Violated constraint: one JSON object per line");
      return;
    }
    if (!f.bad().empty()) {
      problems.add(number, 1, "'" + f.bad() + "' has the wrong type. Violated constraint: " + type_rule(f.bad()));
      return;
    }
    std::optional<int64_t> length;
    std::string from;
    for (size_t i = 0; i < names.size() && !length; ++i)
      if (f.at(i)) {
        length = f.at(i);
        from = names[i];
      }
    if (!length) {
      f.collect_keys(true);  // parse the line again, for the message
      f.reset();
      nlohmann::json::sax_parse(line.begin(), line.end(), &f);
      problems.add(number, 1, "no length field (keys: " + joined(f.keys()) + "). Violated constraint: one of " +
                                  joined(names) + (options.length_field.empty() ? " (--length-field names another)" : ""));
      f.collect_keys(false);
      return;
    }
    if (*length < 1 || *length > std::numeric_limits<int32_t>::max()) {
      problems.add(number, 1, from + " = " + std::to_string(*length) + ". Violated constraint: " + kLengthRule);
      return;
    }
    check_room(corpus.size(), options.max_samples, number, problems);
    corpus.lengths.push_back(static_cast<int32_t>(*length));
    line_of.push_back(number);
    const auto& k = f.at(f.kept_slot()) ? f.at(f.kept_slot()) : f.at(f.labels_slot());
    if (k && (*k < 0 || *k > *length))
      problems.add(number, 1, "kept = " + std::to_string(*k) + ". Violated constraint: an integer in [0, length]");
    kept.push_back(k ? *k : -1);
    any_kept = any_kept || k.has_value();
    const bool has_root = f.at(f.root_slot()).has_value() || !f.root().empty();
    root_of.push_back(has_root ? f.root() : std::string());
    any_root = any_root || has_root;
  });
  // Kept and root are all or nothing: a sample without them while others have them is a hole, not a default.
  for (size_t i = 0; i < line_of.size(); ++i) {
    if (any_kept && kept[i] < 0)
      problems.add(line_of[i], 1, "no kept (or labels) while other samples have it. Violated constraint: every sample or none");
    else if (any_root && root_of[i].empty())
      problems.add(line_of[i], 1, "no root while other samples have one. Violated constraint: every sample or none");
  }
  if (any_kept)
    for (int64_t k : kept) corpus.kept.push_back(static_cast<int32_t>(k));
  if (any_root) {
    for (const auto& r : root_of) corpus.roots.push_back(roots.id(r));
    corpus.num_roots = roots.count();
  }
  return corpus;
}

// ---- format ----------------------------------------------------------------------------------------

enum class Format { lengths, csv, jsonl };

// Told from the first line that is not a comment.
Format format_of(std::string_view text) {
  Format format = Format::lengths;
  bool decided = false;
  for_each_line(text, [&](int64_t, std::string_view line) {
    if (decided) return;
    decided = true;
    const auto t = trim(line);
    if (t.empty()) return;
    const char c = t.front();
    if (c == '{') format = Format::jsonl;
    else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '"' || c == '_') format = Format::csv;
  });
  return format;
}

// Blank lines after the last sample are an editor's habit, not data: they end the file. A UTF-8 byte
// order mark at the start is not data either.
std::string_view strip_ends(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  size_t end = text.size();
  while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r' || text[end - 1] == ' ' || text[end - 1] == '\t'))
    --end;
  return text.substr(0, end);
}

// A NUL byte never occurs in text: the file is binary (or compressed in a format other than gzip).
void check_text(std::string_view text, const std::string& name) {
  const size_t nul = text.find('\0');
  if (nul == std::string_view::npos) return;
  const auto before = text.substr(0, nul);
  const size_t line_start = before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
  const auto line = std::count(before.begin(), before.end(), '\n') + 1;
  throw InputError(name + ":" + std::to_string(line) + ":" + std::to_string(nul - line_start + 1) +
                   ": binary data (a NUL byte at offset " + std::to_string(nul) +
                   "). Violated constraint: text (lengths, CSV or JSON Lines), optionally gzip-compressed");
}

}  // namespace

planner::Corpus parse_corpus(std::string_view text, const std::string& name, const CorpusOptions& options) {
  if (is_gzip(text))
    throw InputError(name + ":1:1: gzip data given as text (its magic bytes open line 1). Violated constraint: "
                            "decompressed text (load_corpus_file decompresses)");
  check_text(text, name);
  text = strip_ends(text);
  Problems problems(name);
  const Format format = format_of(text);
  if (format == Format::lengths && !options.length_field.empty())
    throw InputError(name + ":1:1: a length field '" + options.length_field +
                     "' was named, but the file is one length per line. Violated constraint: a CSV header or JSON "
                     "Lines names its fields");
  planner::Corpus corpus = format == Format::jsonl ? parse_jsonl(text, options, problems)
                           : format == Format::csv ? CsvReader(options, problems).read(text)
                                                   : parse_lengths(text, options.max_samples, problems);
  problems.throw_if_any();
  if (corpus.size() == 0) throw InputError(name + ":1:1: the corpus has no samples. Violated constraint: at least one");
  return corpus;
}

planner::Corpus load_corpus_file(const std::string& path, const CorpusOptions& options) {
  return parse_corpus(read_whole_file(path), display_name(path), options);
}

void save_corpus_csv(const std::string& path, const planner::Corpus& corpus) {
  std::string text = "length";
  if (corpus.has_kept()) text += ",kept";
  if (corpus.has_roots()) text += ",root";
  text += "\n";
  for (int64_t i = 0; i < corpus.size(); ++i) {
    const auto k = static_cast<size_t>(i);
    text += std::to_string(corpus.lengths[k]);
    if (corpus.has_kept()) text.append(",").append(std::to_string(corpus.kept[k]));
    if (corpus.has_roots()) text.append(",").append(std::to_string(corpus.roots[k]));
    text += '\n';
  }
  write_file_atomically(path, text, "corpus");
}

}  // namespace stepcast::io
