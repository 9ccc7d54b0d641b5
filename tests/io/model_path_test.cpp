// Where --model finds a config.json: a file, a model directory, a shipped name, or an org/name in the local
// Hugging Face cache ($HF_HUB_CACHE, $HF_HOME), and a clear error that says where it looked.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/errors.hpp"

using namespace stepcast;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the temp directory, removed at the end.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() / ("stepcast_models_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Sets an environment variable for one scope, restoring the old value (or its absence).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

const std::string kLlama = R"({"model_type": "llama", "hidden_size": 64, "vocab_size": 100, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2})";

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A cache laid out as huggingface_hub writes it: blobs are left out, snapshots hold the files.
void cache_model(const fs::path& hub, const std::string& org, const std::string& name, const std::string& revision,
                 int layers) {
  const fs::path repo = hub / ("models--" + org + "--" + name);
  std::string config = kLlama;
  config.replace(config.find("\"num_hidden_layers\": 2"), 22, "\"num_hidden_layers\": " + std::to_string(layers));
  write(repo / "snapshots" / revision / "config.json", config);
}

std::string error_of(const std::string& arg) {
  try {
    io::resolve_model_path(arg);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a directory holding config.json is a model, named by the directory", "[config][model_path]") {
  TempDir d;
  write(d.path() / "Llama-Tiny" / "config.json", kLlama);
  const std::string dir = (d.path() / "Llama-Tiny").string();
  CHECK(io::resolve_model_path(dir) == (d.path() / "Llama-Tiny" / "config.json").string());
  const auto shape = io::load_model(dir + "/");
  CHECK(shape.name == "Llama-Tiny");
  CHECK(shape.num_layers() == 2);
  fs::create_directories(d.path() / "empty");
  CHECK_THAT(error_of((d.path() / "empty").string()), Contains("a directory without a config.json"));
}

TEST_CASE("org/name resolves from $HF_HUB_CACHE, then $HF_HOME/hub, at the revision refs/main names",
          "[config][model_path]") {
  TempDir home, hub;
  ScopedEnv no_models("STEPCAST_MODELS_DIR", (home.path() / "none").string());
  SECTION("HF_HOME") {
    ScopedEnv unset_hub("HF_HUB_CACHE", std::nullopt);
    ScopedEnv hf_home("HF_HOME", home.path().string());
    cache_model(home.path() / "hub", "acme", "tiny-llama", "aaaa", 2);
    cache_model(home.path() / "hub", "acme", "tiny-llama", "bbbb", 3);
    write(home.path() / "hub" / "models--acme--tiny-llama" / "refs" / "main", "aaaa");
    const auto shape = io::load_model("acme/tiny-llama");
    CHECK(shape.num_layers() == 2);  // refs/main wins over the other snapshot
    CHECK(shape.name == "tiny-llama");
  }
  SECTION("HF_HUB_CACHE wins over HF_HOME") {
    ScopedEnv hub_cache("HF_HUB_CACHE", hub.path().string());
    ScopedEnv hf_home("HF_HOME", home.path().string());
    cache_model(hub.path(), "acme", "tiny-llama", "cccc", 4);
    cache_model(home.path() / "hub", "acme", "tiny-llama", "aaaa", 2);
    CHECK(io::load_model("acme/tiny-llama").num_layers() == 4);
  }
}

TEST_CASE("an org/name not in the cache says where it looked and how to fetch it", "[config][model_path]") {
  TempDir hub;
  ScopedEnv hub_cache("HF_HUB_CACHE", hub.path().string());
  const std::string p = error_of("acme/absent-model");
  CHECK_THAT(p, Contains("model 'acme/absent-model': not in the local Hugging Face cache"));
  CHECK_THAT(p, Contains((hub.path() / "models--acme--absent-model" / "snapshots").string()));
  CHECK_THAT(p, Contains("huggingface-cli download acme/absent-model config.json"));
  CHECK_THAT(error_of("no-such-model"), Contains("no such file or directory"));
}

TEST_CASE("shipped names and file paths resolve as before", "[config][model_path]") {
  CHECK(io::load_model("gemma-4-26b-a4b").name == "gemma-4-26b-a4b");
  CHECK(io::load_model(STEPCAST_SCENARIOS "/models/llama-3-8b.json").name == "llama-3-8b");
}
