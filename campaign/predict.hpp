#pragma once
// `stepcast campaign predict`: a campaign's pre-registered prediction (JSON Lines, one line per probe point and per
// run) and its device plan (NAME.plan.json, the one file the GPU machine reads), both from the planner and the
// predictor `plan` uses (docs/campaigns.md has both formats).
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "io/campaign_io.hpp"
#include "model/step_model.hpp"
#include "planner/corpus.hpp"
#include "predict/predictor.hpp"

namespace stepcast::campaign {

// What predicts an item: the question every front end asks (predict::choose_predictor, as `plan` asks it), for the
// item's model, the campaign's GPU and coefficients (none: the GPU's default predictor), the item's stack and LoRA
// (rank and targets as measured).
struct ItemPredictor {
  predict::Predictor chosen;
  std::string description;                  // chosen.first_line, the coefficient file named as the campaign names it
  std::unique_ptr<model::StepModel> model;
};
ItemPredictor item_predictor(const io::Campaign& c, const io::CampaignItem& item);

// A run item's corpus as the device runs it: the source's samples, only the first `samples` when set.
planner::Corpus run_corpus(const io::CampaignRun& run);

struct CampaignPrediction {
  std::vector<nlohmann::json> lines;  // the prediction file, one object a line
  nlohmann::json plan;                // NAME.plan.json
};

// Every prediction line and the plan, computed (nothing written). Throws InputError for what only the predictor
// can refuse (a transfer without `transfer: true`, a peak_reserved check it cannot predict).
CampaignPrediction predict_campaign(const io::Campaign& c);

struct WrittenPrediction {
  std::string prediction;  // paths written
  std::string plan;
};

// Writes the plan, then the prediction, each atomically (io/atomic_file.hpp), beside the campaign's prediction path
// or into `out_dir` when given (created if missing). An existing prediction file is refused (InputError, exit 2):
// a pre-registered prediction is never overwritten.
WrittenPrediction write_prediction(const io::Campaign& c, const CampaignPrediction& p, const std::string& out_dir);

}  // namespace stepcast::campaign
