//===- TrainStepAbi.h - The names train_step is called by --------*- C++ -*-===//
//
// rewire-train-step (passes/Transforms/TrainStep.cpp) names every argument
// and result of eval_step and train_step (`nn.name`); the trainer
// (runtime/Trainer.cpp) binds them by these names. One definition for both
// sides. Plain C++.
//
//   train_step(<data input>, target, param:<p>..., state:<p>:<slot>...,
//              lr[, bias_correction1, bias_correction2])
//     -> (loss, param:<p>'..., state:<p>:<slot>'..., [loss:depth<k>...],
//         [gradnorm:<p>...])
//   eval_step(<data input>, target, param:<p>...) -> (loss, [loss:depth<k>...])
//
// Split (rewire-train-step{split=true}, for data parallelism and gradient
// accumulation): train_step's two halves, the runtime reducing the
// gradients in between:
//   grad_step(<data input>, target, param:<p>...)
//     -> (loss, grad:<p>..., [param:<buffer>'...], [loss:depth<k>...])
//   apply_step(param:<p>..., state:<p>:<slot>..., grad:<p>..., grad_scale,
//              lr[, bias_correction1, bias_correction2])
//     -> (param:<p>'..., state:<p>:<slot>'..., [gradnorm:<p>...])
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_TRAINSTEPABI_H
#define REWIRE_SUPPORT_TRAINSTEPABI_H

namespace rewire::trainstep {

constexpr const char *kTrainFunction = "train_step";
constexpr const char *kEvalFunction = "eval_step";
constexpr const char *kGradFunction = "grad_step";
constexpr const char *kApplyFunction = "apply_step";

constexpr const char *kTarget = "target";
constexpr const char *kLearningRate = "lr";
/// AdamW only: 1 / (1 - beta1^t) and 1 / (1 - beta2^t), t = step + 1.
constexpr const char *kBiasCorrection1 = "bias_correction1";
constexpr const char *kBiasCorrection2 = "bias_correction2";
constexpr const char *kLoss = "loss";
/// Split steps: a parameter's gradient (`grad:<name>`), a result of
/// grad_step and an input of apply_step, which scales it by `grad_scale`
/// (1 / the number of batches summed into it) before clipping.
constexpr const char *kGradPrefix = "grad:";
constexpr const char *kGradScale = "grad_scale";

/// A parameter (`param:<name>`): an input, and the updated value a result.
constexpr const char *kParamPrefix = "param:";
/// Optimizer state (`state:<name>:momentum|m|v`), input and result.
constexpr const char *kStatePrefix = "state:";
/// The state slots: SGD momentum, AdamW's moments.
constexpr const char *kMomentumSlot = "momentum";
constexpr const char *kFirstMomentSlot = "m";
constexpr const char *kSecondMomentSlot = "v";
/// LPA: the loss at depth k (`loss:depth<k>`, k from 1).
constexpr const char *kDepthLossPrefix = "loss:depth";
/// grad-norms: a parameter's gradient L2 norm (`gradnorm:<name>`).
constexpr const char *kGradNormPrefix = "gradnorm:";

} // namespace rewire::trainstep

#endif // REWIRE_SUPPORT_TRAINSTEPABI_H
