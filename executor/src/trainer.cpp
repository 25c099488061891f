// The CPU backend's trainer: the trainer template (trainer_impl.hpp) over CpuBackend, owning
// its backend and MPI Comm.
#include "layers/backend_cpu.hpp"
#include "trainer_impl.hpp"

namespace parallax::exec {

template class TrainerImpl<CpuBackend>;

namespace {

struct CpuParts {
  CpuBackend be;
  Comm comm;
  explicit CpuParts(Recorder& rec) : be(rec), comm(rec) {}
};

// CpuParts is a base listed first, so the backend and Comm exist before the trainer uses them.
class CpuTrainer final : private CpuParts, public TrainerImpl<CpuBackend> {
 public:
  CpuTrainer(const PlanFile& plan, const TrainOptions& opt, const ProcessGroups& groups,
             Recorder& rec, TokenSource data)
      : CpuParts(rec), TrainerImpl<CpuBackend>(CpuParts::be, CpuParts::comm, plan, opt, groups,
                                               std::move(data)) {}
};

}  // namespace

std::unique_ptr<Trainer> make_cpu_trainer(const PlanFile& plan, const TrainOptions& opt,
                                          const ProcessGroups& groups, Recorder& rec,
                                          TokenSource data) {
  return std::make_unique<CpuTrainer>(plan, opt, groups, rec, std::move(data));
}

}  // namespace parallax::exec
