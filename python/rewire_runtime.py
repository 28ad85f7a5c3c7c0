"""ctypes bindings of the Rewire runtime's C API (include/rewire/Runtime/rewire_runtime.h).

    import rewire_runtime as rr
    model = rr.Model("gpt.rwx")                 # parameters: the file the artifact names
    (logits,) = model.run("forward", ids)       # NumPy in, NumPy out; shapes/dtypes checked
    step = model.bind("forward", ids)           # the same call, descriptors built once
    ids[:] = next_ids; (logits,) = step()       # outputs filled in place

The shared library is found in $REWIRE_LIB_DIR or build/lib of this checkout.
"""
import ctypes
import os

import numpy as np

# bf16 has no NumPy type: its tensors are exchanged as raw uint16 bits.
_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.uint16,
           "i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8, "ui8": np.uint8,
           "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64,
           "i1": np.bool_}
# NumPy dtype -> the C API's dtype name (bf16 excepted: see describe).
_ENCODED = {np.dtype(v): k.encode() for k, v in _DTYPES.items() if k != "bf16"}
_ONE = (ctypes.c_int64 * 1)(1)


class RewireError(RuntimeError):
    pass


class _Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_char_p), ("rank", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p)]


def _library():
    here = os.path.dirname(os.path.abspath(__file__))
    folder = os.environ.get("REWIRE_LIB_DIR") or os.path.join(here, "..", "build", "lib")
    lib = ctypes.CDLL(os.path.join(folder, "librewire_runtime.so"))
    lib.rewire_last_error.restype = ctypes.c_char_p
    lib.rewire_model_load.restype = ctypes.c_void_p
    lib.rewire_model_load.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    lib.rewire_model_free.argtypes = [ctypes.c_void_p]
    for name in ("rewire_function_count",):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    lib.rewire_model_describe.restype = ctypes.c_char_p
    lib.rewire_model_describe.argtypes = [ctypes.c_void_p]
    lib.rewire_function_name.restype = ctypes.c_char_p
    lib.rewire_function_name.argtypes = [ctypes.c_void_p, ctypes.c_int32]
    lib.rewire_function_find.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    for name in ("rewire_function_num_inputs", "rewire_function_num_outputs"):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_int32]
    for name in ("rewire_function_input", "rewire_function_output"):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                                       ctypes.POINTER(_Tensor)]
    for name in ("rewire_function_input_name", "rewire_function_output_name"):
        getattr(lib, name).restype = ctypes.c_char_p
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32]
    for name in ("rewire_model_run", "rewire_model_check"):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                                       ctypes.POINTER(_Tensor), ctypes.c_int32,
                                       ctypes.POINTER(_Tensor)]
    return lib


_lib = None


def _get():
    global _lib
    if _lib is None:
        _lib = _library()
    return _lib


def last_error():
    return _get().rewire_last_error().decode()


class Model:
    def __init__(self, artifact, parameters=None):
        lib = _get()
        self._lib = lib
        self._handle = lib.rewire_model_load(artifact.encode(),
                                             parameters.encode() if parameters else None)
        if not self._handle:
            raise RewireError(last_error())
        self._functions = {}

    def __del__(self):
        if getattr(self, "_handle", None):
            self._lib.rewire_model_free(self._handle)
            self._handle = None

    def describe(self):
        """What runs the model, as `rewire-run --describe` ends: a `kernels:`
        line (GEMM library and ISA) and a `threads:` line (one OpenMP pool,
        or two beside a host that loaded oneDNN itself)."""
        return self._lib.rewire_model_describe(self._handle).decode(errors="replace")

    def functions(self):
        n = self._lib.rewire_function_count(self._handle)
        return [self._lib.rewire_function_name(self._handle, i).decode() for i in range(n)]

    def _index(self, name):
        i = self._lib.rewire_function_find(self._handle, name.encode())
        if i < 0:
            raise RewireError(last_error())
        return i

    def _specs(self, f, getter, count):
        out = []
        for i in range(count(self._handle, f)):
            t = _Tensor()
            if getter(self._handle, f, i, ctypes.byref(t)) != 0:
                raise RewireError(last_error())
            out.append((t.dtype.decode(), tuple(t.shape[k] for k in range(t.rank))))
        return out

    def signature(self, name="forward"):
        """([(dtype, shape)] of inputs, [(dtype, shape)] of outputs)."""
        f = self._index(name)
        return (self._specs(f, self._lib.rewire_function_input, self._lib.rewire_function_num_inputs),
                self._specs(f, self._lib.rewire_function_output, self._lib.rewire_function_num_outputs))

    def names(self, name="forward"):
        """([input names], [output names]) of function `name`."""
        f = self._index(name)
        lib = self._lib
        ins = [lib.rewire_function_input_name(self._handle, f, i).decode()
               for i in range(lib.rewire_function_num_inputs(self._handle, f))]
        outs = [lib.rewire_function_output_name(self._handle, f, i).decode()
                for i in range(lib.rewire_function_num_outputs(self._handle, f))]
        return ins, outs

    def _function(self, name):
        """(index, input specs, output specs) of `name`, looked up once: an
        artifact's functions and signatures do not change after loading, and
        asking the C API again cost ~6 us of a 9 us call to a small model."""
        cached = self._functions.get(name)
        if cached is None:
            ins, outs = self.signature(name)
            cached = (self._index(name), ins, outs)
            self._functions[name] = cached
        return cached

    def _call(self, name, inputs, outputs, bound=False):
        """(function index, input and output descriptors, outputs, arrays to
        keep alive). `bound`: inputs are refused rather than copied when not
        contiguous (a copy would not see the caller's later writes)."""
        f, ins_sig, outs = self._function(name)
        if outputs is None:
            outputs = [np.empty(shape, _DTYPES[dt]) for dt, shape in outs]
        keep = []

        def describe(a, expected=None):
            # np.ascontiguousarray would turn a 0-d array into 1-d: copy only when needed.
            if not a.flags.c_contiguous:
                if bound:
                    raise RewireError("bind: every array must be C-contiguous (a copy would not "
                                      "see later writes); bind np.ascontiguousarray(x) and write "
                                      "into that")
                a = np.ascontiguousarray(a)
            keep.append(a)
            dtype = _ENCODED.get(a.dtype)
            # bf16 travels as its raw uint16 bits.
            if expected == "bf16" and a.dtype == np.uint16:
                dtype = b"bf16"
            if dtype is None:
                raise RewireError("unsupported dtype %s" % a.dtype)
            # A 0-d array gets a one-element shape, which the C API does not read.
            shape = (ctypes.c_int64 * a.ndim)(*a.shape) if a.ndim else _ONE
            keep.append(shape)
            return _Tensor(dtype, a.ndim, shape, a.ctypes.data)

        ins = (_Tensor * max(len(inputs), 1))(*[
            describe(a, ins_sig[i][0] if i < len(ins_sig) else None) for i, a in enumerate(inputs)])
        for o in outputs:
            if not o.flags.c_contiguous:
                raise RewireError("outputs must be C-contiguous")
        outv = (_Tensor * max(len(outputs), 1))(*[
            describe(o, outs[i][0] if i < len(outs) else None) for i, o in enumerate(outputs)])
        return f, ins, outv, outputs, keep

    def run(self, name, *inputs, outputs=None):
        """Runs `name`; inputs are NumPy arrays (made contiguous, never cast).
        Returns the outputs (new arrays, or `outputs` filled in place)."""
        f, ins, outv, outputs, _ = self._call(name, inputs, outputs)
        if self._lib.rewire_model_run(self._handle, f, len(inputs), ins, len(outputs), outv) != 0:
            raise RewireError(last_error())
        return outputs

    def bind(self, name, *inputs, outputs=None):
        """A function of no arguments that runs `name` on these arrays and
        returns the outputs, filled in place on each call (ONNX Runtime's
        IOBinding): the descriptors are built once, so a call costs the C
        API's checks and the work. Write new values into the same arrays
        between calls; they are held (a bound array cannot be resized). The
        call is checked here (counts, dtypes, shapes) without running it: a
        mismatch fails now, and binding a train step does not take one."""
        f, ins, outv, outputs, keep = self._call(name, inputs, outputs, bound=True)
        lib, handle, nin, nout = self._lib, self._handle, len(inputs), len(outputs)
        if lib.rewire_model_check(handle, f, nin, ins, nout, outv) != 0:
            raise RewireError(last_error())

        def call():
            if lib.rewire_model_run(handle, f, nin, ins, nout, outv) != 0:
                raise RewireError(last_error())
            return outputs
        call.arrays = keep  # the bound arrays and shapes live as long as the function
        call.model = self   # and so does the model
        return call
