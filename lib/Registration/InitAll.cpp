//===- InitAll.cpp - Register Rewire's dialects and passes ----------------===//
//
// Implements InitAll.h. Upstream pass groups are listed one by one (not
// registerAllPasses): the ones our CPU and GPU pipelines are built from.
//
//===----------------------------------------------------------------------===//
#include "rewire/InitAll.h"

#include "dialects/nn/NNDialect.h"
#include "lib/Autodiff/ReverseMode.h"
#include "dialects/residual/ResidualDialect.h"
#include "passes/Conversion/Passes.h"
#include "rewire/Compiler/Pipelines.h"
#include "passes/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/MLProgram/Transforms/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/MLProgram/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

void rewire::registerRewireDialects(mlir::DialectRegistry &registry) {
  registry.insert<rewire::nn::NNDialect, rewire::residual::ResidualDialect>();
  registry.insert<mlir::affine::AffineDialect, mlir::arith::ArithDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::gpu::GPUDialect, mlir::LLVM::LLVMDialect,
                  mlir::NVVM::NVVMDialect, mlir::linalg::LinalgDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::ml_program::MLProgramDialect, mlir::omp::OpenMPDialect,
                  mlir::scf::SCFDialect,
                  mlir::tensor::TensorDialect, mlir::vector::VectorDialect>();
  // Inliner, to-LLVM and transform-dialect extensions of upstream dialects.
  mlir::registerAllExtensions(registry);
  // One-shot bufferization and tiling of the ops our lowerings produce.
  mlir::arith::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  mlir::linalg::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::ml_program::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::scf::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::tensor::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::vector::registerBufferizableOpInterfaceExternalModels(registry);
  // memref.alloc as an allocation: buffer-results-to-out-params then writes
  // a returned buffer's producer straight into the out-param (no copy per
  // result: a train step's updated parameters and optimizer state).
  mlir::memref::registerAllocationOpInterfaceExternalModels(registry);
  mlir::linalg::registerTilingInterfaceExternalModels(registry);
  mlir::tensor::registerTilingInterfaceExternalModels(registry);
  // gpu-module-to-binary: the NVVM target serializes through LLVM IR.
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerGPUDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
  // Reverse-mode rules of the nn and residual ops (rewire-autodiff).
  rewire::autodiff::registerReverseModeExternalModels(registry);
}

void rewire::registerRewirePasses() {
  rewire::registerRewireTransformsPasses();
  rewire::registerRewireConversionPasses();
  // rewire-lower-to-linalg, rewire-cpu-pipeline, ...: rewire-compile's stages.
  rewire::compiler::registerPipelines();

  // Generic transforms: canonicalize, cse, inline, symbol-dce, sccp, ...
  mlir::registerTransformsPasses();
  // Tensor-level and bufferization passes of the CPU and GPU pipelines.
  mlir::registerLinalgPasses();
  mlir::registerSCFPasses();
  mlir::arith::registerArithPasses();
  mlir::bufferization::registerBufferizationPasses();
  mlir::bufferization::registerBufferizationPipelines();
  mlir::memref::registerMemRefPasses();
  mlir::ml_program::registerMLProgramPasses();
  mlir::tensor::registerTensorPasses();
  mlir::vector::registerVectorPasses();
  // Kernel outlining, NVVM targets, module-to-binary.
  mlir::registerGPUPasses();

  // The conversions to LLVM and NVVM our pipelines use (not every upstream
  // conversion: no SPIR-V, ROCDL, EmitC, ...).
  mlir::registerLowerAffinePass();
  mlir::registerConvertBufferizationToMemRefPass();
  mlir::registerConvertLinalgToStandardPass();
  mlir::registerConvertTensorToLinalgPass();
  mlir::registerSCFToControlFlowPass();
  mlir::registerConvertVectorToSCF();
  mlir::registerConvertVectorToLLVMPass();
  mlir::registerFinalizeMemRefToLLVMConversionPass();
  mlir::registerConvertToLLVMPass();
  mlir::registerConvertFuncToLLVMPass();
  mlir::registerArithToLLVMConversionPass();
  mlir::registerConvertMathToLLVMPass();
  mlir::registerConvertMathToLibmPass();
  mlir::registerConvertControlFlowToLLVMPass();
  mlir::registerConvertIndexToLLVMPass();
  mlir::registerReconcileUnrealizedCastsPass();
  // Parallel loops of the CPU pipeline become OpenMP regions.
  mlir::registerConvertSCFToOpenMPPass();
  mlir::registerConvertOpenMPToLLVMPass();
  mlir::registerConvertGpuOpsToNVVMOps();
  mlir::registerConvertNVVMToLLVMPass();
  mlir::registerGpuToLLVMConversionPass();
}
