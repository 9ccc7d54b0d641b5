// stepcast_gpu_table <gpus.yaml> <gpus.inc> <archs.inc>: checks scenarios/gpus.yaml and writes the two
// initialisers model/gpus.cpp compiles in. A bad table fails the build with file:line:col (exit 2).
#include <fstream>
#include <iostream>

#include "io/gpu_table.hpp"
#include "model/errors.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: stepcast_gpu_table <gpus.yaml> <gpus.inc> <archs.inc>\n";
    return 2;
  }
  try {
    const stepcast::io::GpuTable table = stepcast::io::load_gpu_tables(argv[1]);
    const std::pair<const char*, std::string> outputs[] = {
        {argv[2], stepcast::io::gpu_table_initialiser(table.gpus)},
        {argv[3], stepcast::io::arch_table_initialiser(table.archs)}};
    for (const auto& [path, body] : outputs) {
      std::ofstream out(path);
      out << "// Generated from " << argv[1] << " by stepcast_gpu_table: edit that file, not this one.\n" << body;
      if (!out) {
        std::cerr << "stepcast_gpu_table: cannot write " << path << "\n";
        return 2;
      }
    }
  } catch (const stepcast::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  return 0;
}
