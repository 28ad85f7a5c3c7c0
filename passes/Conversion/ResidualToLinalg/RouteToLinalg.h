//===- RouteToLinalg.h - Mixture-of-Depths routing to linalg -----*- C++ -*-===//
//
// Internal to convert-residual-to-linalg: residual.route and
// residual.route_select.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PASSES_CONVERSION_ROUTETOLINALG_H
#define REWIRE_PASSES_CONVERSION_ROUTETOLINALG_H

#include "mlir/IR/PatternMatch.h"

namespace rewire {

/// Adds the routing ops' lowerings to linalg on tensors (static shapes for
/// the rate modes).
void populateRouteToLinalgPatterns(mlir::RewritePatternSet &patterns);

} // namespace rewire

#endif // REWIRE_PASSES_CONVERSION_ROUTETOLINALG_H
