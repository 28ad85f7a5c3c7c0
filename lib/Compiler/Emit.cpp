//===- Emit.cpp - LLVM IR, entry wrappers, metadata, object code ----------===//
//
// After the LLVM dialect: translation to LLVM IR, one `rewire_call_<name>`
// wrapper per entry point (unpacks an array of buffer pointers and calls the
// bare-pointer function), the metadata string, optimization for the target
// CPU, and object emission. Everything but the wrappers and the metadata
// gets internal linkage, so the artifact exports nothing else.
//
//===----------------------------------------------------------------------===//
#include "rewire/Compiler/Compiler.h"

#include "lib/Compiler/JsonText.h"
#include "passes/Conversion/Passes.h"
#include "rewire/Support/Json.h"
#include "rewire/Version.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/IR/PassTimingInfo.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <mutex>

using namespace rewire::compiler;

namespace {

std::string cpuName(const CompileOptions &o) {
  return o.cpu == "native" ? llvm::sys::getHostCPUName().str() : o.cpu;
}

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const CompileOptions &o,
                                                       std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  std::string features;
  if (o.cpu == "native") {
    llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    for (auto &f : host)
      features += (features.empty() ? "" : ",") + std::string(f.second ? "+" : "-") +
                  f.first().str();
  }
  std::string cpu = cpuName(o);
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(triple, cpu, ""));
  if (o.cpu != "native" && o.cpu != "generic" && (!sti || !sti->isCPUStringValid(cpu))) {
    error = "unknown --cpu '" + cpu + "' (try native, generic, x86-64-v3, znver4)";
    return nullptr;
  }
  llvm::TargetOptions options;
  auto level = o.optLevel == 0   ? llvm::CodeGenOptLevel::None
               : o.optLevel == 1 ? llvm::CodeGenOptLevel::Less
               : o.optLevel == 2 ? llvm::CodeGenOptLevel::Default
                                 : llvm::CodeGenOptLevel::Aggressive;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, cpu, features, options, llvm::Reloc::PIC_, std::nullopt, level));
}

/// LLVM's loop vectorizer gives up on a loop that needs more runtime alias
/// checks than -vectorize-memory-check-threshold (128). A fused loop writes
/// many buffers: nn.sinkhorn's body writes its n * n entries as n * n
/// results (~150 checks at n = 4, ~200 for its gradient), and those loops
/// stayed scalar (0.62 ms for 512 matrices' forward and gradient on one Zen 3
/// core; 0.136 vectorized). The limit is raised once per process unless the
/// command line set it; the vectorizer's cost model still weighs the checks.
constexpr const char *kMemoryCheckOption = "vectorize-memory-check-threshold";
constexpr const char *kMemoryChecks = "1024";

void raiseVectorizerMemoryChecks() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto &registered = llvm::cl::getRegisteredOptions();
    auto it = registered.find(kMemoryCheckOption);
    if (it != registered.end() && it->second->getNumOccurrences() == 0)
      (void)it->second->addOccurrence(0, kMemoryCheckOption, kMemoryChecks);
  });
}

} // namespace

std::vector<std::string> rewire::compiler::targetCpuFeatures(const CompileOptions &options,
                                                             std::string &error) {
  std::vector<std::string> out;
  auto tm = makeTargetMachine(options, error);
  if (!tm)
    return out;
  const llvm::MCSubtargetInfo *sti = tm->getMCSubtargetInfo();
  for (const std::string &f : rewire::cpu::checkedFeatures())
    if (sti->checkFeatures("+" + f))
      out.push_back(f);
  return out;
}

std::string rewire::compiler::artifactMetadata(const std::vector<EntryPoint> &entries,
                                               const std::string &parametersFile,
                                               const CompileOptions &options) {
  std::string error;
  std::vector<std::string> features = targetCpuFeatures(options, error);
  return jsonText([&](llvm::json::OStream &json) {
    json.object([&] {
      json.attribute("format", "rewire-artifact");
      json.attribute("version", kArtifactFormatVersion);
      json.attribute("compiler", std::string("rewire ") + REWIRE_VERSION_STRING);
      json.attribute("target", "cpu");
      json.attribute("cpu", cpuName(options));
      json.attributeArray("cpu_features", [&] {
        for (const std::string &f : features)
          json.value(f);
      });
      json.attribute("parameters_file", parametersFile);
      json.attributeArray("functions", [&] {
        for (const EntryPoint &e : entries)
          json.object([&] {
            json.attribute("name", e.name);
            json.attribute("entry", rewire::cpu::kEntrySymbolPrefix + e.name);
            writeSignature(json, e);
          });
      });
    });
  });
}

std::unique_ptr<llvm::Module>
rewire::compiler::translateAndOptimize(mlir::ModuleOp module,
                                       const std::vector<EntryPoint> &entries,
                                       const std::string &parametersFile,
                                       const CompileOptions &options,
                                       llvm::LLVMContext &llvmContext,
                                       bool distinctBuffers) {
  mlir::registerBuiltinDialectTranslation(*module.getContext());
  mlir::registerLLVMDialectTranslation(*module.getContext());
  mlir::registerOpenMPDialectTranslation(*module.getContext());
  // Read into `entries` already; the translation has no use for the record.
  module->removeAttr(rewire::kEntryPointsAttrName);
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, llvmContext, "rewire");
  if (!llvmModule) {
    module.emitError() << "rewire-compile: translation to LLVM IR failed";
    return nullptr;
  }
  std::string error;
  auto tm = makeTargetMachine(options, error);
  if (!tm) {
    module.emitError() << "rewire-compile: " << error;
    return nullptr;
  }
  llvmModule->setDataLayout(tm->createDataLayout());
  llvmModule->setTargetTriple(tm->getTargetTriple());

  // Everything internal first; the wrappers and the metadata are the only
  // exported symbols.
  for (llvm::Function &f : *llvmModule)
    if (!f.isDeclaration())
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (llvm::GlobalVariable &g : llvmModule->globals())
    if (!g.isDeclaration())
      g.setLinkage(llvm::GlobalValue::InternalLinkage);

  // The temporaries' allocator returns fresh memory (as malloc does); the
  // runtime passes distinct output buffers and never writes inputs or
  // parameters, so the entry's pointers do not alias each other's writes.
  // Both let LLVM vectorize loops over many streams without runtime checks.
  for (const char *name : {"_mlir_memref_to_llvm_alloc", "_mlir_memref_to_llvm_aligned_alloc"})
    if (llvm::Function *alloc = llvmModule->getFunction(name))
      alloc->addRetAttr(llvm::Attribute::NoAlias);
  for (const EntryPoint &e : entries)
    if (llvm::Function *fn = llvmModule->getFunction(e.name); fn && distinctBuffers)
      for (llvm::Argument &arg : fn->args())
        if (arg.getType()->isPointerTy())
          arg.addAttr(llvm::Attribute::NoAlias);

  llvm::Type *ptr = llvm::PointerType::getUnqual(llvmContext);
  for (const EntryPoint &e : entries) {
    llvm::Function *fn = llvmModule->getFunction(e.name);
    size_t count = e.inputs.size() + e.parameters.size() + e.outputs.size();
    // The pointers the function takes: all but those of empty tensors.
    std::vector<bool> passed;
    for (const auto *group : {&e.inputs, &e.parameters, &e.outputs})
      for (const TensorSpec &s : *group)
        passed.push_back(!isEmptySpec(s));
    size_t taken = static_cast<size_t>(std::count(passed.begin(), passed.end(), true));
    if (!fn || fn->arg_size() != taken) {
      module.emitError() << "rewire-compile: internal error: entry '" << e.name
                         << "' does not take " << taken << " buffers after lowering";
      return nullptr;
    }
    auto *wrapper = llvm::Function::Create(
        llvm::FunctionType::get(llvm::Type::getVoidTy(llvmContext), {ptr}, false),
        llvm::GlobalValue::ExternalLinkage, rewire::cpu::kEntrySymbolPrefix + e.name, *llvmModule);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(llvmContext, "entry", wrapper));
    llvm::SmallVector<llvm::Value *> args;
    for (size_t i = 0; i < count; ++i)
      if (passed[i])
        args.push_back(b.CreateLoad(
          ptr, b.CreateConstInBoundsGEP1_64(ptr, wrapper->getArg(0), i)));
    b.CreateCall(fn, args);
    b.CreateRetVoid();
  }
  std::string meta = artifactMetadata(entries, parametersFile, options);
  auto *init = llvm::ConstantDataArray::getString(llvmContext, meta, /*AddNull=*/true);
  new llvm::GlobalVariable(*llvmModule, init->getType(), true,
                           llvm::GlobalValue::ExternalLinkage, init,
                           rewire::cpu::kMetadataSymbol);
  auto *version = llvm::ConstantInt::get(llvm::Type::getInt32Ty(llvmContext),
                                         kArtifactFormatVersion);
  new llvm::GlobalVariable(*llvmModule, version->getType(), true,
                           llvm::GlobalValue::ExternalLinkage, version,
                           rewire::cpu::kVersionSymbol);
  if (llvm::verifyModule(*llvmModule, &llvm::errs())) {
    module.emitError() << "rewire-compile: internal error: invalid LLVM IR";
    return nullptr;
  }

  // Loop nests outlined by rewire-outline-loop-nests stay functions of their
  // own: LLVM's loop passes then scale with the nest, not the train step.
  for (llvm::Function &f : *llvmModule) {
    llvm::StringRef name = f.getName();
    size_t at = name.rfind(".loop");
    if (f.hasLocalLinkage() && at != llvm::StringRef::npos && at + 5 < name.size() &&
        llvm::all_of(name.drop_front(at + 5), [](char c) { return c >= '0' && c <= '9'; }))
      f.addFnAttr(llvm::Attribute::NoInline);
  }

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  raiseVectorizerMemoryChecks();
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = options.optLevel > 1;
  tuning.SLPVectorization = options.optLevel > 1;
  llvm::PassInstrumentationCallbacks callbacks;
  llvm::TimePassesHandler timePasses(passTimingEnabled());
  timePasses.registerCallbacks(callbacks);
  llvm::PassBuilder pb(tm.get(), tuning, std::nullopt, &callbacks);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = options.optLevel == 0   ? llvm::OptimizationLevel::O0
                                  : options.optLevel == 1 ? llvm::OptimizationLevel::O1
                                  : options.optLevel == 2 ? llvm::OptimizationLevel::O2
                                                          : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = level == llvm::OptimizationLevel::O0
                                    ? pb.buildO0DefaultPipeline(level)
                                    : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(*llvmModule, mam);
  if (passTimingEnabled())
    timePasses.print();
  return llvmModule;
}

llvm::Error rewire::compiler::emitObject(llvm::Module &module, const CompileOptions &options,
                                         std::string &object) {
  std::string error;
  auto tm = makeTargetMachine(options, error);
  if (!tm)
    return compileError(Failure::codegen, error);
  llvm::raw_string_ostream os(object);
  llvm::buffer_ostream out(os);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, out, nullptr, llvm::CodeGenFileType::ObjectFile))
    return compileError(Failure::codegen, "the target cannot emit object files");
  pm.run(module);
  return llvm::Error::success();
}
