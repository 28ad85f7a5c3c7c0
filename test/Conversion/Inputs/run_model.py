"""End to end on the CPU without ONNX Runtime: a PyTorch model is exported,
compiled with rewire-compile (optionally with --residual=SPEC: detection and
rewrite inside the compiler) and run by the Rewire runtime (through its C API,
python/rewire_runtime.py, and through rewire-run for the .npy path); the
logits are compared with PyTorch's on the same inputs.

    run_model.py WORKDIR NAME [RESIDUAL-SPEC]

Tolerance |got - torch| <= 1e-4 * max(1, |torch|) elementwise, i.e. 1e-4
relative (fp32 with a different summation order: BLAS GEMMs, fused loops).
"""
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Import", "Inputs"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import rewire_runtime  # noqa: E402
import torch_models as tm  # noqa: E402


def main():
    work, name = sys.argv[1:3]
    residual = sys.argv[3] if len(sys.argv) > 3 else ""
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    if name == "resnet18":
        import torchvision
        model = torchvision.models.resnet18(num_classes=10).eval()
        x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    else:
        model = {"gpt": tm.GPT, "llama": tm.Llama, "bert": tm.Bert}[name]().eval()
        x = torch.randint(0, tm.V, (tm.B, tm.T), generator=torch.Generator().manual_seed(1))
    onnx_path = os.path.join(work, name + ".onnx")
    torch.onnx.export(model, x, onnx_path, opset_version=17, input_names=["input"],
                      output_names=["output"])
    with torch.no_grad():
        want = model(x).numpy().astype(np.float64)

    tag = name + ("-" + residual.replace(":", "-").replace("=", "-").replace(",", "-") if residual else "")
    artifact = os.path.join(work, tag + ".rwx")
    cmd = ["rewire-compile", onnx_path, "-o", artifact]
    if residual:
        cmd.append("--residual=" + residual)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL rewire-compile: " + r.stderr[-1500:])
    (got,) = rewire_runtime.Model(artifact).run("forward", x.numpy())

    # The command-line path gives the same bits.
    np.save(os.path.join(work, tag + "-x.npy"), x.numpy())
    y = os.path.join(work, tag + "-y.npy")
    r = subprocess.run(["rewire-run", artifact, "--input=@" + os.path.join(work, tag + "-x.npy"),
                        "--output=@" + y, "--print-max-elements=0"], capture_output=True, text=True)
    if r.returncode != 0 or not np.array_equal(np.load(y), got):
        raise SystemExit("FAIL rewire-run differs from the C API: " + r.stderr[-800:])

    err = np.abs(got.astype(np.float64) - want)
    ok = np.all(err <= 1e-4 * np.maximum(1.0, np.abs(want)))
    print("%s %s%s: logits %s, max abs error vs PyTorch %.2e" % (
        "ok  " if ok else "FAIL", name, " (--residual=" + residual + ")" if residual else "",
        list(want.shape), err.max()))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
