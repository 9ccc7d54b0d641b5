// stepcast-measure: the harness's own executable (it links LibTorch). Users run it as `stepcast measure`.
#include "cli/app.hpp"

int main(int argc, char** argv) {
  CLI::App app{"stepcast measure: runs the sm_120 study's probes on the real model on this machine's GPU", "stepcast"};
  app.require_subcommand(1);
  stepcast::cli::add_measure_command(app);
  return stepcast::cli::parse_and_run(app, argc, argv);
}
