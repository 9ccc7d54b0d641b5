#include "harness/tier.hpp"

#include <sstream>
#include <vector>

#include "model/errors.hpp"

namespace stepcast::harness {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, sep)) parts.push_back(part);
  return parts;
}

bool parse_attention(const std::string& s, Attention& out) {
  if (s == "sdpa-auto") out = Attention::automatic;
  else if (s == "sdpa-flash") out = Attention::flash;
  else if (s == "sdpa-efficient") out = Attention::efficient;
  else if (s == "sdpa-cudnn") out = Attention::cudnn;
  else if (s == "sdpa-math") out = Attention::math;
  else return false;
  return true;
}

}  // namespace

std::string Tier::attention_name() const {
  switch (attention) {
    case Attention::automatic: return "sdpa-auto";
    case Attention::flash: return "sdpa-flash";
    case Attention::efficient: return "sdpa-efficient";
    case Attention::cudnn: return "sdpa-cudnn";
    case Attention::math: return "sdpa-math";
  }
  return "sdpa-auto";
}

std::string Tier::experts_name() const { return experts == Experts::grouped ? "grouped" : "loop"; }

std::string Tier::label() const {
  std::string s = attention_name() + "/" + experts_name();
  if (ce == CrossEntropy::chunked) s += "/ce-chunked";
  if (mask == MaskPath::explicit_mask) s += "/mask-explicit";
  if (gqa == Gqa::expand) s += "/gqa-expand";
  if (gqa == Gqa::native) s += "/gqa-native";
  return s;
}

Tier parse_tier(const std::string& label) {
  const std::vector<std::string> parts = split(label, '/');
  Tier tier;
  std::vector<std::string> problems;
  const std::string where = "tier '" + label + "'";
  if (parts.size() < 2) {
    throw InputError(where + ". Violated constraint: <attention>/<experts>[/extra...], e.g. " + kDefaultTier);
  }
  if (!parse_attention(parts[0], tier.attention))
    problems.push_back(where + ": attention '" + parts[0] +
                       "'. Violated constraint: one of sdpa-auto, sdpa-flash, sdpa-efficient, sdpa-cudnn, sdpa-math");
  if (parts[1] == "loop") tier.experts = Experts::loop;
  else if (parts[1] == "grouped") tier.experts = Experts::grouped;
  else problems.push_back(where + ": experts '" + parts[1] + "'. Violated constraint: loop or grouped");
  for (size_t i = 2; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    if (p == "ce-chunked") tier.ce = CrossEntropy::chunked;
    else if (p == "mask-explicit") tier.mask = MaskPath::explicit_mask;
    else if (p == "gqa-expand") tier.gqa = Gqa::expand;
    else if (p == "gqa-native") tier.gqa = Gqa::native;
    else
      problems.push_back(where + ": extra '" + p +
                         "'. Violated constraint: one of ce-chunked, mask-explicit, gqa-expand, gqa-native");
  }
  if (!problems.empty()) throw InputError(problems);
  return tier;
}

}  // namespace stepcast::harness
