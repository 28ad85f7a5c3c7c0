# lit configuration of Rewire's IR tests (FileCheck) and, through
# unit/lit.cfg.py, its gtest unit tests.
#
# Features set here, for REQUIRES/UNSUPPORTED lines:
#   cuda-gpu      a CUDA driver and at least one GPU answer at test time
#                 (detected now, never at CMake time; see utils/cuda_detect.py)
#   cuda-toolkit  ptxas from the CUDA toolkit is installed (compile-only tests)
import os
import shutil
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "Rewire"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.rewire_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "utils", "unit", "Inputs", "fixtures"]

llvm_config.use_default_substitutions()
config.substitutions.append(("%rewire_src", config.rewire_src_root))
config.substitutions.append(("%rewire_obj", config.rewire_obj_root))
# Python with ONNX Runtime (a venv made by scripts/bootstrap.sh); tests that
# run models in ORT fail loudly, not silently skip, when it is missing.
ort_python = os.path.join(config.rewire_obj_root, "venv", "bin", "python")
if not os.path.exists(ort_python):
    lit_config.fatal("ONNX Runtime venv missing (%s); run scripts/bootstrap.sh" % ort_python)
config.substitutions.append(("%ort_python", ort_python))
# mlir-runner and its runtime libraries, for execution tests of lowered IR.
config.substitutions.append(("%mlir_runner", os.path.join(config.llvm_tools_dir, "mlir-runner")))
config.substitutions.append(("%mlir_lib_dir", os.path.normpath(os.path.join(config.llvm_tools_dir, "..", "lib"))))

# The runtime's shared library for the Python (ctypes) bindings, and a
# compile cache private to the test tree for rewire-run's .onnx/.mlir path.
config.environment["REWIRE_LIB_DIR"] = os.path.join(config.rewire_obj_root, "lib")
config.environment["REWIRE_CACHE_DIR"] = os.path.join(config.rewire_obj_root, "test", "compile-cache")

# The CUDA emulator standing in for the driver and cuBLAS (runs CUDA
# artifacts without a GPU; docs/cuda.md): `%cuda_emu rewire-run ...` with
# REWIRE_CUDA_EMULATOR_KERNELS naming the artifact's --emulator-kernels.
cuda_emu = os.path.join(config.rewire_obj_root, "lib", "librewire_cuda_emu.so")
# The emulator library itself (its NCCL: REWIRE_LIBNCCL=%cuda_emu_lib);
# before %cuda_emu, which is its prefix.
config.substitutions.append(("%cuda_emu_lib", cuda_emu))
config.substitutions.append(
    ("%cuda_emu", "env REWIRE_LIBCUDA=%s REWIRE_LIBCUBLAS=%s" % (cuda_emu, cuda_emu)))

# Our tools first, then LLVM's (FileCheck, not, count).
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.rewire_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    [ToolSubst("rewire-opt", unresolved="fatal"),
     ToolSubst("rewire-import", unresolved="fatal"),
     ToolSubst("rewire-export", unresolved="fatal"),
     ToolSubst("rewire-report", unresolved="fatal"),
     ToolSubst("rewire-compile", unresolved="fatal"),
     ToolSubst("rewire-run", unresolved="fatal"),
     ToolSubst("rewire-train", unresolved="fatal")],
    [config.rewire_tools_dir])

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "utils"))
import cuda_detect  # noqa: E402

gpu = cuda_detect.detect()
if gpu.available:
    config.available_features.add("cuda-gpu")
lit_config.note("cuda-gpu: " + gpu.describe())
config.substitutions.append(("%cuda_gpu_answer", "yes" if gpu.available else "no"))
if os.path.exists(os.path.join(config.cuda_root, "bin", "ptxas")):
    config.available_features.add("cuda-toolkit")
config.substitutions.append(("%ptxas", os.path.join(config.cuda_root, "bin", "ptxas")))
# Tests of how OpenMP threads are bound need two CPUs to bind them apart.
if hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) >= 2:
    config.available_features.add("two-cpus")
# Data-parallel tests: rewire-train built with MPI, and mpirun (the bootstrap
# installs Open MPI). Open MPI refuses root without these.
if getattr(config, "rewire_have_mpi", False) and shutil.which("mpirun"):
    config.available_features.add("mpi")
else:
    lit_config.note("mpi: rewire-train built without MPI or no mpirun; run scripts/bootstrap.sh")
if os.getuid() == 0:
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
# rewire-compile --target=cuda links libdevice from this toolkit.
config.environment["CUDA_ROOT"] = config.cuda_root
