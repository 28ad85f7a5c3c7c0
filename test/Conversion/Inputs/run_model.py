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
import re
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Import", "Inputs"))
import torch_models as tm  # noqa: E402

LOWER = ("builtin.module(func.func(canonicalize,cse),one-shot-bufferize{bufferize-function-boundaries},"
         "buffer-deallocation-pipeline,convert-bufferization-to-memref,"
         "func.func(convert-linalg-to-loops,convert-scf-to-cf),expand-strided-metadata,lower-affine,"
         "finalize-memref-to-llvm,convert-math-to-llvm,convert-math-to-libm,convert-to-llvm,"
         "reconcile-unrealized-casts)")


def run(args, text=None):
    r = subprocess.run(args, input=text, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL %s: %s" % (os.path.basename(args[0]), r.stderr.strip()[-600:]))
    return r.stdout


def main():
    work, runner, libdir, name = sys.argv[1:5]
    rewrite = sys.argv[5] if len(sys.argv) > 5 else ""
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    model = {"gpt": tm.GPT, "llama": tm.Llama, "bert": tm.Bert}[name]().eval()
    ids = torch.randint(0, tm.V, (tm.B, tm.T), generator=torch.Generator().manual_seed(1))
    onnx_path = os.path.join(work, name + ".onnx")
    torch.onnx.export(model, ids, onnx_path, opset_version=17, input_names=["input"],
                      output_names=["output"])
    with torch.no_grad():
        want = model(ids).numpy().astype(np.float64)

    mlir_path = os.path.join(work, name + ".mlir")
    run(["rewire-import", onnx_path, "-o", mlir_path])
    params = os.path.join(work, name + ".safetensors")
    passes = [rewrite] if rewrite else []
    passes += ["nn-inline-parameters{file=%s}" % params,
               "func.func(convert-nn-to-linalg, convert-residual-to-linalg)"]
    tensor_ir = run(["rewire-opt", mlir_path, "--pass-pipeline=builtin.module(%s)" % ",".join(passes)])
    shape = list(want.shape)
    out_t = "tensor<%sxf32>" % "x".join(map(str, shape))
    mem = "memref<%sxf32>" % "x".join(map(str, shape))
    ids_lit = "dense<%s>" % np.array2string(ids.numpy(), separator=", ").replace("\n", "")
    main_fn = """
  func.func private @printMemrefF32(memref<*xf32>)
  func.func @main() {
    %%ids = arith.constant %s : tensor<%dx%dxi64>
    %%r = call @forward(%%ids) : (tensor<%dx%dxi64>) -> %s
    %%m = bufferization.to_buffer %%r : %s to %s
    %%u = memref.cast %%m : %s to memref<*xf32>
    call @printMemrefF32(%%u) : (memref<*xf32>) -> ()
    return
  }
}
""" % (ids_lit, tm.B, tm.T, tm.B, tm.T, out_t, out_t, mem, mem)
    tensor_ir = tensor_ir.rstrip()
    assert tensor_ir.endswith("}")
    tensor_ir = tensor_ir[:-1] + main_fn
    llvm_ir = run(["rewire-opt", "--pass-pipeline=" + LOWER], tensor_ir)
    libs = ",".join(os.path.join(libdir, l) for l in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))
    out = run([runner, "-e", "main", "-entry-point-result=void", "-shared-libs=" + libs], llvm_ir)
    data = out.split("data =", 1)[1]
    got = np.array([float(v) for v in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?|-?nan|-?inf", data)]).reshape(shape)
    err = np.abs(got - want)
    ok = np.all(err <= 1e-4 + 1e-4 * np.abs(want))
    print("%s %s%s: logits %s, max abs error vs PyTorch %.2e" % (
        "ok  " if ok else "FAIL", name, " (" + rewrite + ")" if rewrite else "", shape, err.max()))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
