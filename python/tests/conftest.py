"""Fixtures of the rewire package's tests: the real-model fixtures of the
repository (test/Models/fixtures, Hugging Face exports) and the tiny GPT."""
import os

import tempfile

import numpy as np
import pytest

# One compile cache for the session (not the user's ~/.cache/rewire): tests
# that compile the same model share it.
os.environ.setdefault("REWIRE_CACHE_DIR", tempfile.mkdtemp(prefix="rewire-pytest-cache-"))

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "test", "Models", "fixtures")


@pytest.fixture
def gpt2_dynamo():
    """Hugging Face GPT-2 (2 layers), PyTorch's dynamo exporter: (path, input, output)."""
    d = os.path.join(FIXTURES, "gpt2")
    return (os.path.join(d, "dynamo.onnx"), np.load(os.path.join(d, "dynamo.in0.npy")),
            np.load(os.path.join(d, "dynamo.out0.npy")))


@pytest.fixture
def gpt2_dynamic():
    """Hugging Face GPT-2, TorchScript exporter, dynamic batch and sequence."""
    return os.path.join(FIXTURES, "gpt2", "torchscript_dynamic.onnx")


@pytest.fixture
def tiny_gpt():
    return os.path.join(ROOT, "examples", "tiny-gpt", "tiny-gpt.onnx")


@pytest.fixture(autouse=True, scope="session")
def installed_package_is_current():
    """The suite tests the installed package: it must be this checkout's (its
    Python files equal python/rewire's, its _core no older than the build's)."""
    import glob

    import rewire
    here = os.path.dirname(rewire.__file__)
    for src in glob.glob(os.path.join(ROOT, "python", "rewire", "*.py")):
        with open(src) as a, open(os.path.join(here, os.path.basename(src))) as b:
            if a.read() != b.read():
                pytest.fail("the installed rewire package (%s) is not this checkout's: "
                            "build/venv/bin/pip install --no-build-isolation ." % here)
    built = glob.glob(os.path.join(ROOT, "build", "python", "rewire", "_core*.so"))
    if built and os.path.getmtime(rewire._core.__file__) < os.path.getmtime(built[0]):
        pytest.fail("the installed rewire._core is older than the build's: "
                    "build/venv/bin/pip install --no-build-isolation .")
