"""Exports the training-step benchmark's GPT (pre-LN GPT-2 blocks, tied
embedding, test/Import/Inputs/torch_models.py) to ONNX, at the size given:

    train_model.py OUT.onnx LAYERS,D,HEADS,T,B,V

prepare.sh compiles it (--train=adamw:loss=cross_entropy --target=cuda);
train_bench.py builds the same model in PyTorch on the device.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test",
                                "Import", "Inputs"))
import torch_models as tm  # noqa: E402


def model(spec, device="cpu"):
    layers, tm.D, tm.H, tm.T, tm.B, tm.V = (int(x) for x in spec.split(","))
    torch.manual_seed(0)
    return tm.GPT(layers=layers).to(device)


if __name__ == "__main__":
    m = model(sys.argv[2]).eval()
    ids = torch.randint(0, tm.V, (tm.B, tm.T))
    torch.onnx.export(m, (ids,), sys.argv[1], input_names=["ids"], output_names=["logits"],
                      opset_version=17)
