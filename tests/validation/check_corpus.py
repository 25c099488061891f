#!/usr/bin/env python3
"""Checks the validation corpus v2 (validation/runs/*.json) against its schema (validation/runs/README.md).

usage: check_corpus.py RUNS_DIR [--min-rows N] [--min-sources N]
       check_corpus.py --self-test

Every file: one source, named <source id>.json, with a checkable citation (where + version + url),
its stack, its conventions, and rows. Every row: a unique id, where in the source it is, every model
field, GPU, GPU count, dtype, global batch, plan and measured value(s) in one of the file's
conventions; a value the source does not publish is a string starting with "unpublished". No file
may cite a source the project holds out. Prints one line per problem and a summary; exits 1 on any
problem.
"""
import glob
import json
import os
import re
import sys
import tempfile

MODEL_FIELDS = ["name", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "seq_len", "vocab",
                "activation", "position", "norm", "tied_embeddings"]
PLAN_FIELDS = ["tp", "pp", "dp", "micro_batch", "recompute"]
# The GPU presets (presets/gpus/), the CPU device Parallax's own executor runs on excepted.
GPUS = {os.path.basename(f)[:-5]
        for f in glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                        "presets", "gpus", "*.json"))} - {"cpu-core"}
DTYPES = {"bf16", "fp8", "fp16", "tf32", "fp32"}
METRICS = {"iteration_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "hfu",
           "peak_memory_gib"}
KINDS = {"paper", "repository", "page"}
STACKS = {"megatron-lm", "megatron-core", "nemo", "nemo-1", "deepspeed", "megatron-deepspeed", "pytorch-fsdp",
          "torchtitan", "llm-foundry", "other"}
FORMULAS = {"megatron_hw", "6n_attn", "6n_attn_noembed"}
ENUMS = {"activation": {"gelu", "swiglu", "squared_relu"}, "position": {"learned", "rope", "alibi"},
         "norm": {"layernorm", "rmsnorm"}}
# Sources held out by the project (DEVELOPERS' guide, "Fidelity rules"): never in the corpus.
HELD_OUT = [
    (r"korthikanti", r"table\s*5", "Korthikanti et al. 2022 Table 5"),
    (r"tr11|bigscience.*176b|bloom.*(chronicle|log)", None, "the BigScience tr11-176B chronicles and logs"),
    (r"megatron-lm.*readme|readme.*megatron-lm", None, "the NVIDIA/Megatron-LM README's tables"),
    (r"24\.07", r"nemo|performance", "the NeMo 24.07 performance summary"),
    (r"vtrain", None, "vTrain's ground-truth CSVs"),
    (r"megatron-moe-modelzoo|yanring", None, "yanring/Megatron-MoE-ModelZoo"),
]


def unpublished(v):
    return isinstance(v, str) and v.startswith("unpublished")


def positive_int(v):
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def check_file(path, ids, problems):
    name = os.path.basename(path)
    def bad(where, rule):
        problems.append(f"{path}: {where}: {rule}")
    try:
        doc = json.load(open(path, encoding="utf-8"))
    except (OSError, ValueError) as e:
        bad("$", f"not JSON ({e})")
        return 0, None
    if doc.get("corpus_version") != 2:
        bad("$.corpus_version", "must be 2")
    src = doc.get("source") or {}
    for k in ["id", "title", "kind", "where", "version", "url"]:
        if not isinstance(src.get(k), str) or not src.get(k).strip():
            bad(f"$.source.{k}", "is required (a checkable citation)")
    if src.get("id") and name != src["id"] + ".json":
        bad("$.source.id", f"must name the file ({name})")
    if src.get("kind") and src["kind"] not in KINDS:
        bad("$.source.kind", f"must be one of {sorted(KINDS)}")
    if isinstance(src.get("url"), str) and not re.match(r"^https?://", src["url"]):
        bad("$.source.url", "must be an http(s) address")
    cited = " ".join(str(src.get(k, "")) for k in ["title", "where", "url", "version"]).lower()
    for pat, also, what in HELD_OUT:
        if re.search(pat, cited) and (also is None or re.search(also, cited)):
            bad("$.source", f"cites {what}, which the project holds out")
    stack = doc.get("stack") or {}
    if not isinstance(stack.get("name"), str) or not isinstance(stack.get("version"), str):
        bad("$.stack", "needs name and version (strings; \"unpublished\" when unknown)")
    elif stack["name"] not in STACKS:
        bad("$.stack.name", f"must be one of {sorted(STACKS)} (got {stack['name']!r})")
    if "group" in src and not (isinstance(src["group"], str) and src["group"].strip()):
        bad("$.source.group", "must name the source this one is held out with")
    conventions = doc.get("conventions")
    if not isinstance(conventions, dict) or not conventions:
        bad("$.conventions", "must define the source's metrics")
        conventions = {}
    formulas = doc.get("formulas", {})
    if not isinstance(formulas, dict):
        bad("$.formulas", "must be an object keyed by convention")
        formulas = {}
    for conv, f in formulas.items():
        if conv not in conventions:
            bad(f"$.formulas.{conv}", "names no convention of the file")
        if not isinstance(f, dict) or f.get("flops_per_iteration") not in FORMULAS:
            bad(f"$.formulas.{conv}.flops_per_iteration", f"must be one of {sorted(FORMULAS)}")
        elif set(f) - {"flops_per_iteration", "peak_flops_per_gpu"}:
            bad(f"$.formulas.{conv}", "knows only flops_per_iteration and peak_flops_per_gpu")
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs:
        bad("$.runs", "must be a non-empty list")
        return 0, src.get("id")
    for i, r in enumerate(runs):
        at = f"$.runs[{i}]"
        rid = r.get("id")
        if not isinstance(rid, str) or not rid:
            bad(at + ".id", "is required")
        elif rid in ids:
            bad(at + ".id", f"\"{rid}\" is also in {ids[rid]}")
        else:
            ids[rid] = name
        at = f"$.runs[{i}] ({rid})"
        if not isinstance(r.get("where"), str) or not r["where"].strip():
            bad(at + ".where", "must say where in the source the row is")
        model = r.get("model") or {}
        for k in MODEL_FIELDS:
            if k not in model:
                bad(f"{at}.model.{k}", "is missing (a value, or \"unpublished: ...\")")
                continue
            v = model[k]
            if unpublished(v):
                continue
            if k in ENUMS and v not in ENUMS[k]:
                bad(f"{at}.model.{k}", f"must be one of {sorted(ENUMS[k])} or unpublished (got {v!r})")
            if k in ["layers", "hidden", "heads", "kv_heads", "ffn_hidden", "seq_len", "vocab"] and not positive_int(v):
                bad(f"{at}.model.{k}", f"must be a positive integer or unpublished (got {v!r})")
            if k == "tied_embeddings" and not isinstance(v, bool):
                bad(f"{at}.model.{k}", "must be true, false or unpublished")
        hd = model.get("head_dim")
        if hd is not None and not unpublished(hd) and not positive_int(hd):
            bad(f"{at}.model.head_dim", f"must be a positive integer or unpublished (got {hd!r})")
        gpu = r.get("gpu")
        if not (gpu in GPUS or unpublished(gpu)):
            bad(at + ".gpu", f"must be a GPU preset ({sorted(GPUS)}) or \"unpublished: ...\" (got {gpu!r})")
        if unpublished(gpu) and not r.get("unsupported"):
            bad(at + ".unsupported", "a GPU without a preset makes the row unsupported")
        if not positive_int(r.get("gpus")):
            bad(at + ".gpus", "must be a positive integer")
        if r.get("dtype") not in DTYPES:
            bad(at + ".dtype", f"must be one of {sorted(DTYPES)}")
        gb = r.get("global_batch")
        if not (positive_int(gb) or unpublished(gb)):
            bad(at + ".global_batch", "must be a positive integer (sequences) or unpublished")
        plan = r.get("plan") or {}
        for k in PLAN_FIELDS:
            if k not in plan:
                bad(f"{at}.plan.{k}", "is missing (as published, or \"unpublished\")")
        for k in ["tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch"]:
            # "n/a" as a source prints it: the dimension is not used (size 1).
            if k in plan and not (positive_int(plan[k]) or unpublished(plan[k]) or
                                  (plan[k] == "n/a" and k in ("cp", "ep", "vpp"))):
                bad(f"{at}.plan.{k}", f"must be a positive integer, unpublished or (cp, ep, vpp) n/a (got {plan[k]!r})")
        if "moe_dispatcher" in plan and plan["moe_dispatcher"] not in ("alltoall", "deepep", "hybridep"):
            bad(f"{at}.plan.moe_dispatcher", f"must be alltoall, deepep or hybridep (got {plan['moe_dispatcher']!r})")
        for k in ("account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"):
            if k in plan and not isinstance(plan[k], bool):
                bad(f"{at}.plan.{k}", f"must be true or false (got {plan[k]!r})")
        dims = [plan.get(k, 1) for k in ["tp", "pp", "dp", "cp"]]
        if all(positive_int(d) for d in dims) and positive_int(r.get("gpus")):
            prod = dims[0] * dims[1] * dims[2] * dims[3]
            if prod != r["gpus"]:
                bad(at + ".plan", f"tp*pp*dp*cp = {prod} but gpus = {r['gpus']}")
        cp = plan.get("cp", 1)
        if positive_int(cp) and cp > 1 and not r.get("unsupported"):
            bad(at + ".unsupported", "cp > 1: the row must be marked unsupported (context parallelism)")
        measured = r.get("measured")
        ms = measured if isinstance(measured, list) else [measured]
        if not ms or any(not isinstance(m, dict) for m in ms):
            bad(at + ".measured", "must be an object or a list of objects")
            continue
        for m in ms:
            v = m.get("value")
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
                bad(at + ".measured.value", f"must be a positive number (got {v!r})")
            if m.get("metric") not in METRICS:
                bad(at + ".measured.metric", f"must be one of {sorted(METRICS)} (got {m.get('metric')!r})")
            if m.get("metric") in ("mfu", "hfu") and isinstance(v, (int, float)) and v > 1:
                bad(at + ".measured.value", "MFU and HFU are fractions (0-1)")
            if m.get("convention") not in conventions:
                bad(at + ".measured.convention", f"must be a key of the file's conventions (got {m.get('convention')!r})")
    return len(runs), src.get("group") or src.get("id")


def check(runs_dir, min_rows=0, min_sources=0):
    problems, ids, total, sources = [], {}, 0, []
    files = sorted(glob.glob(os.path.join(runs_dir, "*.json")))
    for f in files:
        n, sid = check_file(f, ids, problems)
        total += n
        if sid:
            sources.append(sid)
    if total < min_rows:
        problems.append(f"{runs_dir}: {total} rows, fewer than {min_rows}")
    independent = sorted(set(sources))  # a source held out with another (group) counts once
    if len(independent) < min_sources:
        problems.append(f"{runs_dir}: {len(independent)} independent sources, fewer than {min_sources}")
    for p in problems:
        print(p)
    print(f"corpus: {total} rows from {len(set(sources))} independent sources ({', '.join(sorted(set(sources)))}); "
          f"{len(problems)} problem(s)")
    return problems


def self_test():
    """A valid file passes; each kind of break is found."""
    good = {
        "corpus_version": 2,
        "source": {"id": "s", "title": "T", "kind": "paper", "where": "arXiv 1", "version": "v1",
                   "url": "https://arxiv.org/abs/1"},
        "stack": {"name": "megatron-lm", "version": "unpublished"},
        "conventions": {"c": "tokens per second per GPU"},
        "runs": [{"id": "s-1", "where": "Table 1", "gpu": "a100-80gb", "gpus": 8, "dtype": "bf16",
                  "global_batch": 64,
                  "model": {"name": "m", "layers": 2, "hidden": 64, "heads": 2, "kv_heads": 2,
                            "ffn_hidden": 256, "seq_len": 128, "vocab": 100, "activation": "gelu",
                            "position": "learned", "norm": "layernorm", "tied_embeddings": True},
                  "plan": {"tp": 2, "pp": 2, "dp": 2, "micro_batch": 1, "recompute": "unpublished"},
                  "measured": {"value": 1000.0, "metric": "tokens_per_s_per_gpu", "convention": "c"}}]}
    breaks = [
        ("plan product", lambda d: d["runs"][0]["plan"].update(dp=3)),
        ("unknown metric", lambda d: d["runs"][0]["measured"].update(metric="speed")),
        ("missing model field", lambda d: d["runs"][0]["model"].pop("vocab")),
        ("held-out source", lambda d: d["source"].update(title="NeMo 24.07 performance summary")),
        ("MFU above 1", lambda d: d["runs"][0].update(measured={"value": 45, "metric": "mfu", "convention": "c"})),
        ("cp without unsupported", lambda d: d["runs"][0]["plan"].update(cp=2, dp=1)),
        ("file name", lambda d: d["source"].update(id="other")),
        ("unknown stack", lambda d: d["stack"].update(name="jax")),
        ("unknown formula", lambda d: d.update(formulas={"c": {"flops_per_iteration": "6n"}})),
        ("formula of no convention", lambda d: d.update(formulas={"x": {"flops_per_iteration": "megatron_hw"}})),
    ]
    ok = True
    with tempfile.TemporaryDirectory() as t:
        json.dump(good, open(os.path.join(t, "s.json"), "w"))
        if check(t):
            print("self-test: a valid file was refused"); ok = False
        for what, brk in breaks:
            d = json.loads(json.dumps(good))
            brk(d)
            json.dump(d, open(os.path.join(t, "s.json"), "w"))
            if not check(t):
                print(f"self-test: {what} was not found"); ok = False
    print("self-test:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    if not args:
        print(__doc__.strip().split("\n")[2], file=sys.stderr)
        return 2
    if not os.path.isdir(args[0]):
        print(f"check_corpus.py: RUNS_DIR {args[0]}: no such directory", file=sys.stderr)
        return 2
    min_rows = int(args[args.index("--min-rows") + 1]) if "--min-rows" in args else 0
    min_sources = int(args[args.index("--min-sources") + 1]) if "--min-sources" in args else 0
    return 1 if check(args[0], min_rows, min_sources) else 0


if __name__ == "__main__":
    sys.exit(main())
