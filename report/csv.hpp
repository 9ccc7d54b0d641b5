#pragma once
// `--format csv`: a table as RFC 4180 CSV (a header row, then one row per record; a field holding a comma,
// a double quote or a line break is quoted, its quotes doubled), for spreadsheets and scripts.
#include <iosfwd>
#include <string>
#include <vector>

namespace stepcast::report {

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // each as long as columns
};

std::string csv_field(const std::string& value);
void write_csv(std::ostream& out, const Table& table);

// Numbers for CSV: shortest text that reads back to the same double (no thousands separators, no units).
std::string csv_number(double value);

}  // namespace stepcast::report
