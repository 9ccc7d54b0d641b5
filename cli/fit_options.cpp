#include "cli/fit_options.hpp"

#include "cli/transfer_options.hpp"

namespace stepcast::cli {

void add_fit_input_options(CLI::App* cmd, io::FitInputOptions& o, bool measurements_required) {
  auto* m = cmd->add_option("--measurements", o.measurements,
                            "measurement records (JSON Lines); several files (repeat the flag or list them) are fitted together");
  if (measurements_required) m->required();
  cmd->add_option("--model", o.model, "config.json path or model name (default: the records' model)");
  cmd->add_option("--tier", o.tier, "Use only the records of this tier label");
  cmd->add_option("--gpu", o.gpu, "Use only the records of this GPU name");
  cmd->add_option("--dtype", o.dtype,
                  "The weights' dtype the records were measured in, where they do not say (default: the config's "
                  "torch_dtype; a record's own dtype field wins)")
      ->check(CLI::IsMember({"bfloat16", "float16", "float32", "float8_e4m3fn", "float8_e5m2", "int8"}));
  cmd->add_flag("--pooled", o.pooled,
                "Fit records of several models at once, each priced with its own model's work: one rate per unit of "
                "work for all (the default predictor, docs/method.md); validate then holds out one model at a time");
  cmd->add_option("--loss", o.loss, "Robust loss: none, huber or cauchy")
      ->check(CLI::IsMember({"none", "huber", "cauchy"}))
      ->default_str("none");
  cmd->add_option("--loss-scale", o.loss_scale, "Relative step error where the robust loss bends")
      ->check(CLI::PositiveNumber)
      ->default_str("0.05");
  cmd->add_option("--residuals", o.residuals, "Step residuals: relative (every record weighs the same) or absolute (seconds)")
      ->check(CLI::IsMember({"relative", "absolute"}))
      ->default_str("relative");
  cmd->add_option("--prior", o.prior,
                  "Regularise toward a coefficient file: auto (a shipped file of the same model, GPU and tier that "
                  "was not fitted on these records, if any), none, or a path")
      ->default_str("auto");
  cmd->add_option("--prior-sigma", o.prior_sigma, "Relative standard deviation of each prior coefficient")
      ->check(CLI::PositiveNumber)
      ->default_str("0.5");
  cmd->add_option("--expert-work", o.expert_work,
                  "What the routed-expert rate prices: roofline (FLOPs + streamed weights + routed token bytes, "
                  "docs/method.md \"Experts by tokens per expert\") or per-flop (files written before it); default: "
                  "the prior's, else roofline")
      ->check(CLI::IsMember({"roofline", "per-flop"}));
  cmd->add_option("--memory-work", o.memory_work,
                  "What the memory-bound rate prices: weighted (norm passes and LoRA's elementwise bytes counted, "
                  "docs/method.md \"Memory-bound work\") or plain (files written before it); default: the prior's, "
                  "else weighted")
      ->check(CLI::IsMember({"weighted", "plain"}));
}

model::Transfer transferred_prior(const std::string& prior_path, const std::string& model_arg,
                                  const std::vector<calibrate::Record>& records) {
  const calibrate::Record& first = records.front();  // check_uniform: every record shares model, GPU and tier
  predict::PredictorAsk ask = predictor_ask(prior_path, model_arg, {first.gpu, first.tier, "", true});
  ask.coefficients_where = "--prior";
  return predict::choose_predictor(ask).transfer;
}

}  // namespace stepcast::cli
