"""The PyTorch bridge: a torch.nn.Module into Rewire through torch.onnx, and
its trained weights back under the module's own names.

    model = rewire.from_torch(module, (ids,))              # exporter="torchscript" | "dynamo"
    trainer = rewire.Trainer(model.rewrite("review", init="identity"), ...)
    ...
    module.load_state_dict(trainer.state_dict(torch_names=True), strict=False)
    extra = trainer.new_parameters()                       # the rewrite's own, apart

The exporters rename and transpose parameters (a Linear on 3-D inputs becomes
`onnx::MatMul_N` holding the weight transposed) and store equal initializers
once, aliasing the others with Identity nodes named after the parameters.
Each ONNX parameter is matched to the module's: by name (the initializer or
its alias is named after the parameter), then by value, the tensor itself or
transposed, parameters not yet matched first. What matches nothing (buffers
such as causal masks, parameters the exporter folded into constants) is
listed in `model.torch_unmatched`.
"""
from __future__ import annotations

import os
import tempfile
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np


def name_map(onnx_path: str, state: Dict[str, np.ndarray]) -> Tuple[Dict[str, Tuple[str, bool]], List[str]]:
    """{ONNX parameter name: (module parameter name, transposed)} for the float
    initializers and Identity aliases of `onnx_path`, and the module's names
    nothing matched."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(onnx_path).graph
    inits = {}
    for init in graph.initializer:
        a = numpy_helper.to_array(init)
        if a.dtype == np.float32:
            inits[init.name] = np.ascontiguousarray(a)
    mapping: Dict[str, Tuple[str, bool]] = {}
    claimed = set()
    for name, a in inits.items():
        if name in state and state[name].shape == a.shape:
            mapping[name] = (name, False)
            claimed.add(name)
    for node in graph.node:
        if node.op_type == "Identity" and node.output[0] in state and node.input[0] in inits:
            mapping[node.output[0]] = (node.output[0], False)
            claimed.add(node.output[0])
    by_value: Dict[bytes, List[Tuple[str, bool]]] = {}
    for key, a in state.items():
        by_value.setdefault(a.tobytes(), []).append((key, False))
        if a.ndim == 2:
            by_value.setdefault(np.ascontiguousarray(a.T).tobytes(), []).append((key, True))
    for name, a in inits.items():
        if name in mapping:
            continue
        candidates = [c for c in by_value.get(a.tobytes(), []) if c[0] not in claimed]
        if candidates:
            mapping[name] = candidates[0]
            claimed.add(candidates[0][0])
    return mapping, [k for k in state if k not in claimed]


def from_torch(module: Any, example_inputs: Any, *, exporter: str = "torchscript",
               input_names: Optional[Sequence[str]] = None,
               output_names: Optional[Sequence[str]] = None,
               dynamic_axes: Optional[Dict[str, Dict[int, str]]] = None, opset: int = 17,
               dims: Optional[Dict[str, int]] = None):
    """Exports `module` with torch.onnx (`exporter`: "torchscript", or "dynamo" on
    PyTorch 2.5+) on `example_inputs` (a tensor or a tuple) and loads it; the model
    remembers which of its parameters are which of the module's (`model.torch_names`)."""
    import torch

    from . import Error, load

    if exporter not in ("torchscript", "dynamo"):
        raise Error("exporter must be 'torchscript' or 'dynamo', got %r" % exporter)
    args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    # state_dict lists a tied parameter under each of its names.
    seen: Dict[int, str] = {}
    for name, p in module.state_dict(keep_vars=True).items():
        if not isinstance(p, torch.nn.Parameter):
            continue
        if id(p) in seen:
            warnings.warn("'%s' and '%s' are one tied parameter; Rewire trains the copies the "
                          "export holds apart, so after load_state_dict the module's tied tensor "
                          "takes one of them (untie it before from_torch to keep both)"
                          % (seen[id(p)], name), stacklevel=2)
        seen.setdefault(id(p), name)
    folder = tempfile.mkdtemp(prefix="rewire-from-torch-")
    path = os.path.join(folder, "model.onnx")
    was_training = module.training
    module.eval()
    try:
        kwargs: Dict[str, Any] = dict(opset_version=opset)
        if input_names:
            kwargs["input_names"] = list(input_names)
        if output_names:
            kwargs["output_names"] = list(output_names)
        if dynamic_axes:
            kwargs["dynamic_axes"] = dynamic_axes
        if exporter == "dynamo":
            if not hasattr(torch.onnx, "export") or tuple(int(v) for v in torch.__version__.split(".")[:2]) < (2, 5):
                raise Error("exporter='dynamo' needs PyTorch 2.5 or later (this is %s)" % torch.__version__)
            kwargs.pop("dynamic_axes", None)
            kwargs["dynamo"] = True
        elif tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 5):
            kwargs["dynamo"] = False
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, args, path, **kwargs)
        state = {k: v.detach().cpu().float().numpy() for k, v in module.state_dict().items()
                 if v.dtype.is_floating_point}
        mapping, unmatched = name_map(path, state)
        model = load(path, dims=dims)
    finally:
        module.train(was_training)
        for f in os.listdir(folder):
            os.unlink(os.path.join(folder, f))
        os.rmdir(folder)
    model.torch_names = mapping
    model.torch_unmatched = unmatched
    return model
