"""End to end on the CPU without ONNX Runtime: a PyTorch model is exported,
imported with rewire-import, optionally detected and rewritten, its weights
inlined (nn-inline-parameters), lowered (convert-nn-to-linalg,
convert-residual-to-linalg, the CPU pipeline) and executed with mlir-runner;
the logits are compared with PyTorch's on the same token ids.

    run_model.py WORKDIR MLIR_RUNNER LIB_DIR NAME [REWRITE-PIPELINE]

Tolerance |got - torch| <= 1e-4 + 1e-4 |torch| (fp32, different summation
order; printMemrefF32 prints 6 significant digits).
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Import", "Inputs"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import rewire_run  # noqa: E402
import torch_models as tm  # noqa: E402


def main():
    work, runner, libdir, name = sys.argv[1:5]
    rewrite = sys.argv[5] if len(sys.argv) > 5 else ""
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    if name == "resnet18":
        import torchvision
        model = torchvision.models.resnet18(num_classes=10).eval()
        ids = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
        elt = "f32"
    else:
        model = {"gpt": tm.GPT, "llama": tm.Llama, "bert": tm.Bert}[name]().eval()
        ids = torch.randint(0, tm.V, (tm.B, tm.T), generator=torch.Generator().manual_seed(1))
        elt = "i64"
    onnx_path = os.path.join(work, name + ".onnx")
    torch.onnx.export(model, ids, onnx_path, opset_version=17, input_names=["input"],
                      output_names=["output"])
    with torch.no_grad():
        want = model(ids).numpy().astype(np.float64)

    mlir_path = os.path.join(work, name + ".mlir")
    params = os.path.join(work, name + ".safetensors")
    try:
        rewire_run.run(["rewire-import", onnx_path, "-o", mlir_path])
        tensor_ir = rewire_run.lower_model(mlir_path, params, rewrite)
        got, _ = rewire_run.execute(tensor_ir, [(ids.numpy(), elt)], list(want.shape),
                                    runner=runner, libdir=libdir)
    except rewire_run.ToolError as e:
        raise SystemExit("FAIL " + str(e))
    shape = list(want.shape)
    err = np.abs(got - want)
    ok = np.all(err <= 1e-4 + 1e-4 * np.abs(want))
    print("%s %s%s: logits %s, max abs error vs PyTorch %.2e" % (
        "ok  " if ok else "FAIL", name, " (" + rewrite + ")" if rewrite else "", shape, err.max()))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
