"""Cases for executing convert-nn-to-linalg output (run_lowered.py --cases nn):
one nn op each, with a float64 NumPy reference. Inputs are random normal,
or uniform in [0.5, 2] for names ending in '+' (positive: sqrt, pow bases).
"""
import math

import numpy as np


def t(shape):
    return "tensor<%sxf32>" % "x".join(map(str, shape)) if shape else "tensor<f32>"


def case(name, op, inputs, out_shape, ref):
    """`op` is the op whose result is returned, or a list whose last entry
    it is, after lines that define what it uses (constants)."""
    *before, op = [op] if isinstance(op, str) else op
    args = ", ".join("%%%s: %s" % (n.rstrip("+"), t(s)) for n, s in inputs)
    mlir = ('func.func @forward(%s) -> (%s {nn.name = "out"}) {\n%s  %%r = %s\n  return %%r : %s\n}\n'
            % (args, t(out_shape), "".join("  %s\n" % line for line in before), op, t(out_shape)))
    return name, mlir, inputs, ref


erf = np.vectorize(math.erf)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def conv2d(x, w, group, stride, pad):
    """NCHW convolution with groups, square stride and padding, float64."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, f, oh, ow))
    fg = f // group
    for o in range(f):
        g = o // fg
        for i in range(oh):
            for j in range(ow):
                patch = x[:, g * cg:(g + 1) * cg, i * stride:i * stride + kh, j * stride:j * stride + kw]
                out[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3))
    return out


def attention(q, k, v, causal, scale):
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        tq, tk = s.shape[-2], s.shape[-1]
        mask = np.arange(tk)[None, :] > np.arange(tq)[:, None] + (tk - tq)
        s = np.where(mask, -np.inf, s)
    return softmax(s, -1) @ v


S = [2, 3, 4]
CASES = [
    case("add (broadcast)", "nn.add %x, %b : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>",
         [("x", S), ("b", [4])], S, lambda x, b: x + b),
    case("sub (scalar)", "nn.sub %x, %s : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>",
         [("x", S), ("s", [])], S, lambda x, s: x - s),
    case("mul (both broadcast)", "nn.mul %x, %y : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>",
         [("x", [2, 1, 4]), ("y", [3, 1])], S, lambda x, y: x * y),
    case("div", "nn.div %x, %y : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
         [("x", S), ("y+", S)], S, lambda x, y: x / y),
    case("pow", "nn.pow %x, %y : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>",
         [("x+", S), ("y", [4])], S, lambda x, y: x ** y),
    # constant exponents 2 and 3 are multiplies (any sign of x)
    case("pow 3 (constant)", ["%c = nn.constant dense<3.0> : tensor<f32>",
                              "nn.pow %x, %c : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>"],
         [("x", S)], S, lambda x: x ** 3),
    case("pow 2 (constant)", ["%c = nn.constant dense<2.0> : tensor<4xf32>",
                              "nn.pow %x, %c : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>"],
         [("x", S)], S, lambda x: x ** 2),
    case("pow 2.5 (constant)", ["%c = nn.constant dense<2.5> : tensor<f32>",
                                "nn.pow %x, %c : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>"],
         [("x+", S)], S, lambda x: x ** 2.5),
    case("relu", "nn.relu %x : tensor<2x3x4xf32>", [("x", S)], S, lambda x: np.maximum(x, 0)),
    case("sigmoid", "nn.sigmoid %x : tensor<2x3x4xf32>", [("x", S)], S, lambda x: 1 / (1 + np.exp(-x))),
    case("tanh", "nn.tanh %x : tensor<2x3x4xf32>", [("x", S)], S, np.tanh),
    case("erf", "nn.erf %x : tensor<2x3x4xf32>", [("x", S)], S, erf),
    case("exp", "nn.exp %x : tensor<2x3x4xf32>", [("x", S)], S, np.exp),
    case("sqrt", "nn.sqrt %x : tensor<2x3x4xf32>", [("x+", S)], S, np.sqrt),
    case("neg", "nn.neg %x : tensor<2x3x4xf32>", [("x", S)], S, np.negative),
    case("gelu", "nn.gelu %x : tensor<2x3x4xf32>", [("x", S)], S,
         lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2)))),
    case("gelu tanh", "nn.gelu %x approximate tanh : tensor<2x3x4xf32>", [("x", S)], S,
         lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    case("matmul 2-D", "nn.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>",
         [("a", [3, 4]), ("b", [4, 5])], [3, 5], lambda a, b: a @ b),
    case("matmul batched x 2-D", "nn.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>",
         [("a", S), ("b", [4, 5])], [2, 3, 5], lambda a, b: a @ b),
    case("matmul batch broadcast",
         "nn.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>",
         [("a", [2, 1, 3, 4]), ("b", [5, 4, 6])], [2, 5, 3, 6], lambda a, b: a @ b),
    case("softmax last", "nn.softmax %x : tensor<2x3x4xf32>", [("x", S)], S, lambda x: softmax(x, -1)),
    case("softmax axis 1", "nn.softmax %x {axis = 1 : i64} : tensor<2x3x4xf32>", [("x", S)], S,
         lambda x: softmax(x, 1)),
    case("layer_norm", "nn.layer_norm %x, %g, %b : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>",
         [("x", S), ("g", [4]), ("b", [4])], S,
         lambda x, g, b: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b),
    case("layer_norm axis 1 (no bias)", "nn.layer_norm %x, %g {axis = 1 : i64} : tensor<2x3x4xf32>, tensor<3x4xf32>",
         [("x", S), ("g", [3, 4])], S,
         lambda x, g: (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-5) * g),
    case("rms_norm", "nn.rms_norm %x, %g {epsilon = 1.0e-06 : f32} : tensor<2x3x4xf32>, tensor<4xf32>",
         [("x", S), ("g", [4])], S, lambda x, g: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g),
    case("reduce_mean", "nn.reduce_mean %x {axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>",
         [("x", S)], [2, 3, 1], lambda x: x.mean(-1, keepdims=True)),
    case("reduce_sum (no keepdims)",
         "nn.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>",
         [("x", S)], [3], lambda x: x.sum((0, 2))),
    case("transpose", "nn.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>",
         [("x", S)], [4, 2, 3], lambda x: x.transpose(2, 0, 1)),
    case("reshape", "nn.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>", [("x", S)], [6, 4],
         lambda x: x.reshape(6, 4)),
    case("slice", "nn.slice %x {starts = array<i64: 1, -3>, ends = array<i64: 3, 100>, axes = array<i64: 1, 2>} "
         ": (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>", [("x", S)], [2, 2, 3], lambda x: x[:, 1:3, -3:100]),
    case("slice (negative step)", "nn.slice %x {starts = array<i64: -1>, ends = array<i64: -1000>, "
         "axes = array<i64: -1>, steps = array<i64: -2>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>",
         [("x", S)], [2, 3, 2], lambda x: x[:, :, -1::-2]),
    case("concat", "nn.concat %x, %y {axis = -2 : i64} : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x4x4xf32>",
         [("x", S), ("y", [2, 1, 4])], [2, 4, 4], lambda x, y: np.concatenate([x, y], -2)),
    case("unsqueeze", "nn.unsqueeze %x {axes = array<i64: 0, -2>} : (tensor<2x3x4xf32>) -> tensor<1x2x3x1x4xf32>",
         [("x", S)], [1, 2, 3, 1, 4], lambda x: x[None, :, :, None, :]),
    case("squeeze", "nn.squeeze %x : (tensor<2x1x4xf32>) -> tensor<2x4xf32>",
         [("x", [2, 1, 4])], [2, 4], lambda x: x[:, 0, :]),
    case("conv grouped", "nn.conv %x, %w {group = 2 : i64, pads = array<i64: 1, 1, 1, 1>} "
         ": (tensor<1x4x5x5xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x5x5xf32>",
         [("x", [1, 4, 5, 5]), ("w", [6, 2, 3, 3])], [1, 6, 5, 5], lambda x, w: conv2d(x, w, 2, 1, 1)),
    case("conv depthwise, stride 2", "nn.conv %x, %w, %b {group = 4 : i64, strides = array<i64: 2, 2>, "
         "pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x5x5xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>",
         [("x", [1, 4, 5, 5]), ("w", [4, 1, 3, 3]), ("b", [4])], [1, 4, 3, 3],
         lambda x, w, b: conv2d(x, w, 4, 2, 1) + b[None, :, None, None]),
    case("attention causal (Tq < Tk)", "nn.attention %q, %k, %v {causal} : (tensor<1x2x3x4xf32>, "
         "tensor<1x2x5x4xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x3x3xf32>",
         [("q", [1, 2, 3, 4]), ("k", [1, 2, 5, 4]), ("v", [1, 2, 5, 3])], [1, 2, 3, 3],
         lambda q, k, v: attention(q, k, v, True, 0.5)),
    case("attention with scale", "nn.attention %q, %k, %v {scale = 0.25 : f32} : (tensor<2x1x3x4xf32>, "
         "tensor<2x1x3x4xf32>, tensor<2x1x3x4xf32>) -> tensor<2x1x3x4xf32>",
         [("q", [2, 1, 3, 4]), ("k", [2, 1, 3, 4]), ("v", [2, 1, 3, 4])], [2, 1, 3, 4],
         lambda q, k, v: attention(q, k, v, False, 0.25)),
]
