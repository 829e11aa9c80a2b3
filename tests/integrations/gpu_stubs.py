"""Import stubs for the GPU-only modules the serving stacks import at module level.

vLLM, SGLang and LMDeploy import `torch` (and vLLM / SGLang `xgrammar`, whose wheel
pulls torch and the CUDA wheels) at import time, even in the parts that parse text:
vLLM's `env_override`, SGLang's `srt.utils.common`, LMDeploy's package `__init__`.
The parser code paths the integration tests drive never run a tensor operation, so an
inert stand-in is enough for them to import. These stubs are the only thing the tests
put in place of a stack's real code (research/integrations.md §1.8, §2.3): every
attribute, call, subscript, arithmetic, comparison or context use of a stub gives
another stub, classes can inherit from one, and nothing is ever computed.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types


class _Stub:
    """A value that absorbs every use. `class X(torch.nn.Module)` works through
    `__mro_entries__`, which turns a stub base into a fresh empty class."""

    def __init__(self, name: str = "stub") -> None:
        object.__setattr__(self, "_name", name)

    def __repr__(self) -> str:
        return f"<gpu stub {self._name}>"

    def __getattr__(self, item: str) -> _Stub:
        if item.startswith("__") and item.endswith("__"):
            raise AttributeError(item)
        return _Stub(f"{self._name}.{item}")

    def __setattr__(self, key, value) -> None:
        pass

    def __call__(self, *args, **kwargs):
        # Decorators (`@torch.compile`, `@torch.inference_mode()`) must return the
        # function they decorate, or the decorated code would vanish.
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], _Stub):
            return args[0]
        return _Stub(f"{self._name}()")

    def __mro_entries__(self, bases):
        return (type(self._name.rsplit(".", 1)[-1], (), {}),)

    def __getitem__(self, item) -> _Stub:
        return _Stub(f"{self._name}[]")

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return False

    def __enter__(self) -> _Stub:
        return self

    def __exit__(self, *exc) -> bool:
        return False

    def __int__(self) -> int:
        return 0

    def __float__(self) -> float:
        return 0.0

    def __index__(self) -> int:
        return 0

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        return other is self

    def __lt__(self, other) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __contains__(self, item) -> bool:
        return False

    def _binary(self, *args) -> _Stub:
        return _Stub(self._name)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _binary
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __pow__ = _binary
    __or__ = __ror__ = __and__ = __rand__ = __neg__ = __invert__ = _binary


class _StubModule(types.ModuleType):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__path__ = []  # a package: `import torch.nn.functional` works
        self.__file__ = f"<gpu stub {name}>"

    def __getattr__(self, item: str):
        if item.startswith("__") and item.endswith("__"):
            raise AttributeError(item)
        return _Stub(f"{self.__name__}.{item}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, roots: dict[str, str]) -> None:
        self.roots = roots

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".", 1)[0] in self.roots:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return _StubModule(spec.name)

    def exec_module(self, module) -> None:
        # Version checks at import (vLLM's `is_torch_equal`) read `__version__`.
        module.__version__ = self.roots[module.__name__.split(".", 1)[0]]


def install(roots: dict[str, str]) -> None:
    """Serves `roots` (top-level module name -> the `__version__` it reports) and their
    submodules as stubs. Call before the stack is imported; a real installed module of
    that name is shadowed."""
    sys.meta_path.insert(0, _Finder(dict(roots)))
