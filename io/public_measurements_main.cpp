// stepcast_public_table <gpus.yaml> <out.inc> <file.csv>...: checks every file of measurements/public/ against
// the GPU table and writes the initialiser model/gpu_efficiency.cpp compiles in. Bad files fail the build with
// file:line:col for every problem of every file (exit 2).
#include <fstream>
#include <iostream>

#include "io/gpu_table.hpp"
#include "io/public_measurements.hpp"
#include "model/errors.hpp"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: stepcast_public_table <gpus.yaml> <out.inc> <file.csv>...\n";
    return 2;
  }
  try {
    const stepcast::io::GpuTable table = stepcast::io::load_gpu_tables(argv[1]);
    std::vector<stepcast::model::PublicPoint> points;
    std::string problems;
    for (int i = 3; i < argc; ++i) {
      try {
        auto file = stepcast::io::load_public_measurements(argv[i], table.gpus, table.archs);
        points.insert(points.end(), file.begin(), file.end());
      } catch (const stepcast::InputError& e) {
        problems += std::string(e.what()) + "\n";
      }
    }
    if (!problems.empty()) {
      std::cerr << problems;
      return 2;
    }
    std::ofstream out(argv[2]);
    out << "// Generated from measurements/public/ by stepcast_public_table: edit those files, not this one.\n"
        << stepcast::io::public_points_initialiser(points);
    if (!out) {
      std::cerr << "stepcast_public_table: cannot write " << argv[2] << "\n";
      return 2;
    }
  } catch (const stepcast::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  return 0;
}
