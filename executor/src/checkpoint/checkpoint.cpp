#include "parallax/executor/checkpoint/checkpoint.hpp"

#include <cstdio>
#include <filesystem>

#include "durable_file.hpp"
#include "parallax/core/error.hpp"
#include "parallax/executor/checkpoint/checkpoint_identity.hpp"
#include "parallax/executor/checkpoint/checkpoint_layout.hpp"
#include "parallax/executor/checkpoint/safetensors.hpp"
#include "shape_text.hpp"

namespace parallax::exec {

namespace fs = std::filesystem;

namespace {

constexpr const char* kGpt2Format = "parallax checkpoint 1 (HF GPT-2 names and Conv1D (in, out) layout; wte padded)";
constexpr const char* kLlamaFormat =
    "parallax checkpoint 1 (HF Llama names and (out, in) layout; model.embed_tokens and lm_head padded)";

std::string shard_file_name(const std::string& kind, const ProcessGroups& g) {
  return kind + "_tp" + std::to_string(g.coords.tp) + "_pp" + std::to_string(g.coords.pp) +
         (g.ep.size > 1 ? "_ep" + std::to_string(g.ep.rank) : "") + ".safetensors";
}

// One writer per parameter shard: the first rank of the dp x cp replicas; with expert
// parallelism, a routed expert's tensors from the first rank of its edp replicas (each ep rank's
// own file).
bool writes_tensor(const ParamTensor& x, const ProcessGroups& g) {
  if (x.tied_copy) return false;
  return x.expert ? g.edp.rank == 0 : g.dp.rank == 0;
}
bool writes_file(const ProcessGroups& g) { return g.dp.rank == 0 || (g.ep.size > 1 && g.edp.rank == 0); }

// The error of the lowest-numbered rank that has one (empty when no rank has), on every rank.
std::string first_error(const std::string& mine, MPI_Comm world) {
  int size = 0, rank = 0;
  MPI_Comm_size(world, &size);
  MPI_Comm_rank(world, &rank);
  int failing = mine.empty() ? size : rank;
  MPI_Allreduce(MPI_IN_PLACE, &failing, 1, MPI_INT, MPI_MIN, world);
  if (failing == size) return "";
  std::string msg = rank == failing ? mine : "";
  int n = static_cast<int>(msg.size());
  MPI_Bcast(&n, 1, MPI_INT, failing, world);
  msg.resize(static_cast<size_t>(n));
  MPI_Bcast(msg.data(), n, MPI_CHAR, failing, world);
  return msg;
}

using detail::shape_text;

// The stored global shape is this plan's, or differs only by the vocabulary padding (a multiple of
// 128*tp: another tp pads otherwise); rows past the vocabulary are not loaded (extract_shard).
bool fits(const std::vector<int64_t>& stored, const ParamTensor& x) {
  if (stored == x.global_shape) return true;
  return x.valid_rows > 0 && stored.size() == 2 && x.global_shape.size() == 2 && stored[1] == x.global_shape[1] &&
         stored[0] >= x.valid_rows;
}

}  // namespace

void save_checkpoint(const std::string& dir, Trainer& t, const ProcessGroups& g,
                     const std::string& plan_json, const ModelSpec& model) {
  std::vector<float> m, v;
  t.pull_params();                 // device backends: fp32 master weights to the host (DP)
  t.gather_optimizer_state(m, v);  // collective over DP
  const std::string sd = checkpoint_step_dir(dir, t.step_count());
  const MPI_Comm world = g.world.comm;
  auto fail_all = [&](const std::string& why) {
    if (g.world.rank == 0) {
      std::error_code ec;
      fs::remove_all(sd, ec);  // a step without COMPLETE is never loaded; leave no debris either
    }
    MPI_Barrier(world);
    throw RunFailure("run: cannot write the checkpoint " + sd + " (" + why +
                     "); the older checkpoints in " + dir + " are untouched");
  };
  std::string error;
  if (g.world.rank == 0) {
    std::error_code ec;
    fs::create_directories(sd, ec);
    if (ec) error = sd + ": cannot create the directory: " + ec.message();
  }
  if (std::string e = first_error(error, world); !e.empty()) fail_all(e);
  if (writes_file(g)) {
    ShardFile f;
    // Hugging Face's loaders refuse a safetensors file whose "format" is not "pt" (or tf, flax).
    f.metadata["format"] = "pt";
    const bool llama = hf_llama_layout(model);
    f.metadata["parallax_format"] = llama ? kLlamaFormat : kGpt2Format;
    f.metadata["step"] = std::to_string(t.step_count());
    f.metadata["plan"] = plan_json;
    record_model(f.metadata, model);
    f.metadata["shard"] = "tp " + std::to_string(g.coords.tp) + " pp " + std::to_string(g.coords.pp) +
                          (g.ep.size > 1 ? " ep " + std::to_string(g.ep.rank) : "");
    for (const auto& x : t.tensors()) {
      if (!writes_tensor(x, g)) continue;
      for (const auto& [prefix, data] : {std::pair{"", t.params().data()}, {"optimizer.m.", m.data()},
                                         {"optimizer.v.", v.data()}})
        for (auto& e : stored_entries(x, prefix, data + x.offset, llama)) f.tensors.push_back(std::move(e));
    }
    try {
      write_shard_file((fs::path(sd) / shard_file_name("model", g)).string(), f);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (std::string e = first_error(error, world); !e.empty()) fail_all(e);
  if (g.world.rank == 0) {
    const std::string step = std::to_string(t.step_count()) + "\n";
    try {
      write_file_durably((fs::path(sd) / "COMPLETE").string(), {step});
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (std::string e = first_error(error, world); !e.empty()) fail_all(e);
}

std::map<std::string, GlobalTensor> read_stored_tensors(const std::string& dir,
                                                        const std::string& prefix) {
  std::vector<ShardFile> files;
  for (const auto& p : shard_files(dir)) files.push_back(read_shard_file(p));
  return assemble(files, prefix);
}

std::map<std::string, GlobalTensor> read_global_tensors(const std::string& dir,
                                                        const std::string& prefix) {
  // Prefixes name the executor's tensors: the stored names of a Llama-layout checkpoint differ.
  auto all = to_executor_layout(read_stored_tensors(dir), dir);
  if (prefix.empty()) return all;
  std::map<std::string, GlobalTensor> out;
  for (auto& [name, g] : all)
    if (name.rfind(prefix, 0) == 0) out.emplace(name, std::move(g));
  return out;
}

bool load_latest_checkpoint(const std::string& dir, Trainer& t, const ProcessGroups& g) {
  for (const fs::path sd : complete_checkpoints(dir)) {
    std::map<std::string, GlobalTensor> all;
    int64_t step = 0;
    try {
      step = completed_step(sd.string());
      all = read_global_tensors(sd.string());
      // Weights are required; a weights-only checkpoint (e.g. from the PyTorch reference)
      // starts Adam from zero.
      for (const auto& x : t.tensors())
        for (const std::string p : {"", "optimizer.m.", "optimizer.v."}) {
          const auto it = all.find(p + x.name);
          if (it == all.end()) {
            if (p.empty() || all.count("optimizer.m." + x.name))
              throw InputError(sd.string(), p + x.name, "tensor missing from the checkpoint");
            continue;
          }
          // A checkpoint of another model: the same names, other sizes.
          if (!fits(it->second.shape, x))
            throw InputError(sd.string(), p + x.name, "global shape " + shape_text(it->second.shape) +
                                                          " differs from this plan's " + shape_text(x.global_shape));
        }
    } catch (const InputError& e) {
      if (g.world.rank == 0)
        std::fprintf(stderr, "parallax: warning: checkpoint refused: %s; trying an older one\n",
                     e.what());
      continue;
    }
    std::vector<float> m(t.params().size(), 0.0f), v(t.params().size(), 0.0f);
    for (const auto& x : t.tensors()) {
      extract_shard(all.at(x.name), x, t.params().data() + x.offset);
      if (!all.count("optimizer.m." + x.name)) continue;
      extract_shard(all.at("optimizer.m." + x.name), x, m.data() + x.offset);
      extract_shard(all.at("optimizer.v." + x.name), x, v.data() + x.offset);
    }
    t.push_params();
    t.scatter_optimizer_state(m, v);
    t.set_step_count(step);
    if (g.world.rank == 0)
      std::fprintf(stderr, "parallax: resumed from %s (step %lld)\n", sd.string().c_str(),
                   static_cast<long long>(step));
    return true;
  }
  return false;
}

void dump_gradients(const std::string& dir, Trainer& t, const ProcessGroups& g, const ModelSpec& model) {
  t.gather_grads();  // collective over DP (ZeRO-1)
  t.pull_grads();    // device backends: gradients and captured logits to the host
  if (g.world.rank == 0) fs::create_directories(dir);
  MPI_Barrier(g.world.comm);
  if (writes_file(g)) {
    ShardFile f;
    f.metadata["content"] = "gradients after reduction, before clipping";
    for (const auto& x : t.tensors())
      if (writes_tensor(x, g))
        for (auto& e : stored_entries(x, "", t.grads().data() + x.offset, hf_llama_layout(model)))
          f.tensors.push_back(std::move(e));
    if (!t.captured_logits().empty() && g.dp.rank == 0) {  // last stage: its vocabulary shard of every token's logits
      const Dims& d = t.last_dims();
      ShardEntry e;
      e.shard.name = "logits";
      const int64_t rows = static_cast<int64_t>(t.captured_logits().size()) / d.Vl;
      e.shard.global_shape = {rows, d.Vl * g.tp.size};
      e.shard.local_shape = {rows, d.Vl};
      e.shard.shard_dim = 1;
      e.shard.segments = {{d.vocab_start, 0, d.Vl}};
      e.data = t.captured_logits();
      f.tensors.push_back(std::move(e));
    }
    write_shard_file((fs::path(dir) / shard_file_name("grads", g)).string(), f);
  }
  MPI_Barrier(g.world.comm);
}

}  // namespace parallax::exec
