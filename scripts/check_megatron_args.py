#!/usr/bin/python3
"""Run Megatron-LM's own argument code on exported Megatron-LM launch arguments.

Usage (needs a Python with torch; here /usr/bin/python3 with torch 1.13):

    /usr/bin/python3 check_megatron_args.py MEGATRON_DIR FILE [FILE ...]
        [--capability 9.0 [--capability 8.0 ...]]   # mocked torch.cuda compute capability
        [--world-size N]      # for plain argument files (SLURM scripts carry their own)
        [--env K=V ...]       # extra environment for plain argument files
        [--torch-version 2.8.0] [--te-version none]   # what Megatron's version queries answer
        [--no-config] [--json]

FILE is either
  * a SLURM script from `parallax export --format slurm` (the `export`/`unset` lines before
    srun become the environment, WORLD_SIZE = #SBATCH --nodes x torchrun --nproc-per-node, the
    words after .../pretrain_gpt.py are the arguments), or
  * a plain argument file (`parallax export --format megatron`; backslash-newlines allowed,
    lines starting with # ignored); give --world-size (and --env) for those.

For every (FILE, capability) a fresh worker interpreter runs, in pretrain_gpt.py's order:
  1. parse      megatron.training.arguments.parse_args(None, ignore_unknown_args=False)
                (sys.argv = ['pretrain_gpt.py'] + args; argparse errors are caught)
  2. validate   megatron.training.arguments.validate_args(args, {'tokenizer_type': 'GPT2BPETokenizer'})
                (the args_defaults pretrain_gpt.py passes)
  3. microbatch megatron.core.num_microbatches_calculator.init_num_microbatches_calculator(...)
                exactly as set_global_variables() calls it (parse_and_validate_args runs it
                right after validate_args); the tokenizer/tensorboard/etc. part is skipped.
  4. config     megatron.training.argument_utils.gpt_config_from_args(args) and
                pretrain_cfg_container_from_args(args, model_cfg), as pretrain_gpt.py's
                __main__ does next (dataclass __post_init__ checks: TransformerConfig,
                ModelParallelConfig, DDP/optimizer configs ...). Skipped with --no-config.
  5. schedule   the interleaved-schedule micro-batch checks of
                megatron/core/pipeline_parallel/schedules.py (forward_backward_pipelining_with_
                interleaving) re-evaluated here (they need process groups to run for real).
The first stage that raises is reported with the deepest Megatron source frame (file:line).

Stubs and patches (all applied inside the worker only; none changes argument logic; the fake
modules and the packaging alias come from trainer_arg_stubs.py beside this script):
  * `packaging`                    -> alias of pip._vendor.packaging (real code; the system
                                      Python lacks the top-level package). Megatron's version
                                      checks import it.
  * SETUPTOOLS_USE_DISTUTILS=stdlib  torch.utils.cpp_extension imports setuptools, whose
                                      distutils shim asserts on this Debian Python.
  * fake modules (attribute access returns inert placeholder classes; decorators pass through):
      torch.distributed.checkpoint, torch.distributed.tensor, torch.distributed._tensor,
      torch.distributed.device_mesh, torch.distributed._symmetric_memory
                                   -> torch >= 2.x modules imported at module level by
                                      dist_checkpointing / FSDP / symmetric-memory code.
      torch.distributed._shard     -> exists in torch 1.13 but fails to import on Python 3.11
                                      (dataclass mutable default); only imported by checkpointing.
      triton                       -> imported unguarded by
                                      megatron/core/transformer/moe/ops/paged_stash.py (kernels).
      numpy.dtypes                 -> numpy >= 1.25 module, imported at module level.
  * placeholder attributes on torch (torch >= 2.x names used at import time only):
      torch.float8_e8m0fnu, torch.compile, torch.cuda.MemPool,
      torch.cuda.memory.CUDAPluggableAllocator, torch.distributed.DeviceMesh,
      torch.distributed._coalescing_manager, torch.optim.optimizer.ParamsT
  * torch.jit.script -> identity: torch 1.13 TorchScript cannot compile
      megatron/core/transformer/torch_norm.py L2Norm._norm at import time.
  * typing.override -> identity decorator (Python 3.12 name).
  * torch.cuda queries mocked to the requested GPU: is_available() True, device_count() 8,
      get_device_capability() (major, minor), get_device_properties(...).major/.minor/.name;
      validate_args reads the major through megatron.training.utils.get_device_arch_version.
  * megatron.core.utils._torch_version / _te_version (the values is_torch_min_version /
      is_te_min_version compare) are set from --torch-version / --te-version, so checks are
      judged as in a current container, not against the torch 1.13 used to run the code.
      --te-version (default 2.8.0, as in a 2025/2026 NGC PyTorch container) also puts
      placeholder functions in megatron.core.models.common.embeddings.rope_utils
      .fused_apply_rotary_pos_emb(_thd), which are None without TE and make
      TransformerConfig.__post_init__ refuse the default --apply-rope-fusion
      (transformer_config.py:2518). --te-version none keeps "TE not installed" (0.0.0).
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import traceback

from launch_lines import pretrain_command, read_env_line
from trainer_arg_stubs import alias_vendored_packaging, install_stub_modules, make_stub

HERE = os.path.abspath(__file__)


# ----------------------------------------------------------------------------------------------
# reading the exported files
# ----------------------------------------------------------------------------------------------

def _join_continuations(text):
    return re.sub(r'\\\n', ' ', text)


def read_case(path, world_size=None, extra_env=()):
    text = open(path).read()
    env_set, env_unset = {}, []
    if 'pretrain_gpt.py' in text:
        body = _join_continuations(text)
        nodes = None
        m = re.search(r'^#SBATCH\s+--nodes[= ](\d+)', text, re.M)
        if m:
            nodes = int(m.group(1))
        args = None
        for line in body.splitlines():
            s = line.strip()
            if s.startswith('#') or not s:
                continue
            if read_env_line(s, env_set, env_unset):
                continue
            if 'pretrain_gpt.py' in s:
                args, nproc = pretrain_command(s)
                if world_size is None and nodes and nproc:
                    world_size = nodes * nproc
        if args is None:
            raise SystemExit(f'{path}: no pretrain_gpt.py command found')
        kind = 'slurm'
    else:
        lines = [l for l in text.splitlines() if not l.lstrip().startswith('#')]
        args = shlex.split(_join_continuations('\n'.join(lines)))
        kind = 'args'
    for kv in extra_env:
        k, v = kv.split('=', 1)
        env_set[k] = v
    if world_size is None:
        raise SystemExit(f'{path}: world size unknown; pass --world-size')
    return dict(path=path, kind=kind, args=args, env=env_set, unset=env_unset,
                world_size=world_size)


# ----------------------------------------------------------------------------------------------
# worker: stubs, mocks, then Megatron's own code
# ----------------------------------------------------------------------------------------------

STUB_MODULES = [
    'torch.distributed.checkpoint', 'torch.distributed._shard', 'torch.distributed.tensor',
    'torch.distributed._tensor', 'torch.distributed.device_mesh',
    'torch.distributed._symmetric_memory', 'triton', 'numpy.dtypes',
]
STUB_TORCH_ATTRS = [
    'float8_e8m0fnu', 'compile', 'cuda.MemPool', 'cuda.memory.CUDAPluggableAllocator',
    'distributed.DeviceMesh', 'distributed._coalescing_manager', 'optim.optimizer.ParamsT',
]


def _install_stubs():
    import importlib
    alias_vendored_packaging()
    install_stub_modules(STUB_MODULES)

    import torch
    for dotted in STUB_TORCH_ATTRS:
        parts = dotted.split('.')
        obj, mod = torch, 'torch'
        for p in parts[:-1]:
            mod += '.' + p
            try:
                obj = importlib.import_module(mod)
            except ImportError:
                obj = getattr(obj, p)
        if not hasattr(obj, parts[-1]):
            setattr(obj, parts[-1], make_stub('torch.' + dotted))
    torch.jit.script = lambda fn=None, *a, **k: fn

    import typing
    if not hasattr(typing, 'override'):
        typing.override = lambda f: f


def _mock_cuda(capability):
    import torch
    major, minor = capability
    names = {8: 'NVIDIA A100-SXM4-80GB', 9: 'NVIDIA H100 80GB HBM3', 10: 'NVIDIA B200'}

    class _Props:
        def __init__(self):
            self.major, self.minor = major, minor
            self.name = names.get(major, f'sm{major}{minor}')
            self.total_memory = 80 * 2**30
            self.multi_processor_count = 132

    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 8
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_capability = lambda device=None: (major, minor)
    torch.cuda.get_device_properties = lambda device=None: _Props()
    torch.cuda.get_device_name = lambda device=None: _Props().name
    torch.cuda.is_bf16_supported = lambda *a, **k: major >= 8


def _where(exc_tb, megatron_dir):
    frames = traceback.extract_tb(exc_tb)
    root = os.path.realpath(megatron_dir) + os.sep
    best = None
    for fr in frames:
        if os.path.realpath(fr.filename).startswith(root):
            best = fr
    if best is None and frames:
        best = frames[-1]
    if best is None:
        return None
    fn = os.path.realpath(best.filename)
    rel = fn[len(root):] if fn.startswith(root) else fn
    return f'{rel}:{best.lineno} ({best.name})'


def worker(spec):
    megatron_dir = spec['megatron_dir']
    for k in spec['unset']:
        os.environ.pop(k, None)
    os.environ.pop('CUDA_DEVICE_MAX_CONNECTIONS', None)  # only what the script sets
    os.environ.update(spec['env'])
    os.environ['WORLD_SIZE'] = str(spec['world_size'])
    os.environ['RANK'] = '0'
    os.environ['LOCAL_RANK'] = '0'
    os.environ.setdefault('MASTER_ADDR', 'localhost')
    os.environ.setdefault('MASTER_PORT', '29500')
    os.environ['SETUPTOOLS_USE_DISTUTILS'] = 'stdlib'
    sys.path.insert(0, megatron_dir)

    result = dict(file=spec['path'], capability='%d.%d' % tuple(spec['capability']),
                  world_size=spec['world_size'],
                  env={k: os.environ.get(k) for k in ('CUDA_DEVICE_MAX_CONNECTIONS',)},
                  stage=None, status='PASS', error=None, where=None, warnings=[])

    import io
    import contextlib
    import warnings as _w
    _w.simplefilter('ignore')
    _orig_showwarning = _w.showwarning
    megatron_warnings = []
    _real_warn = _w.warn

    def _record_warn(message, category=None, stacklevel=1, source=None):
        try:
            fr = sys._getframe(1)
            origin = fr.f_code.co_filename
            if fr.f_code.co_name == 'warn_rank_0' and fr.f_back is not None:
                fr = fr.f_back
                origin = fr.f_code.co_filename
            if os.path.realpath(origin).startswith(os.path.realpath(megatron_dir)):
                rel = os.path.relpath(os.path.realpath(origin), os.path.realpath(megatron_dir))
                megatron_warnings.append(f'{rel}:{fr.f_lineno}: {str(message)[:220]}')
        except Exception:
            pass
    _w.warn = _record_warn

    stage = 'import'
    try:
        _install_stubs()
        _mock_cuda(tuple(spec['capability']))
        import megatron.core.utils as mcu
        from pip._vendor.packaging.version import Version
        if spec.get('torch_version'):
            mcu._torch_version = Version(spec['torch_version'])
        if spec.get('te_version') and spec['te_version'] != 'none':
            # "Transformer Engine installed": the version Megatron's is_te_min_version() compares,
            # and TE's fused RoPE entry points that TransformerConfig.__post_init__ looks up
            # (transformer_config.py: apply_rope_fusion needs rope_utils.fused_apply_rotary_pos_emb).
            mcu._te_version = Version(spec['te_version'])
            from megatron.core.models.common.embeddings import rope_utils as _ru
            def _te_fused_rope_placeholder(*a, **k):
                raise NotImplementedError('placeholder for transformer_engine fused RoPE')
            for _n in ('fused_apply_rotary_pos_emb', 'fused_apply_rotary_pos_emb_thd'):
                if getattr(_ru, _n, None) is None:
                    setattr(_ru, _n, _te_fused_rope_placeholder)
        from megatron.training import arguments as A

        # Capture warn_rank_0 / print_rank_0 messages that say something is being overridden.
        out = io.StringIO()
        megatron_warnings.clear()  # keep only what parse/validate/config say, not import chatter
        stage = 'parse'
        sys.argv = ['pretrain_gpt.py'] + spec['args']
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                args = A.parse_args(None, ignore_unknown_args=False)
        except SystemExit as e:
            msg = err.getvalue().strip().splitlines()
            src = open(os.path.join(megatron_dir, 'megatron/training/arguments.py')).read().splitlines()
            ln = [i + 1 for i, l in enumerate(src) if 'args = parser.parse_args()' in l]
            result['where'] = f"megatron/training/arguments.py:{ln[0] if ln else '?'} (parse_args: parser.parse_args)"
            raise RuntimeError('argparse: ' + (msg[-1] if msg else f'exit {e.code}')) from None

        stage = 'validate'
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            A.validate_args(args, {'tokenizer_type': 'GPT2BPETokenizer'})

        stage = 'microbatch'
        from megatron.core.num_microbatches_calculator import (
            init_num_microbatches_calculator, get_num_microbatches)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            init_num_microbatches_calculator(
                rank=args.rank, global_batch_size=args.global_batch_size,
                micro_batch_size=args.micro_batch_size,
                data_parallel_size=args.data_parallel_size * args.gtp_weight_remat_size,
                decrease_batch_size_if_needed=args.decrease_batch_size_if_needed,
                step_batch_size_schedule=args.step_batch_size_schedule,
                seq_length=args.seq_length)
        m = get_num_microbatches()
        result['derived'] = dict(
            dp=args.data_parallel_size, num_microbatches=m,
            vpp=args.virtual_pipeline_model_parallel_size,
            sequence_parallel=args.sequence_parallel,
            overlap_p2p_comm=args.overlap_p2p_comm,
            use_distributed_optimizer=args.use_distributed_optimizer,
            params_dtype=str(args.params_dtype),
            **{k: getattr(args, k, None) for k in (
                'tensor_model_parallel_size', 'pipeline_model_parallel_size',
                'decoder_first_pipeline_num_layers', 'decoder_last_pipeline_num_layers',
                'microbatch_group_size_per_vp_stage', 'overlap_grad_reduce', 'overlap_param_gather',
                'align_param_gather', 'tp_comm_overlap', 'recompute_granularity', 'recompute_method',
                'recompute_num_layers', 'use_megatron_fsdp', 'data_parallel_sharding_strategy',
                'ckpt_format', 'fp8', 'fp8_recipe', 'bf16', 'fp16', 'accumulate_allreduce_grads_in_fp32',
                'transformer_impl', 'apply_rope_fusion', 'tokenizer_type', 'untie_embeddings_and_output_weights')})

        if not spec.get('no_config'):
            stage = 'config'
            from megatron.training.argument_utils import (
                gpt_config_from_args, pretrain_cfg_container_from_args)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                model_cfg = gpt_config_from_args(args)
                pretrain_cfg_container_from_args(args, model_cfg)

        stage = 'schedule'
        vpp = args.virtual_pipeline_model_parallel_size
        pp = args.pipeline_model_parallel_size
        if vpp is not None and vpp > 1:
            group = args.microbatch_group_size_per_vp_stage or pp  # model_parallel_config.py:567-568
            if group > m or group < pp:
                result['where'] = 'megatron/core/pipeline_parallel/schedules.py:1160 (forward_backward_pipelining_with_interleaving)'
                raise ValueError(
                    'The number of contiguous micro-batches in a virtual pipeline stage'
                    f'should range in [PP={pp} , M={m}] (group={group})')
            rem = m % group
            if 0 < rem < pp:
                result['where'] = 'megatron/core/pipeline_parallel/schedules.py:1173 (forward_backward_pipelining_with_interleaving)'
                raise RuntimeError(
                    f'The remainder of M ({m}) divided by N ({group}) should be 0, or larger than '
                    f'or equal to the pipeline-parallel size ({pp}), but it is {rem}.')
        stage = None
        for line in out.getvalue().splitlines():
            if re.search(r' \.{3,} ', line):  # the _print_args dump
                continue
            if re.search(r'WARNING|[Dd]isabling|deprecated|Setting args\.', line):
                result['warnings'].append('stdout: ' + line.strip()[:240])
    except BaseException as e:  # noqa: BLE001 - report everything
        result['status'] = 'FAIL' if stage not in ('import',) else 'ERROR'
        result['stage'] = stage
        result['error'] = f'{type(e).__name__}: {e}'.strip()[:600]
        if result['where'] is None:
            result['where'] = _where(e.__traceback__, megatron_dir) if e.__traceback__ else None
    result['warnings'] = megatron_warnings + result['warnings']
    print('@@RESULT@@' + json.dumps(result))


# ----------------------------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('megatron_dir')
    ap.add_argument('files', nargs='+')
    ap.add_argument('--capability', action='append',
                    help='mocked compute capability, e.g. 9.0 (H100), 8.0 (A100); repeatable; default 9.0')
    ap.add_argument('--world-size', type=int)
    ap.add_argument('--env', action='append', default=[])
    ap.add_argument('--torch-version', default='2.8.0')
    ap.add_argument('--te-version', default='2.8.0',
                    help="Transformer Engine version Megatron's checks see ('none' = not installed)")
    ap.add_argument('--no-config', action='store_true')
    ap.add_argument('--json', action='store_true')
    ap.add_argument('--_worker', help=argparse.SUPPRESS)
    o = ap.parse_args()
    caps = [tuple(int(x) for x in c.split('.')) for c in (o.capability or ['9.0'])]
    results = []
    for f in o.files:
        case = read_case(f, o.world_size, o.env)
        for cap in caps:
            spec = dict(case, megatron_dir=os.path.abspath(o.megatron_dir), capability=cap,
                        torch_version=o.torch_version, te_version=o.te_version,
                        no_config=o.no_config)
            p = subprocess.run([sys.executable, HERE, o.megatron_dir, f, '--_worker', json.dumps(spec)],
                               capture_output=True, text=True)
            line = [l for l in p.stdout.splitlines() if l.startswith('@@RESULT@@')]
            if line:
                r = json.loads(line[-1][len('@@RESULT@@'):])
            else:
                r = dict(file=f, capability='%d.%d' % cap, status='ERROR', stage='worker',
                         error=(p.stderr.strip().splitlines() or ['no output'])[-1], where=None)
            results.append(r)
            if o.json:
                print(json.dumps(r))
            else:
                head = f"{r['status']:4}  {os.path.basename(f)}  sm{r['capability']}  ws={case['world_size']}"
                if r['status'] == 'PASS':
                    d = r.get('derived', {})
                    print(f"{head}  dp={d.get('dp')} microbatches={d.get('num_microbatches')} vpp={d.get('vpp')}")
                else:
                    print(f"{head}  [{r['stage']}] {r['error']}\n      at {r['where']}")
    return 0 if all(r['status'] == 'PASS' for r in results) else 1


if __name__ == '__main__':
    if '--_worker' in sys.argv:
        worker(json.loads(sys.argv[sys.argv.index('--_worker') + 1]))
    else:
        sys.exit(main())
