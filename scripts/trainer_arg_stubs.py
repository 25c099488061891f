"""Import machinery shared by check_megatron_args.py and check_megatron_deepspeed.py.

Both run a trainer's own argument/config code (Megatron-LM, Megatron-DeepSpeed, DeepSpeed) in a
worker interpreter without a GPU and without the trainer's heavy dependencies. This module holds
what they do alike; each script keeps its own list of modules to fake and its own patches.

  * install_stub_modules(names): every module named (and its submodules) imports as a fake whose
    attribute access returns inert placeholder classes: calling one with a single callable passes
    it through (so placeholders work as decorators), subscripting or `|` returns the class (type
    annotations), iterating yields nothing, truth is False.
  * alias_vendored_packaging(): `packaging` -> pip._vendor.packaging (the real code; the system
    Python lacks the top-level package). The trainers' version checks import it.
  * make_stub(name): one placeholder class, for attributes patched onto real modules.
"""
import importlib
import importlib.abc
import importlib.machinery
import sys
import types


class _StubMeta(type):
    def __getattr__(cls, name):
        if name.startswith('__') and name.endswith('__'):
            raise AttributeError(name)
        return make_stub(f'{cls.__qualname__}.{name}')

    def __getitem__(cls, item):
        return cls

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls

    def __call__(cls, *a, **k):
        if len(a) == 1 and not k and callable(a[0]) and not isinstance(a[0], _StubMeta):
            return a[0]  # used as a decorator: pass the function through
        return super().__call__()

    def __iter__(cls):
        return iter(())

    def __bool__(cls):
        return False


class _StubBase(metaclass=_StubMeta):
    def __init__(self, *a, **k):
        pass

    def __getattr__(self, name):
        if name.startswith('__') and name.endswith('__'):
            raise AttributeError(name)
        return make_stub(name)

    def __call__(self, *a, **k):
        if len(a) == 1 and not k and callable(a[0]):
            return a[0]
        return self


def make_stub(name):
    """A placeholder class named after the last part of the dotted `name`."""
    return _StubMeta(name.split('.')[-1], (_StubBase,), {'__qualname__': name})


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith('__') and name.endswith('__'):
            raise AttributeError(name)
        v = make_stub(f'{self.__name__}.{name}')
        setattr(self, name, v)
        return v


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        m = _StubModule(spec.name)
        m.__path__ = []
        m.__file__ = '<parallax-check stub>'
        m.__version__ = '0.0.0'
        return m

    def exec_module(self, module):
        pass


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, names):
        self.names = list(names)

    def find_spec(self, fullname, path, target=None):
        for p in self.names:
            if fullname == p or fullname.startswith(p + '.'):
                return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)
        return None


def install_stub_modules(names):
    """Import every module in `names`, and its submodules, as a fake (ahead of the real ones)."""
    sys.meta_path.insert(0, _Finder(names))


def alias_vendored_packaging():
    import pip._vendor.packaging as _pk
    import pip._vendor.packaging.version  # noqa: F401
    import pip._vendor.packaging.specifiers  # noqa: F401
    import pip._vendor.packaging.requirements  # noqa: F401
    sys.modules.setdefault('packaging', _pk)
    for n in list(sys.modules):
        if n.startswith('pip._vendor.packaging.'):
            sys.modules.setdefault('packaging.' + n[len('pip._vendor.packaging.'):], sys.modules[n])
