//===- NNAttrs.cpp - nn dialect attributes --------------------------------===//
//
// Assembly and verification of #nn.init.
//
//===----------------------------------------------------------------------===//
#include "dialects/nn/NNDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace rewire::nn;

#define GET_ATTRDEF_CLASSES
#include "dialects/nn/NNAttrs.cpp.inc"

void NNDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/nn/NNAttrs.cpp.inc"
      >();
}

unsigned InitAttr::getNumArgs(InitKind kind) {
  switch (kind) {
  case InitKind::zeros:
  case InitKind::ones:
    return 0;
  case InitKind::constant:
    return 1;
  case InitKind::normal:
  case InitKind::uniform:
    return 2;
  }
  return 0;
}

// #nn.init<KIND> | #nn.init<KIND(a)> | #nn.init<KIND(a, b)>
Attribute InitAttr::parse(AsmParser &parser, Type) {
  StringRef name;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&name))
    return {};
  auto kind = symbolizeInitKind(name);
  if (!kind) {
    parser.emitError(loc) << "unknown initializer '" << name
                          << "'; expected zeros, ones, constant, normal or "
                             "uniform";
    return {};
  }
  unsigned n = getNumArgs(*kind);
  double args[2] = {0.0, 0.0};
  if (n > 0) {
    if (parser.parseLParen())
      return {};
    for (unsigned i = 0; i < n; ++i)
      if ((i > 0 && parser.parseComma()) || parser.parseFloat(args[i]))
        return {};
    if (parser.parseRParen())
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<InitAttr>(loc, parser.getContext(), *kind,
                                     APFloat(args[0]), APFloat(args[1]));
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyInitKind(getKind());
  unsigned n = getNumArgs(getKind());
  if (n > 0) {
    printer << '(';
    printer.printFloat(getA());
    if (n > 1) {
      printer << ", ";
      printer.printFloat(getB());
    }
    printer << ')';
  }
  printer << '>';
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, APFloat af, APFloat bf) {
  double a = af.convertToDouble(), b = bf.convertToDouble();
  unsigned n = getNumArgs(kind);
  if ((n < 1 && a != 0.0) || (n < 2 && b != 0.0))
    return emitError() << "initializer '" << stringifyInitKind(kind)
                       << "' takes " << n << " argument(s)";
  if (!std::isfinite(a) || !std::isfinite(b))
    return emitError() << "initializer arguments must be finite";
  if (kind == InitKind::normal && !(b > 0.0))
    return emitError() << "normal initializer needs a positive standard "
                          "deviation, got "
                       << b;
  if (kind == InitKind::uniform && !(a < b))
    return emitError() << "uniform initializer needs low < high, got [" << a
                       << ", " << b << ")";
  return success();
}
