"""The fused residual kernels at benchmark size, as one MLIR module.

Rows 32768 x 4096 features (512 MiB per f32 tensor): every function moves
at least 1 GB (inputs read + output written). Printed to stdout. The same
equations are written for PyTorch in torch_bench.py. $BENCH_ROWS overrides
the rows (prepare.sh's emulator dry run uses a few).
"""
import os

ROWS, D = int(os.environ.get("BENCH_ROWS", "32768")), 4096
T = f"tensor<{ROWS}x{D}xf32>"
V = f"tensor<{D}xf32>"
R1 = f"tensor<{ROWS}x1xf32>"

FUNCS = {
    "add": ([("h", T), ("u", T)], f"residual.add %h, %u stream 0 layer 0 : {T}"),
    "scale_add": ([("h", T), ("u", T), ("a", V)],
                  f"residual.scale_add %h, %u, %a stream 0 layer 0 : {T}, {V}"),
    "mix3": ([("y", T), ("h0", T), ("h1", T), ("c", "tensor<2xf32>")],
             f"residual.mix softmax %y, [%h0, %h1], %c tau 0.5 stream 0 layer 2 : {T}, tensor<2xf32>"),
    "nag_add": ([("R", T), ("f", T), ("a", "tensor<f32>"), ("m", R1)],
                f"residual.nag_add %R, %f, %a, %m stream 0 layer 0 : {T}, tensor<f32>, {R1}"),
    "layer_norm": ([("x", T), ("g", V), ("b", V)], f"nn.layer_norm %x, %g, %b : {T}, {V}, {V}"),
    "rms_norm": ([("x", T), ("g", V)], f"nn.rms_norm %x, %g {{epsilon = 1.0e-06 : f32}} : {T}, {V}"),
    "softmax": ([("x", T)], f"nn.softmax %x : {T}"),
}

if __name__ == "__main__":
    print("module {")
    for name, (args, body) in FUNCS.items():
        sig = ", ".join(f"%{n}: {t}" for n, t in args)
        print(f"  func.func @{name}({sig}) -> {T} {{")
        print(f"    %0 = {body}")
        print(f"    return %0 : {T}")
        print("  }")
    print("}")
