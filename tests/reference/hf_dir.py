#!/usr/bin/python3
"""An independent reader of Hugging Face model directories (issue 20), written from the formats'
specifications, not from Parallax's code: pure Python (struct, json), no numpy.

safetensors (https://github.com/huggingface/safetensors, "Format"):
  8 bytes    N, an unsigned little-endian 64-bit integer: the size of the header
  N bytes    a JSON UTF-8 string, starting with '{', possibly padded with spaces (0x20), mapping
             each tensor name to {"dtype", "shape", "data_offsets": [BEGIN, END]} (offsets into
             the byte buffer), plus an optional "__metadata__" map of strings to strings
  the rest   the byte buffer: entirely indexed by the tensors, no holes, no overlap;
             little-endian, row-major
transformers' sharded checkpoints (modeling_utils, SAFE_WEIGHTS_INDEX_NAME):
  model.safetensors.index.json  {"metadata": {"total_size": bytes of all tensors},
                                 "weight_map": {tensor name: shard file name}}
  transformers refuses a safetensors file whose metadata "format" is not pt, tf, flax or mlx.
GPT-2 (transformers' GPT2LMHeadModel; its checkpoints carry GPT2Model names): Conv1D weights
  stored (in, out); lm_head tied to wte unless tie_word_embeddings is false.
Llama (transformers' LlamaForCausalLM, model_type llama): model.embed_tokens, per layer
  input_layernorm, self_attn.{q,k,v,o}_proj, post_attention_layernorm, mlp.{gate,up,down}_proj,
  all nn.Linear (out, in); biases with attention_bias / mlp_bias; model.norm; lm_head unless
  tie_word_embeddings. q_proj has num_attention_heads * head_dim rows, k/v_proj
  num_key_value_heads * head_dim.

Usage:
  hf_dir.py check HF_DIR [--against STEP_DIR] [--shards N] [--max-shard-bytes B]
    validates the directory against the specifications and GPT-2's or Llama's tensor set (with
    --max-shard-bytes: every shard holds at most B bytes of tensors, or one tensor); with --against,
    compares every tensor with a Parallax checkpoint step directory reassembled here from its
    shard metadata ("shard:<name>": global shape, sharded dim, segments), vocabulary padding
    removed: bit for bit in F32, or to round-to-nearest-even in BF16.
Prints one line per finding; exit 1 when the directory is not valid or differs.
"""
import json
import os
import struct
import sys

DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2,
               "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}
MAX_HEADER_BYTES = 100_000_000  # the reference implementation's limit
ALLOWED_FORMATS = ("pt", "tf", "flax", "mlx")


class Invalid(Exception):
    pass


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def read_safetensors(path):
    """Returns (metadata, {name: (dtype, shape, bytes)}) or raises Invalid naming the rule."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise Invalid(f"{path}: shorter than the 8-byte header size")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > MAX_HEADER_BYTES or 8 + n > len(blob):
        raise Invalid(f"{path}: header size {n} exceeds the file or the 100 MB limit")
    head = blob[8:8 + n]
    if not head.startswith(b"{"):
        raise Invalid(f"{path}: header does not start with '{{'")
    text = head.decode("utf-8").rstrip(" ")
    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise Invalid(f"{path}: duplicate keys in the header")
        return dict(pairs)
    header = json.loads(text, object_pairs_hook=no_duplicates)
    data = blob[8 + n:]
    meta = header.pop("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise Invalid(f"{path}: __metadata__ must map strings to strings")
    spans, tensors = [], {}
    for name, info in header.items():
        if set(info) != {"dtype", "shape", "data_offsets"}:
            raise Invalid(f"{path}: {name}: entry keys must be dtype, shape, data_offsets")
        dtype, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in DTYPE_BYTES:
            raise Invalid(f"{path}: {name}: unknown dtype {dtype}")
        if not all(isinstance(d, int) and d >= 0 for d in shape):
            raise Invalid(f"{path}: {name}: shape must be non-negative integers")
        if not (0 <= begin <= end <= len(data)) or end - begin != numel(shape) * DTYPE_BYTES[dtype]:
            raise Invalid(f"{path}: {name}: data_offsets [{begin}, {end}] do not hold {dtype} {shape}")
        spans.append((begin, end, name))
        tensors[name] = (dtype, shape, data[begin:end])
    position = 0
    for begin, end, name in sorted(spans):
        if begin != position:
            raise Invalid(f"{path}: {name}: the byte buffer has a hole or an overlap at {position}")
        position = end
    if position != len(data):
        raise Invalid(f"{path}: {len(data) - position} bytes after the last tensor are not indexed")
    return meta, tensors


def read_hf_dir(path):
    """(config, {name: (dtype, shape, bytes)}, shard file names) of a transformers model directory."""
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    index_path = os.path.join(path, "model.safetensors.index.json")
    if os.path.exists(index_path):
        with open(index_path) as f:
            index = json.load(f)
        if set(index) != {"metadata", "weight_map"} or "total_size" not in index["metadata"]:
            raise Invalid(f"{index_path}: must hold metadata.total_size and weight_map")
        files = sorted(set(index["weight_map"].values()))
    else:
        index, files = None, ["model.safetensors"]
    tensors, where = {}, {}
    for name in files:
        meta, found = read_safetensors(os.path.join(path, name))
        if meta.get("format") not in ALLOWED_FORMATS:
            raise Invalid(f"{name}: metadata format {meta.get('format')!r} (transformers loads pt, tf, flax or mlx)")
        for t, v in found.items():
            if t in tensors:
                raise Invalid(f"{t} is in both {where[t]} and {name}")
            tensors[t], where[t] = v, name
    if index is not None:
        if where != index["weight_map"]:
            raise Invalid("weight_map does not name exactly the tensors each shard holds")
        total = sum(len(v[2]) for v in tensors.values())
        if index["metadata"]["total_size"] != total:
            raise Invalid(f"total_size {index['metadata']['total_size']} != {total} bytes of tensors")
    return config, tensors, files


def gpt2_shapes(config):
    """Every tensor GPT2LMHeadModel loads, with its shape (GPT-2's Conv1D (in, out) layout)."""
    C, F, V, T = config["n_embd"], config["n_inner"] or 4 * config["n_embd"], config["vocab_size"], config["n_positions"]
    shapes = {"wte.weight": [V, C], "wpe.weight": [T, C], "ln_f.weight": [C], "ln_f.bias": [C]}
    for l in range(config["n_layer"]):
        h = f"h.{l}."
        shapes.update({h + "ln_1.weight": [C], h + "ln_1.bias": [C], h + "ln_2.weight": [C], h + "ln_2.bias": [C],
                       h + "attn.c_attn.weight": [C, 3 * C], h + "attn.c_attn.bias": [3 * C],
                       h + "attn.c_proj.weight": [C, C], h + "attn.c_proj.bias": [C],
                       h + "mlp.c_fc.weight": [C, F], h + "mlp.c_fc.bias": [F],
                       h + "mlp.c_proj.weight": [F, C], h + "mlp.c_proj.bias": [C]})
    if not config.get("tie_word_embeddings", True):
        shapes["lm_head.weight"] = [V, C]
    return shapes


def check_gpt2(config, tensors):
    if config.get("model_type") != "gpt2" or config.get("architectures") != ["GPT2LMHeadModel"]:
        raise Invalid("config.json: model_type gpt2 and architectures [GPT2LMHeadModel] expected")
    if config["n_embd"] % config["n_head"] != 0:
        raise Invalid("config.json: n_head must divide n_embd")
    check_shapes(config, tensors, gpt2_shapes(config), "GPT-2")


def check_shapes(config, tensors, want, family):
    if set(want) != set(tensors):
        raise Invalid(f"tensors differ from {family}'s: missing {sorted(set(want) - set(tensors))[:5]}, "
                      f"unexpected {sorted(set(tensors) - set(want))[:5]}")
    dtype = {"float32": "F32", "bfloat16": "BF16", "float16": "F16"}[config.get("torch_dtype", "float32")]
    for name, shape in want.items():
        if tensors[name][1] != shape or tensors[name][0] != dtype:
            raise Invalid(f"{name}: {tensors[name][0]} {tensors[name][1]}, config.json says {dtype} {shape}")


def llama_shapes(config):
    """Every tensor LlamaForCausalLM loads, with its shape (nn.Linear (out, in))."""
    C, F, V = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    NH, KVH = config["num_attention_heads"], config.get("num_key_value_heads") or config["num_attention_heads"]
    hd = config.get("head_dim") or C // NH
    shapes = {"model.embed_tokens.weight": [V, C], "model.norm.weight": [C]}
    for l in range(config["num_hidden_layers"]):
        h = f"model.layers.{l}."
        shapes.update({h + "input_layernorm.weight": [C], h + "post_attention_layernorm.weight": [C],
                       h + "self_attn.q_proj.weight": [NH * hd, C], h + "self_attn.k_proj.weight": [KVH * hd, C],
                       h + "self_attn.v_proj.weight": [KVH * hd, C], h + "self_attn.o_proj.weight": [C, NH * hd],
                       h + "mlp.gate_proj.weight": [F, C], h + "mlp.up_proj.weight": [F, C],
                       h + "mlp.down_proj.weight": [C, F]})
        if config.get("attention_bias", False):
            shapes.update({h + "self_attn.q_proj.bias": [NH * hd], h + "self_attn.k_proj.bias": [KVH * hd],
                           h + "self_attn.v_proj.bias": [KVH * hd], h + "self_attn.o_proj.bias": [C]})
        if config.get("mlp_bias", False):
            shapes.update({h + "mlp.gate_proj.bias": [F], h + "mlp.up_proj.bias": [F], h + "mlp.down_proj.bias": [C]})
    if not config.get("tie_word_embeddings", False):  # LlamaConfig's default: untied
        shapes["lm_head.weight"] = [V, C]
    return shapes


def check_llama(config, tensors):
    if config.get("model_type") != "llama" or config.get("architectures") != ["LlamaForCausalLM"]:
        raise Invalid("config.json: model_type llama and architectures [LlamaForCausalLM] expected")
    NH, KVH = config["num_attention_heads"], config.get("num_key_value_heads") or config["num_attention_heads"]
    if NH % KVH != 0:
        raise Invalid("config.json: num_key_value_heads must divide num_attention_heads")
    if config.get("hidden_act") != "silu":
        raise Invalid("config.json: hidden_act silu expected (SwiGLU)")
    scaling = config.get("rope_scaling")
    if scaling is not None and (scaling.get("rope_type") != "llama3" or
                                set(scaling) != {"rope_type", "factor", "low_freq_factor", "high_freq_factor",
                                                 "original_max_position_embeddings"}):
        raise Invalid(f"config.json: rope_scaling {scaling} is not Llama 3's")
    check_shapes(config, tensors, llama_shapes(config), "Llama")


def check_model(config, tensors):
    """GPT-2 or Llama by config.json's model_type; returns the family's name."""
    if config.get("model_type") == "llama":
        check_llama(config, tensors)
        return "Llama"
    check_gpt2(config, tensors)
    return "GPT-2"


def reassemble_parallax(step_dir):
    """Global float32 tensors (as little-endian bytes) of a Parallax checkpoint step directory,
    from each shard's "shard:<name>" metadata; Adam state skipped."""
    out = {}
    for file in sorted(os.listdir(step_dir)):
        if not file.endswith(".safetensors"):
            continue
        meta, tensors = read_safetensors(os.path.join(step_dir, file))
        for name, (dtype, local_shape, raw) in tensors.items():
            if name.startswith("optimizer."):
                continue
            info = json.loads(meta["shard:" + name])
            shape, dim = info["global_shape"], info["dim"]
            if name not in out:
                out[name] = (shape, bytearray(numel(shape) * 4))
            buf = out[name][1]
            if dim < 0:
                buf[:] = raw
                continue
            rows = shape[0]
            cols = shape[1] if len(shape) > 1 else 1
            local_cols = local_shape[1] if len(local_shape) > 1 else 1
            for g0, l0, length in info["segments"]:
                for i in range(length):
                    if dim == 0:  # rows g0+i of the global tensor are local rows l0+i
                        buf[(g0 + i) * cols * 4:(g0 + i + 1) * cols * 4] = raw[(l0 + i) * local_cols * 4:(l0 + i + 1) * local_cols * 4]
                    else:  # columns: every row's element
                        for r in range(rows):
                            src = (r * local_cols + l0 + i) * 4
                            dst = (r * cols + g0 + i) * 4
                            buf[dst:dst + 4] = raw[src:src + 4]
    return out


def bf16_rne(f32_bytes):
    """float32 -> bfloat16, round to nearest, ties to even; NaN stays a quiet NaN."""
    out = bytearray()
    for (u,) in struct.iter_unpack("<I", f32_bytes):
        if (u & 0x7FFFFFFF) > 0x7F800000:
            b = (u >> 16) | 0x0040
        else:
            b = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
        out += struct.pack("<H", b)
    return bytes(out)


def compare(tensors, step_dir, vocab):
    ref = reassemble_parallax(step_dir)
    for name, (dtype, shape, raw) in tensors.items():
        if name not in ref:
            raise Invalid(f"{name}: not in the checkpoint {step_dir}")
        rshape, rbytes = ref[name]
        if name in ("wte.weight", "model.embed_tokens.weight", "lm_head.weight"):  # vocabulary padding rows removed
            if rshape[0] < vocab:
                raise Invalid(f"{name}: checkpoint has {rshape[0]} rows < vocab {vocab}")
            rbytes = bytes(rbytes[:vocab * rshape[1] * 4])
            rshape = [vocab, rshape[1]]
        if rshape != shape:
            raise Invalid(f"{name}: shape {shape}, checkpoint {rshape}")
        want = bytes(rbytes) if dtype == "F32" else bf16_rne(bytes(rbytes))
        if raw != want:
            raise Invalid(f"{name}: values differ from the checkpoint")


def main(argv):
    if len(argv) < 2 or argv[0] != "check":
        print(__doc__, file=sys.stderr)
        return 2
    path, against, shards, max_bytes = argv[1], None, None, None
    rest = argv[2:]
    while rest:
        flag, value, rest = rest[0], rest[1], rest[2:]
        if flag == "--against":
            against = value
        elif flag == "--shards":
            shards = int(value)
        elif flag == "--max-shard-bytes":
            max_bytes = int(value)
        else:
            print(f"unknown flag {flag}", file=sys.stderr)
            return 2
    try:
        config, tensors, files = read_hf_dir(path)
        family = check_model(config, tensors)
        if shards is not None and len(files) != shards:
            raise Invalid(f"{len(files)} shard files, expected {shards}")
        if max_bytes is not None:
            for name in files:
                _, held = read_safetensors(os.path.join(path, name))
                size = sum(len(v[2]) for v in held.values())
                if size > max_bytes and len(held) > 1:
                    raise Invalid(f"{name}: {size} bytes in {len(held)} tensors exceed --max-shard-bytes {max_bytes}")
        if against:
            compare(tensors, against, config["vocab_size"])
    except (Invalid, OSError, ValueError, KeyError) as e:
        print(f"hf_dir: INVALID: {e}", file=sys.stderr)
        return 1
    print(f"hf_dir: valid {family} directory: {len(tensors)} tensors in {len(files)} files"
          + (f", equal to {against}" if against else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
