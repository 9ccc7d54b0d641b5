// stepcast_gpu_table <gpus.yaml> <out.inc>: checks scenarios/gpus.yaml and writes the initialiser that
// model/gpus.cpp compiles in. A bad table fails the build with file:line:col (exit 2).
#include <fstream>
#include <iostream>

#include "io/gpu_table.hpp"
#include "model/errors.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: stepcast_gpu_table <gpus.yaml> <out.inc>\n";
    return 2;
  }
  try {
    const std::string body = stepcast::io::gpu_table_initialiser(stepcast::io::load_gpu_table(argv[1]));
    std::ofstream out(argv[2]);
    out << "// Generated from " << argv[1] << " by stepcast_gpu_table: edit that file, not this one.\n" << body;
    if (!out) {
      std::cerr << "stepcast_gpu_table: cannot write " << argv[2] << "\n";
      return 2;
    }
  } catch (const stepcast::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  return 0;
}
