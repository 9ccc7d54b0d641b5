// `stepcast-measure`: the measure subcommand alone (see CMakeLists.txt here), with the exit codes of
// cli/app.cpp: 0 success, 1 a failed check, 2 bad input.
#include <iostream>

#include "cli/app.hpp"
#include "model/errors.hpp"

namespace stepcast::cli {
void add_format_option(CLI::App* command, Format& format) {
  command->add_option("--format", format, "Output format: text or json")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Format>{{"text", Format::text}, {"json", Format::json}},
                                          CLI::ignore_case));
}
}  // namespace stepcast::cli

int main(int argc, char** argv) {
  CLI::App app{"stepcast-measure: stepcast's measure subcommand alone", "stepcast-measure"};
  app.require_subcommand(1);
  stepcast::cli::add_measure_command(app);
  try {
    app.parse(argc, argv);
    return 0;
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const stepcast::InputError& e) {
    for (const auto& line : e.problems()) std::cerr << "error: " << line << "\n";
    return 2;
  } catch (const stepcast::CheckFailed& e) {
    std::cerr << "check failed: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
