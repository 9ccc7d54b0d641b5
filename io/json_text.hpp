#pragma once
// Strict JSON parsing with a nesting cap and a byte position for every refusal. nlohmann's DOM parser
// is iterative, but copying, comparing or dumping a value recurses once per level, so a line nested
// 200 000 deep overflows the stack later; and a number beyond double range throws out_of_range without
// a position. Both become an ordinary, located parse failure here. Header-only (calibrate/ and kernels/
// use it without linking the io library).
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "model/limits.hpp"

namespace stepcast::io {

struct JsonParse {
  nlohmann::json value;
  bool ok = false;
  size_t byte = 0;      // 0-based offset of the offending character (when !ok)
  std::string message;  // why (when !ok), without nlohmann's "[json.exception...]" prefix
};

namespace detail {

// Builds the DOM through nlohmann's own SAX DOM builder, counting depth and keeping the error position.
class BoundedSax {
 public:
  using json = nlohmann::json;
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  BoundedSax(JsonParse& out, int max_depth) : out_(out), dom_(out.value, false), max_depth_(max_depth) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) { return dom_.number_float(v, s); }
  bool string(string_t& v) { return dom_.string(v); }
  bool binary(binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) { return deeper() && dom_.start_object(n); }
  bool key(string_t& v) { return dom_.key(v); }
  bool end_object() { --depth_; return dom_.end_object(); }
  bool start_array(std::size_t n) { return deeper() && dom_.start_array(n); }
  bool end_array() { --depth_; return dom_.end_array(); }
  bool parse_error(std::size_t position, const std::string& /*last_token*/, const nlohmann::detail::exception& e) {
    fail(position > 0 ? position - 1 : 0, e.what());
    return false;
  }
  // The SAX interface does not pass positions to start_object, so parse_json_bounded locates a depth
  // refusal by scanning for the offending bracket afterwards.
  bool too_deep() const { return too_deep_; }

 private:
  bool deeper() {
    if (++depth_ <= max_depth_) return true;
    too_deep_ = true;
    return false;
  }
  void fail(size_t byte, const std::string& what) {
    out_.byte = byte;
    const auto bracket = what.find("] ");
    out_.message = bracket == std::string::npos ? what : what.substr(bracket + 2);
  }
  JsonParse& out_;
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  int max_depth_;
  int depth_ = 0;
  bool too_deep_ = false;
};

// Offset of the bracket that opens level max_depth + 1 (strings skipped), for the depth refusal.
inline size_t deep_bracket(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) return i;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return 0;
}

}  // namespace detail

// Parses `text` strictly (no comments, no trailing commas), refusing nesting beyond `max_depth` and
// numbers beyond double range, each with the byte where it happened.
inline JsonParse parse_json_bounded(std::string_view text, int max_depth = limits::kMaxJsonDepth) {
  JsonParse out;
  detail::BoundedSax sax(out, max_depth);
  try {
    out.ok = nlohmann::json::sax_parse(text, &sax);
  } catch (const nlohmann::json::exception& e) {
    out.ok = false;
    out.message = e.what();
  }
  if (sax.too_deep()) {
    out.ok = false;
    out.byte = detail::deep_bracket(text, max_depth);
    out.message = "nested deeper than " + std::to_string(max_depth) + " levels. Violated constraint: depth <= " +
                  std::to_string(max_depth);
  }
  if (!out.ok) out.value = nullptr;
  return out;
}

// Line and column (both from 1) of a byte offset into text.
inline std::pair<size_t, size_t> line_col(std::string_view text, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

}  // namespace stepcast::io
