"""Forward latency of real Hugging Face decoders at GPT-2-small's size, as the
two PyTorch exporters write them: Rewire against ONNX Runtime, PyTorch eager,
torch.compile and IREE, in one run, same threads, round-robin.

    build/bench-venv/bin/python bench/hf_models.py [--models gpt2,llama]
        [--exporters torchscript,dynamo] [--layers 12] [--seq 512] [--rounds 8]
        [--no-iree] [--no-torch-compile] [--out results.json]

The models are `transformers`' own classes (GPT2LMHeadModel, LlamaForCausalLM)
with random weights (seeded; nothing is downloaded): GPT-2 small's
configuration (12 layers, d 768, 12 heads, vocabulary 50257) and a LLaMA of the
same depth and width (12 layers, d 768, 12 heads, 4 key-value heads, SwiGLU
2048, RoPE, RMSNorm, vocabulary 32000). Input: one sequence of `--seq` random
token ids; output: the logits. Each ONNX file is compiled by `rewire-compile
-O3` and checked against PyTorch before it is timed.

Needs PyTorch 2.x, transformers, ONNX Runtime (and IREE, optional) from PyPI:
`bench/venv.sh` makes that venv (build/bench-venv). Not part of the test
command. Rewire is timed in this process (the artifact's call with its
output buffer kept, as the peers' are) and by `rewire-run --benchmark` in a
process of its own; the ratios are the median over rounds of Rewire's time
over the peer's in the same round, with a 95% bootstrap interval.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
import rewire_runtime  # noqa: E402
from rewire_sysinfo import cpu_model  # noqa: E402
from gpt2_stack import iree_runner  # noqa: E402
from timing import paired, paired_interval, round_robin  # noqa: E402


class Logits(torch.nn.Module):
    """A Hugging Face causal LM called on token ids and an attention mask (the
    two inputs of Optimum's and most deployed exports), returning its logits
    as one tensor (no cache), which is what both exporters trace."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, mask):
        return self.model(input_ids=ids, attention_mask=mask, use_cache=False, return_dict=False)[0]


def build(name, layers, d, heads):
    import transformers
    torch.manual_seed(0)
    if name == "gpt2":
        cfg = transformers.GPT2Config(n_layer=layers, n_embd=d, n_head=heads, vocab_size=50257,
                                      n_positions=1024)
        model = transformers.GPT2LMHeadModel(cfg)
        # GEMM FLOPs a token: c_attn, c_proj, c_fc, mlp c_proj, and the tied head
        gemm = layers * 2 * (3 * d * d + d * d + 8 * d * d) + 2 * d * cfg.vocab_size
    elif name == "llama":
        kv = max(1, heads // 3)
        cfg = transformers.LlamaConfig(num_hidden_layers=layers, hidden_size=d, num_attention_heads=heads,
                                       num_key_value_heads=kv, intermediate_size=8 * d // 3,
                                       vocab_size=32000, max_position_embeddings=2048)
        model = transformers.LlamaForCausalLM(cfg)
        kvd = kv * (d // heads)
        gemm = layers * 2 * (2 * d * d + 2 * d * kvd + 3 * d * cfg.intermediate_size) + 2 * d * cfg.vocab_size
    else:
        raise SystemExit("unknown model %r (gpt2, llama)" % name)
    return Logits(model).eval(), cfg.vocab_size, gemm


def export(model, args, path, exporter):
    kw = dict(input_names=["input_ids", "attention_mask"], output_names=["logits"])
    with torch.no_grad():
        if exporter == "dynamo":
            torch.onnx.export(model, args, path, dynamo=True, external_data=False, **kw)
        else:
            torch.onnx.export(model, args, path, dynamo=False, opset_version=17, **kw)


def rewire_own_process(rwx, paths, rounds):
    """The artifact timed by `rewire-run --benchmark` in a process of its own
    (one OpenMP pool; no torch)."""
    out = subprocess.run([os.path.join(ROOT, "build", "bin", "rewire-run"), rwx] +
                         ["--input=@" + p for p in paths] +
                         ["--benchmark=%d" % rounds, "--print-max-elements=0"],
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"median ([0-9.]+) ms, min ([0-9.]+) ms", out)
    return (float(m.group(1)), float(m.group(2))) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="gpt2,llama")
    ap.add_argument("--exporters", default="torchscript,dynamo")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--no-iree", action="store_true")
    ap.add_argument("--work")
    ap.add_argument("--out")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    import onnxruntime as ort
    results = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": cpu_model(), "threads": a.threads,
               "torch": torch.__version__, "onnxruntime": ort.__version__, "seq": a.seq,
               "layers": a.layers, "d": a.d, "rounds": a.rounds, "models": {}}
    work = a.work or tempfile.mkdtemp(prefix="rewire-hf-")
    os.makedirs(work, exist_ok=True)
    for name in a.models.split(","):
        model, vocab, gemm_flops = build(name, a.layers, a.d, a.heads)
        ids = torch.randint(0, vocab, (1, a.seq), generator=torch.Generator().manual_seed(1))
        mask = torch.ones_like(ids)
        args = (ids, mask)
        xs = [ids.numpy(), mask.numpy()]
        with torch.no_grad():
            want = model(*args).numpy()
        scale = float(np.abs(want).max())
        # GEMMs plus the causal attention's two products (full T x T counted)
        flops = a.seq * gemm_flops + a.layers * 4 * a.seq * a.seq * a.d
        fns, info = {}, {"gflop": flops / 1e9, "exports": {}}

        def torch_run():
            with torch.no_grad():
                model(*args)
        fns["torch"] = torch_run
        if not a.no_torch_compile:
            t0 = time.perf_counter()
            compiled = torch.compile(model)
            with torch.no_grad():
                got = compiled(*args).numpy()
            info["torch_compile_s"] = time.perf_counter() - t0
            print("%s torch.compile: %.1f s, max|err| %.1e" % (name, info["torch_compile_s"],
                                                              np.abs(got - want).max()))

            def compiled_run():
                with torch.no_grad():
                    compiled(*args)
            fns["torch_compile"] = compiled_run
        paths = [os.path.join(work, "%s.%s.npy" % (name, k)) for k in ("input_ids", "attention_mask")]
        for p, x in zip(paths, xs):
            np.save(p, x)
        for exporter in a.exporters.split(","):
            onnx_path = os.path.join(work, "%s.%s.onnx" % (name, exporter))
            t0 = time.perf_counter()
            export(model, args, onnx_path, exporter)
            e = info["exports"][exporter] = {"export_s": time.perf_counter() - t0}
            so = ort.SessionOptions()
            so.intra_op_num_threads = a.threads
            t0 = time.perf_counter()
            sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
            feed = {i.name: x for i, x in zip(sess.get_inputs(), xs)}
            got = sess.run(None, feed)[0]
            e["ort_load_s"] = time.perf_counter() - t0
            e["ort_max_abs_err"] = float(np.abs(got - want).max())
            fns["ort/" + exporter] = (lambda s=sess, f=feed: s.run(None, f))
            rwx = os.path.join(work, "%s.%s.rwx" % (name, exporter))
            t0 = time.perf_counter()
            subprocess.run([os.path.join(ROOT, "build", "bin", "rewire-compile"), onnx_path, "-o", rwx, "-O3"],
                           check=True)
            e["rewire_compile_s"] = time.perf_counter() - t0
            m = rewire_runtime.Model(rwx)
            out = [np.empty_like(want)]
            m.run("forward", *xs, outputs=out)
            e["rewire_max_abs_err"] = float(np.abs(out[0] - want).max())
            print("%s/%s: export %.1f s, Rewire compile %.1f s, max|err| vs torch: Rewire %.1e, ORT %.1e"
                  " (logits up to %.1f)" % (name, exporter, e["export_s"], e["rewire_compile_s"],
                                            e["rewire_max_abs_err"], e["ort_max_abs_err"], scale))
            if e["rewire_max_abs_err"] > 1e-3 * max(1.0, scale):
                raise SystemExit("%s/%s: Rewire's logits differ from PyTorch's by %.2e" % (
                    name, exporter, e["rewire_max_abs_err"]))
            fns["rewire/" + exporter] = (lambda m=m, out=out: m.run("forward", *xs, outputs=out))
            if not a.no_iree:
                sub = os.path.join(work, "%s.%s.iree" % (name, exporter))
                os.makedirs(sub, exist_ok=True)
                t0 = time.perf_counter()
                r = iree_runner(onnx_path, sub, xs, want, a.threads)
                if r:
                    e["iree_compile_s"] = time.perf_counter() - t0
                    fns["iree/" + exporter] = r[0]
            e["rewire_own_process_ms"] = rewire_own_process(rwx, paths, a.rounds)
        raw = {}
        t = round_robin(fns, a.rounds, raw)
        info["ms"] = t
        info["rounds_ms"] = raw
        print("\n%s, %d layers, d %d, 1 x %d tokens, %.1f GFLOP, %d threads, %d rounds (%s)" % (
            name, a.layers, a.d, a.seq, flops / 1e9, a.threads, a.rounds, results["machine"]))
        print("%-28s %10s %10s %9s" % ("", "median ms", "min ms", "GFLOP/s"))
        for k, (med, low) in t.items():
            print("%-28s %10.1f %10.1f %9.1f" % (k, med, low, flops / med / 1e6))
        info["ratios"] = {}
        for exporter in a.exporters.split(","):
            rw = "rewire/" + exporter
            own = info["exports"][exporter]["rewire_own_process_ms"]
            if own:
                print("%-28s %10.1f %10.1f %9.1f" % ("rewire-run/" + exporter, own[0], own[1], flops / own[0] / 1e6))
            for peer in ("ort/" + exporter, "torch", "torch_compile", "iree/" + exporter):
                if peer in raw:
                    ratio = paired(raw, rw, peer)
                    lo, hi = paired_interval([x / y for x, y in zip(raw[rw], raw[peer])])
                    info["ratios"]["%s / %s" % (rw, peer)] = [ratio, lo, hi]
                    print("  %s / %s: %.3f (95%% %.3f-%.3f)" % (rw, peer, ratio, lo, hi))
        results["models"][name] = info
        del fns
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
