#!/usr/bin/python3
"""Run Megatron-DeepSpeed's and DeepSpeed's own argument/config code on Parallax exports.

Usage (needs a Python with torch; here /usr/bin/python3 with torch 1.13):

    /usr/bin/python3 check_megatron_deepspeed.py MDS_DIR DEEPSPEED_DIR FILE [FILE ...]
        [--dp N] [--pp N]            # for bare DeepSpeed JSON configs without a NAME.plan.json beside them
        [--pylib DIR]                # where pydantic & co. are taken from (see below)
        [--json]

FILE is either
  * a SLURM script from `parallax export --format megatron-deepspeed`: the `export`/`unset` lines
    before srun become the environment, WORLD_SIZE = #SBATCH --nodes x torchrun --nproc-per-node,
    the `cat > PATH <<'DSCONFIG' ... DSCONFIG` heredoc is written to a temporary file whose path
    replaces the --deepspeed_config value (what the shell would do), and the words after
    .../pretrain_gpt.py are the arguments. "${DATA_PATH:?...}" / "${TOKENIZER_MODEL:?...}"
    placeholders (the shell stops on them) are replaced by dummy paths; nothing reads them here.
  * a DeepSpeed JSON config (`parallax export --format deepspeed`); dp and pp come from
    NAME.plan.json beside NAME.ds.json (plan.dp, plan.pp), else from --dp / --pp.

Stages, each in a fresh worker interpreter, in pretrain_gpt.py's order; the first that raises is
reported with the deepest Megatron-DeepSpeed / DeepSpeed source frame (file:line):

Megatron-DeepSpeed scripts
  1. parse      megatron/arguments.py parse_args(None, ignore_unknown_args=False) — it adds
                deepspeed.add_config_arguments (the real DeepSpeed one). sys.argv = [pretrain_gpt.py]+args,
                WORLD_SIZE/RANK=0/LOCAL_RANK=0 in the environment as torchrun sets them.
  2. validate   validate_args(args, {'tokenizer_type': 'GPT2BPETokenizer'}) (pretrain_gpt.py's
                args_defaults); CUDA_DEVICE_MAX_CONNECTIONS only as the script sets it.
  3. microbatch megatron/microbatches.py build_num_microbatches_calculator(args), as
                set_global_variables() runs it (global_vars.py); tokenizer/writers skipped.
  4. dsconfig   the DeepSpeed config as pretrain() reads it (megatron/training.py
                _create_ds_config_dict: json.load of the --deepspeed_config file), then
                deepspeed.runtime.config.DeepSpeedConfig(dict, mpu=FakeMPU(dp=args.data_parallel_size))
                — batch triple, zero_optimization (pydantic DeepSpeedZeroConfig), bf16/fp16,
                data_types, pipeline, activation_checkpointing.
  5. actckpt    with --deepspeed-activation-checkpointing: initialize.py
                setup_deepspeed_random_and_activation_checkpointing(args) for real (it calls
                deepspeed.checkpointing.configure(mpu, deepspeed_config=PATH, ...) which loads the
                file through DeepSpeedConfig again with the mpu); the resulting globals
                (PARTITION_ACTIVATIONS, ...) are compared with the config -> warnings.
  6. engine     DeepSpeed engine checks that need no model, run on an engine object created
                without __init__ (object.__new__) holding the real DeepSpeedConfig:
                DeepSpeedEngine._do_optimizer_sanity_check(torch.optim.Adam) (engine.py; the
                basic optimizer Megatron-DeepSpeed hands over without apex), and, when the
                model is a PipelineModule (MDS builds GPTModelPipe unless --no-pipeline-parallel,
                pretrain_gpt.py:51), PipelineEngine.__init__'s two config asserts re-evaluated
                (pipe/engine.py:77 ZeRO < 2, pipe/engine.py:111 train_batch = mbs*gas*dp).
  7. model      arguments.py core_transformer_config_from_args(args) -> TransformerConfig
                __post_init__ (model_provider, pretrain_gpt.py:38); with the DeepSpeed pipeline,
                GPTModelPipe's activation_checkpoint_interval (gpt_model.py:446-452) re-evaluated
                and its stage cut computed with the real deepspeed/runtime/utils.py
                partition_balanced over the 'type:transformer' binary weights of GPTModelPipe's
                layer list (pipe/module.py:409-414) -> derived.layers_per_stage.
DeepSpeed JSON configs: stages 4 (dsconfig) and 6 (engine; PipelineModule when pp > 1).

Warnings (status stays PASS) flag where the code runs but not what the plan says (e.g. a
recompute the pipeline path drops, a config value the command line overrides).

Stubs and patches (worker only; none touches argument/config logic; the fake modules and the
packaging alias come from trainer_arg_stubs.py beside this script):
  * `packaging` -> pip._vendor.packaging (real code; the system Python lacks it).
  * pydantic 2 (+ pydantic_core, annotated_types, typing_extensions, typing_inspection): the real
    packages, symlinked from the pyenv CPython 3.11.7 site-packages (same ABI as /usr/bin/python3
    3.11) into --pylib (default /tmp/mds-check-pylib); DeepSpeed's config models need it.
  * `hjson` -> shim with load/loads = json.load/loads (same object_pairs_hook). DeepSpeedConfig
    opens files with hjson; every file checked here is plain JSON, which hjson parses identically.
  * fake modules (attribute access returns inert placeholders): cpuinfo (ops/adam/cpu_adam.py
    import), einops, msgpack, ninja, tqdm, apex, transformer_engine, flash_attn, triton,
    torch.distributed._shard (fails on Python 3.11), regex, sentencepiece, transformers,
    tensorboard/wandb bits, deepspeed.ops.op_builder.* C++/CUDA builders are NOT stubbed (they
    import fine without building anything).
  * SETUPTOOLS_USE_DISTUTILS=stdlib, DS_ACCELERATOR=cuda (DeepSpeed's accelerator = CUDA, which
    validate_args asks for), torch.cuda queries mocked (is_available, device_count 8, capability 8.0).
  * deepspeed.comm.get_rank / get_world_size -> 0 / WORLD_SIZE: DeepSpeedConfig.__init__
    (config.py:723-733) calls dist.get_rank() and on ANY exception falls back to world_size 1,
    which would make the batch assertion check against dp=1. With the mpu given, world_size is
    mpu.get_data_parallel_world_size() as in a real run.
  * FakeMPU: get_{data,model,tensor_model,pipeline_model}_parallel_{world_size,rank,group} with the
    plan's dp/tp/pp (ranks 0, groups None); for actckpt also get_cuda_rng_tracker /
    model_parallel_cuda_manual_seed are left as Megatron-DeepSpeed's own (only referenced).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback

from launch_lines import pretrain_command, read_env_line
from trainer_arg_stubs import alias_vendored_packaging, install_stub_modules

HERE = os.path.abspath(__file__)
PYENV_SP = '/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages'
PYLIB_PKGS = ['pydantic', 'pydantic_core', 'annotated_types', 'typing_extensions.py', 'typing_inspection']


# ----------------------------------------------------------------------------------------------
# reading the exported files
# ----------------------------------------------------------------------------------------------

def read_case(path, dp=None, pp=None):
    text = open(path).read()
    if 'pretrain_gpt.py' not in text:
        cfg = json.loads(text)
        plan_json = re.sub(r'(\.ds)?\.json$', '', path) + '.plan.json'
        if os.path.exists(plan_json):
            pl = json.load(open(plan_json))['plan']
            dp = pl['dp'] if dp is None else dp
            pp = pl['pp'] if pp is None else pp
        if dp is None:
            raise SystemExit(f'{path}: dp unknown; pass --dp or put NAME.plan.json beside it')
        return dict(path=path, kind='ds', ds_config_text=text, dp=dp, pp=pp or 1, args=None,
                    env={}, unset=[], world_size=None)
    # heredoc
    m = re.search(r"^cat > (.+?) <<'?(\w+)'?\n(.*?)\n\2\n", text, re.M | re.S)
    ds_text = m.group(3) if m else None
    body = re.sub(r'\\\n', ' ', text)
    env_set, env_unset, args, world_size = {}, [], None, None
    nodes = None
    mm = re.search(r'^#SBATCH\s+--nodes[= ](\d+)', text, re.M)
    if mm:
        nodes = int(mm.group(1))
    in_heredoc = False
    for line in body.splitlines():
        s = line.strip()
        if m and s.startswith('cat >') and '<<' in s:
            in_heredoc = True
            continue
        if in_heredoc:
            if m and s == m.group(2):
                in_heredoc = False
            continue
        if s.startswith('#') or not s:
            continue
        if read_env_line(s, env_set, env_unset):
            continue
        if 'pretrain_gpt.py' in s:
            args, nproc = pretrain_command(s)
            if nodes and nproc:
                world_size = nodes * nproc
    if args is None:
        raise SystemExit(f'{path}: no pretrain_gpt.py command found')
    # The shell's ${VAR:?msg} stops the script when VAR is unset: stand-ins for the check.
    placeholders = []
    for i, w in enumerate(args):
        if w.startswith('${') and ':?' in w:
            placeholders.append(w.split(':?')[0][2:])
            args[i] = '/placeholder/' + w.split(':?')[0][2:].lower()
    return dict(path=path, kind='mds', args=args, env=env_set, unset=env_unset,
                world_size=world_size, ds_config_text=ds_text, placeholders=placeholders)


# ----------------------------------------------------------------------------------------------
# worker
# ----------------------------------------------------------------------------------------------

STUB_MODULES = ['cpuinfo', 'einops', 'msgpack', 'ninja', 'tqdm', 'apex', 'transformer_engine',
                'flash_attn', 'torch.distributed._shard', 'sentencepiece',
                'transformers', 'wandb', 'tensorboard', 'torch.utils.tensorboard', 'nltk', 'mpi4py',
                'deepspeed_kernels', 'amp_C', 'fused_layer_norm_cuda', 'scaled_softmax_cuda',
                'scaled_masked_softmax_cuda', 'scaled_upper_triang_masked_softmax_cuda',
                'fused_weight_gradient_mlp_cuda', 'pynvml', 'safetensors', 'accelerate', 'filelock', 'regex']


def _install_stubs(pylib):
    import types
    alias_vendored_packaging()

    # hjson: plain-JSON shim (every file here is JSON)
    hj = types.ModuleType('hjson')
    hj.load = lambda fp, **k: json.load(fp, **k)
    hj.loads = lambda s, **k: json.loads(s, **k)
    hj.dumps = json.dumps
    hj.dump = json.dump
    sys.modules['hjson'] = hj

    sys.path.insert(0, pylib)
    install_stub_modules(STUB_MODULES)


def _mock_cuda():
    import torch

    class _Props:
        major, minor, name = 8, 0, 'NVIDIA A100-SXM4-80GB'
        total_memory = 80 * 2**30
        multi_processor_count = 108

    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 8
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_capability = lambda device=None: (8, 0)
    torch.cuda.get_device_properties = lambda device=None: _Props()
    torch.cuda.get_device_name = lambda device=None: _Props.name
    torch.cuda.is_bf16_supported = lambda *a, **k: True
    torch.cuda.set_device = lambda *a, **k: None
    torch.version.cuda = '12.1'  # a CUDA build of torch (op_builder is_compatible reads it)


def _where(exc_tb, roots):
    frames = traceback.extract_tb(exc_tb)
    best = None
    for fr in frames:
        fn = os.path.realpath(fr.filename)
        if any(fn.startswith(r) for r in roots):
            best = fr
    if best is None and frames:
        best = frames[-1]
    if best is None:
        return None
    fn = os.path.realpath(best.filename)
    for label, r in (('DeepSpeed', roots[1]), ('Megatron-DeepSpeed', roots[0])):
        if fn.startswith(r):
            return f'{label}: {fn[len(r):]}:{best.lineno} ({best.name})'
    return f'{fn}:{best.lineno} ({best.name})'


class FakeMPU:
    """What DeepSpeedConfig / the engine ask an mpu: the plan's dp, tp and pp."""

    def __init__(self, dp, tp=1, pp=1):
        self.dp, self.tp, self.pp = dp, tp, pp

    def get_data_parallel_world_size(self):
        return self.dp

    def get_data_parallel_rank(self):
        return 0

    def get_data_parallel_group(self):
        return None

    def get_model_parallel_world_size(self):
        return self.tp

    get_tensor_model_parallel_world_size = get_model_parallel_world_size

    def get_model_parallel_rank(self):
        return 0

    get_tensor_model_parallel_rank = get_model_parallel_rank

    def get_model_parallel_group(self):
        return None

    get_tensor_model_parallel_group = get_model_parallel_group

    def get_pipeline_model_parallel_world_size(self):
        return self.pp

    def get_pipeline_model_parallel_rank(self):
        return 0


def _check_ds_config(cfg_dict, dp, pipeline, result, ds_root):
    """DeepSpeedConfig with the mpu, then the engine's model-free checks."""
    import torch
    from deepspeed.runtime.config import DeepSpeedConfig
    result['stage'] = 'dsconfig'
    cfg = DeepSpeedConfig(cfg_dict, mpu=FakeMPU(dp))
    result['derived'].update(
        ds_world_size=cfg.world_size, train_batch_size=cfg.train_batch_size,
        micro_batch=cfg.train_micro_batch_size_per_gpu, gas=cfg.gradient_accumulation_steps,
        zero_stage=int(cfg.zero_optimization_stage), bf16=cfg.bfloat16_enabled, fp16=cfg.fp16_enabled,
        grad_accum_dtype=str(cfg.grad_accum_dtype),
        zero_overlap_comm=getattr(cfg.zero_config, 'overlap_comm', None),
        act_ckpt_partition=cfg.activation_checkpointing_config.partition_activations)
    result['stage'] = 'engine'
    from deepspeed.runtime.engine import DeepSpeedEngine
    from deepspeed.runtime.zero.config import ZeroStageEnum
    eng = object.__new__(DeepSpeedEngine)
    eng._config = cfg
    eng.pipeline_parallelism = pipeline
    eng.global_rank = 0
    eng.mpu = None
    opt = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))])
    wrapper = DeepSpeedEngine._do_optimizer_sanity_check(eng, opt)
    md, ga = DeepSpeedEngine.get_data_types(eng)
    result['derived'].update(optimizer_wrapper=wrapper, model_dtype=str(md), engine_grad_accum_dtype=str(ga))
    if pipeline:
        src = open(os.path.join(ds_root, 'deepspeed/runtime/pipe/engine.py')).read().splitlines()
        l1 = [i + 1 for i, l in enumerate(src) if 'ZeRO-2 and ZeRO-3 are incompatible with pipeline' in l]
        l2 = [i + 1 for i, l in enumerate(src) if 'assert self.train_batch_size() ==' in l]
        if not eng.zero_optimization_stage() < ZeroStageEnum.gradients:
            result['where'] = f'DeepSpeed: deepspeed/runtime/pipe/engine.py:{l1[0] if l1 else "?"} (PipelineEngine.__init__)'
            raise AssertionError('ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism')
        if eng.train_batch_size() != eng.train_micro_batch_size_per_gpu() * eng.gradient_accumulation_steps() * dp:
            result['where'] = f'DeepSpeed: deepspeed/runtime/pipe/engine.py:{l2[0] if l2 else "?"} (PipelineEngine.__init__)'
            raise AssertionError('train_batch_size != micro_batch * micro_batches * grid.data_parallel_size')
    return cfg


def worker(spec):
    mds, dsd = spec['mds_dir'], spec['ds_dir']
    roots = [os.path.realpath(mds) + os.sep, os.path.realpath(dsd) + os.sep]
    for k in spec['unset']:
        os.environ.pop(k, None)
    os.environ.pop('CUDA_DEVICE_MAX_CONNECTIONS', None)
    os.environ.update(spec['env'])
    if spec['world_size']:
        os.environ['WORLD_SIZE'] = str(spec['world_size'])
    os.environ['RANK'] = '0'
    os.environ['LOCAL_RANK'] = '0'
    os.environ.setdefault('MASTER_ADDR', 'localhost')
    os.environ.setdefault('MASTER_PORT', '29500')
    os.environ['SETUPTOOLS_USE_DISTUTILS'] = 'stdlib'
    os.environ['DS_ACCELERATOR'] = 'cuda'
    sys.path[:0] = [mds, dsd]

    result = dict(file=spec['path'], kind=spec['kind'], world_size=spec['world_size'],
                  env={k: os.environ.get(k) for k in ('CUDA_DEVICE_MAX_CONNECTIONS',)},
                  stage=None, status='PASS', error=None, where=None, warnings=[], derived={})
    import io
    import contextlib
    import logging
    import warnings as _w
    _w.simplefilter('ignore')
    out = io.StringIO()
    try:
        result['stage'] = 'import'
        _install_stubs(spec['pylib'])
        _mock_cuda()
        # what `pip install deepspeed` generates (setup.py): version from version.txt, no
        # pre-built ops (JIT), CUDA accelerator
        import types
        gvi = types.ModuleType('deepspeed.git_version_info_installed')
        gvi.version = open(os.path.join(dsd, 'version.txt')).read().strip()
        gvi.git_hash, gvi.git_branch = '[none]', '[none]'
        gvi.installed_ops = {}
        gvi.accelerator_name = 'cuda'
        gvi.torch_info = {'version': '1.13', 'bf16_support': True, 'cuda_version': '12.1',
                          'nccl_version': '2.18', 'hip_version': '0.0'}
        sys.modules['deepspeed.git_version_info_installed'] = gvi
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            import deepspeed
            import deepspeed.comm as dcomm
        logging.getLogger('DeepSpeed').setLevel(logging.ERROR)
        ws = int(os.environ.get('WORLD_SIZE', '1'))
        dcomm.get_rank = lambda group=None: 0
        dcomm.get_world_size = lambda group=None: ws
        import deepspeed.runtime.config as _dsc
        import deepspeed.runtime.zero.utils as _zu
        _dsc.dist = dcomm
        _zu.dist = dcomm
        result['derived']['deepspeed_version'] = deepspeed.__version__

        if spec['kind'] == 'ds':
            cfg_dict = json.loads(spec['ds_config_text'])
            _check_ds_config(cfg_dict, spec['dp'], spec['pp'] > 1, result, dsd)
            result['stage'] = None
            print('@@RESULT@@' + json.dumps(result, default=str))
            return

        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            from megatron import arguments as A
        # the DeepSpeed config file, as the script's heredoc writes it
        tmpdir = tempfile.mkdtemp(prefix='mds-check-')
        cfg_path = os.path.join(tmpdir, 'ds_config.json')
        args_in = list(spec['args'])
        if spec['ds_config_text'] is not None:
            open(cfg_path, 'w').write(spec['ds_config_text'])
            for i, w in enumerate(args_in):
                if w in ('--deepspeed_config', '--deepspeed-config') and i + 1 < len(args_in):
                    args_in[i + 1] = cfg_path

        result['stage'] = 'parse'
        sys.argv = ['pretrain_gpt.py'] + args_in
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                args = A.parse_args(None, ignore_unknown_args=False)
        except SystemExit as e:
            msg = err.getvalue().strip().splitlines()
            src = open(os.path.join(mds, 'megatron/arguments.py')).read().splitlines()
            ln = [i + 1 for i, l in enumerate(src) if 'args = parser.parse_args()' in l]
            result['where'] = f"Megatron-DeepSpeed: megatron/arguments.py:{ln[0] if ln else '?'} (parse_args: parser.parse_args)"
            raise RuntimeError('argparse: ' + (msg[-1] if msg else f'exit {e.code}')) from None

        result['stage'] = 'validate'
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            A.validate_args(args, {'tokenizer_type': 'GPT2BPETokenizer'})
        d = result['derived']
        d.update(dp=args.data_parallel_size, tp=args.tensor_model_parallel_size,
                 pp=args.pipeline_model_parallel_size, ds_pipeline_enabled=args.ds_pipeline_enabled,
                 sequence_parallel=args.sequence_parallel, zero_stage_arg=args.zero_stage,
                 recompute_granularity=args.recompute_granularity, recompute_method=args.recompute_method,
                 recompute_num_layers=args.recompute_num_layers, params_dtype=str(args.params_dtype),
                 tokenizer_type=args.tokenizer_type, add_position_embedding=args.add_position_embedding,
                 use_rotary=args.use_rotary_position_embeddings,
                 position_embedding_type=getattr(args, 'position_embedding_type', None),
                 num_key_value_heads=args.num_key_value_heads, normalization=args.normalization)

        result['stage'] = 'microbatch'
        from megatron.microbatches import build_num_microbatches_calculator
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            calc = build_num_microbatches_calculator(args)
        d['num_microbatches'] = calc.get()

        result['stage'] = 'dsconfig'
        # megatron/training.py _create_ds_config_dict: json.load of the file (no universal ckpt)
        with open(args.deepspeed_config, 'r', encoding='utf-8') as f:
            cfg_dict = json.load(f)
        cfg = _check_ds_config(cfg_dict, args.data_parallel_size, args.ds_pipeline_enabled, result, dsd)
        # Megatron-DeepSpeed vs its DeepSpeed config: the two batch descriptions
        if cfg.train_batch_size != args.global_batch_size:
            result['warnings'].append(
                f'DeepSpeed train_batch_size {cfg.train_batch_size} != --global-batch-size {args.global_batch_size}')
        if cfg.train_micro_batch_size_per_gpu != args.micro_batch_size:
            result['warnings'].append(
                f'train_micro_batch_size_per_gpu {cfg.train_micro_batch_size_per_gpu} != --micro-batch-size {args.micro_batch_size}')
        if cfg.gradient_accumulation_steps != d['num_microbatches']:
            result['warnings'].append(
                f'gradient_accumulation_steps {cfg.gradient_accumulation_steps} != Megatron num_microbatches {d["num_microbatches"]}')
        if int(cfg.zero_optimization_stage) != args.zero_stage:
            result['warnings'].append(
                f'zero_optimization.stage {int(cfg.zero_optimization_stage)} != --zero-stage {args.zero_stage}')
        if bool(cfg.bfloat16_enabled) != bool(args.bf16) or bool(cfg.fp16_enabled) != bool(args.fp16):
            result['warnings'].append('bf16/fp16 in the DeepSpeed config differ from --bf16/--fp16')

        if args.deepspeed and args.deepspeed_activation_checkpointing:
            result['stage'] = 'actckpt'
            import megatron.initialize as MI
            from megatron.core import parallel_state as ps
            fm = FakeMPU(args.data_parallel_size, args.tensor_model_parallel_size,
                         args.pipeline_model_parallel_size)
            # setup_deepspeed_random_and_activation_checkpointing passes megatron's mpu module;
            # the same methods, answering the plan's sizes.
            saved = {}
            for n in dir(fm):
                if n.startswith('get_') and hasattr(ps, n):
                    saved[n] = getattr(ps, n)
                    setattr(ps, n, getattr(fm, n))
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                    MI.setup_deepspeed_random_and_activation_checkpointing(args)
            finally:
                for n, v in saved.items():
                    setattr(ps, n, v)
            from deepspeed.runtime.activation_checkpointing import checkpointing as CK
            d.update(ds_ckpt_partition_activations=CK.PARTITION_ACTIVATIONS,
                     ds_ckpt_contiguous=CK.CONTIGUOUS_CHECKPOINTING, ds_ckpt_cpu=CK.CPU_CHECKPOINT,
                     ds_ckpt_num_layers=CK.num_layers)
            want = cfg.activation_checkpointing_config.partition_activations
            if bool(want) != bool(CK.PARTITION_ACTIVATIONS):
                result['warnings'].append(
                    f'activation_checkpointing.partition_activations={want} in the config is overridden by '
                    f'--partition-activations ({args.partition_activations}): initialize.py passes '
                    f'partition_activations=args.partition_activations to deepspeed.checkpointing.configure, '
                    f'which "will overwrite deepspeed_config if provided" (checkpointing.py configure)')

        result['stage'] = 'model'
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            A.core_transformer_config_from_args(args)
        if args.deepspeed and not args.no_pipeline_parallel:
            # gpt_model.py GPTModelPipe.__init__: activation_checkpoint_interval
            if args.checkpoint_activations:
                interval = args.checkpoint_num_layers
            elif args.recompute_granularity == 'full' and args.recompute_method == 'uniform':
                interval = args.recompute_num_layers
            else:
                interval = 0
            d['pipe_activation_checkpoint_interval'] = interval
            if args.recompute_granularity == 'full' and interval == 0:
                result['warnings'].append(
                    f'--recompute-granularity full --recompute-method {args.recompute_method}: GPTModelPipe '
                    'sets activation_checkpoint_interval 0 (megatron/model/gpt_model.py:446-452, "deepspeed\'s '
                    'pipeline doesn\'t support the block recompute method"): NO layer is recomputed')
            from deepspeed.runtime import utils as ds_utils
            n_pre = 2  # _to_float16, embedding
            n_post = 2 + (1 if (args.fp16 or args.bf16) else 0)  # final norm, head, float16_to_fp32
            weights = [0] * n_pre + [1] * args.num_layers + [0] * n_post
            parts = ds_utils.partition_balanced(weights=weights, num_parts=args.pipeline_model_parallel_size)
            per = [sum(weights[parts[i]:parts[i + 1]]) for i in range(len(parts) - 1)]
            d['layers_per_stage'] = per
        elif args.recompute_granularity == 'full' and args.deepspeed_activation_checkpointing \
                and args.recompute_method == 'block':
            result['warnings'].append(
                'with --deepspeed-activation-checkpointing, ParallelTransformer._checkpointed_forward '
                '(megatron/model/transformer.py:1910-1921) checkpoints every --checkpoint-num-layers '
                f'({args.checkpoint_num_layers}) layers and ignores --recompute-method block / '
                f'--recompute-num-layers {args.recompute_num_layers}: ALL layers are recomputed')
        result['stage'] = None
        if spec.get('placeholders'):
            result['warnings'].append('shell placeholders replaced for the check: ' + ', '.join(spec['placeholders']))
    except BaseException as e:  # noqa: BLE001
        result['status'] = 'ERROR' if result['stage'] == 'import' else 'FAIL'
        result['error'] = f'{type(e).__name__}: {e}'.strip()[:700]
        if result['where'] is None and e.__traceback__ is not None:
            result['where'] = _where(e.__traceback__, roots)
        if result['status'] == 'ERROR':
            result['traceback'] = traceback.format_exc()[-3000:]
    print('@@RESULT@@' + json.dumps(result, default=str))


# ----------------------------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------------------------

def _ensure_pylib(pylib):
    os.makedirs(pylib, exist_ok=True)
    for p in PYLIB_PKGS:
        dst = os.path.join(pylib, p)
        if not os.path.exists(dst) and os.path.exists(os.path.join(PYENV_SP, p)):
            os.symlink(os.path.join(PYENV_SP, p), dst)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('mds_dir')
    ap.add_argument('ds_dir')
    ap.add_argument('files', nargs='+')
    ap.add_argument('--dp', type=int)
    ap.add_argument('--pp', type=int)
    ap.add_argument('--pylib', default='/tmp/mds-check-pylib')
    ap.add_argument('--json', action='store_true')
    ap.add_argument('--_worker', help=argparse.SUPPRESS)
    o = ap.parse_args()
    _ensure_pylib(o.pylib)
    results = []
    for f in o.files:
        case = read_case(f, o.dp, o.pp)
        spec = dict(case, mds_dir=os.path.abspath(o.mds_dir), ds_dir=os.path.abspath(o.ds_dir),
                    pylib=os.path.abspath(o.pylib))
        p = subprocess.run([sys.executable, HERE, o.mds_dir, o.ds_dir, f, '--_worker', json.dumps(spec)],
                           capture_output=True, text=True)
        line = [l for l in p.stdout.splitlines() if l.startswith('@@RESULT@@')]
        if line:
            r = json.loads(line[-1][len('@@RESULT@@'):])
        else:
            r = dict(file=f, status='ERROR', stage='worker', warnings=[], derived={},
                     error=(p.stderr.strip().splitlines() or ['no output'])[-1], where=None)
        results.append(r)
        if o.json:
            print(json.dumps(r))
        else:
            head = f"{r['status']:4}  {os.path.basename(f)}"
            d = r.get('derived', {})
            if r['status'] == 'PASS':
                extra = ' '.join(f'{k}={d[k]}' for k in ('dp', 'num_microbatches', 'optimizer_wrapper',
                                                        'pipe_activation_checkpoint_interval',
                                                        'layers_per_stage') if k in d)
                print(f'{head}  {extra}')
            else:
                print(f"{head}  [{r['stage']}] {r['error']}\n      at {r['where']}")
                if r.get('traceback') and r['status'] == 'ERROR':
                    print(r['traceback'])
            for w in r.get('warnings', []):
                print(f'      WARN {w}')
    return 0 if all(r['status'] == 'PASS' for r in results) else 1


if __name__ == '__main__':
    if '--_worker' in sys.argv:
        worker(json.loads(sys.argv[sys.argv.index('--_worker') + 1]))
    else:
        sys.exit(main())
