#include "cli/app.hpp"

#include <iostream>

#include <unistd.h>

#include "model/errors.hpp"
#include "report/build_info.hpp"

namespace stepcast::cli {

void add_format_option(CLI::App* command, Format& format, bool has_table) {
  std::map<std::string, Format> formats{{"text", Format::text}, {"json", Format::json}};
  if (has_table) formats["csv"] = Format::csv;
  command->add_option("--format", format,
                      has_table ? "Output format: text (for people), json (for scripts) or csv (the table, for spreadsheets)"
                                : "Output format: text (for people) or json (for scripts)")
      ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case))
      ->default_str("text");
}

ProgressStyle progress_style(bool forced) {
  if (::isatty(STDERR_FILENO)) return ProgressStyle::in_place;
  return forced ? ProgressStyle::lines : ProgressStyle::none;
}

int parse_and_run(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return 0;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and the usage line
    return 2;
  } catch (const InputError& e) {
    for (const auto& line : e.problems()) std::cerr << "error: " << line << "\n";
    return 2;
  } catch (const CheckFailed& e) {
    std::cerr << "check failed: " << e.what() << "\n";
    return 1;
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    // Not expected: a library below us failed (allocation, CUDA, a file system). Still no crash.
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}

int run(int argc, char** argv) {
  CLI::App app{"stepcast: predicts the step time, memory peak and wall clock of LLM training runs from the\n"
               "model's shape, the corpus's sequence-length mix, padding and kernel tier; calibrated on\n"
               "measurements of the real model on a real GPU.",
               "stepcast"};
  app.set_version_flag("--version", report::version_text(), "Print the version, the git commit and the build's features");
  app.require_subcommand(1);
  app.fallthrough(false);
  add_describe_command(app);
  add_plan_command(app);
  add_predict_command(app);
  add_drift_command(app);
#ifdef STEPCAST_WITH_CALIBRATE
  add_calibrate_command(app);
  add_validate_command(app);
#endif
  add_kernels_command(app);
  add_campaign_command(app);
  add_measure_forwarder(app);
  return parse_and_run(app, argc, argv);
}

}  // namespace stepcast::cli
