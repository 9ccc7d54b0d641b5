#include "io/corpus_io.hpp"

#include "io/atomic_file.hpp"

#include <cstdio>
#include <filesystem>
#include <limits>
#include <unordered_map>
#include <vector>

#include "model/errors.hpp"

#include <unistd.h>

namespace stepcast::io {
namespace {

constexpr size_t kMaxReported = 20;

std::string read_whole_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw InputError(path + ": cannot open the corpus file (does it exist, is it readable?)");
  std::string text;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw InputError(path + ": read error");
  return text;
}

// Collects bad lines; only the first kMaxReported are spelled out.
class Problems {
 public:
  explicit Problems(std::string name) : name_(std::move(name)) {}
  void add(int64_t line, size_t col, const std::string& what) {
    if (messages_.size() < kMaxReported)
      messages_.push_back(name_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + what);
    ++count_;
  }
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

// Calls f(line_number, line) for every line except comments; a final newline ends the last line.
template <typename F>
void for_each_line(std::string_view text, F&& f) {
  int64_t number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    ++number;
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() != '#') f(number, line);
    pos = end + 1;
  }
}

std::string quoted(std::string_view s) {
  std::string out(1, '\'');
  out.append(s.substr(0, 40));
  out.append(s.size() > 40 ? "...'" : "'");
  return out;
}

void check_length(int64_t number, std::string_view field, size_t col, Problems& problems, int64_t& length) {
  if (!parse_int(trim(field), length) || length < 1) {
    problems.add(number, col, "length = " + quoted(field) + ". Violated constraint: an integer in [1, 2147483647]");
    length = 0;
  }
}

planner::Corpus parse_lengths(std::string_view text, Problems& problems) {
  planner::Corpus corpus;
  corpus.lengths.reserve(text.size() / 4);
  for_each_line(text, [&](int64_t number, std::string_view line) {
    if (trim(line).empty()) {
      problems.add(number, 1, "empty line. Violated constraint: one length per line");
      return;
    }
    int64_t length = 0;
    check_length(number, line, 1, problems, length);
    corpus.lengths.push_back(static_cast<int32_t>(length));
  });
  return corpus;
}

struct Columns {
  int length = -1, kept = -1, root = -1, count = 0;
};

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t pos = 0;
  while (true) {
    const size_t comma = line.find(',', pos);
    fields.push_back(line.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return fields;
}

Columns parse_header(int64_t number, std::string_view line, Problems& problems) {
  Columns c;
  const auto fields = split(line);
  c.count = static_cast<int>(fields.size());
  for (int i = 0; i < c.count; ++i) {
    const auto f = trim(fields[static_cast<size_t>(i)]);
    int* slot = f == "length" ? &c.length : f == "kept" ? &c.kept : f == "root" ? &c.root : nullptr;
    if (slot == nullptr || *slot >= 0) {
      problems.add(number, 1, "CSV header column " + quoted(f) +
                                  ". Violated constraint: the header is length[,kept][,root], each column once "
                                  "(a first line that starts with a letter is read as a CSV header)");
      continue;
    }
    *slot = i;
  }
  if (c.length < 0) problems.add(number, 1, "CSV header has no 'length' column. Violated constraint: required");
  return c;
}

planner::Corpus parse_csv(std::string_view text, Problems& problems) {
  planner::Corpus corpus;
  Columns cols;
  bool header = true;
  std::unordered_map<std::string, int32_t> root_ids;
  std::vector<std::string_view> fields;
  for_each_line(text, [&](int64_t number, std::string_view line) {
    if (header) {
      cols = parse_header(number, line, problems);
      header = false;
      return;
    }
    if (cols.length < 0) return;  // the header is already reported
    fields = split(line);
    if (static_cast<int>(fields.size()) != cols.count) {
      problems.add(number, 1, "a row of " + std::to_string(fields.size()) + " fields. Violated constraint: " +
                                  std::to_string(cols.count) + " fields, as in the header");
      return;
    }
    int64_t length = 0;
    check_length(number, fields[static_cast<size_t>(cols.length)], 1, problems, length);
    corpus.lengths.push_back(static_cast<int32_t>(length));
    if (cols.kept >= 0) {
      int64_t kept = 0;
      const auto field = fields[static_cast<size_t>(cols.kept)];
      if (!parse_int(trim(field), kept) || kept > length)
        problems.add(number, 1, "kept = " + quoted(field) + ". Violated constraint: an integer in [0, length]");
      corpus.kept.push_back(static_cast<int32_t>(kept));
    }
    if (cols.root >= 0) {
      const auto root = trim(fields[static_cast<size_t>(cols.root)]);
      if (root.empty()) problems.add(number, 1, "root is empty. Violated constraint: a document id");
      const auto [it, added] = root_ids.emplace(std::string(root), static_cast<int32_t>(root_ids.size()));
      corpus.roots.push_back(it->second);
    }
  });
  if (header) problems.add(1, 1, "the file has no header line. Violated constraint: length[,kept][,root]");
  corpus.num_roots = static_cast<int64_t>(root_ids.size());
  return corpus;
}

// CSV when the first line that is not a comment starts with a letter (a header), lengths otherwise.
bool looks_like_csv(std::string_view text) {
  bool csv = false, decided = false;
  for_each_line(text, [&](int64_t, std::string_view line) {
    if (decided) return;
    decided = true;
    const auto t = trim(line);
    csv = !t.empty() && ((t.front() >= 'a' && t.front() <= 'z') || (t.front() >= 'A' && t.front() <= 'Z'));
  });
  return csv;
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

}  // namespace

planner::Corpus parse_corpus(std::string_view text, const std::string& name) {
  text = strip_ends(text);
  Problems problems(name);
  planner::Corpus corpus = looks_like_csv(text) ? parse_csv(text, problems) : parse_lengths(text, problems);
  problems.throw_if_any();
  if (corpus.size() == 0) throw InputError(name + ":1:1: the corpus has no samples. Violated constraint: at least one");
  return corpus;
}

planner::Corpus load_corpus_file(const std::string& path) { return parse_corpus(read_whole_file(path), path); }

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
