#include "parallax/export/export_text.hpp"

#include "parallax/core/error.hpp"
#include "parallax/export/deepspeed.hpp"
#include "parallax/export/megatron.hpp"
#include "parallax/export/torchtitan.hpp"

namespace parallax {

std::string export_text(const PlanFile& f, const std::string& format, const LaunchOptions& o,
                        const std::string& slurm_launcher) {
  if (format == "megatron") return megatron_args_text(f, {o.data_path, o.tokenizer_model});
  if (format == "deepspeed") return deepspeed_config(f).dump(2) + "\n";
  if (format == "slurm") {
    return slurm_launcher == "parallax" ? slurm_parallax_script(f, o) : slurm_megatron_script(f, o);
  }
  if (format == "mpirun") return mpirun_script(f, o);
  if (format == "megatron-deepspeed") return slurm_megatron_deepspeed_script(f, o);
  if (format == "torchtitan") return torchtitan_toml(f, o);
  if (format == "torchtitan-launch") return torchtitan_script(f, o);
  throw InputError("export", "--format",
                   "must be megatron, megatron-deepspeed, deepspeed, slurm, mpirun, torchtitan or "
                   "torchtitan-launch (got \"" + format + "\")");
}

}  // namespace parallax
