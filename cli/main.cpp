#include "cli/app.hpp"

int main(int argc, char** argv) { return stepcast::cli::run(argc, argv); }
