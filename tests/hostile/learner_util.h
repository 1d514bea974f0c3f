#pragma once
// A tiny Learner run for the hostile-checkpoint tests, and a way to rewrite a checkpoint's
// metadata the way an attacker (or a bit flip) would.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "ember/store/safetensors.h"
#include "ember/train/learner.h"
#include "store/store_test_util.h"
#include "train/synthetic.h"

namespace ember::test {

/// A Learner over a tiny model that checkpoints into its own scratch directory.
struct TinyRun {
  ScratchDir dir;
  data::DatasetPtr<data::Example> ds = blobs(32, 4, 8, 1);
  data::DataLoader<data::Example> loader{ds, {.batch_size = 8}};
  BlobNet net;
  optim::Adam opt{net.parameters(), {.lr = 1e-2}};
  std::unique_ptr<train::Learner> learner;
  explicit TinyRun(int64_t epochs = 1) {
    learner = std::make_unique<train::Learner>(
        net, opt,
        train::LearnerOptions{.epochs = epochs,
                              .checkpoint_dir = dir.path.string(),
                              .handle_interrupt = false,
                              .renderer = train::silent_renderer()});
  }
  /// Fits once and returns the checkpoint it left.
  std::string checkpoint() {
    learner->fit(loader, train::classification_step(net));
    return train::Learner::latest_checkpoint(dir.path.string());
  }
};

/// The checkpoint at `from` written to `to` with its metadata changed by `edit(learner_json,
/// metadata)`; a learner_json set to null leaves the metadata's own "ember.learner" as edited.
template <class F>
void rewrite_checkpoint(const std::string& from, const std::string& to, F edit) {
  store::SafetensorsFile f(from);
  store::Metadata md = f.metadata();
  nlohmann::json j = nlohmann::json::parse(md.at("ember.learner"));
  edit(j, md);
  if (!j.is_null()) md["ember.learner"] = j.dump();
  store::save_safetensors(to, f.load_all(), md);
}

}  // namespace ember::test
