//===- NNAttrs.td - nn dialect attributes -------------------*- tablegen -*-===//
//
// #nn.init: how a new parameter is initialized (zeros, ones, a constant, a
// normal or a uniform distribution), so initial values never appear in the
// IR as literals.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_NN_ATTRS_TD
#define REWIRE_NN_ATTRS_TD

include "dialects/nn/NNDialect.td"

def NN_InitAttr : AttrDef<NN_Dialect, "Init"> {
  let mnemonic = "init";
  let summary = "initializer of a parameter";
  let description = [{
    The initial value of an `ml_program.global` parameter, given as a rule
    rather than as values: the runtime materializes it (from the training
    seed) when no value for the parameter is found in the parameter file.

    ```mlir
    #nn.init<zeros>
    #nn.init<ones>
    #nn.init<constant(0.1)>
    #nn.init<normal(0.0, 0.02)>     // mean, standard deviation > 0
    #nn.init<uniform(-0.1, 0.1)>    // low < high
    ```
  }];
  let parameters = (ins "InitKind":$kind, APFloatParameter<"first argument">:$a,
                        APFloatParameter<"second argument">:$b);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of numeric arguments the kind takes (0, 1 or 2).
    static unsigned getNumArgs(InitKind kind);
  }];
}

#endif // REWIRE_NN_ATTRS_TD
