//===- InitAll.cpp - Register Rewire's dialects and passes ----------------===//
//
// Implements InitAll.h. Upstream pass groups are listed one by one (not
// registerAllPasses): the ones our CPU and GPU pipelines are built from.
//
//===----------------------------------------------------------------------===//
#include "rewire/InitAll.h"

#include "dialects/nn/NNDialect.h"
#include "dialects/residual/ResidualDialect.h"
#include "passes/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/Passes.h"
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
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Transforms/Passes.h"

void rewire::registerRewireDialects(mlir::DialectRegistry &registry) {
  registry.insert<rewire::nn::NNDialect, rewire::residual::ResidualDialect>();
  registry.insert<mlir::affine::AffineDialect, mlir::arith::ArithDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::gpu::GPUDialect, mlir::LLVM::LLVMDialect,
                  mlir::NVVM::NVVMDialect, mlir::linalg::LinalgDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::ml_program::MLProgramDialect, mlir::scf::SCFDialect,
                  mlir::tensor::TensorDialect, mlir::vector::VectorDialect>();
  // Bufferization, inliner and to-LLVM interfaces of the upstream dialects.
  mlir::registerAllExtensions(registry);
}

void rewire::registerRewirePasses() {
  rewire::registerRewireTransformsPasses();

  mlir::registerTransformsPasses();
  mlir::registerConversionPasses();
  mlir::registerLinalgPasses();
  mlir::registerGPUPasses();
  mlir::registerSCFPasses();
  mlir::affine::registerAffinePasses();
  mlir::arith::registerArithPasses();
  mlir::bufferization::registerBufferizationPasses();
  mlir::func::registerFuncPasses();
  mlir::memref::registerMemRefPasses();
  mlir::ml_program::registerMLProgramPasses();
  mlir::tensor::registerTensorPasses();
  mlir::vector::registerVectorPasses();
}
