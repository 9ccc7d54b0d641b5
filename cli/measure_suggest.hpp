#pragma once
// stepcast measure --suggest (cli/measure_suggest.cpp): answered in stepcast itself, no harness needed.
#include <string>
#include <vector>

namespace stepcast::cli {

bool is_suggest(const std::vector<std::string>& args);       // the arguments after `measure` ask for --suggest
void run_measure_suggest(const std::vector<std::string>& args);

}  // namespace stepcast::cli
