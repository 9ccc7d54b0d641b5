#pragma once
// `stepcast campaign report`: the records a device call brought back against the committed prediction, one row per
// check and item (docs/campaigns.md, "The report"):
//   step_time, peak_allocated, peak_reserved  every probe point (not a kernel-table point) and every run micro-batch
//                                             against its predicted line; a run micro-batch's prediction is its step
//                                             plus its first-seen and run-start seconds (planner/timeline.hpp)
//   run_wall_clock                            a run's last elapsed_s against the planner's simulated wall clock
//   pad_bucket_ratio                          T(pad-to-longest) / T(bucket-to-pair) of one item's two runs
// error = predicted / measured - 1. A row passes when every value meets the goal. Values of cold-labelled runs and
// micro-batches that grew the driver's JIT cache go to rows of their own, never judged (a one-off per machine,
// docs/host.md); probes are timed after their warm-up, so they are never set apart.
#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <vector>

#include "io/campaign_io.hpp"
#include "report/csv.hpp"

namespace stepcast::campaign {

struct ReportRow {
  std::string item;      // a plan item's id without the repeat (a pair's "a : b" for a ratio)
  std::string metric;
  std::string unit;      // "s", "GiB", "ratio"
  int64_t n = 0;         // values compared
  double predicted = 0;  // means over the values
  double measured = 0;
  double mean_error = 0;  // relative, signed
  double mape = 0;        // mean |error|
  double max_error = 0;   // the signed error of largest magnitude
  std::string goal;
  bool apart = false;    // cold or JIT growth: shown, not judged
  bool pass = false;     // judged rows only
  std::string note;      // "no records", "3 OOM", "replay 41.2 s", ...
};

struct CampaignReport {
  std::string campaign;
  std::string prediction;  // the file paired with
  std::string records;
  std::vector<ReportRow> rows;
  std::vector<std::string> misses;  // one sentence per judged row that did not pass
  std::vector<std::string> notes;   // about the records as a whole ("3 record(s) match no item")
};

// `records` is the folder the runner filled (one <plan item>.jsonl each, io::records_file_name) or one records file
// (each record goes to the item its "item" field names, else to the item of its model: runs by run id).
// `prediction` overrides the campaign's prediction file (another committed prediction of the same points).
CampaignReport build_report(const io::Campaign& c, const std::string& records, const std::string& prediction = "");

std::string report_markdown(const CampaignReport& r);
nlohmann::json report_json(const CampaignReport& r);
report::Table report_table(const CampaignReport& r);

}  // namespace stepcast::campaign
