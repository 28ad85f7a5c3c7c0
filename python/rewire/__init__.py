"""Rewire from Python: load a model, rewrite its residual stream, compile and run it.

    import rewire
    model = rewire.load("gpt.onnx")               # or ONNX bytes, or Rewire IR (.mlir)
    print(model.report()["streams"][0]["updates"][0]["kind"])
    review = model.rewrite("review", init="identity")
    session = rewire.compile(review)              # target="cpu" or "cuda"
    (logits,) = session.run(None, {"input": ids}) # as onnxruntime.InferenceSession.run
    review.export("review.onnx")

Every call is the command-line tools' own code (the compiler and runtime
libraries through the `_core` module); a failure raises `rewire.Error` with
the message the tool would print, and compiler warnings are Python warnings.
Arrays go in through the buffer protocol or DLPack (a contiguous CPU
`torch.Tensor` or NumPy array is read where it lies) and come out as NumPy
arrays that own their memory (`torch.from_dlpack` takes them without a copy).
docs/python.md is the tutorial.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _core

__all__ = ["Error", "Model", "Session", "Trainer", "load", "compile", "from_torch"]

Error = _core.Error
"""Raised when a model cannot be read, rewritten, compiled or run; its message is the tool's."""

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _runtime_lib_dir() -> str:
    """Where librewire_kernels.a is: inside the installed package, or the build tree's lib/."""
    for d in (os.path.join(_PACKAGE_DIR, "lib"), os.path.join(_PACKAGE_DIR, "..", "..", "lib")):
        if os.path.exists(os.path.join(d, "librewire_kernels.a")):
            return os.path.normpath(d)
    raise Error("librewire_kernels.a not found next to the rewire package: reinstall it (pip install .)")


def _private_dir(owner: object, prefix: str) -> str:
    """A temporary folder removed with `owner` (it holds only files Rewire wrote)."""
    d = tempfile.mkdtemp(prefix=prefix)
    weakref.finalize(owner, shutil.rmtree, d, True)
    return d


def _option_text(options: Mapping[str, Any]) -> str:
    """{"init": "identity", "nag_c": 2} -> "init=identity,nag-c=2" (residual-rewrite's names)."""
    parts = []
    for key, value in options.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        text = str(value)
        if any(c in text for c in ",:{} \n"):
            raise Error("option %s=%r: values cannot contain ',', ':', braces or spaces" % (key, value))
        parts.append("%s=%s" % (key.replace("_", "-"), text))
    return ",".join(parts)


class Model:
    """A model held by Rewire: its IR (`.mlir`) and parameters, in a private folder.

    Models are values: `rewrite`, `truncate` and `pipeline` return new models and
    leave this one as it was.
    """

    torch_names: Optional[Dict[str, Any]] = None
    """From rewire.from_torch: {parameter: (the module's parameter name, transposed)}."""
    torch_unmatched: List[str] = []
    """From rewire.from_torch: the module's tensors no parameter here stands for."""

    def __init__(self, _dir: str):
        self._dir = _dir

    @classmethod
    def _new(cls) -> "Model":
        m = cls.__new__(cls)
        m._dir = _private_dir(m, "rewire-model-")
        return m

    def _derived(self) -> "Model":
        """A new model that keeps this one's PyTorch names."""
        out = Model._new()
        out.torch_names, out.torch_unmatched = self.torch_names, self.torch_unmatched
        return out

    @property
    def mlir(self) -> str:
        """The model as Rewire IR (nn and residual dialects), as text."""
        with open(os.path.join(self._dir, "model.mlir")) as f:
            return f.read()

    def report(self) -> Dict[str, Any]:
        """The residual streams (residual-report's JSON): `streams`, each with `id` and
        `updates` (`layer`, `kind`, `branch`, `skip`, `params`, `flops_per_token`), plus
        `params_added` and `flops_added_per_token`. Streams are detected if need be."""
        scratch = os.path.join(self._dir, "report.json")
        try:
            return json.loads(_core.report(self._dir, scratch))
        finally:
            if os.path.exists(scratch):
                os.unlink(scratch)

    def rewrite(self, kind: str, *, allow_no_residual: bool = False, **options: Any) -> "Model":
        """The model with its residual adds rewritten to `kind` (`review`, `nag`, `lpa`,
        `hc`, `mhc`, `laurel`, `value-residual`, ...; docs/residual-forms.md). Options are
        residual-rewrite's, with `_` for `-`: `rewrite("review", init="identity")`.
        A model without a residual add is an error unless `allow_no_residual`."""
        spec = kind + (":" + _option_text(options) if options else "")
        out = self._derived()
        _core.rewrite(self._dir, out._dir, spec, allow_no_residual)
        return out

    def truncate(self, depth: int, granularity: str = "block") -> "Model":
        """The first `depth` blocks and the shared head (LPA's "use N models")."""
        out = self._derived()
        _core.truncate(self._dir, out._dir, int(depth), granularity)
        return out

    def pipeline(self, pipeline: str) -> "Model":
        """The model through an MLIR pass pipeline, as rewire-opt would run it:
        `model.pipeline("builtin.module(func.func(residual-detect))")`."""
        out = self._derived()
        _core.run_pipeline(self._dir, out._dir, pipeline)
        return out

    def export(self, path: Union[str, os.PathLike], params: Optional[Union[str, os.PathLike]] = None,
               function: str = "forward") -> None:
        """Writes standard ONNX (residual forms decomposed into ONNX ops), with the model's
        parameters or those of `params` (a safetensors file, e.g. rewire-train --output)."""
        _core.export_onnx(self._dir, os.fspath(path), os.fspath(params) if params else "",
                          function, 0)

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes the IR to `path` and its parameters beside it
        (`<path without .mlir>.params.safetensors`), for rewire-opt and rewire-compile."""
        path = os.fspath(path)
        params = (path[:-5] if path.endswith(".mlir") else path) + ".params.safetensors"
        text = self.mlir.replace('nn.parameter_file = "params.safetensors"',
                                 'nn.parameter_file = %s' % json.dumps(os.path.basename(params)), 1)
        src = os.path.join(self._dir, "params.safetensors")
        if os.path.exists(src):
            shutil.copyfile(src, params)
        with open(path, "w") as f:
            f.write(text)

    def __repr__(self) -> str:
        try:
            streams = self.report()["streams"]
            return "<rewire.Model: %d stream(s), %d residual update(s)>" % (
                len(streams), sum(len(s["updates"]) for s in streams))
        except Error:
            return "<rewire.Model>"


def load(source: Union[str, os.PathLike, bytes], *, dims: Optional[Mapping[str, int]] = None,
         input_shapes: Optional[Sequence[Sequence[int]]] = None) -> Model:
    """Imports an ONNX model (a path or its bytes) or reads Rewire IR (`.mlir`).

    `dims` binds symbolic dimensions (`{"batch": 2}`); `input_shapes` gives each graph
    input's shape in order (as rewire-compile --input-shape)."""
    m = Model._new()
    if not isinstance(source, (bytes, bytearray)):
        source = os.fspath(source)
        if not os.path.exists(source):
            raise Error("'%s' does not exist" % source)
    else:
        source = bytes(source)
    _core.import_model(source, m._dir, dict(dims or {}), [list(map(int, s)) for s in (input_shapes or [])])
    return m


class Session:
    """A compiled model, run like onnxruntime.InferenceSession."""

    def __init__(self, artifact: str, params: str = "", _keep: Optional[object] = None):
        self._exe = _core.Executable(artifact, params)
        self._keep = _keep
        self.artifact = artifact
        self.functions = {f["name"]: f for f in self._exe.functions()}

    @property
    def device(self) -> str:
        """Where the code runs: "cpu", or the GPU."""
        return self._exe.device()

    def get_inputs(self, function: str = "forward") -> List[Dict[str, Any]]:
        """The function's inputs: name, dtype ("f32", "i64", ...) and shape."""
        return self.functions[function]["inputs"]

    def get_outputs(self, function: str = "forward") -> List[Dict[str, Any]]:
        return self.functions[function]["outputs"]

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any],
            function: str = "forward") -> List[np.ndarray]:
        """Runs `function` on `input_feed` (name -> array: NumPy, a CPU torch.Tensor, or anything
        with the buffer protocol or __dlpack__) and returns the outputs named (all for None)."""
        if function not in self.functions:
            raise Error("the artifact has no function '%s' (it has %s)" % (function, ", ".join(self.functions)))
        spec = self.functions[function]
        names = [i["name"] for i in spec["inputs"]]
        unknown = sorted(set(input_feed) - set(names))
        missing = [n for n in names if n not in input_feed]
        if unknown or missing:
            raise Error("inputs of '%s' are %s; %s" % (
                function, ", ".join(names),
                "missing: " + ", ".join(missing) if missing else "unknown: " + ", ".join(unknown)))
        outs = self._exe.run(function, [_array(input_feed[n]) for n in names])
        if output_names is None:
            return outs
        index = {o["name"]: k for k, o in enumerate(spec["outputs"])}
        for n in output_names:
            if n not in index:
                raise Error("'%s' has no output '%s' (it has %s)" % (function, n, ", ".join(index)))
        return [outs[index[n]] for n in output_names]


def _cache_root() -> str:
    """The tools' compile cache: $REWIRE_CACHE_DIR, else $XDG_CACHE_HOME/rewire, else ~/.cache/rewire."""
    if os.environ.get("REWIRE_CACHE_DIR"):
        return os.environ["REWIRE_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rewire")


def _cpu_flags() -> str:
    """This CPU's feature flags: code compiled for `native` is only reused on a CPU that has them."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return line
    except OSError:
        pass
    return ""


def _compiled(model: Model, name: str, args: tuple, holder: object, cache: bool) -> str:
    """The folder holding `model` compiled with `args` (_core.compile's after the paths):
    from the cache when the same model, parameters, options, compiler and CPU compiled
    before, else compiled (into the cache: written in a temporary folder, then renamed)."""
    def build(folder: str) -> None:
        _core.compile(model._dir, os.path.join(folder, name), args[0], args[1], args[2], args[3],
                      os.path.join(folder, "rewritten.mlir"), False, args[4], args[5], args[6],
                      _runtime_lib_dir(), "", args[7])

    if not cache:
        folder = _private_dir(holder, "rewire-compiled-")
        build(folder)
        return folder
    import hashlib
    h = hashlib.sha256()
    h.update(model.mlir.encode())
    params = os.path.join(model._dir, "params.safetensors")
    if os.path.exists(params):
        with open(params, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 24), b""):
                h.update(chunk)
    core = os.stat(_core.__file__)
    h.update(repr((name, args, core.st_size, core.st_mtime_ns, _cpu_flags())).encode())
    root = _cache_root()
    final = os.path.join(root, "python-" + h.hexdigest()[:32])
    if os.path.exists(os.path.join(final, "complete")):
        return final
    os.makedirs(root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".python-", dir=root)
    try:
        build(tmp)
        open(os.path.join(tmp, "complete"), "w").close()
        os.rename(tmp, final)
    except OSError:
        if not os.path.exists(os.path.join(final, "complete")):
            raise
    finally:
        if os.path.isdir(tmp):  # ours: another process cached the same compile first
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def compile(model: Model, target: str = "cpu", *, residual: Optional[str] = None,
            allow_no_residual: bool = False, train: Optional[str] = None,
            precise_math: bool = False, opt_level: int = 2, cpu: str = "native",
            seed: int = 0, params: Optional[Union[str, os.PathLike]] = None,
            cache: bool = True) -> Session:
    """Compiles `model` for `target` ("cpu" or "cuda") and loads it.

    `residual` rewrites first (`"review:init=identity"`, as rewire-compile --residual);
    `train` also compiles the training steps (`"adamw:loss=cross_entropy"`, as --train);
    `params` runs with other parameters (a safetensors file: Trainer.save's, rewire-train's).
    `opt_level` is rewire-compile's -O (default 2, as the tools: the same code, so the same bits).
    Compiles are cached as the tools' are ($REWIRE_CACHE_DIR, else ~/.cache/rewire), keyed by
    the model, its parameters, the options, the compiler and the CPU; `cache=False` compiles
    into a private folder removed with the session."""
    if not isinstance(model, Model):
        raise Error("rewire.compile takes a rewire.Model (rewire.load(...)), got %s" % type(model).__name__)
    if target not in ("cpu", "cuda"):
        raise Error("target '%s' is not a target; use 'cpu' or 'cuda'" % target)
    holder = object.__new__(_Holder)
    name = "model.rwcu" if target == "cuda" else "model.rwx"
    folder = _compiled(model, name, (target, train or "", residual or "", bool(allow_no_residual),
                                     int(opt_level), cpu, bool(precise_math), int(seed)),
                       holder, cache)
    return Session(os.path.join(folder, name), os.fspath(params) if params else "", _keep=holder)


class _Holder:
    """Keeps a compiled artifact's folder alive as long as its Session."""


def from_torch(module: Any, example_inputs: Any, **options: Any) -> Model:
    """A torch.nn.Module as a Rewire model, through torch.onnx (rewire/torch_bridge.py:
    `exporter="torchscript"|"dynamo"`, `input_names`, `dynamic_axes`, ...)."""
    from .torch_bridge import from_torch as bridge
    return bridge(module, example_inputs, **options)


def _array(x: Any) -> Any:
    """An argument for _core: DLPack objects and C-contiguous NumPy arrays as they are."""
    if not hasattr(x, "__dlpack__") and not isinstance(x, np.ndarray):
        x = np.asarray(x)
    if isinstance(x, np.ndarray) and not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    return x


class Trainer:
    """Trains a model with its compiled train step: rewire-train's trainer library
    (the schedule, gradient accumulation, checkpoints, logs), fed batches from Python.

        trainer = rewire.Trainer(model, optimizer="adamw", lr=3e-3, loss="cross_entropy",
                                 steps=1000, schedule="cosine", warmup=50)
        for x, y in batches:
            loss = trainer.step(x, y)
        trainer.checkpoint("ck")                 # rewire.Trainer.resume("ck", model, ...) continues
        weights = trainer.state_dict()           # name -> NumPy array

    The model's batch is its compiled input's first axis; with `grad_accum=K` a step takes
    K times as many rows (summed as K micro-batches). `steps` is the length of the
    learning-rate schedule; `residual`, `frozen`, `clip`, ... are rewire-train's options.

    `comm="mpi"` (run under `mpirun -np N python ...`) trains data-parallel as
    `mpirun rewire-train` does: every rank passes the same global batch (batch x
    grad_accum x N rows) to `step`, trains on its share and sums the gradients with the
    others; rank 0 writes checkpoints and logs. `"mpi-deterministic"` sums in rank order.
    The sums go in buckets of `bucket_mb` MiB, each started as soon as the backward has
    finished it (PyTorch DDP's bucket_cap_mb).
    """

    def __init__(self, model: Model, *, optimizer: str = "adamw", loss: str = "mse", lr: float = 1e-3,
                 steps: int = 1000, schedule: str = "constant", warmup: int = 0, min_lr: float = 0.0,
                 momentum: float = 0.0, weight_decay: float = 0.0, beta1: float = 0.9,
                 beta2: float = 0.999, eps: float = 1e-8, clip: float = 0.0,
                 frozen: Iterable[str] = (), ignore_index: int = -100, grad_accum: int = 1,
                 residual: Optional[str] = None, allow_no_residual: bool = False,
                 target: str = "cpu", params: Optional[str] = None,
                 checkpoint: Optional[str] = None, resume: bool = False,
                 metrics: Optional[str] = None, jsonl: Optional[str] = None,
                 comm: Optional[str] = None, bucket_mb: float = 4.0):
        if not isinstance(model, Model):
            raise Error("rewire.Trainer takes a rewire.Model, got %s" % type(model).__name__)
        if optimizer not in ("sgd", "adamw"):
            raise Error("optimizer must be 'sgd' or 'adamw', got %r" % optimizer)
        if loss not in ("mse", "cross_entropy"):
            raise Error("loss must be 'mse' or 'cross_entropy', got %r" % loss)
        if schedule not in ("constant", "cosine"):
            raise Error("schedule must be 'constant' or 'cosine', got %r" % schedule)
        if resume and not checkpoint:
            raise Error("resume needs checkpoint=DIR")
        if not (isinstance(bucket_mb, (int, float)) and 0 < bucket_mb <= 1e6):
            raise Error("bucket_mb must be a size in MiB above 0, got %r" % (bucket_mb,))
        frozen = list(frozen)
        if any(not f or any(c in f for c in ",+: ") for f in frozen):
            raise Error("frozen: parameter-name prefixes without ',', '+', ':' or spaces")
        spec = "%s:loss=%s,ignore-index=%d,momentum=%.17g,weight-decay=%.17g,beta1=%.17g," \
               "beta2=%.17g,eps=%.17g,clip=%.17g" % (optimizer, loss, ignore_index, momentum,
                                                     weight_decay, beta1, beta2, eps, clip)
        if frozen:
            spec += ",frozen=" + "+".join(frozen)
        if grad_accum > 1 or comm:
            spec += ",split=true"
        self._session = compile(model, target, residual=residual, allow_no_residual=allow_no_residual,
                                train=spec)
        options = {"steps": int(steps), "lr": float(lr), "min_lr": float(min_lr),
                   "warmup": int(warmup), "cosine": schedule == "cosine", "beta1": float(beta1),
                   "beta2": float(beta2), "grad_accum": int(grad_accum), "resume": bool(resume),
                   "bucket_mb": float(bucket_mb)}
        for key, value in (("params", params), ("checkpoint", checkpoint), ("metrics", metrics),
                           ("jsonl", jsonl), ("comm", comm)):
            if value:
                options[key] = os.fspath(value)
        self._t = _core.Trainer(self._session.artifact, options)
        self._torch_names = model.torch_names
        self.last: Dict[str, Any] = {}
        """The last step's result: step, loss, lr, depth_losses (LPA), seconds."""

    @classmethod
    def resume(cls, checkpoint: Union[str, os.PathLike], model: Model, **options: Any) -> "Trainer":
        """A trainer continuing from `checkpoint` (written by `checkpoint()` or rewire-train),
        with the same model and options as the run that wrote it: it goes on bit for bit."""
        return cls(model, checkpoint=os.fspath(checkpoint), resume=True, **options)

    @property
    def step_count(self) -> int:
        """The number of the next step (steps done, with those before a resume)."""
        return self._t.next_step

    @property
    def batch(self) -> int:
        """Rows per step: the global batch (compiled batch x grad_accum x ranks)."""
        return self._t.batch

    @property
    def rank(self) -> int:
        """This process's rank (0 without comm)."""
        return self._t.rank

    @property
    def ranks(self) -> int:
        return self._t.ranks

    def step(self, inputs: Any, targets: Any) -> float:
        """One update on a batch; returns the loss before it (as a PyTorch loop logs it)."""
        self.last = self._t.step(_array(inputs), _array(targets))
        return self.last["loss"]

    def evaluate(self, inputs: Any, targets: Any) -> float:
        """eval_step's loss on a batch of the compiled batch, with the current parameters."""
        return self._t.evaluate(_array(inputs), _array(targets))[0]

    def checkpoint(self, directory: Union[str, os.PathLike]) -> None:
        """Writes the parameters and optimizer state (state.json + model-<step>.safetensors,
        atomically) to `directory`; Trainer.resume continues from it."""
        self._t.checkpoint(os.fspath(directory))

    def state_dict(self, torch_names: bool = False) -> Dict[str, Any]:
        """The current parameters, by the model's names (NumPy copies); with `torch_names`
        (a model from rewire.from_torch) the module's parameters under the module's own
        names as torch tensors, transposed back where the export transposed them, for
        `module.load_state_dict(sd, strict=False)`; the rewrite's new parameters are
        `new_parameters()`."""
        params = self._t.parameters()
        if not torch_names:
            return params
        if self._torch_names is None:
            raise Error("state_dict(torch_names=True) needs a model from rewire.from_torch")
        import collections

        import torch
        out = collections.OrderedDict()
        for name, a in params.items():
            hit = self._torch_names.get(name)
            if hit:
                key, transposed = hit
                out[key] = torch.from_numpy(np.ascontiguousarray(a.T) if transposed else a)
        return out

    def new_parameters(self) -> Dict[str, np.ndarray]:
        """The parameters that are not the PyTorch module's (a rewrite's:
        `stream<S>.layer<L>.<kind>.<name>`), by name."""
        names = self._torch_names or {}
        return {k: v for k, v in self._t.parameters().items() if k not in names}

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes the parameters as safetensors (rewire-train --output's file: Model.export
        and rewire-run take it as params)."""
        self._t.save(os.fspath(path))
