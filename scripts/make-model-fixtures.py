#!/usr/bin/env python3
"""Exports the real-model fixture corpus (test/Models/fixtures) from the
libraries users build models with: Hugging Face `transformers`, `timm` and
`torchvision`, random weights, tiny configs, each with both of PyTorch 2.x's
ONNX exporters (`dynamo=True` and the TorchScript one, `dynamo=False`) at
their default opsets, and TorchScript exports at opsets 11 and 12 for a few.

Needs PyTorch 2.x from PyPI, not Debian's 1.13 (scripts/fixture-venv.sh makes
the venv):

    build/torch-venv/bin/python scripts/make-model-fixtures.py [--only NAME,...]

Per family F and export E it writes test/Models/fixtures/F/E.onnx, the inputs
F/E.in<i>.npy and PyTorch's outputs F/E.out<i>.npy, and it rewrites
test/Models/fixtures/manifest.json: every family, its library and config, the
residual updates a correct detector finds (`residuals`, counted from the
architecture by hand: one per `x + f(x)`, projection shortcuts included), and
for every export either its opset or the exporter's error (an exporter limit,
recorded, not hidden).
"""
import argparse
import json
import os
import re
import sys
import traceback
import warnings

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "test", "Models", "fixtures")

B, T, V = 2, 8, 128   # batch, sequence, vocabulary of the text models
IMG = 32              # image side of the vision models

# Small but real: 2 layers, hidden 32, 4 heads (2 key/value heads where the
# architecture has grouped-query attention), MLP 64.
TEXT = dict(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=64, max_position_embeddings=64)


def seeded(fn):
    def make():
        torch.manual_seed(0)
        return fn()
    return make


class Outputs(nn.Module):
    """Calls a Hugging Face model with keyword inputs and returns its first
    output (logits or last hidden state) as one tensor."""

    def __init__(self, model, names, kwargs=None):
        super().__init__()
        self.model, self.names, self.kwargs = model, names, kwargs or {}

    def forward(self, *args):
        out = self.model(**dict(zip(self.names, args)), return_dict=False, **self.kwargs)
        return out[0]


def hf(config_cls, model_cls, names=("input_ids",), **cfg):
    def build():
        import transformers
        config = getattr(transformers, config_cls)(**cfg)
        model = getattr(transformers, model_cls)(config)
        kwargs = {"use_cache": False} if "use_cache" in model.forward.__code__.co_varnames else {}
        return Outputs(model, list(names), kwargs)
    return build


def tokens(*extra):
    def make():
        g = torch.Generator().manual_seed(1)
        ids = torch.randint(0, V, (B, T), generator=g)
        out = [ids]
        for e in extra:
            if e == "mask":
                m = torch.ones(B, T, dtype=torch.int64)
                m[1, -3:] = 0  # padding in the second sequence
                out.append(m)
            elif e == "types":
                out.append(torch.randint(0, 2, (B, T), generator=g))
        return tuple(out)
    return make


def images(batch=2, side=IMG, chans=3):
    def make():
        g = torch.Generator().manual_seed(1)
        return (torch.randn(batch, chans, side, side, generator=g),)
    return make


def timm_class(module, cls, **kw):
    def build():
        import importlib
        m = importlib.import_module("timm.models." + module)
        return getattr(m, cls)(**kw)
    return build


def tv(name, **kw):
    def build():
        import torchvision.models as tvm
        return getattr(tvm, name)(weights=None, **kw)
    return build


def regnet():
    from timm.models.regnet import RegNet, RegNetCfg
    return RegNet(RegNetCfg(depth=4, w0=8, wa=8.0, wm=1.3, group_size=8, stem_width=16,
                            se_ratio=0.25), num_classes=10)


def efficientnet():
    # EfficientNet-B0's block plan at a quarter of its width and depth
    # (timm's own generator; create_model fixes both multipliers for b0).
    from timm.models.efficientnet import _gen_efficientnet
    return _gen_efficientnet("efficientnet_b0", channel_multiplier=0.25, depth_multiplier=0.25,
                             num_classes=10)


def densenet():
    import torchvision.models as tvm
    return tvm.DenseNet(growth_rate=8, block_config=(2, 2), num_init_features=16,
                        bn_size=2, num_classes=10)


def whisper_encoder():
    import transformers
    cfg = transformers.WhisperConfig(vocab_size=V, d_model=32, encoder_layers=2, decoder_layers=1,
                                     encoder_attention_heads=4, decoder_attention_heads=4,
                                     encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=16,
                                     max_source_positions=16, max_target_positions=16,
                                     pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                     decoder_start_token_id=1)
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    return Outputs(WhisperEncoder(cfg), ["input_features"])


def mel():
    g = torch.Generator().manual_seed(1)
    return (torch.randn(B, 16, 32, generator=g),)


def t5_encoder():
    import transformers
    cfg = transformers.T5Config(vocab_size=V, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                num_heads=4, relative_attention_num_buckets=8)
    return Outputs(transformers.T5EncoderModel(cfg), ["input_ids"])


def skips(model):
    """The inverted-residual blocks that add their input back (timm's
    `has_skip`, torchvision's `use_res_connect`): stride 1 and equal widths."""
    return sum(1 for m in model.modules()
               if getattr(m, "has_skip", False) or getattr(m, "use_res_connect", False))


# name: (library, kind, builder, inputs, residual updates, TorchScript opsets
# beyond the default). Decoder LMs take token ids; encoders also take an
# attention mask with padding.
FAMILIES = {
    # --- decoder language models (transformers) ---
    "gpt2": ("transformers", "decoder", hf("GPT2Config", "GPT2LMHeadModel", vocab_size=V, n_embd=32,
             n_layer=2, n_head=4, n_positions=64), tokens(), 4, [11, 12]),
    "gptj": ("transformers", "decoder", hf("GPTJConfig", "GPTJForCausalLM", vocab_size=V, n_embd=32,
             n_layer=2, n_head=4, n_positions=64, rotary_dim=4), tokens(), 2, []),
    "gpt_neox": ("transformers", "decoder", hf("GPTNeoXConfig", "GPTNeoXForCausalLM", **TEXT),
                 tokens(), 2, []),
    "opt": ("transformers", "decoder", hf("OPTConfig", "OPTForCausalLM", vocab_size=V, hidden_size=32,
            num_hidden_layers=2, num_attention_heads=4, ffn_dim=64, max_position_embeddings=64,
            word_embed_proj_dim=32), tokens(), 4, []),
    "llama": ("transformers", "decoder", hf("LlamaConfig", "LlamaForCausalLM", num_key_value_heads=2,
              **TEXT), tokens(), 4, [11, 12]),
    "mistral": ("transformers", "decoder", hf("MistralConfig", "MistralForCausalLM",
                num_key_value_heads=2, sliding_window=4, **TEXT), tokens(), 4, []),
    "qwen2": ("transformers", "decoder", hf("Qwen2Config", "Qwen2ForCausalLM", num_key_value_heads=2,
              **TEXT), tokens(), 4, []),
    "qwen3": ("transformers", "decoder", hf("Qwen3Config", "Qwen3ForCausalLM", num_key_value_heads=2,
              head_dim=8, **TEXT), tokens(), 4, []),
    "phi": ("transformers", "decoder", hf("PhiConfig", "PhiForCausalLM", **TEXT), tokens(), 2, []),
    "gemma": ("transformers", "decoder", hf("GemmaConfig", "GemmaForCausalLM", num_key_value_heads=2,
              head_dim=8, **TEXT), tokens(), 4, []),
    "gemma2": ("transformers", "decoder", hf("Gemma2Config", "Gemma2ForCausalLM", num_key_value_heads=2,
               head_dim=8, sliding_window=4, **TEXT), tokens(), 4, []),
    "falcon": ("transformers", "decoder", hf("FalconConfig", "FalconForCausalLM", vocab_size=V,
               hidden_size=32, num_hidden_layers=2, num_attention_heads=4, new_decoder_architecture=False,
               parallel_attn=True, bias=True), tokens(), 2, []),
    # --- encoders (transformers) ---
    "bert": ("transformers", "encoder", hf("BertConfig", "BertModel",
             ("input_ids", "attention_mask", "token_type_ids"), **TEXT), tokens("mask", "types"), 4,
             [11, 12]),
    "bert_mlm": ("transformers", "encoder", hf("BertConfig", "BertForMaskedLM", **TEXT), tokens(), 4,
                 []),
    "roberta": ("transformers", "encoder", hf("RobertaConfig", "RobertaModel",
                ("input_ids", "attention_mask"), **dict(TEXT, max_position_embeddings=66)),
                tokens("mask"), 4, []),
    "distilbert": ("transformers", "encoder", hf("DistilBertConfig", "DistilBertModel",
                   ("input_ids", "attention_mask"), vocab_size=V, dim=32, n_layers=2, n_heads=4,
                   hidden_dim=64, max_position_embeddings=64), tokens("mask"), 4, []),
    "albert": ("transformers", "encoder", hf("AlbertConfig", "AlbertModel",
               ("input_ids", "attention_mask"), embedding_size=16, **TEXT), tokens("mask"), 4, []),
    "electra": ("transformers", "encoder", hf("ElectraConfig", "ElectraModel",
                ("input_ids", "attention_mask"), embedding_size=16, **TEXT), tokens("mask"), 4, []),
    "t5_encoder": ("transformers", "encoder", t5_encoder, tokens(), 4, []),
    "whisper_encoder": ("transformers", "encoder", whisper_encoder, mel, 4, []),
    "clip_text": ("transformers", "encoder", hf("CLIPTextConfig", "CLIPTextModel", vocab_size=V,
                  hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                  max_position_embeddings=16), tokens(), 4, []),
    "clip_vision": ("transformers", "vision", hf("CLIPVisionConfig", "CLIPVisionModel",
                    ("pixel_values",), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=64, image_size=IMG, patch_size=8), images(), 4, []),
    # --- vision ---
    "vit": ("timm", "vision", timm_class("vision_transformer", "VisionTransformer", img_size=IMG,
            patch_size=8, embed_dim=32, depth=2, num_heads=4, mlp_ratio=2.0, num_classes=10),
            images(), 4, [11, 12]),
    "deit": ("transformers", "vision", hf("DeiTConfig", "DeiTModel", ("pixel_values",), hidden_size=32,
             num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, image_size=IMG,
             patch_size=8), images(), 4, []),
    "swin": ("transformers", "vision", hf("SwinConfig", "SwinModel", ("pixel_values",), image_size=IMG,
             patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4),
             images(), 4, []),
    "convnext": ("timm", "vision", timm_class("convnext", "ConvNeXt", depths=(1, 1, 1, 1),
                 dims=(16, 32, 48, 64), num_classes=10), images(), 4, [12]),
    "resnet": ("timm", "vision", timm_class("resnet", "ResNet", block=__import__("timm").models.resnet
               .BasicBlock, layers=(1, 1, 1, 1), channels=(16, 32, 48, 64), stem_width=16,
               num_classes=10), images(), 4, [11, 12]),
    "regnet": ("timm", "vision", regnet, images(), 4, []),
    "efficientnet": ("timm", "vision", efficientnet, images(), skips, []),
    "mobilenetv3": ("torchvision", "vision", tv("mobilenet_v3_small", width_mult=0.25,
                    num_classes=10), images(), skips, [11, 12]),
    "densenet": ("torchvision", "vision", densenet, images(), 0, [11]),
    "mlp_mixer": ("timm", "vision", timm_class("mlp_mixer", "MlpMixer", img_size=IMG, patch_size=8,
                  num_blocks=2, embed_dim=32, num_classes=10), images(), 4, [11, 12]),
}


# Training parity fixtures: the family's model trained by PyTorch with SGD on
# fixed batches (cross-entropy; -100 targets ignored), exported with the
# TorchScript exporter before the first step (ResNet in train mode, so its
# batch norms use batch statistics as PyTorch's do). F/train.onnx,
# F/train.inputs.npy, F/train.targets.npy and F/train.json (PyTorch's loss
# per step).
TRAIN_STEPS, TRAIN_LR = 4, 0.05


def lm_targets(ids, masked=False):
    """Next-token targets (the last position ignored), or masked-LM targets:
    every third position kept, the rest -100."""
    t = torch.full_like(ids, -100)
    if masked:
        t[:, ::3] = ids[:, ::3]
    else:
        t[:, :-1] = ids[:, 1:]
    return t


def train_data(name, kind):
    g = torch.Generator().manual_seed(2)
    n = B * TRAIN_STEPS
    if kind == "vision":
        x = torch.randn(n, 3, IMG, IMG, generator=g)
        return x, torch.randint(0, 10, (n,), generator=g)
    ids = torch.randint(0, V, (n, T), generator=g)
    return ids, lm_targets(ids, masked=(name == "bert_mlm"))


TRAIN = {"gpt2": {}, "llama": {}, "bert_mlm": {}, "resnet": {"train_mode": True}, "convnext": {}}


def make_train(name):
    import torch.nn.functional as F
    library, kind, build, inputs, residuals, ts_opsets = FAMILIES[name]
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    model = seeded(build)()
    train_mode = TRAIN[name].get("train_mode", False)
    model.train(train_mode)
    if isinstance(model, Outputs):
        # The TorchScript exporter cannot write grouped-query SDPA (LLaMA);
        # eager attention is the same function.
        model.model.set_attn_implementation("eager")
    x, y = train_data(name, kind)
    path = os.path.join(folder, "train.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x[:B],), path, dynamo=False, opset_version=17,
                          input_names=["in0"], output_names=["out0"], do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING if train_mode
                          else torch.onnx.TrainingMode.EVAL)
    np.save(os.path.join(folder, "train.inputs.npy"), x.numpy())
    np.save(os.path.join(folder, "train.targets.npy"), y.numpy())
    opt = torch.optim.SGD(model.parameters(), lr=TRAIN_LR)
    losses = []
    import onnx
    from onnx import numpy_helper
    from safetensors.numpy import save_file
    graph = onnx.load(path).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    # The exporter stores equal initial values once and names the others
    # with Identity nodes; Rewire trains those apart (as PyTorch does), so
    # they are parameters of the state too.
    # Tensor-valued Constant nodes may become parameters too (large ones).
    for node in graph.node:
        if node.op_type == "Identity" and node.input[0] in inits and node.output[0] not in inits:
            inits[node.output[0]] = inits[node.input[0]]
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            inits[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    live = dict(model.named_parameters(remove_duplicate=False))
    live.update(dict(model.named_buffers(remove_duplicate=False)))
    for stale in [f for f in os.listdir(folder) if f.startswith("train.state")]:
        os.remove(os.path.join(folder, stale))
    for step in range(TRAIN_STEPS):
        if step > 0:
            # PyTorch's state before this step, every initializer of the
            # export (trained ones from the model, constants as exported),
            # so that each step can be compared from the same state.
            state = {n: (live[n].detach().numpy().copy() if n in live else v)
                     for n, v in inits.items()}
            save_file(state, os.path.join(folder, "train.state%d.safetensors" % step))
        xb, yb = x[step * B:(step + 1) * B], y[step * B:(step + 1) * B]
        out = model(xb)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), yb.reshape(-1), ignore_index=-100)
        losses.append(loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
    with open(os.path.join(folder, "train.json"), "w") as f:
        json.dump({"optimizer": "sgd", "lr": TRAIN_LR, "batch": B, "steps": TRAIN_STEPS,
                   "loss": "cross_entropy", "ignore_index": -100, "train_mode": train_mode,
                   "pytorch_losses": losses}, f, indent=1)
        f.write("\n")
    print("  train          %s" % ", ".join("%.5f" % l for l in losses))
    return {"steps": TRAIN_STEPS, "lr": TRAIN_LR}


# Families also exported with dynamic axes (TorchScript exporter): batch,
# and sequence for text; Rewire binds them from the shapes it is called with.
DYNAMIC = {"gpt2", "bert", "vit", "resnet"}


def other_shape_inputs(args):
    """The inputs at batch 3 (and sequence 5 for token inputs)."""
    g = torch.Generator().manual_seed(3)
    out = []
    for a in args:
        if a.dtype == torch.int64:
            hi = max(int(a.max()) + 1, 2)
            out.append(torch.randint(0, hi, (3, 5), generator=g))
        else:
            out.append(torch.randn((3,) + tuple(a.shape[1:]), generator=g))
    return tuple(out)


def export(model, args, path, exporter, opset, dynamic=False):
    kw = dict(input_names=["in%d" % i for i in range(len(args))], output_names=["out0"])
    if dynamic:
        axes = {n: ({0: "batch", 1: "sequence"} if a.dim() == 2 else {0: "batch"})
                for n, a in zip(kw["input_names"], args)}
        axes["out0"] = {0: "batch"}
        kw["dynamic_axes"] = axes
    if exporter == "dynamo":
        torch.onnx.export(model, args, path, dynamo=True, external_data=False, **kw)
    else:
        torch.onnx.export(model, args, path, dynamo=False, opset_version=opset, **kw)


def opset_of(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    return max((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), default=None)


def make(name, entry, old):
    library, kind, build, inputs, residuals, ts_opsets = entry
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    model = seeded(build)().eval()
    args = inputs()
    with torch.no_grad():
        ref = model(*args)
    exports = {}
    plan = [("dynamo", "dynamo", None), ("torchscript", "torchscript", 17)]
    plan += [("torchscript%d" % o, "torchscript", o) for o in ts_opsets]
    if name in DYNAMIC:
        plan.append(("torchscript_dynamic", "torchscript", 17))
    for tag, exporter, opset in plan:
        path = os.path.join(folder, tag + ".onnx")
        if opset and opset < 14 and isinstance(model, Outputs):
            # scaled_dot_product_attention needs opset 14: what the exporter's
            # message tells a user to do is to switch to eager attention.
            model.model.set_attn_implementation("eager")
            with torch.no_grad():
                ref = model(*args)
        for stale in [f for f in os.listdir(folder) if f.startswith(tag + ".")]:
            os.remove(os.path.join(folder, stale))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                export(model, args, path, exporter, opset, dynamic=tag.endswith("_dynamic"))
        except Exception as e:  # an exporter limit: record it
            text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
            lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
            msg = lines[0][:200] if lines else type(e).__name__
            last = [l for l in lines[1:] if "Error" in l or "error" in l]
            if last:
                msg += " ... " + last[-1][:200]
            exports[tag] = {"exporter": exporter, "error": "%s: %s" % (type(e).__name__, msg)}
            if os.path.exists(path):
                os.remove(path)
            print("  %-14s export failed: %s" % (tag, exports[tag]["error"]))
            continue
        for i, a in enumerate(args):
            np.save(os.path.join(folder, "%s.in%d.npy" % (tag, i)), a.numpy())
        np.save(os.path.join(folder, tag + ".out0.npy"), ref.numpy())
        size = os.path.getsize(path)
        exports[tag] = {"exporter": exporter, "opset": opset_of(path), "bytes": size}
        if tag.endswith("_dynamic"):
            # A second call at another batch (and sequence) size, with
            # PyTorch's output for it: the variant Rewire compiles for it.
            other = other_shape_inputs(args)
            with torch.no_grad():
                ref2 = model(*other)
            for i, a in enumerate(other):
                np.save(os.path.join(folder, "%s.in%d.alt.npy" % (tag, i)), a.numpy())
            np.save(os.path.join(folder, tag + ".out0.alt.npy"), ref2.numpy())
            exports[tag]["dynamic_axes"] = True
            exports[tag]["alt_inputs"] = [list(a.shape) for a in other]
        print("  %-14s opset %s, %d KB" % (tag, exports[tag]["opset"], size // 1024))
    if callable(residuals):
        residuals = residuals(model)
    return {"library": library, "kind": kind, "residuals": residuals,
            "inputs": [list(a.shape) for a in args], "output": list(ref.shape),
            "exports": exports, **({"note": old["note"]} if old and "note" in old else {})}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated families (default: all)")
    a = ap.parse_args()
    if int(torch.__version__.split(".")[0]) < 2:
        sys.exit("needs PyTorch 2.x from PyPI (got %s); see scripts/fixture-venv.sh" % torch.__version__)
    manifest_path = os.path.join(OUT, "manifest.json")
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)["families"]
    names = a.only.split(",") if a.only else list(FAMILIES)
    for n in names:
        if n not in FAMILIES:
            sys.exit("unknown family '%s'; known: %s" % (n, ", ".join(FAMILIES)))
    for n in names:
        print(n)
        try:
            manifest[n] = make(n, FAMILIES[n], manifest.get(n))
            if n in TRAIN:
                manifest[n]["train"] = make_train(n)
        except Exception:
            traceback.print_exc()
            sys.exit("building or running %s failed" % n)
    import onnx, transformers, timm, torchvision  # noqa: E401
    versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                "timm": timm.__version__, "torchvision": torchvision.__version__,
                "onnx": onnx.__version__}
    with open(manifest_path + ".tmp", "w") as f:
        json.dump({"generated_by": "scripts/make-model-fixtures.py", "versions": versions,
                   "families": {k: manifest[k] for k in FAMILIES if k in manifest}},
                  f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(manifest_path + ".tmp", manifest_path)


if __name__ == "__main__":
    main()
