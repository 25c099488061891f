"""A launch script's lines as Megatron-LM's checkers read them (check_megatron_args.py,
check_megatron_deepspeed.py): environment lines, and the pretrain_gpt.py command."""
import re
import shlex


def read_env_line(s, env_set, env_unset):
    """`export NAME=value` sets env_set[NAME]; `unset A B` records A and B in env_unset and drops
    them from env_set. True when s was such a line."""
    m = re.match(r'export\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)$', s)
    if m:
        env_set[m.group(1)] = shlex.split(m.group(2))[0] if m.group(2) else ''
        return True
    m = re.match(r'unset\s+(.*)$', s)
    if m:
        for v in m.group(1).split():
            env_unset.append(v)
            env_set.pop(v, None)
        return True
    return False


def pretrain_command(s):
    """(the arguments after pretrain_gpt.py, the launcher's --nproc-per-node or None) of the line
    that runs pretrain_gpt.py."""
    words = shlex.split(s)
    idx = [i for i, w in enumerate(words) if w.endswith('pretrain_gpt.py')][0]
    nproc = None
    for i, w in enumerate(words[:idx]):
        if w in ('--nproc-per-node', '--nproc_per_node'):
            nproc = int(words[i + 1])
        elif w.startswith('--nproc-per-node=') or w.startswith('--nproc_per_node='):
            nproc = int(w.split('=', 1)[1])
    return words[idx + 1:], nproc
